/* The losses of operators/loss.c: each forward against a reference computed here, the
 * gradients by finite differences (inputs away from the kinks), and the errors bad
 * shapes and attributes give, naming the op and the variable. */
#include "op_test.h"
#include "support/grad_check.h"

#define N 6

static void fill(double *v, int n, double a, double b, double c) {
  for (int i = 0; i < n; i++) v[i] = a * sin(i * b + c);
}

static const double *out_f64(op_harness *h, const char *name) {
  const rill_tensor *t = op_harness_tensor(h, name);
  cr_assert_not_null(t, "no output %s", name);
  return rill_tensor_ptr(t);
}

static void check_grads(op_harness *h, const char *const *in, size_t nin, const char *out) {
  rill_status *st = grad_check(h, in, nin, (const char *const[]){out}, 1, NULL);
  cr_assert_null(st, "%s", rill_status_message(st));
}

/* ---- log_loss ---- */

static op_harness *log_loss_h(const double *p, const double *l) {
  op_harness *h = harness("log_loss");
  bind_input(h, "Predicted", "pred", RILL_DTYPE_FP64, DIMS(N, 1), p);
  bind_input(h, "Labels", "lbl", RILL_DTYPE_FP64, DIMS(N, 1), l);
  OK(op_harness_output(h, "Loss", "loss"));
  OK(op_harness_attr_float(h, "epsilon", 1e-3f));
  return h;
}

Test(loss, log_loss_forward_and_gradient) {
  double p[N], l[N], want[N];
  for (int i = 0; i < N; i++) {
    p[i] = 0.1 + 0.13 * i;
    l[i] = i % 2;
    double eps = (double)1e-3f;
    want[i] = -l[i] * log(p[i] + eps) - (1 - l[i]) * log(1 - p[i] + eps);
  }
  op_harness *h = log_loss_h(p, l);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "loss"), DIMS(N, 1));
  expect_close_f64(out_f64(h, "loss"), want, N, 1e-12);
  check_grads(h, (const char *const[]){"Predicted"}, 1, "Loss");
  op_harness_destroy(h);
}

Test(loss, log_loss_rejects_a_row_wider_than_one) {
  op_harness *h = harness("log_loss");
  bind_input(h, "Predicted", "pred", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  bind_input(h, "Labels", "lbl", RILL_DTYPE_FP32, DIMS(3, 2), NULL);
  OK(op_harness_output(h, "Loss", "loss"));
  EXPECT_ERROR(op_harness_infer(h), "log_loss", "Predicted (pred)", "[3, 2]", "[N, 1]");
  op_harness_destroy(h);
}

/* ---- huber_loss ---- */

Test(loss, huber_loss_forward_both_zones_and_gradients) {
  double x[N], y[N], want[N], delta = 0.5;
  fill(x, N, 1.0, 0.9, 0.3);
  fill(y, N, 0.7, 1.7, 0.1);
  y[1] = x[1] + 0.2; /* quadratic zone */
  op_harness *h = harness("huber_loss");
  bind_input(h, "X", "pred", RILL_DTYPE_FP64, DIMS(N, 1), x);
  bind_input(h, "Y", "target", RILL_DTYPE_FP64, DIMS(N, 1), y);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Residual", "res"));
  OK(op_harness_attr_float(h, "delta", (float)delta));
  int quad = 0;
  for (int i = 0; i < N; i++) {
    double r = y[i] - x[i];
    quad += fabs(r) <= delta;
    want[i] = fabs(r) <= delta ? 0.5 * r * r : delta * (fabs(r) - 0.5 * delta);
  }
  cr_assert(quad > 0 && quad < N, "inputs must cover both zones");
  OK(op_harness_run(h));
  expect_close_f64(out_f64(h, "out"), want, N, 1e-12);
  cr_assert_float_eq(out_f64(h, "res")[2], y[2] - x[2], 1e-15);
  check_grads(h, (const char *const[]){"X", "Y"}, 2, "Out");
  op_harness_destroy(h);
}

Test(loss, huber_loss_names_both_inputs_when_shapes_differ) {
  op_harness *h = harness("huber_loss");
  bind_input(h, "X", "pred", RILL_DTYPE_FP32, DIMS(4, 1), NULL);
  bind_input(h, "Y", "target", RILL_DTYPE_FP32, DIMS(5, 1), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Residual", "res"));
  EXPECT_ERROR(op_harness_infer(h), "huber_loss", "Y (target)", "X (pred)", "[5, 1]");
  op_harness_destroy(h);
}

/* ---- smooth_l1_loss ---- */

static op_harness *sl1_h(const double *x, const double *y, const double *iw, const double *ow,
                         float sigma) {
  op_harness *h = harness("smooth_l1_loss");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, DIMS(2, 3), y);
  if (iw) bind_input(h, "InsideWeight", "iw", RILL_DTYPE_FP64, DIMS(2, 3), iw);
  if (ow) bind_input(h, "OutsideWeight", "ow", RILL_DTYPE_FP64, DIMS(2, 3), ow);
  OK(op_harness_output(h, "Diff", "diff"));
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_float(h, "sigma", sigma));
  return h;
}

