// The activations of Paddle's recurrent ops (operators/recurrent.h's rill_ract) on the
// device, for lstm.cu and gru.cu: sigmoid's input clipped to [-40, 13], tanh as
// 2 / (1 + e^(-2x)) - 1 with -2x clipped at 40.
#ifndef RILL_KERNELS_CUDA_DEVICE_RACT_CUH
#define RILL_KERNELS_CUDA_DEVICE_RACT_CUH

#include <cmath>

namespace rill_cuda {

// rill_ract's numbers (operators/recurrent.h).
enum { kSigmoid = 0, kTanh = 1, kRelu = 2 };

__device__ inline float ract(float x, int k) {
  switch (k) {
  case kSigmoid: {
    float v = x < -40.0f ? -40.0f : x > 13.0f ? 13.0f : x;
    return 1.0f / (1.0f + expf(-v));
  }
  case kTanh: {
    float v = -2.0f * x;
    if (v > 40.0f) v = 40.0f;
    return 2.0f / (1.0f + expf(v)) - 1.0f;
  }
  case kRelu: return x > 0.0f ? x : 0.0f;
  default: return x;
  }
}

// dy * act'(x), from the activation's output y.
__device__ inline float ract_grad(float dy, float y, int k) {
  switch (k) {
  case kSigmoid: return dy * y * (1.0f - y);
  case kTanh: return dy * (1.0f - y * y);
  case kRelu: return y > 0.0f ? dy : 0.0f;
  default: return dy;
  }
}

}  // namespace rill_cuda

#endif
