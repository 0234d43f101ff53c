// softmax and log_softmax along any axis, and their gradients. x is viewed as [outer, n,
// inner]. Along the last axis (inner 1) a block takes a row and reduces over its threads;
// otherwise a thread takes an (outer, inner) position and walks n as the CPU kernels
// walk it. softmax clips a shifted logit below -64 to -64, as the CPU's (Paddle's) does,
// so no probability underflows to 0 and its log stays finite; log_softmax does not clip.
#include <cmath>

#include "kernels/cuda/device/block.cuh"
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

__device__ inline float clip64(float v) { return v < -64.0f ? -64.0f : v; }  // NaN kept

// One block a row: its maximum (a running one from the row's first element, as the
// CPU's), the sum of the exponentials, then the quotients or the logs.
__global__ void softmax_rows(const float *x, float *out, int64_t rows, int64_t cols, bool log) {
  __shared__ float red[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *row = x + r * cols;
    float *orow = out + r * cols;
    float m = row[0];
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = row[c] > m ? row[c] : m;
    m = block_max(m, red);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float e = log ? expf(row[c] - m) : expf(clip64(row[c] - m));
      if (!log) orow[c] = e;
      s += e;
    }
    s = block_sum(s, red);
    if (log) {
      float shift = m + logf(s);
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) orow[c] = row[c] - shift;
    } else {
      float inv = 1.0f / s;
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) orow[c] *= inv;
    }
  }
}

// One thread an (outer, inner) position, walking n with stride inner as the CPU does.
__global__ void softmax_strided(const float *x, float *out, int64_t outer, int64_t n, int64_t inner, bool log) {
  for (int64_t t = first_index(); t < outer * inner; t += grid_stride()) {
    int64_t o = t / inner, j = t - o * inner;
    const float *a = x + o * n * inner + j;
    float *d = out + o * n * inner + j;
    float m = a[0], s = 0.0f;
    for (int64_t i = 1; i < n; i++) m = a[i * inner] > m ? a[i * inner] : m;
    if (log) {
      for (int64_t i = 0; i < n; i++) s += expf(a[i * inner] - m);
      float shift = m + logf(s);
      for (int64_t i = 0; i < n; i++) d[i * inner] = a[i * inner] - shift;
    } else {
      for (int64_t i = 0; i < n; i++) {
        float e = expf(clip64(a[i * inner] - m));
        d[i * inner] = e;
        s += e;
      }
      for (int64_t i = 0; i < n; i++) d[i * inner] /= s;
    }
  }
}

// One block a row: s = sum(g * out) (softmax, in double) or sum(g) (log_softmax), then
// dx = (g - s) * out or g - exp(out) * s.
__global__ void softmax_grad_rows(const float *out, const float *g, float *dx, int64_t rows, int64_t cols, bool log) {
  __shared__ double red[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *orow = out + r * cols, *grow = g + r * cols;
    float *drow = dx + r * cols;
    double s = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += log ? (double)grow[c] : (double)grow[c] * orow[c];
    float sum = (float)block_sum(s, red);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      drow[c] = log ? grow[c] - expf(orow[c]) * sum : (grow[c] - sum) * orow[c];
  }
}

__global__ void softmax_grad_strided(const float *out, const float *g, float *dx, int64_t outer, int64_t n,
                                     int64_t inner, bool log) {
  for (int64_t t = first_index(); t < outer * inner; t += grid_stride()) {
    int64_t o = t / inner, j = t - o * inner, base = o * n * inner + j;
    const float *y = out + base, *gr = g + base;
    float *d = dx + base;
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += log ? gr[i * inner] : y[i * inner] * gr[i * inner];
    for (int64_t i = 0; i < n; i++)
      d[i * inner] = log ? gr[i * inner] - expf(y[i * inner]) * s : y[i * inner] * (gr[i * inner] - s);
  }
}

unsigned row_blocks(int64_t rows) { return (unsigned)(rows < 65536 ? rows : 65536); }

}  // namespace

extern "C" cudaError_t rill_cuda_softmax_f32(const float *x, float *out, int64_t outer, int64_t n, int64_t inner,
                                             bool log, cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  if (inner == 1)
    softmax_rows<<<row_blocks(outer), kThreads, 0, s>>>(x, out, outer, n, log);
  else
    softmax_strided<<<blocks_for(outer * inner), kThreads, 0, s>>>(x, out, outer, n, inner, log);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_softmax_grad_f32(const float *out, const float *g, float *dx, int64_t outer,
                                                  int64_t n, int64_t inner, bool log, cudaStream_t s) {
  if (outer * n * inner == 0) return cudaSuccess;
  if (inner == 1)
    softmax_grad_rows<<<row_blocks(outer), kThreads, 0, s>>>(out, g, dx, outer, n, log);
  else
    softmax_grad_strided<<<blocks_for(outer * inner), kThreads, 0, s>>>(out, g, dx, outer, n, inner, log);
  return cudaGetLastError();
}
