/* The level of one float under a fake quantize op's scale, with Paddle's arithmetic to
 * the bit (kernels/cpu/fake_quantize.c states the rules). Shared by the fake quantize
 * kernels and by the int8 kernels that quantize their float input themselves (a fake
 * quantize op folded into them, doc/design/int8.md), so that both give the same levels. */
#ifndef RILL_KERNELS_CPU_QUANT_LEVELS_H
#define RILL_KERNELS_CPU_QUANT_LEVELS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "framework/base/isa.h"

static inline float rill_quant_inv_scale(float s) { return s <= 1e-30f ? 1.0f / (s + 1e-6f) : 1.0f / s; }

/* range = 2^(bit_length-1) - 1 */
static inline float rill_quant_bin_count(int bit_length) { return (float)((1 << (bit_length - 1)) - 1); }

static inline float rill_round_even(float x) {
  float lo = floorf(x), hi = ceilf(x);
  float dl = x - lo, dh = hi - x;
  if (dl == dh) return fmodf(lo, 2.0f) == 0.0f ? lo : hi;
  return dl < dh ? lo : hi;
}

/* roundf (half away from zero) without the library call, so a loop of it is plain
 * arithmetic: below 2^23 the truncation t and y - t are exact, and a half or more moves
 * t one away from zero; the sign is y's (roundf(-0.3) is -0). From 2^23 up y is already
 * an integer, and NaN and the infinities come back as they are. */
static inline float rill_round_half_away(float y) {
  float a = fabsf(y);
  bool small = a < 8388608.0f; /* false for NaN */
  float ys = small ? y : 0.0f;
  float t = (float)(int32_t)ys;
  float r = fabsf(ys - t) >= 0.5f ? t + copysignf(1.0f, ys) : t;
  return small ? copysignf(r, y) : y;
}

/* The level of x under scale s (inv = rill_quant_inv_scale(s), bin the range):
 *   round_type 0: clamp(rint_even(bin * inv * x), -bin - 1, bin)
 *   round_type 1: round_half_away(bin * inv * clip(x, -s, s)) */
static inline float rill_quant_one(float x, float s, float inv, float bin, int round_type) {
  if (round_type == 0) {
    float q = rill_round_even(bin * inv * x);
    if (q > bin) q = bin;
    if (q < -bin - 1.0f) q = -bin - 1.0f;
    return q;
  }
  float c = x > s ? s : x;
  c = c < -s ? -s : c;
  return rill_round_half_away(bin * inv * c);
}

/* n levels of x under scale s (bin the range) into out, dequantized (q * s / bin) when
 * dq: the fake quantize ops' loop, at the widest vector level the CPU runs for
 * round_type 1 (kernels/cpu/fake_quantize.c). */
void rill_quant_span(const float *x, float *out, int64_t n, float s, float bin, int round_type, bool dq);

#if RILL_X86_SIMD
/* round_type 1 for 4 lanes with SSE2 (the x86-64 baseline), each lane the IEEE
 * operations of rill_quant_one and rill_round_half_away in the same order: min / max
 * pick what the comparisons pick (a NaN x comes through), and the product is the scalar
 * one (binv = bin * inv). */
static inline __m128 rill_quant4_away(__m128 x, __m128 s, __m128 ns, __m128 binv) {
  const __m128 sign = _mm_set1_ps(-0.0f), half = _mm_set1_ps(0.5f), one = _mm_set1_ps(1.0f);
  __m128 c = _mm_max_ps(ns, _mm_min_ps(s, x)); /* c < -s ? -s : (x > s ? s : x) */
  __m128 y = _mm_mul_ps(binv, c);
  __m128 small = _mm_cmplt_ps(_mm_andnot_ps(sign, y), _mm_set1_ps(8388608.0f));
  __m128 ys = _mm_and_ps(y, small);
  __m128 t = _mm_cvtepi32_ps(_mm_cvttps_epi32(ys));
  __m128 up = _mm_cmpge_ps(_mm_andnot_ps(sign, _mm_sub_ps(ys, t)), half);
  __m128 r = _mm_add_ps(t, _mm_and_ps(up, _mm_or_ps(_mm_and_ps(ys, sign), one)));
  r = _mm_or_ps(_mm_andnot_ps(sign, r), _mm_and_ps(y, sign));
  return _mm_or_ps(_mm_and_ps(small, r), _mm_andnot_ps(small, y));
}

/* rill_quant4_away on 8 lanes (AVX2) and on 16 (AVX-512, the selections by mask): the
 * same operations lane for lane, so every width gives the scalar levels to the bit.
 * Callers reach them only behind rill_cpu_avx2() / rill_cpu_avx512(). */
RILL_AVX2_BEGIN
static inline __m256 rill_quant8_away(__m256 x, __m256 s, __m256 ns, __m256 binv) {
  const __m256 sign = _mm256_set1_ps(-0.0f), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  __m256 c = _mm256_max_ps(ns, _mm256_min_ps(s, x));
  __m256 y = _mm256_mul_ps(binv, c);
  __m256 small = _mm256_cmp_ps(_mm256_andnot_ps(sign, y), _mm256_set1_ps(8388608.0f), _CMP_LT_OQ);
  __m256 ys = _mm256_and_ps(y, small);
  __m256 t = _mm256_cvtepi32_ps(_mm256_cvttps_epi32(ys));
  __m256 up = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(ys, t)), half, _CMP_GE_OQ);
  __m256 r = _mm256_add_ps(t, _mm256_and_ps(up, _mm256_or_ps(_mm256_and_ps(ys, sign), one)));
  r = _mm256_or_ps(_mm256_andnot_ps(sign, r), _mm256_and_ps(y, sign));
  return _mm256_blendv_ps(y, r, small);
}
RILL_AVX2_END

RILL_AVX512_BEGIN
static inline __m512 rill_quant16_away(__m512 x, __m512 s, __m512 ns, __m512 binv) {
  const __m512 sign = _mm512_set1_ps(-0.0f), half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
  __m512 c = _mm512_max_ps(ns, _mm512_min_ps(s, x));
  __m512 y = _mm512_mul_ps(binv, c);
  __mmask16 small = _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, y), _mm512_set1_ps(8388608.0f), _CMP_LT_OQ);
  __m512 ys = _mm512_maskz_mov_ps(small, y);
  __m512 t = _mm512_cvtepi32_ps(_mm512_cvttps_epi32(ys));
  __mmask16 up = _mm512_cmp_ps_mask(_mm512_andnot_ps(sign, _mm512_sub_ps(ys, t)), half, _CMP_GE_OQ);
  __m512 r = _mm512_add_ps(t, _mm512_maskz_mov_ps(up, _mm512_or_ps(_mm512_and_ps(ys, sign), one)));
  r = _mm512_or_ps(_mm512_andnot_ps(sign, r), _mm512_and_ps(y, sign));
  return _mm512_mask_mov_ps(y, small, r);
}
RILL_AVX512_END
#endif

#endif
