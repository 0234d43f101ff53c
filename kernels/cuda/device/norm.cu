// batch_norm's forward (NCHW or NHWC), one block a channel: the batch's statistics (in double) or the
// running ones, the running statistics' update, then Y = X * a + b over the channel.
// layer_norm's and group_norm's forwards, one block a row or a group, in the CPU
// kernels' arithmetic.
#include <cmath>

#include "kernels/cuda/device/block.cuh"
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

__global__ void batch_norm_fwd(rill_cuda_bn p) {
  __shared__ double red[kThreads];
  __shared__ double mu_s, inv_s;
  const int64_t c = blockIdx.x, cnt = p.n * p.s;
  // element k of channel c: sample k / s, position k % s (NHWC: row k of [n * s, c])
#define AT(k) (p.nhwc ? (k) * p.c + c : (((k) / p.s) * p.c + c) * p.s + (k) % p.s)
  if (p.global) {
    if (threadIdx.x == 0) {
      mu_s = p.mean[c];
      inv_s = 1.0 / sqrt((double)p.var[c] + p.eps);
      if (p.mean_out) p.mean_out[c] = p.mean[c];
      if (p.var_out) p.var_out[c] = p.var[c];
    }
  } else {
    double s = 0.0;
    for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) s += p.x[AT(k)];
    double mu = block_sum(s, red) / (double)cnt, q = 0.0;
    for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) {
      double d = (double)p.x[AT(k)] - mu;
      q += d * d;
    }
    double v = block_sum(q, red) / (double)cnt;
    if (threadIdx.x == 0) {
      double m = p.momentum_f32 ? (double)p.momentum_f32[0]
                                : p.momentum_f64 ? p.momentum_f64[0] : p.momentum;
      mu_s = mu;
      inv_s = 1.0 / sqrt(v + p.eps);
      if (p.mean_out) p.mean_out[c] = (float)((double)p.mean[c] * m + mu * (1 - m));
      if (p.var_out) p.var_out[c] = (float)((double)p.var[c] * m + v * (1 - m));
    }
  }
  __syncthreads();
  double mu = mu_s, inv = inv_s;
  if (threadIdx.x == 0) {
    if (p.saved_mean) p.saved_mean[c] = (float)mu;
    if (p.saved_inv_std) p.saved_inv_std[c] = (float)inv;
  }
  float a = (float)(inv * p.scale[c]), b = (float)(p.bias[c] - mu * inv * p.scale[c]);
  for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) p.y[AT(k)] = fmaf(p.x[AT(k)], a, b);
#undef AT
}

// The gradients, one block a channel: sums of dy and dy * x_hat (in double), then
// ScaleGrad, BiasGrad and X@GRAD as the CPU kernel computes them.
__global__ void batch_norm_bwd(rill_cuda_bn_grad p) {
  __shared__ double red[kThreads];
  const int64_t c = blockIdx.x, cnt = p.n * p.s;
#define AT(k) (p.nhwc ? (k) * p.c + c : (((k) / p.s) * p.c + c) * p.s + (k) % p.s)
  double mu = p.mean[c], inv = p.global ? 1.0 / sqrt((double)p.var[c] + p.eps) : (double)p.inv_std[c];
  double sdy = 0.0, sdyx = 0.0;
  for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) {
    float d = p.dy[AT(k)];
    sdy += d;
    sdyx += d * (((double)p.x[AT(k)] - mu) * inv);
  }
  sdy = block_sum(sdy, red);
  sdyx = block_sum(sdyx, red);
  if (threadIdx.x == 0) {
    if (p.dscale) p.dscale[c] = (float)sdyx;
    if (p.dbias) p.dbias[c] = (float)sdy;
  }
  if (!p.dx) return;
  double kf = p.scale[c] * inv, mdy = sdy / (double)cnt, mdyx = sdyx / (double)cnt;
  for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) {
    int64_t at = AT(k);
    float d = p.dy[at];
    p.dx[at] = p.global ? (float)(d * kf) : (float)(kf * (d - mdy - ((double)p.x[at] - mu) * inv * mdyx));
  }