Test(loss, smooth_l1_forward_with_and_without_weights) {
  double x[6], y[6], iw[6], ow[6];
  fill(x, 6, 1.2, 0.7, 0.2);
  fill(y, 6, 0.9, 1.3, 1.0);
  y[4] = x[4] - 0.05;
  for (int i = 0; i < 6; i++) {
    iw[i] = 0.5 + 0.2 * i;
    ow[i] = 1.5 - 0.15 * i;
  }
  for (int weighted = 0; weighted < 2; weighted++) {
    double s2 = 4.0, want[2] = {0, 0};
    for (int i = 0; i < 6; i++) {
      double d = (x[i] - y[i]) * (weighted ? iw[i] : 1);
      double e = fabs(d) < 1 / s2 ? 0.5 * d * d * s2 : fabs(d) - 0.5 / s2;
      want[i / 3] += e * (weighted ? ow[i] : 1);
    }
    op_harness *h = sl1_h(x, y, weighted ? iw : NULL, weighted ? ow : NULL, 2.0f);
    OK(op_harness_run(h));
    expect_dims(op_harness_tensor(h, "out"), DIMS(2, 1));
    expect_close_f64(out_f64(h, "out"), want, 2, 1e-12);
    op_harness_destroy(h);
  }
}

Test(loss, smooth_l1_gradients_unweighted_and_weighted) {
  double x[6], y[6], iw[6], ow[6];
  fill(x, 6, 1.2, 0.7, 0.2);
  fill(y, 6, 0.9, 1.3, 1.0);
  y[4] = x[4] - 0.05;
  for (int i = 0; i < 6; i++) {
    iw[i] = 0.5 + 0.2 * i;
    ow[i] = 1.5 - 0.15 * i;
  }
  op_harness *h = sl1_h(x, y, NULL, NULL, 2.0f);
  check_grads(h, (const char *const[]){"X", "Y"}, 2, "Out");
  op_harness_destroy(h);
  h = sl1_h(x, y, iw, ow, 2.0f);
  check_grads(h, (const char *const[]){"X", "Y"}, 2, "Out");
  op_harness_destroy(h);
}

/* Paddle's gradient is s'(Diff) InsideWeight OutsideWeight dOut, s' taken at the
 * weighted difference. */
Test(loss, smooth_l1_gradient_scales_by_both_weights_as_paddle) {
  double diff[2] = {0.1, -2.0}, dout[1] = {3.0};
  op_harness *h = harness("smooth_l1_loss_grad");
  bind_input(h, "InsideWeight", "iw", RILL_DTYPE_FP64, DIMS(1, 2), (double[]){5, 0.5});
  bind_input(h, "OutsideWeight", "ow", RILL_DTYPE_FP64, DIMS(1, 2), (double[]){2, 4});
  bind_input(h, "Diff", "diff", RILL_DTYPE_FP64, DIMS(1, 2), diff);
  bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP64, DIMS(1, 1), dout);
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(op_harness_output(h, "Y@GRAD", "dy"));
  OK(op_harness_attr_float(h, "sigma", 1.0f));
  OK(op_harness_run(h));
  expect_close_f64(out_f64(h, "dx"), (double[]){0.1 * 5 * 2 * 3, -1 * 0.5 * 4 * 3}, 2, 1e-12);
  expect_close_f64(out_f64(h, "dy"), (double[]){-0.1 * 5 * 2 * 3, 1 * 0.5 * 4 * 3}, 2, 1e-12);
  op_harness_destroy(h);
}

