/* kernels/cpu/vexp.h: exp and tanh within 2 and 4 ulp of the exact value over their
 * range, exactly 0 below exp's (and for -inf), NaN kept, tanh's signed zeros and
 * saturation; a span gives an element the same bits wherever it sits (a tail goes
 * through the vector code), and the scalar path (generic CPUs) the same bits as the
 * AVX2 lanes. Each check runs at every level this CPU has (isa.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "framework/base/isa.h"
#include "kernels/cpu/vexp.h"

static void restore_level(void) { rill_cpu_isa_level_set(rill_cpu_isa_level_native()); }

/* exp's lanes are checked through the spans below (sigmoid and tanh are built on it),
 * which must give the scalar twin's bits. */
static void exp_of(const float *x, float *y, int n) {
  for (int i = 0; i < n; i++) y[i] = rill_exp1(x[i]);
}

Test(vexp, exp_within_two_ulp_over_the_range) {
  float worst = 0, at = 0;
  for (float v = -87.3f; v <= 88.0f; v += 0.00731f) {
    float x[8], y[8];
    for (int j = 0; j < 8; j++) x[j] = v + (float)j * 0.0009f;
    exp_of(x, y, 8);
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

Test(vexp, exp_edges) {
  float x[8] = {-INFINITY, -1000.0f, -87.4f, 0.0f, -0.0f, NAN, 1.0f, -1.0f}, y[8];
  exp_of(x, y, 8);
  cr_expect(y[0] == 0.0f && y[1] == 0.0f && y[2] == 0.0f, "below the range: %g %g %g", y[0], y[1], y[2]);
  cr_expect(y[3] == 1.0f && y[4] == 1.0f, "exp(+-0) = %g %g", y[3], y[4]);
  cr_expect(isnan(y[5]), "exp(NaN) = %g", y[5]);
  cr_expect(fabsf(y[6] - 2.71828183f) <= 3e-7f && fabsf(y[7] - 0.367879441f) <= 1e-7f, "%.9g %.9g", y[6], y[7]);
  /* above float's range: +inf, as expf overflows; so sigmoid(-inf) is exactly 0 */
  float big[8] = {INFINITY, 89.0f, 1000.0f, 88.0f, -INFINITY, INFINITY, NAN, 0.0f};
  exp_of(big, y, 8);
  cr_expect(isinf(y[0]) && y[0] > 0 && isinf(y[1]) && isinf(y[2]), "exp(big) = %g %g %g", y[0], y[1], y[2]);
  cr_expect(isfinite(y[3]) && y[3] > 1e38f, "exp(88) = %g", y[3]);
  for (int level = RILL_CPU_ISA_GENERIC; level <= (int)rill_cpu_isa_level_native(); level++) {
    rill_cpu_isa_level_set((rill_cpu_isa_level)level);
    rill_sigmoid_span_f32(y, big, 8);
    cr_expect(y[4] == 0.0f && y[5] == 1.0f && isnan(y[6]), "level %d: sigmoid(-inf, inf, NaN) = %g %g %g", level,
              y[4], y[5], y[6]);
  }
  restore_level();
}

Test(vexp, sigmoid_span_every_element_the_same_bits, .fini = restore_level) {
  enum { N = 19 };
  for (int level = RILL_CPU_ISA_GENERIC; level <= (int)rill_cpu_isa_level_native(); level++) {
    rill_cpu_isa_level_set((rill_cpu_isa_level)level);
    float x[N], y[N];
    for (int i = 0; i < N; i++) x[i] = (float)(i - 9) * 1.37f;
    rill_sigmoid_span_f32(y, x, N);
    for (int i = 0; i < N; i++) {
      float z;
      rill_sigmoid_span_f32(&z, &x[i], 1); /* alone: a tail of one */
      cr_expect(memcmp(&y[i], &z, sizeof z) == 0, "level %d element %d: %.9g in the span, %.9g alone", level,
                i, y[i], z);
      cr_expect(memcmp(&y[i], &(float){rill_sigmoid1(x[i])}, sizeof z) == 0,
                "level %d element %d: %.9g in the span, %.9g by the scalar twin", level, i, y[i],
                rill_sigmoid1(x[i]));
      double want = 1.0 / (1.0 + exp(-(double)x[i]));
      cr_expect(fabs(y[i] - want) <= 2e-7 * want + 1e-12, "sigmoid(%g) = %.9g, want %.9g", x[i], y[i], want);
    }
    /* in place */
    rill_sigmoid_span_f32(x, x, N);
    cr_expect(memcmp(x, y, sizeof x) == 0, "level %d: in place differs", level);
  }
}

/* The AVX2 lanes and the scalar twin agree bit for bit on a sweep that crosses every
 * branch (tanh's 0.3 switch, exp's clamps) and the specials. */
Test(vexp, scalar_twin_is_the_lanes_bits, .fini = restore_level) {
  if (rill_cpu_isa_level_native() < RILL_CPU_ISA_AVX2) cr_skip_test("this CPU has no AVX2: one path only");
  enum { N = 40000 };
  float *x = malloc(N * sizeof *x), *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  for (int i = 0; i < N; i++) x[i] = -100.0f + 200.0f * (float)i / N;
  x[0] = NAN, x[1] = INFINITY, x[2] = -INFINITY, x[3] = -0.0f, x[4] = 0.0f, x[5] = 0.29999998f;
  for (int f = 0; f < 2; f++) {
    rill_cpu_isa_level_set(RILL_CPU_ISA_AVX2);
    (f ? rill_sigmoid_span_f32 : rill_tanh_span_f32)(a, x, N);
    rill_cpu_isa_level_set(RILL_CPU_ISA_GENERIC);
    (f ? rill_sigmoid_span_f32 : rill_tanh_span_f32)(b, x, N);
    int bad = 0, first = -1;
    for (int i = 0; i < N; i++)
      if (memcmp(&a[i], &b[i], sizeof *a) != 0 && !(isnan(a[i]) && isnan(b[i])))
        if (bad++ == 0) first = i;
    cr_expect(bad == 0, "%s: %d elements differ, first at x = %.9g: %.9g (AVX2) vs %.9g", f ? "sigmoid" : "tanh",
              bad, first >= 0 ? x[first] : 0, first >= 0 ? a[first] : 0, first >= 0 ? b[first] : 0);
  }
  free(x), free(a), free(b);
}

Test(vexp, tanh_within_four_ulp_and_its_edges, .fini = restore_level) {
  for (int level = RILL_CPU_ISA_GENERIC; level <= (int)rill_cpu_isa_level_native(); level++) {
    rill_cpu_isa_level_set((rill_cpu_isa_level)level);
    float worst = 0, at = 0;
    for (float v = -12.0f; v <= 12.0f; v += 0.000913f) {
      float x[8], y[8];
      for (int j = 0; j < 8; j++) x[j] = v + (float)j * 0.0001f;
      rill_tanh_span_f32(y, x, 8);
      for (int j = 0; j < 8; j++) {
        double want = tanh((double)x[j]);
        double ulp = nextafterf(fabsf((float)want), INFINITY) - fabsf((float)want);
        if (want == 0) continue;
        float err = (float)(fabs((double)y[j] - want) / ulp);
        if (err > worst) worst = err, at = x[j];
      }
    }
    cr_expect(worst <= 4.0f, "level %d: %g ulp at x = %.9g", level, worst, at);
    float x[8] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 20.0f, -20.0f, 1e-30f}, y[8];
    rill_tanh_span_f32(y, x, 8);
    cr_expect(y[0] == 0.0f && !signbit(y[0]) && y[1] == 0.0f && signbit(y[1]), "tanh(+-0) = %g %g", y[0], y[1]);
    cr_expect(y[2] == 1.0f && y[3] == -1.0f && y[5] == 1.0f && y[6] == -1.0f, "%g %g %g %g", y[2], y[3], y[5],
              y[6]);
    cr_expect(isnan(y[4]), "tanh(NaN) = %g", y[4]);
    cr_expect(y[7] == 1e-30f, "tanh(1e-30) = %g", y[7]);
  }
}
