// cross_entropy and its gradient on probabilities X [rows, n] (the class dim last): hard
// labels (int64 or int32, ignore_index) or soft ones. A hard label outside [0, n) that is
// not ignore_index is not read: the first such row is kept in *bad (atomicMin) for the
// host to report.
#include <cmath>

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

}  // namespace

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
