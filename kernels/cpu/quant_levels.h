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
#endif

#endif
