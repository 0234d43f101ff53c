// cross_entropy on probabilities X [rows, n] (the class dim last) and
// softmax_with_cross_entropy on [outer, n, inner], with their gradients: hard labels
// (int64 or int32, ignore_index) or soft ones. A hard label outside [0, n) that is
// not ignore_index is not read: the first such row is kept in *bad (atomicMin) for the
// host to report.
#include <cmath>

#include "kernels/cuda/device/block.cuh"
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

// Paddle's TolerableValue: log(0) = -inf becomes -1e20 (and +inf 1e20).
__device__ inline float tolerable(float v) { return isinf(v) ? (v > 0 ? 1e20f : -1e20f) : v; }

__device__ inline int64_t label_at(const void *labels, bool i64, int64_t r) {
  return i64 ? ((const int64_t *)labels)[r] : ((const int32_t *)labels)[r];
}

// The row's label, or -1 for ignore_index; a bad one is recorded and gives -2.
__device__ inline int64_t checked_label(const rill_cuda_ce &p, int64_t r) {
  int64_t l = label_at(p.labels, p.labels_i64, r);
  if (l == p.ignore_index) return -1;
  if (l < 0 || l >= p.n) {
    atomicMin(p.bad, (unsigned long long)r);
    return -2;
  }
  return l;
}

__global__ void ce_forward(rill_cuda_ce p, float *loss) {
  for (int64_t r = first_index(); r < p.rows; r += grid_stride()) {
    const float *x = p.x + r * p.n;
    if (p.soft) {
      const float *l = p.soft + r * p.n;
      float s = 0.0f;
      for (int64_t k = 0; k < p.n; k++) s += tolerable(logf(x[k])) * l[k];
      loss[r] = -s;
    } else {
      int64_t l = checked_label(p, r);
      loss[r] = l >= 0 ? -tolerable(logf(x[l])) : 0.0f;
    }
  }
}

__global__ void ce_backward(rill_cuda_ce p, const float *dy, float *dx) {
  int64_t total = p.rows * p.n;
  for (int64_t i = first_index(); i < total; i += grid_stride()) {
    int64_t r = i / p.n, k = i % p.n;
    if (p.soft) {
      dx[i] = -p.soft[i] * dy[r] / p.x[i];
    } else {
      // the row's first thread records a bad label; every thread skips it
      int64_t l = k == 0 ? checked_label(p, r) : label_at(p.labels, p.labels_i64, r);
      dx[i] = l == k && l != p.ignore_index ? -dy[r] / p.x[i] : 0.0f;
    }
  }
}

// ---- softmax_with_cross_entropy: [outer, n, inner], a row per (outer, inner) ----

__device__ inline float softmax_clip(float v) { return v < -64.0f ? -64.0f : v; }

// The label of row r: -1 for ignore_index, -2 (and recorded) when outside [0, n).
__device__ inline int64_t swce_label(const rill_cuda_swce &p, int64_t r, bool record) {
  int64_t l = label_at(p.labels, p.labels_i64, r);
  if (l == p.ignore_index) return -1;
  if (l < 0 || l >= p.n) {
    if (record) atomicMin(p.bad, (unsigned long long)r);
    return -2;
  }
  return l;
}

// One thread a row, in the CPU kernel's order: the max, the label's shifted logit, the
// exponentials and their sum (soft: label-weighted sums), the loss, the normalisation.
// Without use_softmax the input already holds probabilities: Softmax is a copy.
__global__ void swce_forward(rill_cuda_swce p, float *sm, float *loss) {
  int64_t rows = p.outer * p.inner;
  for (int64_t r = first_index(); r < rows; r += grid_stride()) {
    int64_t o = r / p.inner, j = r % p.inner, base = o * p.n * p.inner + j, in = p.inner;
    const float *a = p.x + base;
    float *d = sm + base;
    int64_t lbl = p.soft ? 0 : swce_label(p, r, true);
    if (!p.use_softmax) {
      float s = 0.0f;
      if (p.soft)
        for (int64_t i = 0; i < p.n; i++) s += tolerable(logf(a[i * in])) * p.soft[base + i * in];
      else
        s = lbl >= 0 ? tolerable(logf(a[lbl * in])) : 0.0f;
      loss[r] = -s;
      for (int64_t i = 0; i < p.n; i++) d[i * in] = a[i * in];
      continue;
    }
    float mx = a[0];
    for (int64_t i = 1; i < p.n; i++) mx = a[i * in] > mx ? a[i * in] : mx;
    float xl = !p.soft && lbl >= 0 ? softmax_clip(a[lbl * in] - mx) : 0.0f, lsum = 0.0f, sum = 0.0f;
    for (int64_t i = 0; i < p.n; i++) {
      float v = softmax_clip(a[i * in] - mx);
      if (p.soft) {
        float l = p.soft[base + i * in];
        xl += l * v;
        lsum += l;
      }
      float e = expf(v);
      d[i * in] = e;
      sum += e;
    }
    float lse = logf(sum);
    loss[r] = p.soft ? lse * lsum - xl : (lbl >= 0 ? lse - xl : 0.0f);
    float inv = 1.0f / sum;
    for (int64_t i = 0; i < p.n; i++) d[i * in] *= inv;
  }
}

