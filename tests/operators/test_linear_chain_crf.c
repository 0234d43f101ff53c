/* linear_chain_crf against the CRF by enumeration of every tag path (crf_test.h), on LoD
 * and padded inputs in float32 and float64; its intermediate outputs; the gradients by
 * finite differences; and the errors. */
#include "op_test.h"

#include "crf_test.h"
#include "support/grad_check.h"

enum { D = 3, ROWS = 9 };
/* Sequences of 3, 0, 4 and 2 rows (one empty). */
static const uint64_t lod[] = {0, 3, 3, 7, 9};
static const int64_t labels[ROWS] = {0, 2, 1, 1, 1, 0, 2, 2, 0};

static void fill(double *x, double *w) {
  for (int i = 0; i < ROWS * D; i++) x[i] = sin(1.3 * i + 0.4) * 1.7;
  for (int i = 0; i < (D + 2) * D; i++) w[i] = cos(0.9 * i + 0.2) * 0.8;
}

static void outputs(op_harness *h) {
  OK(op_harness_output(h, "Alpha", "alpha"));
  OK(op_harness_output(h, "EmissionExps", "eexp"));
  OK(op_harness_output(h, "TransitionExps", "texp"));
  OK(op_harness_output(h, "LogLikelihood", "nll"));
}

static op_harness *lod_f64(const double *x, const double *w, const int64_t *y) {
  op_harness *h = harness("linear_chain_crf");
  bind_input(h, "Emission", "emission", RILL_DTYPE_FP64, DIMS(ROWS, D), x);
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D), w);
  crf_bind_seqs(h, lod, RILL_COUNTOF(lod), "Label", "label", RILL_DTYPE_INT64, DIMS(ROWS, 1), y);
  outputs(h);
  return h;
}

Test(linear_chain_crf, lod_cost_is_log_z_minus_the_label_score) {
  double x[ROWS * D], w[(D + 2) * D];
  fill(x, w);
  op_harness *h = lod_f64(x, w, labels);
  OK(op_harness_run(h));
  rill_tensor *nll = op_harness_tensor(h, "nll");
  expect_dims(nll, DIMS(4, 1));
  const double *got = rill_tensor_ptr(nll);
  for (int i = 0; i < 4; i++) {
    int64_t s = (int64_t)lod[i], L = (int64_t)(lod[i + 1] - lod[i]), best[CRF_MAX_STEPS];
    double want = 0;
    if (L) crf_enumerate(x + s * D, w, D, L, labels + s, &want, best);
    cr_assert(fabs(got[i] - want) < 1e-12 * (1 + fabs(want)), "sequence %d: %.17g != %.17g", i, got[i], want);
    cr_assert(L == 0 || got[i] > 0, "a cost is a negative log-probability");
  }
  /* Intermediates: exp(x - rowmax), exp(w), and alpha rows summing to 1 whose first row
   * of each sequence is exp(w0) * exp(x0) scaled. */
  const double *ee = rill_tensor_ptr(op_harness_tensor(h, "eexp"));
  const double *te = rill_tensor_ptr(op_harness_tensor(h, "texp"));
  const double *al = rill_tensor_ptr(op_harness_tensor(h, "alpha"));
  for (int r = 0; r < ROWS; r++) {
    double m = fmax(fmax(x[r * D], x[r * D + 1]), x[r * D + 2]), sum = 0;
    for (int i = 0; i < D; i++) {
      cr_assert(fabs(ee[r * D + i] - exp(x[r * D + i] - m)) < 1e-15);
      sum += al[r * D + i];
    }
    cr_assert(fabs(sum - 1) < 1e-12, "alpha row %d sums to %g", r, sum);
  }
  for (int i = 0; i < (D + 2) * D; i++) cr_assert(fabs(te[i] - exp(w[i])) < 1e-15);
  double z = 0;
  for (int i = 0; i < D; i++) z += exp(w[i] + x[3 * D + i]);
  for (int i = 0; i < D; i++) cr_assert(fabs(al[3 * D + i] - exp(w[i] + x[3 * D + i]) / z) < 1e-12);
  op_harness_destroy(h);
}

