// Gradients' device code: activations from their output, the binary elementwise ops
// with broadcasting (a broadcast operand's gradient summed over the dims it was spread
// along), mean's spread of Out@GRAD, and softmax over each row.
#include "kernels/cuda/device/act.cuh"
#include "kernels/cuda/device/bcast.cuh"
#include "kernels/cuda/device/block.cuh"
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

// X@GRAD from v (the forward's Out, or its X: launch.h says which), g = Out@GRAD and the
// parameters a, b, c, each written as the CPU kernel writes it.
__device__ inline float act_grad(int op, float v, float g, float a, float b, float c) {
  switch (op) {
  case RILL_CUDA_RELU: return v > 0.0f ? g : 0.0f;
  case RILL_CUDA_SIGMOID: return g * v * (1.0f - v);
  case RILL_CUDA_RELU6: return v > 0.0f && v < a ? g : 0.0f;
  case RILL_CUDA_LEAKY_RELU: return (v >= 0.0f ? 1.0f : a) * g;
  case RILL_CUDA_EXP: return g * v;
  case RILL_CUDA_SQRT: return 0.5f * g / v;
  case RILL_CUDA_SQUARE: return 2.0f * v * g;
  case RILL_CUDA_HARD_SIGMOID: return (v > 0.0f && v < 1.0f ? a : 0.0f) * g;
  case RILL_CUDA_HARD_SWISH: {
    float t = v + c, q = (2.0f * v + c) / b;
    return (t >= a ? 1.0f : (t > 0.0f ? q : 0.0f)) * g;
  }
  case RILL_CUDA_SWISH: {
    float s = 1.0f / (1.0f + expf(-a * v)), o = v * s;
    return g * (a * o + s * (1.0f - a * o));
  }
  case RILL_CUDA_SILU: {
    float s = 1.0f / (1.0f + expf(-v));
    return g * s * (1.0f + v * (1.0f - s));
  }
  case RILL_CUDA_GELU_ERF:
    return g * (0.5f * (1.0f + erff(v * 0.70710678118654752440f)) +
                v * 0.39894228040143267794f * expf(-0.5f * v * v));
  case RILL_CUDA_GELU_TANH: {
    const float k = 0.79788456080286535588f;
    float t = tanhf(k * (v + 0.044715f * v * v * v));
    return g * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * k * (1.0f + 0.134145f * v * v));
  }
  case RILL_CUDA_CLIP: return v > a && v < b ? g : 0.0f;
  case RILL_CUDA_LOG: return g / v;
  case RILL_CUDA_ABS: return g * (float)((v > 0.0f) - (v < 0.0f));
  case RILL_CUDA_RECIPROCAL: return g * -1.0f * v * v;
  case RILL_CUDA_SOFTPLUS: {
    float m = v < 0.0f ? 0.0f : v, e = expf(v - m);
    return g * e / (expf(-m) + e);
  }
  case RILL_CUDA_LOGSIGMOID: {
    float m = -v < 0.0f ? 0.0f : -v, e = expf(-v - m);
    return g * e / (expf(-m) + e);
  }
  case RILL_CUDA_ELU: return g * (float)(v > 0.0f) + g * a * expf(v) * (float)(v <= 0.0f);
  case RILL_CUDA_ZERO_GRAD: return 0.0f * g;
  case RILL_CUDA_COS: return -g * sinf(v);
  case RILL_CUDA_SIN: return g * cosf(v);
  case RILL_CUDA_ACOS: return -g / sqrtf(1.0f - v * v);
  case RILL_CUDA_ASIN: return g / sqrtf(1.0f - v * v);
  case RILL_CUDA_ATAN: return g / (1.0f + v * v);
  case RILL_CUDA_RSQRT: return -0.5f * g * v * v * v;  // v = Out
  case RILL_CUDA_SOFTSIGN: {
    float q = 1.0f + fabsf(v);
    return g / (q * q);
  }
  case RILL_CUDA_TANH_SHRINK: {
    float t = tanhf(v);
    return g * t * t;
  }
  case RILL_CUDA_SOFTSHRINK: return g * (float)((v > a) + (v < -a));
  case RILL_CUDA_HARD_SHRINK: return g * (float)((v < -a) + (v > a));
  case RILL_CUDA_THRESHOLDED_RELU: return g * (float)(v > a);
  case RILL_CUDA_SELU: return g * (v <= 0.0f ? v + a * b : a);  // v = Out
  case RILL_CUDA_BRELU: return g * (float)((v > a) * (v < b));
  case RILL_CUDA_SOFT_RELU: return g * (1.0f - expf(-v)) * (float)((v > -a) * (v < a));  // v = Out
  case RILL_CUDA_STANH: {
    float t = tanhf(a * v);
    return g * a * b * (1.0f - t * t);
  }
  case RILL_CUDA_ERF: return g * 1.12837916709551257390f * expf(-v * v);  // 2 / sqrt(pi)
  case RILL_CUDA_MISH: {
    float sp = mish_softplus(v, a), t = tanhf(sp), gsp = -expm1f(-sp);
    return g * (v * (1.0f - t * t) * gsp + t);
  }
  case RILL_CUDA_LOG1P: return g * (1.0f / (v + 1.0f));
  case RILL_CUDA_POW_FACTOR: return g * a * powf(v, a - 1.0f);
  default: return g * (1.0f - v * v);  // tanh
  }
}

