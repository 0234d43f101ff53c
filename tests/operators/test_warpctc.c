/* warpctc against a reference written here that enumerates every alignment (all C^T
 * frame labelings of a short sequence, kept when they collapse to the label), LoD and
 * padded forms, float32 and float64, a non-zero blank, an empty label and one that
 * cannot fit; warpctc_grad (Loss@GRAD, norm_by_times) by finite differences; errors. */
#include "op_test.h"
#include "support/grad_check.h"

enum { C = 3 };

/* -log of the total probability of the frame labelings of y [T, C] (softmax taken here)
 * that collapse (merge repeats, drop blanks) to lab [L]; 0 when none can. */
static double brute_loss(const double *x, int T, const int *lab, int L, int blank) {
  double y[8][C];
  for (int t = 0; t < T; t++) {
    double s = 0;
    for (int k = 0; k < C; k++) s += exp(x[t * C + k]);
    for (int k = 0; k < C; k++) y[t][k] = exp(x[t * C + k]) / s;
  }
  double p = 0;
  int path[8] = {0}, total = 1;
  for (int t = 0; t < T; t++) total *= C;
  for (int code = 0; code < total; code++) {
    int c = code, out[8], n = 0;
    double pr = 1;
    for (int t = 0; t < T; t++) {
      path[t] = c % C;
      c /= C;
      pr *= y[t][path[t]];
    }
    for (int t = 0; t < T; t++)
      if (path[t] != blank && (t == 0 || path[t] != path[t - 1])) out[n++] = path[t];
    bool same = n == L;
    for (int i = 0; same && i < L; i++) same = out[i] == lab[i];
    if (same) p += pr;
  }
  return p > 0 ? -log(p) : 0;
}

static const uint64_t xlod[] = {0, 4, 9, 12, 14}; /* frames 4, 5, 3, 2 */
static const int frames[] = {4, 5, 3, 2};
static const int32_t labels_b0[] = {1, 1, 2, 1, 2, 1};     /* [1 1], [2 1 2], [], [1] */
static const uint64_t llod_b0[] = {0, 2, 5, 5, 6};
static const int32_t labels_b2[] = {0, 1, 1, 0, 0, 1, 1, 1}; /* [0 1], [1 0 0], [1], [1 1] (cannot fit) */
static const uint64_t llod_b2[] = {0, 2, 5, 6, 8};

static void fill(double *v, int n, double scale, double phase) {
  for (int i = 0; i < n; i++) v[i] = scale * sin(i * 0.71 + phase);
}

static op_harness *lod_harness(rill_dtype dt, const double *x, int blank, const char *xname) {
  const int32_t *lab = blank ? labels_b2 : labels_b0;
  const uint64_t *llod = blank ? llod_b2 : llod_b0;
  float xf[64];
  for (int i = 0; i < 14 * C; i++) xf[i] = (float)x[i];
  op_harness *h = harness("warpctc");
  rill_tensor *t = op_harness_make(dt, DIMS(14, C), dt == RILL_DTYPE_FP32 ? (const void *)xf : x);
  size_t n = 5;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){xlod}, &n));
  OK(op_harness_input(h, "Logits", xname, t));
  op_harness_free_tensor(t);
  int64_t nl = (int64_t)llod[4];
  t = op_harness_make(RILL_DTYPE_INT32, DIMS(nl, 1), lab);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){llod}, &n));
  OK(op_harness_input(h, "Label", "label", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "WarpCTCGrad", "ctc_grad"));
  OK(op_harness_output(h, "Loss", "loss"));
  OK(op_harness_attr_int(h, "blank", blank));
  return h;
}

static double val(const rill_tensor *t, int64_t i) {
  return t->dtype == RILL_DTYPE_FP32 ? ((const float *)rill_tensor_ptr(t))[i]
                                     : ((const double *)rill_tensor_ptr(t))[i];
}

static void want_losses(const double *x, int blank, double *want) {
  const int32_t *lab = blank ? labels_b2 : labels_b0;
  const uint64_t *llod = blank ? llod_b2 : llod_b0;
  for (int n = 0; n < 4; n++) {
    int l[8], L = (int)(llod[n + 1] - llod[n]);
    for (int i = 0; i < L; i++) l[i] = lab[llod[n] + (uint64_t)i];
    want[n] = brute_loss(x + xlod[n] * C, frames[n], l, L, blank);
  }
}

