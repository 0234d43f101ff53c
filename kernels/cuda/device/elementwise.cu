// Elementwise device code: binary ops with broadcasting, unary maps (activations,
// scale, fill), accumulation, bias plus activation, and casts.
#include <cmath>

#include "kernels/cuda/device/act.cuh"
#include "kernels/cuda/device/bcast.cuh"
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

__device__ inline float binary(int op, float a, float b) {
  switch (op) {
  case RILL_CUDA_ADD: return a + b;
  case RILL_CUDA_SUB: return a - b;
  case RILL_CUDA_MUL: return a * b;
  case RILL_CUDA_DIV: return a / b;
  case RILL_CUDA_MAX: return a > b ? a : b;
  case RILL_CUDA_POW: return powf(a, b);
  default: return a < b ? a : b;
  }
}

__global__ void binary_same(int op, const float *x, const float *y, float *out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = binary(op, x[i], y[i]);
}

__global__ void binary_bcast(int op, const float *x, const float *y, float *out, rill_cuda_bcast b) {
  for (int64_t i = first_index(); i < b.numel; i += grid_stride()) {
    int64_t xo, yo;
    bcast_offsets(b, i, &xo, &yo);
    out[i] = binary(op, x[xo], y[yo]);
  }
}

template <typename T>
__global__ void compare_bcast(int op, const T *x, const T *y, bool *out, rill_cuda_bcast b) {
  for (int64_t i = first_index(); i < b.numel; i += grid_stride()) {
    int64_t xo, yo;
    bcast_offsets(b, i, &xo, &yo);
    T u = x[xo], v = y[yo];
    switch (op) {
    case RILL_CUDA_LT: out[i] = u < v; break;
    case RILL_CUDA_LE: out[i] = u <= v; break;
    case RILL_CUDA_GT: out[i] = u > v; break;
    case RILL_CUDA_GE: out[i] = u >= v; break;
    case RILL_CUDA_EQ: out[i] = u == v; break;
    case RILL_CUDA_AND: out[i] = u && v; break;
    case RILL_CUDA_OR: out[i] = u || v; break;
    case RILL_CUDA_NOT: out[i] = !u; break;
    default: out[i] = u != v; break;
    }
  }
}

template <typename T>
cudaError_t compare_typed(int op, const void *x, const void *y, bool *out, const rill_cuda_bcast &b,
                          cudaStream_t s) {
  compare_bcast<T><<<blocks_for(b.numel), kThreads, 0, s>>>(op, (const T *)x, (const T *)y, out, b);
  return cudaGetLastError();
}

// Each written as the CPU kernel writes it (kernels/cpu/activation.c), in float.
__device__ inline float unary(int op, float x, float a, float b, float c) {
  switch (op) {
  case RILL_CUDA_RELU: return x < 0.0f ? 0.0f : x; // NaN kept, as on the CPU
  case RILL_CUDA_SIGMOID: return 1.0f / (1.0f + expf(-x));
  case RILL_CUDA_TANH: return tanhf(x);
  case RILL_CUDA_EXP: return expf(x);
  case RILL_CUDA_SQUARE: return x * x;
  case RILL_CUDA_SQRT: return sqrtf(x);
  case RILL_CUDA_ABS: return fabsf(x);
  case RILL_CUDA_LEAKY_RELU: return x > 0.0f ? x : a * x;
  case RILL_CUDA_RELU6: return x < 0.0f ? 0.0f : (x > a ? a : x);
  case RILL_CUDA_SCALE: return a * x + b;
  case RILL_CUDA_SCALE_BIAS_FIRST: return a * (x + b);
  case RILL_CUDA_HARD_SIGMOID: {
    float t = a * x + b;
    return t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
  }
  case RILL_CUDA_HARD_SWISH: {
    float t = x + c;
    t = t < 0.0f ? 0.0f : (t > a ? a : t);
    return t * x / b;
  }
  case RILL_CUDA_SWISH: return x / (1.0f + expf(-a * x));
  case RILL_CUDA_SILU: return x / (1.0f + expf(-x));
  case RILL_CUDA_GELU_ERF: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
  case RILL_CUDA_GELU_TANH:
    return 0.5f * x * (1.0f + tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x)));
  case RILL_CUDA_CLIP: return x < a ? a : (x > b ? b : x);
  case RILL_CUDA_LOG: return logf(x);
  case RILL_CUDA_RECIPROCAL: return 1.0f / x;
  case RILL_CUDA_SOFTPLUS: {  // m = max(x, 0); x - m taken as min(x, 0): softplus(inf) = inf
    float m = x < 0.0f ? 0.0f : x;
    return m + logf(expf(-m) + expf(x < 0.0f ? x : 0.0f));
  }
  case RILL_CUDA_LOGSIGMOID: {
    float m = -x < 0.0f ? 0.0f : -x;
    return -m - logf(expf(-m) + expf(-x < 0.0f ? -x : 0.0f));
  }
  case RILL_CUDA_ELU: {
    float p = x < 0.0f ? 0.0f : x, q = a * (expf(x) - 1.0f);
    return p + (q > 0.0f ? 0.0f : q);
  }
  case RILL_CUDA_CEIL: return ceilf(x);
  case RILL_CUDA_FLOOR: return floorf(x);
  case RILL_CUDA_ROUND: return nearbyintf(x);
  case RILL_CUDA_SIGN: return (float)((x > 0.0f) - (x < 0.0f));
  case RILL_CUDA_COS: return cosf(x);
  case RILL_CUDA_SIN: return sinf(x);
  case RILL_CUDA_ACOS: return acosf(x);
  case RILL_CUDA_ASIN: return asinf(x);
  case RILL_CUDA_ATAN: return atanf(x);
  case RILL_CUDA_RSQRT: return 1.0f / sqrtf(x);
  case RILL_CUDA_SOFTSIGN: return x / (1.0f + fabsf(x));
  case RILL_CUDA_TANH_SHRINK: return x - tanhf(x);
  // masks multiply, as on the CPU, so that NaN and 0 * inf give NaN
  case RILL_CUDA_SOFTSHRINK: return (float)(x > a) * (x - a) + (float)(x < -a) * (x + a);
  case RILL_CUDA_HARD_SHRINK: return x * (float)((x < -a) + (x > a));
  case RILL_CUDA_THRESHOLDED_RELU: return (float)(x > a) * x;
  case RILL_CUDA_SELU: return (x <= 0.0f ? b * expf(x) - b : x) * a;
  case RILL_CUDA_BRELU: {
    float t = x < a ? a : x;
    return t > b ? b : t;
  }
  case RILL_CUDA_SOFT_RELU: {
    float t = x < -a ? -a : x;
    t = t > a ? a : t;
    return logf(1.0f + expf(t));
  }
  case RILL_CUDA_STANH: return b * tanhf(a * x);
  case RILL_CUDA_ERF: return erff(x);
  case RILL_CUDA_MISH: return x * tanhf(mish_softplus(x, a));
  case RILL_CUDA_LOG1P: return logf(1.0f + x);
  case RILL_CUDA_POW_FACTOR: return powf(x, a);
  default: return a;
  }
}

