// The metrics: top_k over each row, accuracy of top-k indices against labels, and
// arg_max / arg_min along a dim.
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

// a ranks above b: greater, or NaN above every number (the CPU kernel's order).
__device__ inline bool ranks_above(float a, float b) { return a > b || (a != a && b == b); }

// libstdc++'s __adjust_heap then __push_heap on the pairs (hv, hi)[0, len), as the CPU
// kernel (kernels/cpu/top_k.c) runs them: "less" is ranks_above.
__device__ inline void adjust_heap(float *hv, int64_t *hi, int64_t hole, int64_t len, float v, int64_t vi) {
  int64_t top = hole, child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (ranks_above(hv[child], hv[child - 1])) child--;
    hv[hole] = hv[child];
    hi[hole] = hi[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    hv[hole] = hv[child - 1];
    hi[hole] = hi[child - 1];
    hole = child - 1;
  }
  for (int64_t parent = (hole - 1) / 2; hole > top && ranks_above(hv[parent], v); parent = (hole - 1) / 2) {
    hv[hole] = hv[parent];
    hi[hole] = hi[parent];
    hole = parent;
  }
  hv[hole] = v;
  hi[hole] = vi;
}

// One thread a row: the CPU's heap selection of the k best (Paddle's std::partial_sort),
// kept in the row's own outputs, so ties come out in the CPU's order for every k.
__global__ void top_k_rows(const float *x, float *out, int64_t *idx, int64_t rows, int64_t n, int64_t k) {
  for (int64_t r = first_index(); r < rows; r += grid_stride()) {
    const float *row = x + r * n;
    float *hv = out + r * k;
    int64_t *hi = idx + r * k;
    for (int64_t j = 0; j < k; j++) {
      hv[j] = row[j];
      hi[j] = j;
    }
    for (int64_t parent = (k - 2) / 2; k > 1; parent--) {
      adjust_heap(hv, hi, parent, k, hv[parent], hi[parent]);
      if (parent == 0) break;
    }
    for (int64_t j = k; j < n; j++)
      if (ranks_above(row[j], hv[0])) adjust_heap(hv, hi, 0, k, row[j], j);
    for (int64_t len = k; len > 1; len--) {
      float v = hv[len - 1];
      int64_t vi = hi[len - 1];
      hv[len - 1] = hv[0];
      hi[len - 1] = hi[0];
      adjust_heap(hv, hi, 0, len - 1, v, vi);
    }
  }
}

constexpr int kAccThreads = 256;

// One block: the rows whose label is among their k indices, counted, then the three
// outputs written by thread 0.
__global__ void accuracy_one_block(const int64_t *idx, const void *label, bool label_i64, int64_t n, int64_t k,
                                   float *acc, int32_t *correct, int32_t *total) {
  __shared__ long long part[kAccThreads];
  long long hits = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    int64_t l = label_i64 ? ((const int64_t *)label)[i] : ((const int32_t *)label)[i];
    for (int64_t j = 0; j < k; j++)
      if (idx[i * k + j] == l) {
        hits++;
        break;
      }
  }
  part[threadIdx.x] = hits;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    acc[0] = n ? (float)part[0] / (float)n : 0.0f;
    correct[0] = (int32_t)part[0];
    total[0] = (int32_t)n;
  }
}

// arg_max's order (kernels/cpu/top_k.c): a beats b when greater (with kMin, smaller), a
// NaN beating every number; the first of equals wins.
template <typename T, bool kMin>
__device__ inline bool beats(T a, T b) {
  return (kMin ? a < b : a > b) || (a != a && b == b);
}

// One thread an output element: the position along the middle dim of [outer, n, inner].
template <typename T, bool kMin, typename O>
__global__ void arg_max_walk(const T *x, int64_t outer, int64_t n, int64_t inner, O *out) {
  int64_t total = outer * inner;
  for (int64_t e = first_index(); e < total; e += grid_stride()) {
    const T *p = x + (e / inner) * n * inner + e % inner;
    int64_t best = 0;
    for (int64_t j = 1; j < n; j++)
      if (beats<T, kMin>(p[j * inner], p[best * inner])) best = j;
    out[e] = (O)best;
  }
}

template <typename T>
cudaError_t arg_max_typed(const void *x, bool min, int64_t outer, int64_t n, int64_t inner, void *out,
                          bool out_i64, cudaStream_t s) {
  unsigned b = blocks_for(outer * inner);
  const T *xp = (const T *)x;
  if (min && out_i64) arg_max_walk<T, true><<<b, kThreads, 0, s>>>(xp, outer, n, inner, (int64_t *)out);
  else if (min) arg_max_walk<T, true><<<b, kThreads, 0, s>>>(xp, outer, n, inner, (int32_t *)out);
  else if (out_i64) arg_max_walk<T, false><<<b, kThreads, 0, s>>>(xp, outer, n, inner, (int64_t *)out);
  else arg_max_walk<T, false><<<b, kThreads, 0, s>>>(xp, outer, n, inner, (int32_t *)out);
  return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t rill_cuda_arg_max(const void *x, int dtype, bool min, int64_t outer, int64_t n, int64_t inner,
                                         void *out, bool out_i64, cudaStream_t s) {
  if (outer * inner == 0) return cudaSuccess;
  if (n < 1) return cudaErrorInvalidValue;
  switch (dtype) {
  case kFp32: return arg_max_typed<float>(x, min, outer, n, inner, out, out_i64, s);
  case kFp64: return arg_max_typed<double>(x, min, outer, n, inner, out, out_i64, s);
  case kInt32: return arg_max_typed<int32_t>(x, min, outer, n, inner, out, out_i64, s);
  case kInt64: return arg_max_typed<int64_t>(x, min, outer, n, inner, out, out_i64, s);
  default: return cudaErrorInvalidValue;
  }
}

extern "C" cudaError_t rill_cuda_top_k_f32(const float *x, float *out, int64_t *idx, int64_t rows, int64_t n,
                                           int64_t k, cudaStream_t s) {
  if (rows == 0) return cudaSuccess;
  if (k < 1 || k > n) return cudaErrorInvalidValue;
  top_k_rows<<<blocks_for(rows), kThreads, 0, s>>>(x, out, idx, rows, n, k);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_accuracy(const int64_t *idx, const void *label, bool label_i64, int64_t n, int64_t k,
                                          float *acc, int32_t *correct, int32_t *total, cudaStream_t s) {
  accuracy_one_block<<<1, kAccThreads, 0, s>>>(idx, label, label_i64, n, k, acc, correct, total);
  return cudaGetLastError();
}