#undef AT
}

// One block a row of x [left, right] (grid-stride over rows): the mean, then the variance
// about it, summed in double; y = x * a + b with a = 1 / sqrt(var + eps) and b = -mean * a
// rounded to float, then times scale and plus bias, as the CPU kernel computes it.
__global__ void layer_norm_rows(const float *x, const float *scale, const float *bias, float *y, float *mean,
                                float *var, int64_t left, int64_t right, double eps) {
  __shared__ double red[kThreads];
  for (int64_t r = blockIdx.x; r < left; r += gridDim.x) {
    const float *xr = x + r * right;
    float *yr = y + r * right;
    double s = 0.0;
    for (int64_t j = threadIdx.x; j < right; j += blockDim.x) s += xr[j];
    double mu = right ? block_sum(s, red) / (double)right : 0.0;
    double q = 0.0;
    for (int64_t j = threadIdx.x; j < right; j += blockDim.x) q += ((double)xr[j] - mu) * ((double)xr[j] - mu);
    double v = right ? block_sum(q, red) / (double)right : 0.0, inv = 1.0 / sqrt(v + eps);
    if (threadIdx.x == 0) {
      if (mean) mean[r] = (float)mu;
      if (var) var[r] = (float)v;
    }
    float a = (float)inv, b = (float)(-mu * inv);
    for (int64_t j = threadIdx.x; j < right; j += blockDim.x) {
      float o = xr[j] * a + b;
      if (scale) o *= scale[j];
      if (bias) o += bias[j];
      yr[j] = o;
    }
    __syncthreads();  // the row is written before a thread moves to its next row
  }
}

// One block a (sample, group) of x (grid-stride over them): the group's mean, then its
// variance about it, in double; per channel a = inv * scale and b = bias - mean * a in
// double; y = x * (float)a + (float)b for NCHW, (float)(x * a + b) in double for NHWC,
// as the CPU kernel computes them.
__global__ void group_norm_groups(rill_cuda_gn p) {
  __shared__ double red[kThreads];
  const int64_t cg = p.c / p.g, cnt = cg * p.s;
  for (int64_t ng = blockIdx.x; ng < p.n * p.g; ng += gridDim.x) {
    const int64_t n = ng / p.g, g = ng - n * p.g;
    // element k of the group: channel g * cg + k / s, position k % s
#define GN_AT(k) (p.nhwc ? (n * p.s + (k) % p.s) * p.c + g * cg + (k) / p.s : (n * p.c + g * cg + (k) / p.s) * p.s + (k) % p.s)
    double sum = 0.0;
    for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) sum += p.x[GN_AT(k)];
    double mean = cnt > 0 ? block_sum(sum, red) / (double)cnt : 0.0;
    double sq = 0.0;
    for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) {
      double v = p.x[GN_AT(k)] - mean;
      sq += v * v;
    }
    double var = cnt > 0 ? block_sum(sq, red) / (double)cnt : 0.0, inv = 1.0 / sqrt(var + (double)p.eps);
    if (threadIdx.x == 0) {
      if (p.mean) p.mean[ng] = (float)mean;
      if (p.var) p.var[ng] = (float)var;
    }
    for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) {
      int64_t c = g * cg + k / p.s, at = GN_AT(k);
      double fa = inv * (p.scale ? (double)p.scale[c] : 1.0), fb = (p.bias ? (double)p.bias[c] : 0.0) - mean * fa;
      p.y[at] = p.nhwc ? (float)(p.x[at] * fa + fb) : p.x[at] * (float)fa + (float)fb;
    }
#undef GN_AT
    __syncthreads();  // the group is written before a thread moves to its next group
  }
}

// The offset of (sample n, channel c, position q) in a [n, c, s] (or [n, s, c]) tensor.
__device__ inline int64_t gn_offset(bool nhwc, int64_t n, int64_t c, int64_t q, int64_t channels, int64_t s) {
  return nhwc ? (n * s + q) * channels + c : (n * channels + c) * s + q;
}

