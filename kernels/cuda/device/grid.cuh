// Launch shapes shared by the device code: 256 threads a block, grid-stride loops, and
// at most 65536 blocks (enough to fill any current card several times over).
#ifndef RILL_KERNELS_CUDA_DEVICE_GRID_CUH
#define RILL_KERNELS_CUDA_DEVICE_GRID_CUH

#include <cstdint>

namespace rill_cuda {

constexpr int kThreads = 256;

// rill_dtype numbers (Paddle's VarType), as the C side passes them.
enum { kBool = 0, kInt32 = 2, kInt64 = 3, kFp32 = 5, kFp64 = 6 };

inline unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return (unsigned)(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

__device__ inline int64_t first_index() {
  return (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ inline int64_t grid_stride() { return (int64_t)gridDim.x * blockDim.x; }

}  // namespace rill_cuda

#endif
