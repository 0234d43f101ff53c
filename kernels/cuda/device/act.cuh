// Pieces of the activations that their forward (elementwise.cu) and their gradient
// (grad.cu) both compute, written as kernels/cpu/activation.c writes them.
#ifndef RILL_KERNELS_CUDA_DEVICE_ACT_CUH
#define RILL_KERNELS_CUDA_DEVICE_ACT_CUH

#include <cmath>

namespace rill_cuda {

// mish's softplus: x above the threshold a, exp(x) below -a (a > 0), else log1p(exp(x)).
__device__ inline float mish_softplus(float x, float a) {
  if (a > 0.0f && x > a) return x;
  if (a > 0.0f && x < -a) return expf(x);
  return log1pf(expf(x));
}

}  // namespace rill_cuda

#endif