Test(loss, smooth_l1_names_a_weight_of_another_shape) {
  op_harness *h = harness("smooth_l1_loss");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "Y", "y", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "OutsideWeight", "ow", RILL_DTYPE_FP32, DIMS(2, 1), NULL);
  OK(op_harness_output(h, "Diff", "diff"));
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "smooth_l1_loss", "OutsideWeight (ow)", "[2, 1]");
  op_harness_destroy(h);
}

/* ---- kldiv_loss ---- */

static op_harness *kl_h(const double *x, const double *t, const char *red) {
  op_harness *h = harness("kldiv_loss");
  bind_input(h, "X", "logp", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(h, "Target", "q", RILL_DTYPE_FP64, DIMS(2, 3), t);
  OK(op_harness_output(h, "Loss", "loss"));
  OK(op_harness_attr_string(h, "reduction", red));
  return h;
}

Test(loss, kldiv_loss_every_reduction_and_gradients) {
  double x[6], t[6] = {0.2, 0.0, 0.8, 0.5, 0.3, 0.2}, e[6], sum = 0;
  fill(x, 6, 0.8, 1.1, 0.4);
  for (int i = 0; i < 6; i++) {
    e[i] = t[i] > 0 ? t[i] * (log(t[i]) - x[i]) : 0;
    sum += e[i];
  }
  const char *reds[] = {"none", "batchmean", "mean", "sum"};
  double want[] = {0, sum / 2, sum / 6, sum};
  for (int r = 0; r < 4; r++) {
    op_harness *h = kl_h(x, t, reds[r]);
    OK(op_harness_run(h));
    if (r == 0) {
      expect_dims(op_harness_tensor(h, "loss"), DIMS(2, 3));
      expect_close_f64(out_f64(h, "loss"), e, 6, 1e-12);
    } else {
      expect_dims(op_harness_tensor(h, "loss"), DIMS(1));
      expect_close_f64(out_f64(h, "loss"), &want[r], 1, 1e-12);
    }
    check_grads(h, (const char *const[]){"X"}, 1, "Loss");
    op_harness_destroy(h);
  }
}

Test(loss, kldiv_loss_rejects_an_unknown_reduction) {
  op_harness *h = harness("kldiv_loss");
  bind_input(h, "X", "logp", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "Target", "q", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Loss", "loss"));
  OK(op_harness_attr_string(h, "reduction", "avg"));
  EXPECT_ERROR(op_harness_infer(h), "kldiv_loss", "reduction", "'avg'");
  op_harness_destroy(h);
}

/* ---- rank_loss, margin_rank_loss ---- */

Test(loss, rank_loss_forward_and_gradients) {
  double l[N], a[N], b[N], want[N];
  fill(a, N, 1.1, 0.8, 0.0);
  fill(b, N, 0.9, 1.4, 0.5);
  for (int i = 0; i < N; i++) {
    l[i] = (i % 3) == 0;
    want[i] = log(1 + exp(a[i] - b[i])) - l[i] * (a[i] - b[i]);
  }
  op_harness *h = harness("rank_loss");
  bind_input(h, "Label", "lbl", RILL_DTYPE_FP64, DIMS(N, 1), l);
  bind_input(h, "Left", "left", RILL_DTYPE_FP64, DIMS(N, 1), a);
  bind_input(h, "Right", "right", RILL_DTYPE_FP64, DIMS(N, 1), b);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_close_f64(out_f64(h, "out"), want, N, 1e-12);
  check_grads(h, (const char *const[]){"Left", "Right"}, 2, "Out");
  op_harness_destroy(h);
}

Test(loss, margin_rank_loss_forward_and_gradients) {
  double l[N], a[N], b[N], want[N], margin = 0.1;
  fill(a, N, 1.1, 0.8, 0.0);
  fill(b, N, 0.9, 1.4, 0.5);
  int active = 0;
  for (int i = 0; i < N; i++) {
    l[i] = i % 2 ? 1 : -1;
    double v = -l[i] * (a[i] - b[i]) + margin;
    cr_assert(fabs(v) > 1e-3, "row %d too near the kink", i);
    active += v > 0;
    want[i] = v > 0 ? v : 0;
  }
  cr_assert(active > 0 && active < N);
  op_harness *h = harness("margin_rank_loss");
  bind_input(h, "Label", "lbl", RILL_DTYPE_FP64, DIMS(N, 1), l);
  bind_input(h, "X1", "left", RILL_DTYPE_FP64, DIMS(N, 1), a);
  bind_input(h, "X2", "right", RILL_DTYPE_FP64, DIMS(N, 1), b);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Activated", "act"));
  OK(op_harness_attr_float(h, "margin", (float)margin));
  OK(op_harness_run(h));
  double m32 = (double)(float)margin;
  for (int i = 0; i < N; i++) want[i] = fmax(0, -l[i] * (a[i] - b[i]) + m32);
  expect_close_f64(out_f64(h, "out"), want, N, 1e-12);
  cr_assert_float_eq(out_f64(h, "act")[0], want[0] > 0 ? 1.0 : 0.0, 0);
  check_grads(h, (const char *const[]){"X1", "X2"}, 2, "Out");
  op_harness_destroy(h);
}

Test(loss, rank_loss_names_a_label_of_another_shape) {
  op_harness *h = harness("rank_loss");
  bind_input(h, "Label", "lbl", RILL_DTYPE_FP32, DIMS(3, 1), NULL);
  bind_input(h, "Left", "left", RILL_DTYPE_FP32, DIMS(4, 1), NULL);
  bind_input(h, "Right", "right", RILL_DTYPE_FP32, DIMS(4, 1), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "rank_loss", "Label (lbl)", "Left (left)");
  op_harness_destroy(h);
}

/* ---- label_smooth ---- */

Test(loss, label_smooth_uniform_and_prior_and_gradient) {
  double x[6] = {0, 1, 0, 1, 0, 0}, prior[3] = {0.5, 0.3, 0.2};
  for (int with_prior = 0; with_prior < 2; with_prior++) {
    op_harness *h = harness("label_smooth");
    bind_input(h, "X", "onehot", RILL_DTYPE_FP64, DIMS(2, 3), x);
    if (with_prior) bind_input(h, "PriorDist", "prior", RILL_DTYPE_FP64, DIMS(1, 3), prior);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_float(h, "epsilon", 0.25f));
    OK(op_harness_run(h));
    double want[6];
    for (int i = 0; i < 6; i++)
      want[i] = 0.75 * x[i] + 0.25 * (with_prior ? prior[i % 3] : 1.0 / 3);
    expect_close_f64(out_f64(h, "out"), want, 6, 1e-12);
    check_grads(h, (const char *const[]){"X"}, 1, "Out");
    op_harness_destroy(h);
  }
}

Test(loss, label_smooth_names_a_prior_of_the_wrong_size) {
  op_harness *h = harness("label_smooth");
  bind_input(h, "X", "onehot", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "PriorDist", "prior", RILL_DTYPE_FP32, DIMS(1, 4), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "label_smooth", "PriorDist (prior)", "[1, 4]");
  op_harness_destroy(h);
}

/* float32 kernels agree with the float64 ones. */
Test(loss, float32_kernels_match_float64) {
  double x[N], y[N];
  float xf[N], yf[N];
  fill(x, N, 1.0, 0.9, 0.3);
  fill(y, N, 0.7, 1.7, 0.1);
  for (int i = 0; i < N; i++) {
    xf[i] = (float)x[i];
    yf[i] = (float)y[i];
    x[i] = xf[i];
    y[i] = yf[i];
  }
  const char *ops[] = {"huber_loss", "rank_loss"};
  for (int k = 0; k < 2; k++) {
    const double *ref = NULL;
    op_harness *hd = harness(ops[k]), *hf = harness(ops[k]);
    if (k == 0) {
      bind_input(hd, "X", "a", RILL_DTYPE_FP64, DIMS(N, 1), x);
      bind_input(hd, "Y", "b", RILL_DTYPE_FP64, DIMS(N, 1), y);
      bind_input(hf, "X", "a", RILL_DTYPE_FP32, DIMS(N, 1), xf);
      bind_input(hf, "Y", "b", RILL_DTYPE_FP32, DIMS(N, 1), yf);
      OK(op_harness_output(hd, "Residual", "r"));
      OK(op_harness_output(hf, "Residual", "r"));
    } else {
      bind_input(hd, "Label", "l", RILL_DTYPE_FP64, DIMS(N, 1), y);
      bind_input(hd, "Left", "a", RILL_DTYPE_FP64, DIMS(N, 1), x);
      bind_input(hd, "Right", "b", RILL_DTYPE_FP64, DIMS(N, 1), y);
      bind_input(hf, "Label", "l", RILL_DTYPE_FP32, DIMS(N, 1), yf);
      bind_input(hf, "Left", "a", RILL_DTYPE_FP32, DIMS(N, 1), xf);
      bind_input(hf, "Right", "b", RILL_DTYPE_FP32, DIMS(N, 1), yf);
    }
    OK(op_harness_output(hd, "Out", "out"));
    OK(op_harness_output(hf, "Out", "out"));
    OK(op_harness_run(hd));
    OK(op_harness_run(hf));
    ref = out_f64(hd, "out");
    const float *got = rill_tensor_ptr(op_harness_tensor(hf, "out"));
    for (int i = 0; i < N; i++)
      cr_assert(fabs(got[i] - ref[i]) < 1e-5 * (1 + fabs(ref[i])), "%s [%d] %g vs %g", ops[k],
                i, got[i], ref[i]);
    op_harness_destroy(hd);
    op_harness_destroy(hf);
  }
}

/* ---- bpr_loss ---- */

static op_harness *bpr_h(const double *x, const int64_t *l) {
  op_harness *h = harness("bpr_loss");
  bind_input(h, "X", "scores", RILL_DTYPE_FP64, DIMS(3, 4), x);
  bind_input(h, "Label", "pos", RILL_DTYPE_INT64, DIMS(3, 1), l);
  OK(op_harness_output(h, "Y", "y"));
  return h;
}

Test(loss, bpr_loss_forward_and_gradient) {
  double x[12], want[3];
  int64_t l[3] = {0, 3, 2};
  fill(x, 12, 1.5, 0.8, 0.2);
  for (int i = 0; i < 3; i++) {
    double s = 0;
    for (int j = 0; j < 4; j++)
      if (j != l[i]) s += log(1 + exp(x[i * 4 + j] - x[i * 4 + l[i]]));
    want[i] = s / 3;
  }
  op_harness *h = bpr_h(x, l);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "y"), DIMS(3, 1));
  expect_close_f64(out_f64(h, "y"), want, 3, 1e-12);
  check_grads(h, (const char *const[]){"X"}, 1, "Y");
  op_harness_destroy(h);
}