__global__ void unary_map(int op, const float *x, float *out, int64_t n, float a, float b, float c) {
  for (int64_t i = first_index(); i < n; i += grid_stride())
    out[i] = unary(op, op == RILL_CUDA_FILL ? 0.0f : x[i], a, b, c);
}

__global__ void accumulate(float *out, const float *x, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] += x[i];
}

__global__ void bias_act(float *out, const float *bias, int64_t rows, int64_t cols, bool relu) {
  int64_t n = rows * cols;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float v = out[i] + (bias ? bias[i % cols] : 0.0f);
    out[i] = relu && v < 0.0f ? 0.0f : v;
  }
}

template <typename From, typename To>
__global__ void convert(const From *x, To *out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = (To)x[i];
}

template <typename From>
__global__ void convert_to_bool(const From *x, unsigned char *out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = x[i] != (From)0;
}

template <typename From>
cudaError_t cast_from(const From *x, void *out, int to, int64_t n, cudaStream_t s) {
  unsigned g = blocks_for(n);
  switch (to) {
  case kBool: convert_to_bool<From><<<g, kThreads, 0, s>>>(x, (unsigned char *)out, n); break;
  case kInt32: convert<From, int32_t><<<g, kThreads, 0, s>>>(x, (int32_t *)out, n); break;
  case kInt64: convert<From, int64_t><<<g, kThreads, 0, s>>>(x, (int64_t *)out, n); break;
  case kFp32: convert<From, float><<<g, kThreads, 0, s>>>(x, (float *)out, n); break;
  case kFp64: convert<From, double><<<g, kThreads, 0, s>>>(x, (double *)out, n); break;
  default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

// Every element of out (n of them) := the low sizeof(T) bytes of bits.
template <typename T>
__global__ void fill_bits(T *out, int64_t n, uint64_t bits) {
  T v;
  memcpy(&v, &bits, sizeof v);
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = v;
}

__global__ void masked_scale(const float *x, const uint8_t *mask, float *out, int64_t n, float k) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) out[i] = mask[i] ? x[i] * k : 0.0f;
}