__global__ void act_grad_map(int op, const float *v, const float *g, float *dx, int64_t n, float a, float b,
                             float c) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) dx[i] = act_grad(op, v[i], g[i], a, b, c);
}

// d(out)/d(x) * g (for_y false) or d(out)/d(y) * g, a and b being x's and y's elements.
__device__ inline float binary_grad(int op, bool for_y, float a, float b, float g) {
  switch (op) {
  case RILL_CUDA_ADD: return g;
  case RILL_CUDA_SUB: return for_y ? -g : g;
  case RILL_CUDA_DIV: return for_y ? -g * a / (b * b) : g / b;
  case RILL_CUDA_DIV_FROM_OUT: return for_y ? -g * a / b : g / b;
  case RILL_CUDA_MAX: return (a > b) != for_y ? g : 0.0f;
  case RILL_CUDA_MIN: return (a < b) != for_y ? g : 0.0f;
  case RILL_CUDA_POW: return for_y ? g * logf(a) * powf(a, b) : g * b * powf(a, b - 1.0f);
  default: return for_y ? g * a : g * b;  // mul
  }
}

// The operand has the output's shape: one gradient element per output element.
__global__ void binary_grad_full(int op, bool for_y, const float *x, const float *y,
                                 const float *g, float *dz, rill_cuda_bcast b) {
  for (int64_t i = first_index(); i < b.numel; i += grid_stride()) {
    int64_t xo, yo;
    bcast_offsets(b, i, &xo, &yo);
    dz[i] = binary_grad(op, for_y, x ? x[xo] : 0.0f, y[yo], g[i]);
  }
}

// The operand was broadcast: each of its elements sums the output elements it was spread
// to (in double). Its own dims are those with a non-zero stride (zs, the operand's
// strides); the others are walked for each element.

// Element j's offsets in the output, x and y along the operand's own dims.
__device__ inline void reduced_base(const rill_cuda_bcast &b, const int64_t *zs, int64_t j, int64_t *o, int64_t *xo,
                                    int64_t *yo) {
  int64_t ostride = 1;
  *o = *xo = *yo = 0;
  for (int d = b.n - 1; d >= 0; d--) {
    if (zs[d] != 0) {
      int64_t c = (j / zs[d]) % b.dims[d];
      *o += c * ostride;
      *xo += c * b.xs[d];
      *yo += c * b.ys[d];
    }
    ostride *= b.dims[d];
  }
}

// The contribution of spread position r (row-major over the dims the operand lacks) to
// the element whose offsets are (o, xo, yo).
__device__ inline double reduced_term(int op, bool for_y, const float *x, const float *y, const float *g,
                                      const rill_cuda_bcast &b, const int64_t *zs, int64_t r, int64_t o, int64_t xo,
                                      int64_t yo) {
  int64_t ostride = 1;
  for (int d = b.n - 1; d >= 0; d--) {
    if (zs[d] == 0) {
      int64_t c = r % b.dims[d];
      r /= b.dims[d];
      o += c * ostride;
      xo += c * b.xs[d];
      yo += c * b.ys[d];
    }
    ostride *= b.dims[d];
  }
  return binary_grad(op, for_y, x ? x[xo] : 0.0f, y[yo], g[o]);
}

// One thread an element: right when each sums few (a bias over a batch).
__global__ void binary_grad_reduced(int op, bool for_y, const float *x, const float *y,
                                    const float *g, float *dz, int64_t zn, rill_cuda_bcast b) {
  const int64_t *zs = for_y ? b.ys : b.xs;
  int64_t spread = b.numel / zn;
  for (int64_t j = first_index(); j < zn; j += grid_stride()) {
    int64_t o, xo, yo;
    reduced_base(b, zs, j, &o, &xo, &yo);
    double s = 0.0;
    for (int64_t r = 0; r < spread; r++) s += reduced_term(op, for_y, x, y, g, b, zs, r, o, xo, yo);
    dz[j] = (float)s;
  }
}