Test(loss, bpr_loss_names_a_class_out_of_range) {
  double x[12] = {0};
  int64_t l[3] = {0, 4, 1};
  op_harness *h = bpr_h(x, l);
  EXPECT_ERROR(op_harness_run(h), "bpr_loss", "Label (pos)", "class 4", "row 1");
  op_harness_destroy(h);
}

/* ---- sigmoid_focal_loss ---- */

Test(loss, sigmoid_focal_loss_forward_and_gradient) {
  double x[12];
  int32_t l[3] = {0, 3, -1}, fg = 2;
  fill(x, 12, 2.5, 0.9, 0.4);
  op_harness *h = harness("sigmoid_focal_loss");
  bind_input(h, "X", "logits", RILL_DTYPE_FP64, DIMS(3, 4), x);
  bind_input(h, "Label", "cls", RILL_DTYPE_INT32, DIMS(3, 1), l);
  bind_input(h, "FgNum", "fg", RILL_DTYPE_INT32, DIMS(1), &fg);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_float(h, "gamma", 2.0f));
  OK(op_harness_attr_float(h, "alpha", 0.25f));
  OK(op_harness_run(h));
  const double *o = out_f64(h, "out");
  for (int i = 0; i < 12; i++) {
    int lab = l[i / 4], cls = i % 4 + 1;
    double p = 1 / (1 + exp(-x[i])), want;
    if (lab == -1) want = 0;
    else if (lab == cls) want = -0.25 / fg * pow(1 - p, 2) * log(p);
    else want = -0.75 / fg * pow(p, 2) * log(1 - p);
    cr_assert(fabs(o[i] - want) < 1e-12 * (1 + fabs(want)), "[%d] %g vs %g", i, o[i], want);
  }
  check_grads(h, (const char *const[]){"X"}, 1, "Out");
  op_harness_destroy(h);
}

Test(loss, sigmoid_focal_loss_names_a_label_of_the_wrong_type) {
  op_harness *h = harness("sigmoid_focal_loss");
  bind_input(h, "X", "logits", RILL_DTYPE_FP32, DIMS(3, 4), NULL);
  bind_input(h, "Label", "cls", RILL_DTYPE_INT64, DIMS(3, 1), NULL);
  bind_input(h, "FgNum", "fg", RILL_DTYPE_INT32, DIMS(1), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "sigmoid_focal_loss", "Label (cls)", "int64", "int32");
  op_harness_destroy(h);
}
