/* softmax CPU kernels, numerically stable (the maximum is subtracted before exp), with
 * Paddle's CPU clip: a shifted logit below RILL_SOFTMAX_CLIP (-64) counts as -64, so no
 * probability falls under exp(-64) / sum (a masked -inf entry included) and the log of
 * a softmax stays finite, as Paddle's numbers do.
 * X is viewed as [outer, n, inner] around `axis`; inner > 1 keeps per-position running
 * maxima and sums in scratch rows so memory is walked contiguously. A float row
 * (inner = 1: the last axis, a classifier's output) runs 8 elements at a time with
 * vexp.h's exp, its sum in 8 partial sums, where the CPU has AVX2 (isa.h). In-place safe. */
#include <math.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/vexp.h"

/* One row, scalar: the maximum, then exp and the sum, then the scaling. */
#define SCALAR_ROW(T, EXP, SUF)                                            \
  static void softmax_scalar_##SUF(const T *a, T *d, int64_t n) {          \
    T mx = a[0], sum = 0;                                                  \
    for (int64_t i = 1; i < n; i++) mx = a[i] > mx ? a[i] : mx;            \
    for (int64_t i = 0; i < n; i++) {                                      \
      d[i] = EXP(rill_softmax_clip_##SUF(a[i] - mx));                      \
      sum += d[i];                                                         \
    }                                                                      \
    T inv = (T)1 / sum;                                                    \
    for (int64_t i = 0; i < n; i++) d[i] *= inv;                           \
  }
SCALAR_ROW(double, exp, f64)
SCALAR_ROW(float, expf, f32)

#if RILL_X86_SIMD
RILL_AVX2_BEGIN
/* A row of at least 8. */
static void softmax_row_avx2(const float *a, float *d, int64_t n) {
  /* the maximum: NaN in a makes the row NaN through exp, as the scalar loop does */
  __m256 m8 = _mm256_loadu_ps(a);
  int64_t i = 8;
  for (; i + 8 <= n; i += 8) m8 = _mm256_max_ps(m8, _mm256_loadu_ps(a + i));
  float t[8];
  _mm256_storeu_ps(t, m8);
  float mx = t[0];
  for (int j = 1; j < 8; j++) mx = t[j] > mx ? t[j] : mx;
  for (; i < n; i++) mx = a[i] > mx ? a[i] : mx;
  /* max(clip, shifted) keeps a NaN (the second operand is returned when either is NaN) */
  __m256 vm = _mm256_set1_ps(mx), s8 = _mm256_setzero_ps(), vc = _mm256_set1_ps((float)RILL_SOFTMAX_CLIP);
  for (i = 0; i + 8 <= n; i += 8) {
    __m256 e = rill_exp8(_mm256_max_ps(vc, _mm256_sub_ps(_mm256_loadu_ps(a + i), vm)));
    _mm256_storeu_ps(d + i, e);
    s8 = _mm256_add_ps(s8, e);
  }
  if (i < n) { /* the tail through the same code, its missing lanes exp(-inf) = 0 */
    for (int j = 0; j < 8; j++) t[j] = i + j < n ? rill_softmax_clip_f32(a[i + j] - mx) : -INFINITY;
    __m256 e = rill_exp8(_mm256_loadu_ps(t));
    s8 = _mm256_add_ps(s8, e);
    _mm256_storeu_ps(t, e);
    for (int64_t j = i; j < n; j++) d[j] = t[j - i];
  }
  _mm256_storeu_ps(t, s8);
  float sum = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
  __m256 inv = _mm256_set1_ps(1.0f / sum);
  for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, _mm256_mul_ps(_mm256_loadu_ps(d + i), inv));
  for (; i < n; i++) d[i] *= 1.0f / sum;
}
RILL_AVX2_END
#endif

static void softmax_row_f32(const float *a, float *d, int64_t n) {
#if RILL_X86_SIMD
  if (n >= 8 && rill_cpu_avx2()) {
    softmax_row_avx2(a, d, n);
    return;
  }
#endif
  softmax_scalar_f32(a, d, n);
}

#define SOFTMAX(T, DT, EXP, CLIP, ROW, NAME)                                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                             \
    int r = x->dims.n, axis = ctx->attrs[RILL_SOFTMAX_ATTR_AXIS].v.i;                     \
    if (r == 0) {                                                                         \
      if (rill_tensor_numel(x) == 1) *(T *)rill_tensor_ptr(out) = 1;                      \
      return NULL;                                                                        \
    }                                                                                     \
    if (axis < 0) axis += r;                                                              \
    if (axis < 0 || axis >= r)                                                            \
      return rill_kernel_error(ctx, "attribute axis %d is out of range for input X (%s) " \
                               "of rank %d", ctx->attrs[RILL_SOFTMAX_ATTR_AXIS].v.i, rill_kin_name(ctx, 0, 0), r); \
    int64_t outer = rill_dims_prod(&x->dims, 0, axis), n = x->dims.d[axis];               \
    int64_t inner = rill_dims_prod(&x->dims, axis + 1, r);                                \
    if (outer * n * inner == 0) return NULL;                                              \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    if (inner == 1) {                                                                     \
      for (int64_t o = 0; o < outer; o++) ROW(xp + o * n, op + o * n, n);                 \
      return NULL;                                                                        \
    }                                                                                     \
    T *mx = rill_calloc((size_t)inner * 2, sizeof(T));                                    \
    if (!mx) return rill_oom();                                                           \
    T *sum = mx + inner;                                                                  \
    for (int64_t o = 0; o < outer; o++) {                                                 \
      const T *a = xp + o * n * inner;                                                    \
      T *d = op + o * n * inner;                                                          \
      for (int64_t j = 0; j < inner; j++) {                                               \
        mx[j] = a[j];                                                                     \
        sum[j] = 0;                                                                       \
      }                                                                                   \
      for (int64_t i = 1; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++)                                               \
          mx[j] = a[i * inner + j] > mx[j] ? a[i * inner + j] : mx[j];                    \
      for (int64_t i = 0; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++) {                                             \
          d[i * inner + j] = EXP(CLIP(a[i * inner + j] - mx[j]));                         \
          sum[j] += d[i * inner + j];                                                     \
        }                                                                                 \
      for (int64_t i = 0; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++) d[i * inner + j] /= sum[j];                   \
    }                                                                                     \
    rill_free(mx);                                                                        \
    return NULL;                                                                          \
  }

SOFTMAX(float, RILL_DTYPE_FP32, expf, rill_softmax_clip_f32, softmax_row_f32, rill_cpu_softmax_fp32)
SOFTMAX(double, RILL_DTYPE_FP64, exp, rill_softmax_clip_f64, softmax_scalar_f64, rill_cpu_softmax_fp64)
