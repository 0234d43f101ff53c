// Reductions: mean over a whole tensor, softmax over each row.
#include <cfloat>

#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

constexpr int kMeanThreads = 1024;

__global__ void mean_one_block(const float *x, int64_t n, float *out) {
  __shared__ double part[kMeanThreads];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = (float)(part[0] / (double)n);
}

// One block a row: the row's max, then the sum of exp(x - max), then the quotients.
__global__ void softmax_rows(const float *x, float *out, int64_t cols) {
  __shared__ float red[kThreads];
  const float *row = x + blockIdx.x * cols;
  float *orow = out + blockIdx.x * cols;
  float m = -FLT_MAX;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + w]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float e = expf(row[c] - m);
    orow[c] = e;
    s += e;
  }
  red[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  float inv = 1.0f / red[0];
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) orow[c] *= inv;
}

}  // namespace

extern "C" cudaError_t rill_cuda_mean_f32(const float *x, int64_t n, float *out, cudaStream_t s) {
  if (n == 0) return cudaErrorInvalidValue;
  mean_one_block<<<1, kMeanThreads, 0, s>>>(x, n, out);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_softmax_f32(const float *x, float *out, int64_t rows,
                                             int64_t cols, cudaStream_t s) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 0x7fffffff) return cudaErrorInvalidValue;
  softmax_rows<<<(unsigned)rows, kThreads, 0, s>>>(x, out, cols);
  return cudaGetLastError();
}
