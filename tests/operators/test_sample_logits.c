/* sample_logits: customized samples (the deterministic path) against a reference, the
 * gradient against finite differences, the drawn path checked for distinct log-uniform
 * negatives whose probabilities follow Paddle's adjustment and for repeatability under a
 * fixed seed, and the errors. */
#include "nn_test.h"

#include "support/grad_check.h"

enum { N = 3, K = 7, NT = 1, S = 3, C = NT + S };
static const int64_t LAB[N] = {0, 4, 6};
static const int64_t SMP[N * C] = {0, 2, 4, 5, 4, 2, 4, 6, 6, 1, 3, 0}; /* row 1: a hit */

/* With custom, Samples and Probabilities are the customized inputs themselves (as in
 * Fluid's programs) unless `copy`, which names them apart. */
static op_harness *sl_harness_ex(const double *x, const double *q, bool hits, bool custom,
                                 int seed, bool copy) {
  op_harness *h = harness("sample_logits");
  bind_input(h, "Logits", "x", RILL_DTYPE_FP64, DIMS(N, K), x);
  bind_input(h, "Labels", "lab", RILL_DTYPE_INT64, DIMS(N, NT), LAB);
  if (custom) {
    bind_input(h, "CustomizedSamples", "smp", RILL_DTYPE_INT64, DIMS(N, C), SMP);
    bind_input(h, "CustomizedProbabilities", "q", RILL_DTYPE_FP64, DIMS(N, C), q);
  }
  OK(op_harness_output(h, "Samples", custom && !copy ? "smp" : "samples"));
  OK(op_harness_output(h, "Probabilities", custom && !copy ? "q" : "probs"));
  OK(op_harness_output(h, "LogitsDim", "xdim"));
  OK(op_harness_output(h, "LabelsDim", "ldim"));
  OK(op_harness_output(h, "SampledLogits", "out"));
  OK(op_harness_output(h, "SampledLabels", "slab"));
  OK(op_harness_attr_int(h, "num_samples", S));
  OK(op_harness_attr_bool(h, "use_customized_samples", custom));
  OK(op_harness_attr_bool(h, "remove_accidental_hits", hits));
  OK(op_harness_attr_int(h, "seed", seed));
  return h;
}

static op_harness *sl_harness(const double *x, const double *q, bool hits, bool custom,
                              int seed) {
  return sl_harness_ex(x, q, hits, custom, seed, false);
}

Test(sample_logits, customized_samples_match_reference) {
  double x[N * K], q[N * C], want[N * C];
  fill_rand(x, N * K, 91);
  fill_rand(q, N * C, 92);
  for (int i = 0; i < N * C; i++) q[i] = 0.3 + 0.25 * q[i];
  for (int hits = 0; hits < 2; hits++) {
    for (int i = 0; i < N; i++)
      for (int j = 0; j < C; j++) {
        double v = x[i * K + SMP[i * C + j]];
        if (hits && j >= NT && SMP[i * C + j] == SMP[i * C]) v -= 1e20;
        want[i * C + j] = v - log(q[i * C + j]);
      }
    op_harness *h = sl_harness_ex(x, q, hits, true, 0, hits);
    OK(op_harness_run(h));
    expect_dims(op_harness_tensor(h, "out"), DIMS(N, C));
    expect_dims(op_harness_tensor(h, "xdim"), DIMS(N, K, 0));
    const double *got = rill_tensor_ptr(op_harness_tensor(h, "out"));
    for (int i = 0; i < N * C; i++)
      cr_assert(fabs(got[i] - want[i]) <= 1e-12 * fmax(1, fabs(want[i])), "[%d] %g vs %g", i,
                got[i], want[i]);
    const int64_t *sl = rill_tensor_ptr(op_harness_tensor(h, "slab"));
    for (int i = 0; i < N; i++) cr_assert_eq(sl[i], 0);
    op_harness_destroy(h);
  }
}

Test(sample_logits, gradient_matches_finite_differences) {
  double x[N * K], q[N * C];
  fill_rand(x, N * K, 93);
  for (int i = 0; i < N * C; i++) q[i] = 0.2 + 0.05 * i;
  op_harness *h = sl_harness_ex(x, q, false, true, 0, true);
  grad_check_opts o = {.rtol = 1e-6, .atol = 1e-6};
  OK(grad_check(h, GC_SLOTS("Logits"), GC_SLOTS("SampledLogits"), &o));
  op_harness_destroy(h);
}

static double logu(int64_t c) { return log((c + 2.0) / (c + 1.0)) / log(K + 1.0); }

