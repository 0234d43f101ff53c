// sequence_pool and its gradient: one thread an (sequence, column), walking the
// sequence's rows in order as the CPU kernel walks them, so sums and maxima come out
// bit for bit the CPU's.
#include <cmath>

#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

__global__ void seqpool(const float *x, float *out, int32_t *mi, rill_cuda_seqpool p) {
  for (int64_t t = first_index(); t < p.nseq * p.width; t += grid_stride()) {
    int64_t i = t / p.width, k = t - i * p.width, a = p.offsets[i], b = p.offsets[i + 1];
    if (a == b) {
      out[t] = p.pad;
      if (mi) mi[t] = -1;
      continue;
    }
    const float *col = x + k;
    float o;
    switch (p.kind) {
    case RILL_CUDA_SEQPOOL_LAST: o = col[(b - 1) * p.width]; break;
    case RILL_CUDA_SEQPOOL_FIRST: o = col[a * p.width]; break;
    case RILL_CUDA_SEQPOOL_MAX: {
      int64_t at = a;
      o = col[a * p.width];
      for (int64_t r = a + 1; r < b; r++)
        if (col[r * p.width] > o) {
          o = col[r * p.width];
          at = r;
        }
      if (mi) mi[t] = (int32_t)at;
      break;
    }
    default: {
      o = col[a * p.width];
      for (int64_t r = a + 1; r < b; r++) o += col[r * p.width];
      if (p.kind == RILL_CUDA_SEQPOOL_AVERAGE) o /= (float)(b - a);
      else if (p.kind == RILL_CUDA_SEQPOOL_SQRT) o /= sqrtf((float)(b - a));
    }
    }
    out[t] = o;
  }
}

__global__ void seqpool_grad(const float *g, const int32_t *mi, float *dx, rill_cuda_seqpool p) {
  for (int64_t t = first_index(); t < p.nseq * p.width; t += grid_stride()) {
    int64_t i = t / p.width, k = t - i * p.width, a = p.offsets[i], b = p.offsets[i + 1];
    if (a == b) continue;
    switch (p.kind) {
    case RILL_CUDA_SEQPOOL_LAST: dx[(b - 1) * p.width + k] = g[t]; break;
    case RILL_CUDA_SEQPOOL_FIRST: dx[a * p.width + k] = g[t]; break;
    case RILL_CUDA_SEQPOOL_MAX: dx[(int64_t)mi[t] * p.width + k] = g[t]; break;  // checked on the host
    default: {
      float div = p.kind == RILL_CUDA_SEQPOOL_AVERAGE ? (float)(b - a)
                  : p.kind == RILL_CUDA_SEQPOOL_SQRT  ? sqrtf((float)(b - a))
                                                      : 1.0f;
      for (int64_t r = a; r < b; r++) dx[r * p.width + k] = g[t] / div;
    }
    }
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_seqpool_f32(const float *x, float *out, int32_t *max_index, const rill_cuda_seqpool *p,
                                             cudaStream_t s) {
  if (p->nseq * p->width == 0) return cudaSuccess;
  seqpool<<<blocks_for(p->nseq * p->width), kThreads, 0, s>>>(x, out, max_index, *p);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_seqpool_grad_f32(const float *dout, const int32_t *max_index, float *dx,
                                                  const rill_cuda_seqpool *p, cudaStream_t s) {
  if (p->nseq * p->width == 0) return cudaSuccess;
  if (p->kind == RILL_CUDA_SEQPOOL_MAX && !max_index) return cudaErrorInvalidValue;
  seqpool_grad<<<blocks_for(p->nseq * p->width), kThreads, 0, s>>>(dout, max_index, dx, *p);
  return cudaGetLastError();
}
