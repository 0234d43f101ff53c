// Rows of a table read and written by ids: lookup_table's gather, and the grouped sums
// behind its dense gradient and the sparse optimizer updates. A group is one target row
// with the positions that add to it, in their order (kernels/cuda/rows.c builds them on
// the host), so each output element is one thread's sum, added in the CPU kernels'
// order: no atomics, and the same bits on every run.
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

template <typename I>
__global__ void gather_rows(const float *table, const I *ids, int64_t n, int64_t width, int64_t pad, float *out) {
  for (int64_t k = first_index(); k < n * width; k += grid_stride()) {
    int64_t i = k / width, c = k - i * width;
    int64_t id = (int64_t)ids[i];
    out[k] = id == pad ? 0.0f : table[id * width + c];
  }
}

// groups: rows[ngroups], then offsets[ngroups + 1] into positions[], then positions.
// With `add`, each value is added to the row in turn (the CPU's += per input row).
__global__ void sum_groups(const float *vals, const int64_t *groups, int64_t ngroups, int64_t width,
                           const float *lr, bool add, float *out) {
  const int64_t *rows = groups, *offsets = groups + ngroups, *positions = offsets + ngroups + 1;
  for (int64_t k = first_index(); k < ngroups * width; k += grid_stride()) {
    int64_t g = k / width, c = k - g * width;
    float *dst = out + rows[g] * width + c;
    float sum = add ? *dst : 0.0f;
    for (int64_t j = offsets[g]; j < offsets[g + 1]; j++) sum += vals[positions[j] * width + c];
    if (lr)
      *dst -= lr[0] * sum;
    else
      *dst = sum;
  }
}

template <typename I, typename O>
__global__ void set_ones(const I *ids, int64_t n, int64_t depth, O *out) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    int64_t v = (int64_t)ids[i];
    if (v >= 0 && v < depth) out[i * depth + v] = (O)1;
  }
}

template <typename I>
cudaError_t one_hot_typed(const I *ids, int64_t n, int64_t depth, void *out, int out_dtype, cudaStream_t s) {
  unsigned b = blocks_for(n);
  switch (out_dtype) {
  case kFp32: set_ones<<<b, kThreads, 0, s>>>(ids, n, depth, (float *)out); break;
  case kFp64: set_ones<<<b, kThreads, 0, s>>>(ids, n, depth, (double *)out); break;
  case kInt32: set_ones<<<b, kThreads, 0, s>>>(ids, n, depth, (int32_t *)out); break;
  case kInt64: set_ones<<<b, kThreads, 0, s>>>(ids, n, depth, (int64_t *)out); break;
  default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t rill_cuda_one_hot(const void *ids, bool ids_i64, int64_t n, int64_t depth, void *out,
                                         int out_dtype, cudaStream_t s) {
  if (n == 0 || depth == 0) return cudaSuccess;
  return ids_i64 ? one_hot_typed((const int64_t *)ids, n, depth, out, out_dtype, s)
                 : one_hot_typed((const int32_t *)ids, n, depth, out, out_dtype, s);
}

extern "C" cudaError_t rill_cuda_gather_rows_f32(const float *table, const void *ids, bool ids_i64, int64_t n,
                                                 int64_t width, int64_t pad, float *out, cudaStream_t s) {
  if (n * width == 0) return cudaSuccess;
  unsigned b = blocks_for(n * width);
  if (ids_i64)
    gather_rows<<<b, kThreads, 0, s>>>(table, (const int64_t *)ids, n, width, pad, out);
  else
    gather_rows<<<b, kThreads, 0, s>>>(table, (const int32_t *)ids, n, width, pad, out);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_sum_groups_f32(const float *vals, const int64_t *groups, int64_t ngroups,
                                                int64_t width, const float *lr, float *out, cudaStream_t s) {
  if (ngroups * width == 0) return cudaSuccess;
  sum_groups<<<blocks_for(ngroups * width), kThreads, 0, s>>>(vals, groups, ngroups, width, lr, false, out);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_add_groups_f32(const float *vals, const int64_t *groups, int64_t ngroups,
                                                int64_t width, float *out, cudaStream_t s) {
  if (ngroups * width == 0) return cudaSuccess;
  sum_groups<<<blocks_for(ngroups * width), kThreads, 0, s>>>(vals, groups, ngroups, width, nullptr, true, out);
  return cudaGetLastError();
}
