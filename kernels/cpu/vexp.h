/* exp of 8 floats at once (AVX2 + FMA), for the kernels whose cost is libm's expf on
 * every element: softmax over a vocabulary (word2vec's 2074 words: 2074 calls were a
 * sixth of the model) and sigmoid epilogues.
 *
 * exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 with ln 2 split in a high
 * part exact in float and a low part, so |r| <= ln 2 / 2; exp(r) by its Taylor series
 * to r^7 (the next term is below 5e-9 relative), in Horner form with FMAs; 2^n built
 * in the exponent bits. Within 2 ulp of expf over [-87.3, 88]. Outside: x < -87.33
 * (where expf is denormal, below 1.2e-38) gives 0, x > 88 gives exp(88) (3.4e38 is
 * float's largest; softmax and sigmoid only pass arguments <= 0 and -x of any sign, where
 * this saturation changes no result), NaN gives NaN.
 *
 * Every lane is computed the same way, so the spans below give each element the same
 * bits wherever it sits in a span (tails go through the same vector code). */
#ifndef RILL_KERNELS_CPU_VEXP_H
#define RILL_KERNELS_CPU_VEXP_H

#include <stdint.h>
#include <string.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#define RILL_HAVE_VEXP 1

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
  /* below the range: 0 (a NaN compares false and stays NaN) */
  return _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), y);
}

/* 1 / (1 + exp(-x)) */
static inline __m256 rill_sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, rill_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

/* y[i] = sigmoid(x[i]) for i < n (y may be x). */
static inline void rill_sigmoid_span_f32(float *y, const float *x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, rill_sigmoid8(_mm256_loadu_ps(x + i)));
  if (i < n) {
    float t[8] = {0};
    memcpy(t, x + i, (size_t)(n - i) * sizeof *t);
    _mm256_storeu_ps(t, rill_sigmoid8(_mm256_loadu_ps(t)));
    memcpy(y + i, t, (size_t)(n - i) * sizeof *t);
  }
}
#endif

#endif