// One block a row, for many classes along the last axis with use_softmax: swce_forward's
// quantities, each reduced over the block's threads. The maximum is the CPU's running
// one (an element replaces it only when greater, from the row's first element, so NaN
// enters only as that element); the sums are a tree in float, so they round otherwise
// than the CPU's running sums.
__global__ void swce_forward_rows(rill_cuda_swce p, float *sm, float *loss) {
  __shared__ float red[kThreads];
  for (int64_t r = blockIdx.x; r < p.outer; r += gridDim.x) {
    const float *a = p.x + r * p.n;
    float *d = sm + r * p.n;
    int64_t lbl = p.soft ? 0 : swce_label(p, r, threadIdx.x == 0);
    float mx = a[0];
    for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) mx = a[i] > mx ? a[i] : mx;
    mx = block_max(mx, red);
    float xl = 0.0f, lsum = 0.0f, sum = 0.0f;
    for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) {
      float v = softmax_clip(a[i] - mx);
      if (p.soft) {
        float l = p.soft[r * p.n + i];
        xl += l * v;
        lsum += l;
      }
      float e = expf(v);
      d[i] = e;
      sum += e;
    }
    sum = block_sum(sum, red);
    if (p.soft) {
      xl = block_sum(xl, red);
      lsum = block_sum(lsum, red);
    } else {
      xl = lbl >= 0 ? softmax_clip(a[lbl] - mx) : 0.0f;
    }
    if (threadIdx.x == 0) {
      float lse = logf(sum);
      loss[r] = p.soft ? lse * lsum - xl : (lbl >= 0 ? lse - xl : 0.0f);
    }
    float inv = 1.0f / sum;
    for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x) d[i] *= inv;
    __syncthreads();
  }
}

// One thread an element of Logits@GRAD: (softmax - label) * g, or without use_softmax
// the gradient of cross entropy on probabilities.
__global__ void swce_backward(rill_cuda_swce p, const float *g, float *dx) {
  int64_t total = p.outer * p.n * p.inner;
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    int64_t j = e % p.inner, i = (e / p.inner) % p.n, o = e / (p.inner * p.n), r = o * p.inner + j;
    float y = p.x[e], gr = g[r];
    if (p.soft) {
      dx[e] = p.use_softmax ? (y - p.soft[e]) * gr : -p.soft[e] * gr / y;
      continue;
    }
    int64_t lbl = swce_label(p, r, i == 0);
    if (lbl < 0)
      dx[e] = 0.0f;
    else if (p.use_softmax)
      dx[e] = i == lbl ? y * gr - gr : y * gr;
    else
      dx[e] = i == lbl ? -gr / y : 0.0f;
  }
}

// The labels that normalize counts, summed by one block into *norm as a float.
__global__ void sce_count(const float *l, int64_t n, int32_t ignore, float *norm) {
  __shared__ int64_t part[kThreads];
  int64_t c = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    float diff = l[i] - (float)ignore;
    c += diff < -1e-6f || diff > 1e-6f;
  }
  c = block_sum(c, part);
  if (threadIdx.x == 0) *norm = (float)c;
}

__global__ void sce_map(const float *x, const float *l, const float *g, float *out, int64_t n, int32_t ignore,
                        const float *norm) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float v = x[i], o;
    if ((int32_t)l[i] == ignore)
      o = 0.0f;
    else if (g)
      o = g[i] * (1.0f / (1.0f + expf(-v)) - l[i]);
    else
      o = (v > 0.0f ? v : 0.0f) - v * l[i] + logf(1.0f + expf(-fabsf(v)));
    out[i] = norm ? o / *norm : o;
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_sce_f32(const float *x, const float *label, const float *dout, float *out, int64_t n,
                                         int32_t ignore_index, float *norm, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (norm) sce_count<<<1, kThreads, 0, s>>>(label, n, ignore_index, norm);
  sce_map<<<blocks_for(n), kThreads, 0, s>>>(x, label, dout, out, n, ignore_index, norm);
  return cudaGetLastError();
}

// From this many classes (the last axis, with use_softmax), a block a row: one thread
// walking 10^5 classes alone would leave the card idle.
constexpr int64_t kSwceBlockClasses = 1024;

extern "C" cudaError_t rill_cuda_swce_f32(const rill_cuda_swce *p, float *softmax, float *loss, cudaStream_t s) {
  int64_t rows = p->outer * p->inner;
  if (rows == 0 || p->n == 0) return cudaSuccess;
  if (p->inner == 1 && p->use_softmax && p->n >= kSwceBlockClasses)
    swce_forward_rows<<<(unsigned)(rows < 65536 ? rows : 65536), kThreads, 0, s>>>(*p, softmax, loss);
  else
    swce_forward<<<blocks_for(rows), kThreads, 0, s>>>(*p, softmax, loss);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_swce_grad_f32(const rill_cuda_swce *p, const float *loss_grad, float *dx,
                                               cudaStream_t s) {
  int64_t total = p->outer * p->n * p->inner;
  if (total == 0) return cudaSuccess;
  swce_backward<<<blocks_for(total), kThreads, 0, s>>>(*p, loss_grad, dx);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_cross_entropy_f32(const rill_cuda_ce *p, float *loss, cudaStream_t s) {
  if (p->rows == 0) return cudaSuccess;
  ce_forward<<<blocks_for(p->rows), kThreads, 0, s>>>(*p, loss);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_cross_entropy_grad_f32(const rill_cuda_ce *p, const float *dy, float *dx,
                                                        cudaStream_t s) {
  if (p->rows * p->n == 0) return cudaSuccess;
  ce_backward<<<blocks_for(p->rows * p->n), kThreads, 0, s>>>(*p, dy, dx);
  return cudaGetLastError();
}
