/* kernels/cpu/vexp.h: exp and tanh of 8 floats within 2 ulp of the exact value over its range,
 * exactly 0 below it (and for -inf), NaN kept; sigmoid spans give an element the same
 * bits wherever it sits (a tail goes through the vector code); tanh within 4 ulp, its
 * signed zeros, saturation and NaN kept. */
#include <criterion/criterion.h>
#include <math.h>

#include "kernels/cpu/vexp.h"

#ifdef RILL_HAVE_VEXP
static void exp8_of(const float *x, float *y) { _mm256_storeu_ps(y, rill_exp8(_mm256_loadu_ps(x))); }

Test(vexp, within_two_ulp_over_the_range) {
  float worst = 0, at = 0;
  for (float v = -87.3f; v <= 88.0f; v += 0.00731f) {
    float x[8], y[8];
    for (int j = 0; j < 8; j++) x[j] = v + (float)j * 0.0009f;
    exp8_of(x, y);
    for (int j = 0; j < 8; j++) {
      if (x[j] > 88.0f) continue;
      double want = exp((double)x[j]);
      double ulp = nextafterf((float)want, INFINITY) - (float)want;
      float err = (float)(fabs((double)y[j] - want) / ulp);
      if (err > worst) worst = err, at = x[j];
    }
  }
  cr_expect(worst <= 2.0f, "%g ulp at x = %.9g", worst, at);
}

Test(vexp, edges) {
  float x[8] = {-INFINITY, -1000.0f, -87.4f, 0.0f, -0.0f, NAN, 1.0f, -1.0f}, y[8];
  exp8_of(x, y);
  cr_expect(y[0] == 0.0f && y[1] == 0.0f && y[2] == 0.0f, "below the range: %g %g %g", y[0], y[1], y[2]);
  cr_expect(y[3] == 1.0f && y[4] == 1.0f, "exp(+-0) = %g %g", y[3], y[4]);
  cr_expect(isnan(y[5]), "exp(NaN) = %g", y[5]);
  cr_expect(fabsf(y[6] - 2.71828183f) <= 3e-7f && fabsf(y[7] - 0.367879441f) <= 1e-7f, "%.9g %.9g", y[6], y[7]);
  /* above float's range: +inf, as expf overflows; so sigmoid(-inf) is exactly 0 */
  float big[8] = {INFINITY, 89.0f, 1000.0f, 88.0f, -INFINITY, INFINITY, NAN, 0.0f};
  exp8_of(big, y);
  cr_expect(isinf(y[0]) && y[0] > 0 && isinf(y[1]) && isinf(y[2]), "exp(big) = %g %g %g", y[0], y[1], y[2]);
  cr_expect(isfinite(y[3]) && y[3] > 1e38f, "exp(88) = %g", y[3]);
  _mm256_storeu_ps(y, rill_sigmoid8(_mm256_loadu_ps(big)));
  cr_expect(y[4] == 0.0f && y[5] == 1.0f && isnan(y[6]), "sigmoid(-inf, inf, NaN) = %g %g %g", y[4], y[5],
            y[6]);
}

Test(vexp, sigmoid_span_tail_matches_the_vector_bits) {
  enum { N = 19 };
  float x[N], y[N], one[8] = {0}, z[8];
  for (int i = 0; i < N; i++) x[i] = (float)(i - 9) * 1.37f;
  rill_sigmoid_span_f32(y, x, N);
  for (int i = 0; i < N; i++) {
    one[0] = x[i];
    _mm256_storeu_ps(z, rill_sigmoid8(_mm256_loadu_ps(one)));
    cr_expect(memcmp(&y[i], &z[0], sizeof(float)) == 0, "element %d: %.9g in the span, %.9g alone", i, y[i], z[0]);
    double want = 1.0 / (1.0 + exp(-(double)x[i]));
    cr_expect(fabs(y[i] - want) <= 2e-7 * want + 1e-12, "sigmoid(%g) = %.9g, want %.9g", x[i], y[i], want);
  }
  /* in place */
  rill_sigmoid_span_f32(x, x, N);
  cr_expect(memcmp(x, y, sizeof x) == 0);
}
Test(vexp, tanh_within_four_ulp_and_its_edges) {
  float worst = 0, at = 0;
  for (float v = -12.0f; v <= 12.0f; v += 0.000913f) {
    float x[8], y[8];
    for (int j = 0; j < 8; j++) x[j] = v + (float)j * 0.0001f;
    _mm256_storeu_ps(y, rill_tanh8(_mm256_loadu_ps(x)));
    for (int j = 0; j < 8; j++) {
      double want = tanh((double)x[j]);
      double ulp = nextafterf(fabsf((float)want), INFINITY) - fabsf((float)want);
      if (want == 0) continue;
      float err = (float)(fabs((double)y[j] - want) / ulp);
      if (err > worst) worst = err, at = x[j];
    }
  }
  cr_expect(worst <= 4.0f, "%g ulp at x = %.9g", worst, at);
  float x[8] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 20.0f, -20.0f, 1e-30f}, y[8];
  _mm256_storeu_ps(y, rill_tanh8(_mm256_loadu_ps(x)));
  cr_expect(y[0] == 0.0f && !signbit(y[0]) && y[1] == 0.0f && signbit(y[1]), "tanh(+-0) = %g %g", y[0], y[1]);
  cr_expect(y[2] == 1.0f && y[3] == -1.0f && y[5] == 1.0f && y[6] == -1.0f, "%g %g %g %g", y[2], y[3], y[5], y[6]);
  cr_expect(isnan(y[4]), "tanh(NaN) = %g", y[4]);
  cr_expect(y[7] == 1e-30f, "tanh(1e-30) = %g", y[7]);
}
#else
Test(vexp, not_built_without_avx2) { cr_skip_test("vexp.h needs AVX2 and FMA"); }
#endif