Test(warpctc, lod_loss_matches_enumeration) {
  double x[64], want[4];
  fill(x, 14 * C, 1.5, 0.2);
  for (int blank = 0; blank <= 2; blank += 2) {
    want_losses(x, blank, want);
    if (blank) cr_assert_eq(want[3], 0.0, "the last label cannot fit");
    for (int d = 0; d < 2; d++) {
      rill_dtype dt = d ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
      op_harness *h = lod_harness(dt, x, blank, "x");
      OK(op_harness_run(h));
      rill_tensor *loss = op_harness_tensor(h, "loss"), *g = op_harness_tensor(h, "ctc_grad");
      expect_dims(loss, DIMS(4, 1));
      expect_dims(g, DIMS(5, 4, C));
      double tol = d ? 1e-12 : 2e-6;
      for (int n = 0; n < 4; n++)
        cr_assert(fabs(val(loss, n) - want[n]) <= tol * (1 + want[n]), "blank %d seq %d: %.17g != %.17g",
                  blank, n, val(loss, n), want[n]);
      /* zero past each sequence's frames; each frame's gradient sums to 0 (softmax) */
      for (int t = 0; t < 5; t++)
        for (int n = 0; n < 4; n++) {
          double s = 0;
          for (int k = 0; k < C; k++) {
            double v = val(g, (t * 4 + n) * C + k);
            if (t >= frames[n]) cr_assert_eq(v, 0.0);
            s += v;
          }
          cr_assert(fabs(s) < 1e-5, "frame %d of %d sums to %g", t, n, s);
        }
      op_harness_destroy(h);
    }
  }
}

Test(warpctc, padded_form_matches_lod_form) {
  double x[64], want[4];
  fill(x, 14 * C, 1.5, 0.2);
  want_losses(x, 0, want);
  double px[5 * 4 * C] = {0};
  for (int n = 0; n < 4; n++)
    for (int t = 0; t < frames[n]; t++)
      for (int k = 0; k < C; k++) px[(t * 4 + n) * C + k] = x[(xlod[n] + (uint64_t)t) * C + k];
  const int32_t plab[] = {1, 1, 0, 2, 1, 2, 0, 0, 0, 1, 0, 0};
  const int64_t xl[] = {4, 5, 3, 2}, ll[] = {2, 3, 0, 1};
  op_harness *h = harness("warpctc");
  bind_input(h, "Logits", "x", RILL_DTYPE_FP64, DIMS(5, 4, C), px);
  bind_input(h, "Label", "label", RILL_DTYPE_INT32, DIMS(4, 3), plab);
  bind_input(h, "LogitsLength", "x_len", RILL_DTYPE_INT64, DIMS(4), xl);
  bind_input(h, "LabelLength", "label_len", RILL_DTYPE_INT64, DIMS(4), ll);
  OK(op_harness_output(h, "WarpCTCGrad", "ctc_grad"));
  OK(op_harness_output(h, "Loss", "loss"));
  OK(op_harness_run(h));
  for (int n = 0; n < 4; n++)
    cr_assert_float_eq(val(op_harness_tensor(h, "loss"), n), want[n], 1e-12, "seq %d", n);
  grad_check_opts o = {.rtol = 1e-6, .atol = 1e-8};
  rill_status *st = grad_check(h, GC_SLOTS("Logits"), GC_SLOTS("Loss"), &o);
  cr_assert_null(st, "%s", rill_status_message(st));
  op_harness_destroy(h);
}

Test(warpctc, gradients_match_finite_differences) {
  double x[64];
  fill(x, 14 * C, 1.5, 0.2);
  for (int blank = 0; blank <= 2; blank += 2) {
    op_harness *h = lod_harness(RILL_DTYPE_FP64, x, blank, "x");
    grad_check_opts o = {.rtol = 1e-6, .atol = 1e-8};
    rill_status *st = grad_check(h, GC_SLOTS("Logits"), GC_SLOTS("Loss"), &o);
    cr_assert_null(st, "blank %d: %s", blank, rill_status_message(st));
    op_harness_destroy(h);
  }
}

