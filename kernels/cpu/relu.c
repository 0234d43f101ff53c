/* relu CPU kernels. In-place safe: each element is read before it is written. NaN stays
 * NaN (doc/design/kernels.md has the table for every activation). */
#include "framework/base/isa.h"
#include "kernels/cpu/kernels.h"

#if RILL_X86_SIMD
RILL_AVX2_BEGIN
/* x < 0 ? 0 : x on 8 lanes: maxps returns its second operand when either is NaN, so
 * with x second a NaN comes through, as the scalar select below lets it. Returns how
 * many elements it did. */
static int64_t relu_avx_f32_lanes(const float *xp, float *op, int64_t n) {
  const __m256 zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(op + i, _mm256_max_ps(zero, _mm256_loadu_ps(xp + i)));
  return i;
}
RILL_AVX2_END
#endif
static int64_t relu_avx_f32(const float *xp, float *op, int64_t n) {
#if RILL_X86_SIMD
  if (rill_cpu_avx2()) return relu_avx_f32_lanes(xp, op, n);
#endif
  (void)xp, (void)op, (void)n;
  return 0;
}
static int64_t relu_none_f64(const double *xp, double *op, int64_t n) {
  (void)xp, (void)op, (void)n;
  return 0;
}

#define RELU(T, DT, NAME, VEC)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                             \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t n = rill_tensor_numel(x);                                                     \
    int64_t i = VEC(xp, op, n);                                                           \
    for (; i < n; i++) op[i] = xp[i] < (T)0 ? (T)0 : xp[i];                               \
    return NULL;                                                                          \
  }

RELU(float, RILL_DTYPE_FP32, rill_cpu_relu_fp32, relu_avx_f32)
RELU(double, RILL_DTYPE_FP64, rill_cpu_relu_fp64, relu_none_f64)
