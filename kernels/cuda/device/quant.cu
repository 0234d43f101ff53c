// Quantization simulation with a stored scale (inference): each element's level under
// the scale, dequantized when asked, and the dequantization of stored levels. The scale
// is read on the device, and the arithmetic is kernels/cpu/fake_quantize.c's, in the
// same order, so the levels are the CPU's bit for bit.
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

// round_type 0: clamp(rint_even(bin * inv * x), -bin - 1, bin); round_type 1:
// round_half_away(bin * inv * clip(x, -s, s)); dequantized: q * s / bin.
__global__ void quant_map(const float *x, float *out, int64_t n, const float *scale, float bin, int round_type,
                          bool dq) {
  float s = *scale;
  float inv = s <= 1e-30f ? 1.0f / (s + 1e-6f) : 1.0f / s;
  float binv = bin * inv;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float q;
    if (round_type == 0) {
      q = nearbyintf(binv * x[i]);  // halves to even, as the CPU's rill_round_even
      if (q > bin) q = bin;
      if (q < -bin - 1.0f) q = -bin - 1.0f;
    } else {
      float c = x[i] > s ? s : x[i];
      c = c < -s ? -s : c;
      q = roundf(binv * c);  // halves away from zero, as rill_round_half_away
    }
    out[i] = dq ? q * s / bin : q;
  }
}

__global__ void dequant_map(const float *x, float *out, int64_t n, const float *scale, float range) {
  float s = *scale;
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = x[i] * s / range;
}

}  // namespace

extern "C" cudaError_t rill_cuda_quant_f32(const float *x, float *out, int64_t n, const float *scale, float bin,
                                           int round_type, bool dq, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  quant_map<<<blocks_for(n), kThreads, 0, s>>>(x, out, n, scale, bin, round_type, dq);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_dequant_f32(const float *x, float *out, int64_t n, const float *scale, float range,
                                             cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  dequant_map<<<blocks_for(n), kThreads, 0, s>>>(x, out, n, scale, range);
  return cudaGetLastError();
}
