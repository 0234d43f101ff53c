// Optimizer updates, one fused pass each; the learning rate is read on the device.
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

__global__ void sgd(float *param_out, const float *param, const float *grad, const float *lr,
                    int64_t n) {
  float l = lr[0];
  for (int64_t i = first_index(); i < n; i += grid_stride()) param_out[i] = param[i] - l * grad[i];
}

__global__ void momentum(float *param_out, float *velocity_out, const float *param,
                         const float *grad, const float *velocity, const float *lr, int64_t n,
                         float mu, float rescale, float l2, bool nesterov) {
  float l = lr[0];
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float p = param[i];
    float g = grad[i] * rescale + l2 * p;
    float v = mu * velocity[i] + g;
    velocity_out[i] = v;
    param_out[i] = nesterov ? p - (g + mu * v) * l : p - l * v;
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_sgd_f32(float *param_out, const float *param, const float *grad,
                                         const float *lr, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  sgd<<<blocks_for(n), kThreads, 0, s>>>(param_out, param, grad, lr, n);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_momentum_f32(float *param_out, float *velocity_out,
                                              const float *param, const float *grad,
                                              const float *velocity, const float *lr, int64_t n,
                                              float mu, float rescale, float l2, bool nesterov,
                                              cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  momentum<<<blocks_for(n), kThreads, 0, s>>>(param_out, velocity_out, param, grad, velocity, lr,
                                              n, mu, rescale, l2, nesterov);
  return cudaGetLastError();
}