Test(warpctc, norm_by_times_divides_the_gradient_by_the_frames) {
  double x[64];
  fill(x, 14 * C, 1.5, 0.2);
  op_harness *h = lod_harness(RILL_DTYPE_FP64, x, 0, "x");
  OK(op_harness_attr_bool(h, "norm_by_times", true));
  OK(op_harness_run(h));
  rill_tensor *g = op_harness_tensor(h, "ctc_grad");
  double dloss[] = {0.5, 2.0, -1.0, 3.0};
  op_harness *gh = harness("warpctc_grad");
  OK(op_harness_input(gh, "WarpCTCGrad", "ctc_grad", g));
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(14, C), x);
  size_t n = 5;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){xlod}, &n));
  OK(op_harness_input(gh, "Logits", "x", t));
  op_harness_free_tensor(t);
  bind_input(gh, "Loss@GRAD", "loss@GRAD", RILL_DTYPE_FP64, DIMS(4, 1), dloss);
  OK(op_harness_output(gh, "Logits@GRAD", "x@GRAD"));
  OK(op_harness_attr_bool(gh, "norm_by_times", true));
  OK(op_harness_run(gh));
  rill_tensor *dx = op_harness_tensor(gh, "x@GRAD");
  expect_dims(dx, DIMS(14, C));
  for (int s = 0; s < 4; s++)
    for (int tt = 0; tt < frames[s]; tt++)
      for (int k = 0; k < C; k++)
        cr_assert_float_eq(val(dx, (int64_t)(xlod[s] + (uint64_t)tt) * C + k),
                           val(g, (tt * 4 + s) * C + k) * dloss[s] / frames[s], 1e-15);
  op_harness_destroy(gh);
  op_harness_destroy(h);
}

Test(warpctc, errors_name_op_and_variable) {
  double x[64] = {0};
  /* a label outside the classes */
  op_harness *h = harness("warpctc");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(14, C), x);
  size_t n = 5;
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){xlod}, &n));
  OK(op_harness_input(h, "Logits", "x", t));
  op_harness_free_tensor(t);
  const int32_t bad[] = {1, 7, 2, 1, 2, 1};
  t = op_harness_make(RILL_DTYPE_INT32, DIMS(6, 1), bad);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){llod_b0}, &n));
  OK(op_harness_input(h, "Label", "ctc.label", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "WarpCTCGrad", "g"));
  OK(op_harness_output(h, "Loss", "loss"));
  EXPECT_ERROR(op_harness_run(h), "warpctc", "Label", "ctc.label", "7");
  OK(op_harness_attr_int(h, "blank", 3));
  EXPECT_ERROR(op_harness_run(h), "warpctc", "blank", "3");
  op_harness_destroy(h);
  /* Logits without LoD and no lengths */
  h = harness("warpctc");
  bind_input(h, "Logits", "x.nolod", RILL_DTYPE_FP64, DIMS(14, C), x);
  bind_input(h, "Label", "label", RILL_DTYPE_INT32, DIMS(6, 1), labels_b0);
  OK(op_harness_output(h, "WarpCTCGrad", "g"));
  OK(op_harness_output(h, "Loss", "loss"));
  EXPECT_ERROR(op_harness_run(h), "warpctc", "Logits", "x.nolod", "LoD");
  op_harness_destroy(h);
  /* a padded length past Tmax */
  const int64_t xl[] = {4, 9}, ll[] = {1, 1};
  const int32_t plab[] = {1, 1};
  h = harness("warpctc");
  bind_input(h, "Logits", "x", RILL_DTYPE_FP64, DIMS(5, 2, C), x);
  bind_input(h, "Label", "label", RILL_DTYPE_INT32, DIMS(2, 1), plab);
  bind_input(h, "LogitsLength", "ctc.x_len", RILL_DTYPE_INT64, DIMS(2), xl);
  bind_input(h, "LabelLength", "label_len", RILL_DTYPE_INT64, DIMS(2), ll);
  OK(op_harness_output(h, "WarpCTCGrad", "g"));
  OK(op_harness_output(h, "Loss", "loss"));
  EXPECT_ERROR(op_harness_run(h), "warpctc", "LogitsLength", "ctc.x_len", "9");
  op_harness_destroy(h);
}