Test(linear_chain_crf, float32_matches_float64) {
  double x[ROWS * D], w[(D + 2) * D];
  float xf[ROWS * D], wf[(D + 2) * D];
  fill(x, w);
  for (int i = 0; i < ROWS * D; i++) xf[i] = (float)x[i], x[i] = xf[i];
  for (int i = 0; i < (D + 2) * D; i++) wf[i] = (float)w[i], w[i] = wf[i];
  op_harness *h = harness("linear_chain_crf");
  crf_bind_seqs(h, lod, RILL_COUNTOF(lod), "Emission", "emission",
                RILL_DTYPE_FP32, DIMS(ROWS, D), xf);
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP32, DIMS(D + 2, D), wf);
  crf_bind_seqs(h, lod, RILL_COUNTOF(lod), "Label", "label",
                RILL_DTYPE_INT64, DIMS(ROWS, 1), labels);
  outputs(h);
  OK(op_harness_run(h));
  rill_tensor *nll = op_harness_tensor(h, "nll");
  cr_assert_eq(nll->dtype, RILL_DTYPE_FP32);
  cr_assert_eq(op_harness_tensor(h, "alpha")->dtype, RILL_DTYPE_FP32);
  const float *got = rill_tensor_ptr(nll);
  for (int i = 0; i < 4; i++) {
    int64_t s = (int64_t)lod[i], L = (int64_t)(lod[i + 1] - lod[i]), best[CRF_MAX_STEPS];
    double want = 0;
    if (L) crf_enumerate(x + s * D, w, D, L, labels + s, &want, best);
    cr_assert(fabs(got[i] - want) < 1e-5 * (1 + fabs(want)), "sequence %d: %g != %g", i, got[i], want);
  }
  op_harness_destroy(h);
}

/* The same sequences padded to [4, 5, D] with Length: the same costs, zero Alpha rows on
 * the padding, EmissionExps on every row. */
static op_harness *padded_f64(double *xp, const double *x, const double *w, int64_t *yp) {
  memset(xp, 0, sizeof(double) * 4 * 5 * D);
  memset(yp, 0, sizeof(int64_t) * 4 * 5);
  int64_t len[4];
  for (int i = 0; i < 4; i++) {
    len[i] = (int64_t)(lod[i + 1] - lod[i]);
    for (int64_t k = 0; k < 5; k++) {
      for (int j = 0; j < D; j++)
        xp[(i * 5 + k) * D + j] = k < len[i] ? x[(lod[i] + (uint64_t)k) * D + (uint64_t)j] : 0.25 * (j + 1) * (k - 2);
      if (k < len[i]) yp[i * 5 + k] = labels[lod[i] + (uint64_t)k];
    }
  }
  op_harness *h = harness("linear_chain_crf");
  bind_input(h, "Emission", "emission", RILL_DTYPE_FP64, DIMS(4, 5, D), xp);
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D), w);
  bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(4, 5, 1), yp);
  bind_input(h, "Length", "length", RILL_DTYPE_INT64, DIMS(4), len);
  outputs(h);
  return h;
}

Test(linear_chain_crf, padded_rows_cut_at_length_give_the_lod_costs) {
  double x[ROWS * D], w[(D + 2) * D], xp[4 * 5 * D];
  int64_t yp[20];
  fill(x, w);
  op_harness *hl = lod_f64(x, w, labels), *hp = padded_f64(xp, x, w, yp);
  OK(op_harness_run(hl));
  OK(op_harness_run(hp));
  expect_dims(op_harness_tensor(hp, "nll"), DIMS(4, 1));
  expect_dims(op_harness_tensor(hp, "alpha"), DIMS(4, 5, D));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(hp, "nll")),
                   rill_tensor_ptr(op_harness_tensor(hl, "nll")), 4, 1e-13);
  const double *al = rill_tensor_ptr(op_harness_tensor(hp, "alpha"));
  const double *ee = rill_tensor_ptr(op_harness_tensor(hp, "eexp"));
  for (int i = 0; i < 4; i++)
    for (uint64_t k = lod[i + 1] - lod[i]; k < 5; k++) {
      for (int j = 0; j < D; j++) cr_assert_eq(al[(i * 5 + (int)k) * D + j], 0.0, "padding alpha");
      const double *er = ee + (i * 5 + (int)k) * D;
      cr_assert(fmax(fmax(er[0], er[1]), er[2]) == 1.0, "padding rows get exp too");
    }
  op_harness_destroy(hl);
  op_harness_destroy(hp);
}

Test(linear_chain_crf, gradients_match_finite_differences) {
  double x[ROWS * D], w[(D + 2) * D], xp[4 * 5 * D];
  int64_t yp[20];
  fill(x, w);
  grad_check_opts o = {.eps = 1e-6, .rtol = 1e-6, .atol = 1e-7};
  op_harness *h = lod_f64(x, w, labels);
  rill_status *st = grad_check(h, GC_SLOTS("Emission", "Transition"), GC_SLOTS("LogLikelihood"), &o);
  cr_assert_null(st, "LoD: %s", rill_status_message(st));
  op_harness_destroy(h);
  h = padded_f64(xp, x, w, yp);
  st = grad_check(h, GC_SLOTS("Emission", "Transition"), GC_SLOTS("LogLikelihood"), &o);
  cr_assert_null(st, "padded: %s", rill_status_message(st));
  op_harness_destroy(h);
}

