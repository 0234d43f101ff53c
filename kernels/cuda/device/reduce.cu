// Reductions: mean over a whole tensor, reduce_sum / reduce_mean and the folds (max,
// min, prod, all, any) over any dims and their gradients.
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/device/block.cuh"
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

constexpr int kMeanThreads = 1024;

__global__ void mean_one_block(const float *x, int64_t n, float *out) {
  __shared__ double part[kMeanThreads];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += x[i];
  s = block_sum(s, part);
  if (threadIdx.x == 0) out[0] = (float)(s / (double)n);
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
    s = block_sum(s, part);
    if (threadIdx.x == 0) out[o] = mean ? (float)(s / (double)r.count) : (float)s;
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

template <typename T>
__device__ inline T fold(int op, T a, T b) {
  switch (op) {
  case RILL_CUDA_FOLD_MAX: return b > a ? b : a;
  case RILL_CUDA_FOLD_MIN: return b < a ? b : a;
  default: return a * b;
  }
}

template <>
__device__ inline bool fold<bool>(int op, bool a, bool b) {
  return op == RILL_CUDA_FOLD_ALL ? a && b : a || b;
}

// One block an output element: its threads fold strided shares, then a tree folds the
// shares (max, min, all and any do not depend on the order); prod folds in X's order on
// the block's first thread.
template <typename T>
__global__ void reduce_fold_blocks(const T *x, T *out, rill_cuda_reduce r, int op, T init) {
  __shared__ int64_t raw[kThreads];  // 8-byte slots, one a thread, for every T
  T *part = (T *)raw;
  int64_t xs[RILL_CUDA_BCAST_DIMS];
  int64_t stride = 1;
  for (int k = r.n - 1; k >= 0; k--) {
    xs[k] = stride;
    stride *= r.dims[k];
  }
  bool serial = op == RILL_CUDA_FOLD_PROD;
  for (int64_t o = blockIdx.x; o < r.onumel; o += gridDim.x) {
    const T *base = x + run_offset(r, xs, o, false);
    T a = init;
    if (!serial || threadIdx.x == 0)
      for (int64_t j = serial ? 0 : threadIdx.x; j < r.count; j += serial ? 1 : blockDim.x)
        a = fold(op, a, base[run_offset(r, xs, j, true)]);
    part[threadIdx.x] = a;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0 && !serial; w /= 2) {
      if ((int)threadIdx.x < w) part[threadIdx.x] = fold(op, part[threadIdx.x], part[threadIdx.x + w]);
      __syncthreads();
    }
    if (threadIdx.x == 0) out[o] = part[0];
    __syncthreads();
  }
}

template <typename T>
cudaError_t fold_typed(const void *x, void *out, int op, T init, const rill_cuda_reduce &r, cudaStream_t s) {
  unsigned blocks = (unsigned)(r.onumel < 65536 ? r.onumel : 65536);
  reduce_fold_blocks<T><<<blocks, kThreads, 0, s>>>((const T *)x, (T *)out, r, op, init);
  return cudaGetLastError();
}

template <typename T>
cudaError_t fold_numbers(const void *x, void *out, int op, T least, T greatest, const rill_cuda_reduce &r,
                         cudaStream_t s) {
  switch (op) {
  case RILL_CUDA_FOLD_MAX: return fold_typed<T>(x, out, op, least, r, s);
  case RILL_CUDA_FOLD_MIN: return fold_typed<T>(x, out, op, greatest, r, s);
  case RILL_CUDA_FOLD_PROD: return fold_typed<T>(x, out, op, (T)1, r, s);
  default: return cudaErrorInvalidValue;
  }
}

__global__ void reduce_out_grad(const float *x, const float *out, const float *g, float *dx, rill_cuda_reduce r,
                                bool prod) {
  for (int64_t i = first_index(); i < r.xnumel; i += grid_stride()) {
    int64_t rem = i, oo = 0;
    for (int k = r.n - 1; k >= 0; k--) {
      oo += (rem % r.dims[k]) * r.os[k];
      rem /= r.dims[k];
    }
    dx[i] = prod ? g[oo] * out[oo] / x[i] : (x[i] == out[oo] ? g[oo] : 0.0f);
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_reduce_fold(const void *x, void *out, int dtype, int op, const rill_cuda_reduce *r,
                                             cudaStream_t s) {
  if (r->onumel == 0) return cudaSuccess;
  if (r->n < 1 || r->n > RILL_CUDA_BCAST_DIMS) return cudaErrorInvalidValue;
  switch (dtype) {
  case kFp32: return fold_numbers<float>(x, out, op, -INFINITY, INFINITY, *r, s);
  case kFp64: return fold_numbers<double>(x, out, op, -(double)INFINITY, (double)INFINITY, *r, s);
  case kInt32: return fold_numbers<int32_t>(x, out, op, INT32_MIN, INT32_MAX, *r, s);
  case kInt64: return fold_numbers<int64_t>(x, out, op, INT64_MIN, INT64_MAX, *r, s);
  case kBool:
    if (op != RILL_CUDA_FOLD_ALL && op != RILL_CUDA_FOLD_ANY) return cudaErrorInvalidValue;
    return fold_typed<bool>(x, out, op, op == RILL_CUDA_FOLD_ALL, *r, s);
  default: return cudaErrorInvalidValue;
  }
}

extern "C" cudaError_t rill_cuda_reduce_out_grad_f32(const float *x, const float *out, const float *dout, float *dx,
                                                     const rill_cuda_reduce *r, bool prod, cudaStream_t s) {
  if (r->xnumel == 0) return cudaSuccess;
  if (r->n < 1 || r->n > RILL_CUDA_BCAST_DIMS) return cudaErrorInvalidValue;
  reduce_out_grad<<<blocks_for(r->xnumel), kThreads, 0, s>>>(x, out, dout, dx, *r, prod);
  return cudaGetLastError();
}

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
