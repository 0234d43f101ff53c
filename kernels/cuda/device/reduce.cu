// Reductions: mean over a whole tensor, reduce_sum / reduce_mean over any dims and their
// gradient, softmax over each row.
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

// X's offset of the element of index j over the runs whose output stride is zero (reduced
// == true) or not (false), row-major over those runs; x strides are X's, run by run.
__device__ inline int64_t run_offset(const rill_cuda_reduce &r, const int64_t *xs, int64_t j, bool reduced) {
  int64_t off = 0;
  for (int k = r.n - 1; k >= 0; k--) {
    if ((r.os[k] == 0) != reduced) continue;
    off += (j % r.dims[k]) * xs[k];
    j /= r.dims[k];
  }
  return off;
}

// One block an output element (grid-stride over them): the block's threads sum the X
// elements that reduce to it in double, then a tree adds the threads' parts.
__global__ void reduce_sum_blocks(const float *x, float *out, rill_cuda_reduce r, bool mean) {
  __shared__ double part[kThreads];
  int64_t xs[RILL_CUDA_BCAST_DIMS];
  int64_t stride = 1;
  for (int k = r.n - 1; k >= 0; k--) {
    xs[k] = stride;
    stride *= r.dims[k];
  }
  for (int64_t o = blockIdx.x; o < r.onumel; o += gridDim.x) {
    const float *base = x + run_offset(r, xs, o, false);
    double s = 0.0;
    for (int64_t j = threadIdx.x; j < r.count; j += blockDim.x) s += base[run_offset(r, xs, j, true)];
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = mean ? (float)(part[0] / (double)r.count) : (float)part[0];
    __syncthreads();
  }
}

// One thread an element of X: its output element's offset from its run indexes.
__global__ void reduce_grad_elems(const float *g, float *dx, rill_cuda_reduce r, float scale) {
  for (int64_t i = first_index(); i < r.xnumel; i += grid_stride()) {
    int64_t rem = i, oo = 0;
    for (int k = r.n - 1; k >= 0; k--) {
      oo += (rem % r.dims[k]) * r.os[k];
      rem /= r.dims[k];
    }
    dx[i] = g[oo] * scale;
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_reduce_sum_f32(const float *x, float *out, const rill_cuda_reduce *r, bool mean,
                                                cudaStream_t s) {
  if (r->onumel == 0) return cudaSuccess;
  if (r->n < 1 || r->n > RILL_CUDA_BCAST_DIMS) return cudaErrorInvalidValue;
  unsigned blocks = (unsigned)(r->onumel < 65536 ? r->onumel : 65536);
  reduce_sum_blocks<<<blocks, kThreads, 0, s>>>(x, out, *r, mean);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_reduce_grad_f32(const float *dout, float *dx, const rill_cuda_reduce *r, float scale,
                                                 cudaStream_t s) {
  if (r->xnumel == 0) return cudaSuccess;
  if (r->n < 1 || r->n > RILL_CUDA_BCAST_DIMS) return cudaErrorInvalidValue;
  reduce_grad_elems<<<blocks_for(r->xnumel), kThreads, 0, s>>>(dout, dx, *r, scale);
  return cudaGetLastError();
}

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