// group_norm_grad's X@GRAD, one block a (sample, group), from Y as Paddle computes it:
// x_hat = (y - bias) / scale (0 where scale is 0), dps = sum (y - bias) dy and dpb =
// sum dy scale over the group's M elements in double, then dx = (dy scale - dps x_hat /
// M - dpb / M) / sqrt(var + eps), as the CPU kernel computes it.
__global__ void group_norm_dx(rill_cuda_gn_grad p) {
  __shared__ double red[kThreads];
  const int64_t cg = p.c / p.g, cnt = cg * p.s;
  const double m = (double)cnt;
  for (int64_t ng = blockIdx.x; ng < p.n * p.g; ng += gridDim.x) {
    const int64_t n = ng / p.g, first = (ng - n * p.g) * cg;
    double dps = 0.0, dpb = 0.0;
    for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) {
      int64_t c = first + k / p.s, at = gn_offset(p.nhwc, n, c, k % p.s, p.c, p.s);
      double sc = p.scale ? (double)p.scale[c] : 1.0, b = p.bias ? (double)p.bias[c] : 0.0;
      dps += ((double)p.y[at] - b) * (double)p.dy[at];
      dpb += (double)p.dy[at] * sc;
    }
    dps = block_sum(dps, red);
    dpb = block_sum(dpb, red);
    double inv = 1.0 / sqrt((double)p.var[ng] + p.eps);
    for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) {
      int64_t c = first + k / p.s, at = gn_offset(p.nhwc, n, c, k % p.s, p.c, p.s);
      double sc = p.scale ? (double)p.scale[c] : 1.0, b = p.bias ? (double)p.bias[c] : 0.0;
      double xh = sc != 0.0 ? ((double)p.y[at] - b) / sc : 0.0;
      p.dx[at] = (float)(((double)p.dy[at] * sc - dps * xh / m - dpb / m) * inv);
    }
  }
}

// group_norm_grad's Scale@GRAD (sum x_hat dy) and Bias@GRAD (sum dy), one block a
// channel over every sample and position, in double.
__global__ void group_norm_dscale_dbias(rill_cuda_gn_grad p) {
  __shared__ double red[kThreads];
  const int64_t cnt = p.n * p.s;
  for (int64_t c = blockIdx.x; c < p.c; c += gridDim.x) {
    double sc = p.scale ? (double)p.scale[c] : 1.0, b = p.bias ? (double)p.bias[c] : 0.0, ds = 0.0, db = 0.0;
    for (int64_t k = threadIdx.x; k < cnt; k += blockDim.x) {
      int64_t at = gn_offset(p.nhwc, k / p.s, c, k % p.s, p.c, p.s);
      double g = p.dy[at];
      ds += (sc != 0.0 ? ((double)p.y[at] - b) / sc : 0.0) * g;
      db += g;
    }
    ds = block_sum(ds, red);
    db = block_sum(db, red);
    if (threadIdx.x == 0) {
      if (p.dscale) p.dscale[c] = (float)ds;
      if (p.dbias) p.dbias[c] = (float)db;
    }
  }
}

// layer_norm_grad's X@GRAD, one block a row (grid-stride over rows): with g = dy * scale
// and x_hat = (x - mean) * inv in double, dx = inv * (g - mean(g) - x_hat * mean(g *
// x_hat)), the row means summed in double, as the CPU kernel computes it.
__global__ void layer_norm_dx(rill_cuda_ln_grad p) {
  __shared__ double red[kThreads];
  for (int64_t r = blockIdx.x; r < p.left; r += gridDim.x) {
    const float *xr = p.x + r * p.right, *dr = p.dy + r * p.right;
    double mu = p.mean[r], inv = 1.0 / sqrt((double)p.var[r] + p.eps), mg = 0.0, mgx = 0.0;
    for (int64_t j = threadIdx.x; j < p.right; j += blockDim.x) {
      double gj = p.scale ? (double)dr[j] * p.scale[j] : (double)dr[j];
      mg += gj;
      mgx += gj * ((xr[j] - mu) * inv);
    }
    mg = block_sum(mg, red) / (double)p.right;
    mgx = block_sum(mgx, red) / (double)p.right;
    float *o = p.dx + r * p.right;
    for (int64_t j = threadIdx.x; j < p.right; j += blockDim.x) {
      double gj = p.scale ? (double)dr[j] * p.scale[j] : (double)dr[j];
      o[j] = (float)(inv * (gj - mg - (xr[j] - mu) * inv * mgx));
    }
  }
}

