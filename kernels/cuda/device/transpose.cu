// Strided walks (transpose2, slice, expand_v2 and slice's gradient): one thread an
// element of the packed side, its offset on the strided side from its coordinates and
// the walk's strides (any element size of 1, 2, 4 or 8 bytes).
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

template <typename T>
__global__ void permute(const T *src, T *dst, rill_cuda_perm p) {
  for (int64_t o = first_index(); o < p.numel; o += grid_stride()) {
    int64_t rem = o, at = 0;
    for (int i = p.n - 1; i >= 0; i--) {
      int64_t c = rem % p.out_dims[i];
      rem /= p.out_dims[i];
      at += c * p.src_strides[i];
    }
    if (p.scatter) dst[at] = src[o];
    else dst[o] = src[at];
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_permute(const void *src, void *dst, const rill_cuda_perm *p, size_t esize,
                                         cudaStream_t s) {
  if (p->numel == 0) return cudaSuccess;
  unsigned b = blocks_for(p->numel);
  switch (esize) {
  case 1: permute<<<b, kThreads, 0, s>>>((const uint8_t *)src, (uint8_t *)dst, *p); break;
  case 2: permute<<<b, kThreads, 0, s>>>((const uint16_t *)src, (uint16_t *)dst, *p); break;
  case 4: permute<<<b, kThreads, 0, s>>>((const uint32_t *)src, (uint32_t *)dst, *p); break;
  case 8: permute<<<b, kThreads, 0, s>>>((const uint64_t *)src, (uint64_t *)dst, *p); break;
  default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}
