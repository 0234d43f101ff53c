/* Included first in every device file of the emulated CUDA backend (doc/design/cuda.md,
 * "Tests"): the device code compiled as host C++, one thread a block. A launch runs the
 * grid's blocks in turn (EMU_LAUNCH, which rewrite_launches.py puts in place of each
 * kernel<<<grid, threads, shared, stream>>>(...) call), each with one thread, so blockDim.x is 1 and the device
 * code's grid-stride and block-stride loops cover every element from one thread. */
#ifndef RILL_TESTS_CUDA_EMULATOR_PRELUDE_H
#define RILL_TESTS_CUDA_EMULATOR_PRELUDE_H

#include <cmath>
#include <cstdint>
#include <cstring>

struct emu_dim {
  unsigned x, y, z;
};
static const emu_dim threadIdx = {0, 0, 0}, blockDim = {1, 1, 1};
static emu_dim blockIdx = {0, 0, 0}, gridDim = {1, 1, 1};

#define __global__
#define __device__
#define __shared__
#define __host__
#define __syncthreads() ((void)0)

#define EMU_LAUNCH(grid, stream, ...)                                       \
  do {                                                                      \
    (void)(stream); /* every stream is synchronous */                       \
    gridDim.x = (unsigned)(grid);                                           \
    for (unsigned emu_b = 0; emu_b < gridDim.x; emu_b++) {                  \
      blockIdx.x = emu_b;                                                   \
      __VA_ARGS__;                                                          \
    }                                                                       \
    blockIdx.x = 0;                                                         \
    gridDim.x = 1;                                                          \
  } while (0)

template <typename T>
inline T atomicMin(T *p, T v) {
  T old = *p;
  if (v < old) *p = v;
  return old;
}
template <typename T>
inline T atomicAdd(T *p, T v) {
  T old = *p;
  *p = old + v;
  return old;
}

using std::isfinite;
using std::isinf;
using std::isnan;

#endif
