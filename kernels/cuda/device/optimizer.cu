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

__global__ void adam(float *param_out, float *m1_out, float *m2_out, const float *param,
                     const float *grad, const float *m1, const float *m2, const float *lr,
                     const float *beta1_pow, const float *beta2_pow, int64_t n, float b1, float b2,
                     float eps) {
  float lr_t = lr[0] * sqrtf(1.0f - beta2_pow[0]) / (1.0f - beta1_pow[0]);
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float g = grad[i];
    float a = b1 * m1[i] + (1.0f - b1) * g;
    float b = b2 * m2[i] + (1.0f - b2) * g * g;
    m1_out[i] = a;
    m2_out[i] = b;
    param_out[i] = param[i] - lr_t * (a / (sqrtf(b) + eps));
  }
}

__global__ void scale_scalar(float *out, const float *in, float factor) { out[0] = in[0] * factor; }

}  // namespace

extern "C" cudaError_t rill_cuda_adam_f32(float *param_out, float *m1_out, float *m2_out,
                                          const float *param, const float *grad, const float *m1,
                                          const float *m2, const float *lr, const float *beta1_pow,
                                          const float *beta2_pow, int64_t n, float b1, float b2,
                                          float eps, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  adam<<<blocks_for(n), kThreads, 0, s>>>(param_out, m1_out, m2_out, param, grad, m1, m2, lr,
                                          beta1_pow, beta2_pow, n, b1, b2, eps);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_scale_scalar_f32(float *out, const float *in, float factor,
                                                  cudaStream_t s) {
  scale_scalar<<<1, 1, 0, s>>>(out, in, factor);
  return cudaGetLastError();
}

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
