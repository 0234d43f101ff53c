/* exp, sigmoid and tanh of 8 floats at once (AVX2 + FMA), and of one float by the same
 * arithmetic (rill_exp1 and its kin: every step the same IEEE operation, FMAs as fmaf),
 * for the kernels whose cost is
 * libm's expf or tanhf on every element: softmax over a vocabulary (word2vec's 2074
 * words: 2074 calls were a sixth of the model), sigmoid and tanh layers and epilogues
 * (an MLP's 200-wide tanh layers at batch 16: 6400 tanhf calls, most of its run).
 *
 * exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 with ln 2 split in a high
 * part exact in float and a low part, so |r| <= ln 2 / 2; exp(r) by its Taylor series
 * to r^7 (the next term is below 5e-9 relative), in Horner form with FMAs; 2^n built
 * in the exponent bits. Within 2 ulp of expf over [-87.3, 88]. Outside: x < -87.33
 * (where expf is denormal, below 1.2e-38) gives 0, x in (88, ln FLT_MAX] gives exp(88)
 * (softmax passes arguments <= 0 and sigmoid -x, where this changes no result beyond a
 * denormal), x above ln FLT_MAX (88.72) gives +inf as expf's overflow does (so
 * sigmoid(-inf) is exactly 0), NaN gives NaN.
 *
 * Every lane is computed the same way, so the spans below give each element the same
 * bits wherever it sits in a span (tails go through the same vector code), and the
 * scalar twins give the same bits as a lane: a span's result does not depend on
 * whether the CPU took the AVX2 path (isa.h). */
#ifndef RILL_KERNELS_CPU_VEXP_H
#define RILL_KERNELS_CPU_VEXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "framework/base/isa.h"

/* One lane of rill_exp8: min/max as minps/maxps order them (the second operand on NaN),
 * nearbyintf as roundps to nearest, fmaf as the FMAs. */
static inline float rill_exp1(float x) {
  const float hi = 88.0f, lo = -87.33f;
  if (x != x) return x;
  float m = hi < x ? hi : x;
  float xc = lo > m ? lo : m;
  float n = nearbyintf(xc * 1.44269504088896341f);
  float r = fmaf(-n, 0.693359375f, xc);
  r = fmaf(-n, -2.12194440e-4f, r);
  float p = 1.0f / 5040.0f;
  p = fmaf(p, r, 1.0f / 720.0f);
  p = fmaf(p, r, 1.0f / 120.0f);
  p = fmaf(p, r, 1.0f / 24.0f);
  p = fmaf(p, r, 1.0f / 6.0f);
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  float y = p * scale;
  if (x > 88.7228394f) y = INFINITY;
  return x < lo ? 0.0f : y;
}

static inline float rill_sigmoid1(float x) { return 1.0f / (1.0f + rill_exp1(0.0f - x)); }

static inline float rill_tanh1(float x) {
  float ax = fabsf(x);
  float e = rill_exp1(ax * -2.0f);
  float big = (1.0f - e) / (1.0f + e);
  float x2 = ax * ax;
  float p = -1382.0f / 155925.0f;
  p = fmaf(p, x2, 62.0f / 2835.0f);
  p = fmaf(p, x2, -17.0f / 315.0f);
  p = fmaf(p, x2, 2.0f / 15.0f);
  p = fmaf(p, x2, -1.0f / 3.0f);
  float px2 = p * x2;
  float small = fmaf(px2, ax, ax);
  return copysignf(ax < 0.3f ? small : big, x);
}

#if RILL_X86_SIMD
RILL_AVX2_BEGIN

static inline __m256 rill_exp8(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.0f), lo = _mm256_set1_ps(-87.33f);
  /* min/max with x second: a NaN x comes through */
  __m256 xc = _mm256_max_ps(lo, _mm256_min_ps(hi, x));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  /* past float's largest: +inf; below the range: 0 (a NaN compares false both times and
   * stays NaN) */
  y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY),
                       _mm256_cmp_ps(x, _mm256_set1_ps(88.7228394f), _CMP_GT_OQ));
  return _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), y);
}

/* 1 / (1 + exp(-x)) */
static inline __m256 rill_sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, rill_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

/* tanh: for |x| >= 0.3, sign(x) (1 - e) / (1 + e) with e = exp(-2 |x|) (1 - e >= 0.45,
 * so no more than a bit is lost to cancellation); below, where 1 - e would cancel, its
 * odd Taylor series to x^11 (the next term is below 2e-9 relative there). Within 4 ulp
 * of the exact value; +-1 from |x| of about 9 on; NaN gives NaN. */
static inline __m256 rill_tanh8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  __m256 ax = _mm256_andnot_ps(sign, x);
  __m256 e = rill_exp8(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
  __m256 big = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  __m256 x2 = _mm256_mul_ps(ax, ax);
  __m256 p = _mm256_set1_ps(-1382.0f / 155925.0f);
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(62.0f / 2835.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-17.0f / 315.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(2.0f / 15.0f));
  p = _mm256_fmadd_ps(p, x2, _mm256_set1_ps(-1.0f / 3.0f));
  __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, x2), ax, ax);
  /* both for |x|, then x's sign (tanh(-0) = -0) */
  __m256 t = _mm256_blendv_ps(big, small, _mm256_cmp_ps(ax, _mm256_set1_ps(0.3f), _CMP_LT_OQ));
  return _mm256_or_ps(t, _mm256_and_ps(sign, x));
}

/* y[i] = f(x[i]) for i < n (y may be x), f one of the 8-lane functions above; the tail
 * through the same code. */
#define RILL_VEC_SPAN(f, y, x, n)                                                   \
  do {                                                                              \
    float *y_ = (y);                                                                \
    const float *x_ = (x);                                                          \
    int64_t n_ = (n), i_ = 0;                                                       \
    for (; i_ + 8 <= n_; i_ += 8) _mm256_storeu_ps(y_ + i_, f(_mm256_loadu_ps(x_ + i_))); \
    if (i_ < n_) {                                                                  \
      float t_[8] = {0};                                                            \
      memcpy(t_, x_ + i_, (size_t)(n_ - i_) * sizeof *t_);                          \
      _mm256_storeu_ps(t_, f(_mm256_loadu_ps(t_)));                                 \
      memcpy(y_ + i_, t_, (size_t)(n_ - i_) * sizeof *t_);                          \
    }                                                                               \
  } while (0)
RILL_AVX2_END
#endif

/* y[i] = tanh(x[i]) for i < n (y may be x); 8 lanes at a time where the CPU has AVX2. */
void rill_tanh_span_f32(float *y, const float *x, int64_t n);

/* y[i] = sigmoid(x[i]) for i < n (y may be x). */
void rill_sigmoid_span_f32(float *y, const float *x, int64_t n);

#endif