Test(linear_chain_crf, gradient_by_hand_for_one_step) {
  /* One step: the Emission gradient is g * (softmax(w0 + w1 + x) - onehot(y)); Transition's
   * start and end rows get the same, the tag-to-tag rows nothing. */
  const double x[D] = {0.5, -1, 2}, g = 3;
  double w[(D + 2) * D], want[D], z = 0;
  for (int i = 0; i < (D + 2) * D; i++) w[i] = 0.1 * i;
  for (int i = 0; i < D; i++) z += exp(w[i] + w[D + i] + x[i]);
  for (int i = 0; i < D; i++) want[i] = g * (exp(w[i] + w[D + i] + x[i]) / z - (i == 1));
  op_harness *h = harness("linear_chain_crf");
  bind_input(h, "Emission", "emission", RILL_DTYPE_FP64, DIMS(1, 1, D), x);
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D), w);
  bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(1, 1), (int64_t[]){1});
  bind_input(h, "Length", "length", RILL_DTYPE_INT64, DIMS(1), (int64_t[]){1});
  outputs(h);
  OK(op_harness_run(h));
  op_harness *gh = harness("linear_chain_crf_grad");
  static const char *const fwd[][2] = {{"Emission", "emission"}, {"Transition", "crfw"}, {"Label", "label"},
                                       {"Length", "length"}, {"Alpha", "alpha"}, {"EmissionExps", "eexp"},
                                       {"TransitionExps", "texp"}};
  for (size_t i = 0; i < RILL_COUNTOF(fwd); i++) OK(op_harness_input(gh, fwd[i][0], fwd[i][1], op_harness_tensor(h, fwd[i][1])));
  bind_input(gh, "LogLikelihood@GRAD", "dnll", RILL_DTYPE_FP64, DIMS(1, 1), &g);
  OK(op_harness_output(gh, "Emission@GRAD", "dx"));
  OK(op_harness_output(gh, "Transition@GRAD", "dw"));
  OK(op_harness_run(gh));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(gh, "dx")), want, D, 1e-12);
  const double *dw = rill_tensor_ptr(op_harness_tensor(gh, "dw"));
  expect_close_f64(dw, want, D, 1e-12);
  expect_close_f64(dw + D, want, D, 1e-12);
  for (int i = 2 * D; i < (D + 2) * D; i++) cr_assert_eq(dw[i], 0.0);
  op_harness_destroy(gh);
  op_harness_destroy(h);
}

Test(linear_chain_crf, bad_inputs_are_errors_naming_them) {
  double x[ROWS * D], w[(D + 2) * D];
  fill(x, w);
  int64_t y[ROWS];
  memcpy(y, labels, sizeof y);
  y[5] = D;
  op_harness *h = lod_f64(x, w, y);
  EXPECT_ERROR(op_harness_run(h), "linear_chain_crf", "Label", "label", "tag 3", "row 5");
  y[5] = -1;
  crf_bind_seqs(h, lod, RILL_COUNTOF(lod), "Label", "label", RILL_DTYPE_INT64, DIMS(ROWS, 1), y);
  EXPECT_ERROR(op_harness_run(h), "linear_chain_crf", "Label", "tag -1");
  crf_bind_seqs(h, lod, RILL_COUNTOF(lod), "Label", "label",
                RILL_DTYPE_INT64, DIMS(ROWS, 1), labels);
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D, D), w);
  EXPECT_ERROR(op_harness_run(h), "linear_chain_crf", "Transition", "crfw", "[D + 2, D]");
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D), w);
  bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(ROWS, 1), labels);
  EXPECT_ERROR(op_harness_run(h), "linear_chain_crf", "LoD");
  op_harness_destroy(h);

  double xp[4 * 5 * D];
  int64_t yp[20];
  h = padded_f64(xp, x, w, yp);
  bind_input(h, "Length", "length", RILL_DTYPE_INT64, DIMS(4), (int64_t[]){1, 6, 0, 0});
  EXPECT_ERROR(op_harness_run(h), "linear_chain_crf", "Length", "length", "length 6");
  bind_input(h, "Length", "length", RILL_DTYPE_INT64, DIMS(3), (int64_t[]){1, 1, 1});
  EXPECT_ERROR(op_harness_run(h), "linear_chain_crf", "Length", "one length per row");
  op_harness_destroy(h);
}

Test(linear_chain_crf, scores_that_underflow_are_an_error) {
  /* exp(-800) is 0 in float64: no path has a positive probability. */
  double x[2 * D] = {0, 0, 0, 0, 0, 0}, w[(D + 2) * D];
  for (int i = 0; i < (D + 2) * D; i++) w[i] = i < D ? -800 : 0;
  op_harness *h = harness("linear_chain_crf");
  bind_input(h, "Emission", "emission", RILL_DTYPE_FP64, DIMS(1, 2, D), x);
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D), w);
  bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(1, 2), (int64_t[]){0, 1});
  bind_input(h, "Length", "length", RILL_DTYPE_INT64, DIMS(1), (int64_t[]){2});
  outputs(h);
  EXPECT_ERROR(op_harness_run(h), "linear_chain_crf", "sequence 0", "emission", "crfw");
  op_harness_destroy(h);
}