// conv2d_fusion's epilogue, in place: out = act(out + bias[channel] (+ res)); act as
// operators/fused_act.h numbers them (identity, relu, relu6, sigmoid, tanh).
__global__ void conv_epilogue(float *out, const float *bias, const float *res, int64_t n, int64_t channels,
                              int64_t spatial, int act) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    float v = out[i] + bias[(i / spatial) % channels];
    if (res) v += res[i];
    switch (act) {
      case 1: v = v < 0.0f ? 0.0f : v; break; /* NaN kept, as on the CPU */
      case 2: v = v < 0.0f ? 0.0f : (v > 6.0f ? 6.0f : v); break;
      case 3: v = 1.0f / (1.0f + expf(-v)); break;
      case 4: v = tanhf(v); break;
      default: break;
    }
    out[i] = v;
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_binary_f32(int op, const float *x, const float *y, float *out,
                                            const rill_cuda_bcast *b, cudaStream_t s) {
  if (b->numel == 0) return cudaSuccess;
  bool same = true;
  int64_t stride = 1;
  for (int d = b->n - 1; d >= 0 && same; d--) {
    same = b->xs[d] == stride && b->ys[d] == stride;
    stride *= b->dims[d];
  }
  if (same)
    binary_same<<<blocks_for(b->numel), kThreads, 0, s>>>(op, x, y, out, b->numel);
  else
    binary_bcast<<<blocks_for(b->numel), kThreads, 0, s>>>(op, x, y, out, *b);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_compare(int op, int dtype, const void *x, const void *y, bool *out,
                                         const rill_cuda_bcast *b, cudaStream_t s) {
  if (op < RILL_CUDA_LT || op > RILL_CUDA_NOT) return cudaErrorInvalidValue;
  if (b->numel == 0) return cudaSuccess;
  switch (dtype) {
  case kFp32: return compare_typed<float>(op, x, y, out, *b, s);
  case kFp64: return compare_typed<double>(op, x, y, out, *b, s);
  case kInt32: return compare_typed<int32_t>(op, x, y, out, *b, s);
  case kInt64: return compare_typed<int64_t>(op, x, y, out, *b, s);
  case kBool: return compare_typed<bool>(op, x, y, out, *b, s);
  default: return cudaErrorInvalidValue;
  }
}

extern "C" cudaError_t rill_cuda_unary_f32(int op, const float *x, float *out, int64_t n, float a,
                                           float b, float c, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  unary_map<<<blocks_for(n), kThreads, 0, s>>>(op, x, out, n, a, b, c);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_accumulate_f32(float *out, const float *x, int64_t n,
                                                cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  accumulate<<<blocks_for(n), kThreads, 0, s>>>(out, x, n);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_bias_act_f32(float *out, const float *bias, int64_t rows,
                                              int64_t cols, bool relu, cudaStream_t s) {
  if (rows * cols == 0) return cudaSuccess;
  bias_act<<<blocks_for(rows * cols), kThreads, 0, s>>>(out, bias, rows, cols, relu);
  return cudaGetLastError();
}

template <typename T>
__global__ void increment_one(const T *x, T *out, double step) {
  *out = (T)(*x + (T)step);
}

extern "C" cudaError_t rill_cuda_increment(const void *x, void *out, int dtype, double step, cudaStream_t s) {
  switch (dtype) {
  case kInt32: increment_one<<<1, 1, 0, s>>>((const int32_t *)x, (int32_t *)out, step); break;
  case kInt64: increment_one<<<1, 1, 0, s>>>((const int64_t *)x, (int64_t *)out, step); break;
  case kFp32: increment_one<<<1, 1, 0, s>>>((const float *)x, (float *)out, step); break;
  case kFp64: increment_one<<<1, 1, 0, s>>>((const double *)x, (double *)out, step); break;
  default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

extern "C" bool rill_cuda_cast_supported(int dtype) {
  return dtype == kBool || dtype == kInt32 || dtype == kInt64 || dtype == kFp32 || dtype == kFp64;
}

extern "C" cudaError_t rill_cuda_cast(const void *x, int from, void *out, int to, int64_t n,
                                      cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  switch (from) {
  case kBool: return cast_from((const unsigned char *)x, out, to, n, s);
  case kInt32: return cast_from((const int32_t *)x, out, to, n, s);
  case kInt64: return cast_from((const int64_t *)x, out, to, n, s);
  case kFp32: return cast_from((const float *)x, out, to, n, s);
  case kFp64: return cast_from((const double *)x, out, to, n, s);
  default: return cudaErrorInvalidValue;
  }
}

extern "C" cudaError_t rill_cuda_fill_bits(void *out, int64_t n, uint64_t bits, size_t esize, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (bits == 0) return cudaMemsetAsync(out, 0, (size_t)n * esize, s);
  switch (esize) {
  case 1: fill_bits<<<blocks_for(n), kThreads, 0, s>>>((uint8_t *)out, n, bits); break;
  case 4: fill_bits<<<blocks_for(n), kThreads, 0, s>>>((uint32_t *)out, n, bits); break;
  case 8: fill_bits<<<blocks_for(n), kThreads, 0, s>>>((uint64_t *)out, n, bits); break;
  default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_masked_scale_f32(const float *x, const uint8_t *mask, float *out, int64_t n,
                                                  float k, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  masked_scale<<<blocks_for(n), kThreads, 0, s>>>(x, mask, out, n, k);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_conv_epilogue_f32(float *out, const float *bias, const float *res, int64_t n,
                                                   int64_t channels, int64_t spatial, int act, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  conv_epilogue<<<blocks_for(n), kThreads, 0, s>>>(out, bias, res, n, channels, spatial, act);
  return cudaGetLastError();
}
