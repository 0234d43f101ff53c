/* The spans of vexp.h: 8 lanes at a time where the CPU has AVX2, else one element at a
 * time by the same arithmetic (the same bits either way). */
#include "kernels/cpu/vexp.h"

#if RILL_X86_SIMD
RILL_AVX2_BEGIN
static void tanh_span_avx2(float *y, const float *x, int64_t n) { RILL_VEC_SPAN(rill_tanh8, y, x, n); }
static void sigmoid_span_avx2(float *y, const float *x, int64_t n) {
  RILL_VEC_SPAN(rill_sigmoid8, y, x, n);
}
RILL_AVX2_END
#endif

void rill_tanh_span_f32(float *y, const float *x, int64_t n) {
#if RILL_X86_SIMD
  if (rill_cpu_avx2()) {
    tanh_span_avx2(y, x, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) y[i] = rill_tanh1(x[i]);
}

void rill_sigmoid_span_f32(float *y, const float *x, int64_t n) {
#if RILL_X86_SIMD
  if (rill_cpu_avx2()) {
    sigmoid_span_avx2(y, x, n);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) y[i] = rill_sigmoid1(x[i]);
}
