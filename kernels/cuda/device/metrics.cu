// The metrics: top_k over each row, and accuracy of top-k indices against labels.
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

// a ranks above b: greater, or NaN above every number (the CPU kernel's order).
__device__ inline bool ranks_above(float a, float b) { return a > b || (a != a && b == b); }

// One thread a row: the CPU's insertion into the k best so far, kept in the row's own
// outputs; ties keep the lower position first, which a stable sort gives too, so the
// result is the CPU's for every k.
__global__ void top_k_rows(const float *x, float *out, int64_t *idx, int64_t rows, int64_t n, int64_t k) {
  for (int64_t r = first_index(); r < rows; r += grid_stride()) {
    const float *row = x + r * n;
    float *ov = out + r * k;
    int64_t *oi = idx + r * k, cnt = 0;
    for (int64_t j = 0; j < n; j++) {
      float v = row[j];
      if (cnt == k && !ranks_above(v, ov[k - 1])) continue;
      int64_t p = cnt < k ? cnt++ : k - 1;
      while (p > 0 && ranks_above(v, ov[p - 1])) {
        ov[p] = ov[p - 1];
        oi[p] = oi[p - 1];
        p--;
      }
      ov[p] = v;
      oi[p] = j;
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

}  // namespace

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
