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

__global__ void adagrad(float *param_out, float *moment_out, const float *param, const float *grad,
                        const float *moment, const float *lr, int64_t n, float eps) {
  float l = lr[0];
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float g = grad[i], m = moment[i] + g * g;
    moment_out[i] = m;
    param_out[i] = param[i] - l * g / (sqrtf(m) + eps);
  }
}

// Sparse adagrad in place: each touched row's merged gradient (its group's values added
// in order from 0, as rows.cu's sum_groups adds them), only those rows updated.
__global__ void adagrad_rows(float *param, float *moment, const float *vals, const int64_t *groups, int64_t ngroups,
                             int64_t width, const float *lr, float eps) {
  const int64_t *rows = groups, *offsets = groups + ngroups, *positions = offsets + ngroups + 1;
  float l = lr[0];
  for (int64_t k = first_index(); k < ngroups * width; k += grid_stride()) {
    int64_t g = k / width, c = k - g * width;
    float sum = 0.0f;
    for (int64_t j = offsets[g]; j < offsets[g + 1]; j++) sum += vals[positions[j] * width + c];
    int64_t at = rows[g] * width + c;
    float m = moment[at] + sum * sum;
    moment[at] = m;
    param[at] -= l * sum / (sqrtf(m) + eps);
  }
}

// Lazy adam in place on the rows of groups only, each with its merged gradient (added in
// order from 0, as adagrad_rows adds it); the beta pows read on the device.
__global__ void adam_rows(float *param, float *m1, float *m2, const float *vals, const int64_t *groups,
                          int64_t ngroups, int64_t width, const float *lr, const float *beta1_pow,
                          const float *beta2_pow, float b1, float b2, float eps) {
  const int64_t *rows = groups, *offsets = groups + ngroups, *positions = offsets + ngroups + 1;
  float lr_t = lr[0] * sqrtf(1.0f - beta2_pow[0]) / (1.0f - beta1_pow[0]);
  for (int64_t k = first_index(); k < ngroups * width; k += grid_stride()) {
    int64_t g = k / width, c = k - g * width;
    float sum = 0.0f;
    for (int64_t j = offsets[g]; j < offsets[g + 1]; j++) sum += vals[positions[j] * width + c];
    int64_t at = rows[g] * width + c;
    float a = b1 * m1[at] + (1.0f - b1) * sum;
    float b = b2 * m2[at] + (1.0f - b2) * sum * sum;
    m1[at] = a;
    m2[at] = b;
    param[at] = param[at] - lr_t * (a / (sqrtf(b) + eps));
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_adam_rows_f32(float *param, float *m1, float *m2, const float *vals,
                                               const int64_t *groups, int64_t ngroups, int64_t width,
                                               const float *lr, const float *beta1_pow, const float *beta2_pow,
                                               float b1, float b2, float eps, cudaStream_t s) {
  if (ngroups * width == 0) return cudaSuccess;
  adam_rows<<<blocks_for(ngroups * width), kThreads, 0, s>>>(param, m1, m2, vals, groups, ngroups, width, lr,
                                                             beta1_pow, beta2_pow, b1, b2, eps);
  return cudaGetLastError();
}

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

extern "C" cudaError_t rill_cuda_adagrad_f32(float *param_out, float *moment_out, const float *param,
                                             const float *grad, const float *moment, const float *lr, int64_t n,
                                             float eps, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  adagrad<<<blocks_for(n), kThreads, 0, s>>>(param_out, moment_out, param, grad, moment, lr, n, eps);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_adagrad_rows_f32(float *param, float *moment, const float *vals,
                                                  const int64_t *groups, int64_t ngroups, int64_t width,
                                                  const float *lr, float eps, cudaStream_t s) {
  if (ngroups * width == 0) return cudaSuccess;
  adagrad_rows<<<blocks_for(ngroups * width), kThreads, 0, s>>>(param, moment, vals, groups, ngroups, width, lr, eps);
  return cudaGetLastError();
}
