// Reductions over a block's threads, shared by the device code: each takes the calling
// thread's value and a __shared__ array of blockDim.x elements, and returns the block's
// result to every thread. Every thread of the block must call them.
#ifndef RILL_KERNELS_CUDA_DEVICE_BLOCK_CUH
#define RILL_KERNELS_CUDA_DEVICE_BLOCK_CUH

namespace rill_cuda {

// The sum by a tree (so it rounds otherwise than a running sum).
template <typename T>
__device__ inline T block_sum(T v, T *red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  T total = red[0];
  __syncthreads();  // every thread has read red[0] before it is written again
  return total;
}

// The maximum as a running maximum keeps it: a value replaces another only when greater,
// so NaN never wins against a number (the CPU kernels' rule).
template <typename T>
__device__ inline T block_max(T v, T *red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if ((int)threadIdx.x < w && red[threadIdx.x + w] > red[threadIdx.x]) red[threadIdx.x] = red[threadIdx.x + w];
    __syncthreads();
  }
  T m = red[0];
  __syncthreads();
  return m;
}

}  // namespace rill_cuda

#endif