// Scale@GRAD and Bias@GRAD, one thread a column: the rows' terms added in float in the
// rows' order, the CPU kernel's sums bit for bit.
__global__ void layer_norm_dscale_dbias(rill_cuda_ln_grad p) {
  for (int64_t j = first_index(); j < p.right; j += grid_stride()) {
    float ds = 0.0f, db = 0.0f;
    for (int64_t r = 0; r < p.left; r++) {
      float g = p.dy[r * p.right + j];
      if (p.dscale) {
        double mu = p.mean[r], inv = 1.0 / sqrt((double)p.var[r] + p.eps);
        ds += (float)(g * ((p.x[r * p.right + j] - mu) * inv));
      }
      db += g;
    }
    if (p.dscale) p.dscale[j] = ds;
    if (p.dbias) p.dbias[j] = db;
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_group_norm_grad_f32(const rill_cuda_gn_grad *p, cudaStream_t s) {
  if (p->g < 1 || p->c % p->g) return cudaErrorInvalidValue;
  int64_t groups = p->n * p->g;
  if (p->dx && groups > 0)
    group_norm_dx<<<(unsigned)(groups < 65536 ? groups : 65536), kThreads, 0, s>>>(*p);
  if ((p->dscale || p->dbias) && p->c > 0)
    group_norm_dscale_dbias<<<(unsigned)(p->c < 65536 ? p->c : 65536), kThreads, 0, s>>>(*p);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_layer_norm_grad_f32(const rill_cuda_ln_grad *p, cudaStream_t s) {
  if (p->left == 0 || p->right == 0) return cudaSuccess;
  if (p->dx) {
    unsigned blocks = (unsigned)(p->left < 65536 ? p->left : 65536);
    layer_norm_dx<<<blocks, kThreads, 0, s>>>(*p);
  }
  if (p->dscale || p->dbias) layer_norm_dscale_dbias<<<blocks_for(p->right), kThreads, 0, s>>>(*p);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_batch_norm_grad_f32(const rill_cuda_bn_grad *p, cudaStream_t s) {
  if (p->c == 0) return cudaSuccess;
  if (p->c > 0x7fffffff) return cudaErrorInvalidValue;
  batch_norm_bwd<<<(unsigned)p->c, kThreads, 0, s>>>(*p);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_batch_norm_f32(const rill_cuda_bn *p, cudaStream_t s) {
  if (p->c == 0) return cudaSuccess;
  if (p->c > 0x7fffffff) return cudaErrorInvalidValue;
  batch_norm_fwd<<<(unsigned)p->c, kThreads, 0, s>>>(*p);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_layer_norm_f32(const float *x, const float *scale, const float *bias, float *y,
                                                float *mean, float *var, int64_t left, int64_t right, double eps,
                                                cudaStream_t s) {
  if (left == 0) return cudaSuccess;
  unsigned blocks = (unsigned)(left < 65536 ? left : 65536);
  layer_norm_rows<<<blocks, kThreads, 0, s>>>(x, scale, bias, y, mean, var, left, right, eps);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_group_norm_f32(const rill_cuda_gn *p, cudaStream_t s) {
  int64_t groups = p->n * p->g;
  if (groups == 0) return cudaSuccess;
  if (p->g < 1 || p->c % p->g) return cudaErrorInvalidValue;
  unsigned blocks = (unsigned)(groups < 65536 ? groups : 65536);
  group_norm_groups<<<blocks, kThreads, 0, s>>>(*p);
  return cudaGetLastError();
}