// One block an element: when each sums many (a scalar operand of a large tensor), the
// block's threads share its sum, added up by a tree in double.
__global__ void binary_grad_reduced_blocks(int op, bool for_y, const float *x, const float *y, const float *g, float *dz,
                                           int64_t zn, rill_cuda_bcast b) {
  __shared__ double part[kThreads];
  const int64_t *zs = for_y ? b.ys : b.xs;
  int64_t spread = b.numel / zn;
  for (int64_t j = blockIdx.x; j < zn; j += gridDim.x) {
    int64_t o, xo, yo;
    reduced_base(b, zs, j, &o, &xo, &yo);
    double s = 0.0;
    for (int64_t r = threadIdx.x; r < spread; r += blockDim.x) s += reduced_term(op, for_y, x, y, g, b, zs, r, o, xo, yo);
    s = block_sum(s, part);
    if (threadIdx.x == 0) dz[j] = (float)s;
  }
}

__global__ void fill_from_scalar(float *out, int64_t n, const float *g, float divisor) {
  float v = g[0] / divisor;
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = v;
}

// From this many output elements per operand element, a block an operand element.
constexpr int64_t kSpreadForBlocks = 4096;

}  // namespace

extern "C" cudaError_t rill_cuda_act_grad_f32(int op, const float *v, const float *g, float *dx,
                                              int64_t n, float a, float b, float c, cudaStream_t s) {
  switch (op) {
  case RILL_CUDA_RELU: case RILL_CUDA_SIGMOID: case RILL_CUDA_TANH: case RILL_CUDA_RELU6:
  case RILL_CUDA_LEAKY_RELU: case RILL_CUDA_EXP: case RILL_CUDA_SQRT: case RILL_CUDA_SQUARE:
  case RILL_CUDA_HARD_SIGMOID: case RILL_CUDA_HARD_SWISH: case RILL_CUDA_SWISH: case RILL_CUDA_SILU:
  case RILL_CUDA_GELU_ERF: case RILL_CUDA_GELU_TANH: case RILL_CUDA_CLIP: case RILL_CUDA_LOG:
  case RILL_CUDA_ABS: case RILL_CUDA_RECIPROCAL: case RILL_CUDA_SOFTPLUS: case RILL_CUDA_LOGSIGMOID:
  case RILL_CUDA_ELU: case RILL_CUDA_ZERO_GRAD: case RILL_CUDA_COS: case RILL_CUDA_SIN: case RILL_CUDA_ACOS:
  case RILL_CUDA_ASIN: case RILL_CUDA_ATAN: case RILL_CUDA_RSQRT: case RILL_CUDA_SOFTSIGN: case RILL_CUDA_TANH_SHRINK:
  case RILL_CUDA_SOFTSHRINK: case RILL_CUDA_HARD_SHRINK: case RILL_CUDA_THRESHOLDED_RELU: case RILL_CUDA_SELU:
  case RILL_CUDA_BRELU: case RILL_CUDA_SOFT_RELU: case RILL_CUDA_STANH: case RILL_CUDA_ERF: case RILL_CUDA_MISH:
  case RILL_CUDA_LOG1P: case RILL_CUDA_POW_FACTOR: break;
  default: return cudaErrorInvalidValue;
  }
  if (n == 0) return cudaSuccess;
  act_grad_map<<<blocks_for(n), kThreads, 0, s>>>(op, v, g, dx, n, a, b, c);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_binary_grad_f32(int op, bool for_y, const float *x,
                                                 const float *y, const float *g, float *dz,
                                                 int64_t zn, const rill_cuda_bcast *b,
                                                 cudaStream_t s) {
  switch (op) {
  case RILL_CUDA_ADD: case RILL_CUDA_SUB: case RILL_CUDA_MUL: case RILL_CUDA_DIV: case RILL_CUDA_DIV_FROM_OUT:
  case RILL_CUDA_MAX: case RILL_CUDA_MIN: case RILL_CUDA_POW: break;
  default: return cudaErrorInvalidValue;
  }
  if (zn == 0) return cudaSuccess;
  if (b->numel == 0) return cudaMemsetAsync(dz, 0, (size_t)zn * sizeof(float), s);
  if (zn == b->numel)
    binary_grad_full<<<blocks_for(zn), kThreads, 0, s>>>(op, for_y, x, y, g, dz, *b);
  else if (b->numel / zn >= kSpreadForBlocks)
    binary_grad_reduced_blocks<<<(unsigned)(zn < 65536 ? zn : 65536), kThreads, 0, s>>>(op, for_y, x, y, g, dz, zn, *b);
  else
    binary_grad_reduced<<<blocks_for(zn), kThreads, 0, s>>>(op, for_y, x, y, g, dz, zn, *b);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_fill_from_scalar_f32(float *out, int64_t n, const float *g,
                                                      float divisor, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  fill_from_scalar<<<blocks_for(n), kThreads, 0, s>>>(out, n, g, divisor);
  return cudaGetLastError();
}