/* The drawn negatives: in range, distinct, shared by the rows, after the true label;
 * their Q one adjustment of P for a whole number of draws, and the logits less log Q. */
static void check_draw(int seed, int64_t *negs) {
  double x[N * K];
  fill_rand(x, N * K, 94);
  op_harness *h = sl_harness(x, NULL, true, false, seed);
  OK(op_harness_run(h));
  const int64_t *sp = rill_tensor_ptr(op_harness_tensor(h, "samples"));
  const double *q = rill_tensor_ptr(op_harness_tensor(h, "probs"));
  const double *out = rill_tensor_ptr(op_harness_tensor(h, "out"));
  double tries = -1;
  for (int i = 0; i < N; i++) {
    cr_assert_eq(sp[i * C], LAB[i]);
    for (int j = NT; j < C; j++) {
      int64_t c = sp[i * C + j];
      cr_assert(c >= 0 && c < K, "sample %lld", (long long)c);
      cr_assert_eq(c, sp[j], "rows share the negatives");
      for (int t = NT; t < j; t++) cr_assert_neq(sp[i * C + t], c, "distinct negatives");
      double p = logu(c), t = log1p(-q[i * C + j]) / log1p(-p);
      if (fabs(q[i * C + j] - S * p) > 1e-12) {
        cr_assert(fabs(t - round(t)) < 1e-6 && round(t) > S, "Q %g of P %g", q[i * C + j], p);
        if (tries < 0) tries = round(t);
        cr_assert(fabs(round(t) - tries) < 0.5, "one number of draws");
      }
      double v = x[i * K + c] - (c == LAB[i] ? 1e20 : 0) - log(q[i * C + j]);
      cr_assert(fabs(out[i * C + j] - v) <= 1e-9 * fmax(1, fabs(v)));
    }
  }
  for (int j = 0; j < S; j++) negs[j] = sp[NT + j];
  op_harness_destroy(h);
}

Test(sample_logits, drawn_negatives_are_distinct_log_uniform) {
  int64_t a[S], b[S], count[K] = {0};
  check_draw(5, a);
  check_draw(5, b);
  cr_assert(memcmp(a, b, sizeof a) == 0, "a fixed seed repeats the draws");
  for (int seed = 1; seed <= 300; seed++) {
    check_draw(seed, a);
    for (int j = 0; j < S; j++) count[a[j]]++;
  }
  /* log-uniform: the small classes are drawn more often than the large ones */
  cr_assert(count[0] > count[3] && count[1] > count[6], "counts %lld %lld %lld %lld",
            (long long)count[0], (long long)count[3], (long long)count[1], (long long)count[6]);
}

Test(sample_logits, bad_input_fails_naming_op_and_variable) {
  double x[N * K] = {0};
  op_harness *h = harness("sample_logits");
  bind_input(h, "Logits", "scores", RILL_DTYPE_FP64, DIMS(N, K), x);
  bind_input(h, "Labels", "lab", RILL_DTYPE_INT64, DIMS(N, NT), LAB);
  OK(op_harness_output(h, "Samples", "s"));
  OK(op_harness_output(h, "Probabilities", "p"));
  OK(op_harness_output(h, "SampledLogits", "o"));
  OK(op_harness_output(h, "SampledLabels", "l"));
  OK(op_harness_attr_int(h, "num_samples", K + 1));
  EXPECT_ERROR(op_harness_infer(h), "sample_logits", "num_samples is 8", "scores");
  op_harness_destroy(h);

  static const int64_t bad[N] = {0, 9, 1};
  h = sl_harness(x, NULL, true, false, 3);
  bind_input(h, "Labels", "lab", RILL_DTYPE_INT64, DIMS(N, NT), bad);
  EXPECT_ERROR(op_harness_run(h), "sample_logits", "Labels (lab)", "class 9");
  op_harness_destroy(h);

  h = harness("sample_logits");
  bind_input(h, "Logits", "scores", RILL_DTYPE_FP64, DIMS(N, K), x);
  bind_input(h, "Labels", "lab", RILL_DTYPE_INT64, DIMS(N, NT), LAB);
  OK(op_harness_output(h, "Samples", "s"));
  OK(op_harness_output(h, "Probabilities", "p"));
  OK(op_harness_output(h, "SampledLogits", "o"));
  OK(op_harness_output(h, "SampledLabels", "l"));
  OK(op_harness_attr_int(h, "num_samples", S));
  OK(op_harness_attr_bool(h, "use_customized_samples", true));
  EXPECT_ERROR(op_harness_infer(h), "sample_logits", "CustomizedSamples");
  op_harness_destroy(h);
}
