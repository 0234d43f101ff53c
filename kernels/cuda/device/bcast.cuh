// Where output element i of a broadcast (rill_cuda_bcast) reads X and Y.
#ifndef RILL_KERNELS_CUDA_DEVICE_BCAST_CUH
#define RILL_KERNELS_CUDA_DEVICE_BCAST_CUH

#include <cstdint>

#include "kernels/cuda/launch.h"

namespace rill_cuda {

__device__ inline void bcast_offsets(const rill_cuda_bcast &b, int64_t i, int64_t *xo, int64_t *yo) {
  int64_t rem = i, x = 0, y = 0;
  for (int d = b.n - 1; d >= 0; d--) {
    int64_t c = rem % b.dims[d];
    rem /= b.dims[d];
    x += c * b.xs[d];
    y += c * b.ys[d];
  }
  *xo = x;
  *yo = y;
}

}  // namespace rill_cuda

#endif
