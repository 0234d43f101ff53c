/* group_norm against a naive reference (per sample and group, two-pass statistics);
 * group_norm_grad against finite differences and against the recovered-input formula
 * where Scale is 0. */
#include "nn_test.h"

static void ref_group_norm(const float *x, const float *sc, const float *bi, int64_t n, int64_t c,
                           int64_t s, int64_t g, float eps, bool nhwc, float *y, float *mean,
                           float *var) {
  int64_t cg = c / g;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < g; j++) {
      double m = 0, v = 0;
      for (int64_t ch = j * cg; ch < (j + 1) * cg; ch++)
        for (int64_t p = 0; p < s; p++) m += x[nhwc ? (i * s + p) * c + ch : (i * c + ch) * s + p];
      m /= (double)(cg * s);
      for (int64_t ch = j * cg; ch < (j + 1) * cg; ch++)
        for (int64_t p = 0; p < s; p++) {
          double e = x[nhwc ? (i * s + p) * c + ch : (i * c + ch) * s + p] - m;
          v += e * e;
        }
      v /= (double)(cg * s);
      mean[i * g + j] = (float)m;
      var[i * g + j] = (float)v;
      for (int64_t ch = j * cg; ch < (j + 1) * cg; ch++)
        for (int64_t p = 0; p < s; p++) {
          int64_t k = nhwc ? (i * s + p) * c + ch : (i * c + ch) * s + p;
          y[k] = (float)((x[k] - m) / sqrt(v + eps) * (sc ? sc[ch] : 1) + (bi ? bi[ch] : 0));
        }
    }
}

static void run_gn(const int64_t *xd, size_t nd, int groups, float eps, bool nhwc, bool affine) {
  int64_t nx = numel_of(xd, nd), n = xd[0], c = nhwc ? xd[nd - 1] : xd[1], s = nx / (n * c);
  float *x = malloc((size_t)nx * sizeof *x), *y = malloc((size_t)nx * sizeof *y);
  float *sc = malloc((size_t)c * sizeof *sc), *bi = malloc((size_t)c * sizeof *bi);
  float *mean = malloc((size_t)(n * groups) * sizeof *mean), *var = malloc((size_t)(n * groups) * sizeof *var);
  for (int64_t i = 0; i < nx; i++) x[i] = (float)(sin((double)i * 0.37) * 2 + 0.5 * (double)(i % 5));
  for (int64_t i = 0; i < c; i++) {
    sc[i] = 0.5f + 0.1f * (float)i;
    bi[i] = -0.25f * (float)i;
  }
  ref_group_norm(x, affine ? sc : NULL, affine ? bi : NULL, n, c, s, groups, eps, nhwc, y, mean, var);
  op_harness *h = harness("group_norm");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, xd, nd, x);
  if (affine) {
    bind_input(h, "Scale", "gn.w_0", RILL_DTYPE_FP32, &c, 1, sc);
    bind_input(h, "Bias", "gn.b_0", RILL_DTYPE_FP32, &c, 1, bi);
  }
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_output(h, "Mean", "mean"));
  OK(op_harness_output(h, "Variance", "var"));
  OK(op_harness_attr_int(h, "groups", groups));
  OK(op_harness_attr_float(h, "epsilon", eps));
  if (nhwc) OK(op_harness_attr_string(h, "data_layout", "NHWC"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "y"), xd, nd);
  expect_dims(op_harness_tensor(h, "mean"), DIMS(n, groups));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "y")), y, nx, 1e-4f);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "mean")), mean, n * groups, 1e-5f);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "var")), var, n * groups, 1e-5f);
  op_harness_destroy(h);
  free(x); free(y); free(sc); free(bi); free(mean); free(var);
}

Test(group_norm, matches_reference) {
  run_gn(DIMS(2, 8, 3, 5), 4, 1e-5f, false, true);
  run_gn(DIMS(1, 6, 4, 4), 6, 1e-6f, false, true);   /* one channel per group */
  run_gn(DIMS(2, 4, 3, 3), 1, 1e-5f, false, false);  /* one group, no Scale/Bias */
  run_gn(DIMS(3, 6, 10), 2, 1e-3f, false, true);     /* 3-D */
  run_gn(DIMS(1, 4, 2, 3, 2), 2, 1e-5f, false, true); /* 5-D */
  run_gn(DIMS(2, 3, 5, 6), 3, 1e-5f, true, true);    /* NHWC */
  run_gn(DIMS(1, 64, 8, 8), 32, 1e-6f, false, true); /* the VAE decoder's setting */
}

Test(group_norm, channels_not_divisible_fail_at_inference) {
  op_harness *h = harness("group_norm");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(1, 6, 2, 2), NULL);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_attr_int(h, "groups", 4));
  EXPECT_ERROR(op_harness_run(h), "group_norm", "feat", "groups = 4");
  op_harness_destroy(h);

  h = harness("group_norm");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(1, 4, 2, 2), NULL);
  bind_input(h, "Scale", "w", RILL_DTYPE_FP32, DIMS(3), NULL);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_attr_int(h, "groups", 2));
  EXPECT_ERROR(op_harness_run(h), "group_norm", "Scale (w)");
  op_harness_destroy(h);
}

typedef struct gn_cfg {
  int groups;
  float eps;
  bool nhwc;
} gn_cfg;

static void set_gn_attrs(op_harness *h, const void *arg) {
  const gn_cfg *c = arg;
  OK(op_harness_attr_int(h, "groups", c->groups));
  OK(op_harness_attr_float(h, "epsilon", c->eps));
  if (c->nhwc) OK(op_harness_attr_string(h, "data_layout", "NHWC"));
}

static void gn_grad(const int64_t *xd, size_t nd, gn_cfg c, bool scale, bool bias) {
  int64_t nx = numel_of(xd, nd), ch = c.nhwc ? xd[nd - 1] : xd[1];
  double *x = malloc((size_t)nx * sizeof *x), s[16], b[16];
  fill_rand(x, nx, 61);
  fill_rand(s, ch, 62);
  fill_rand(b, ch, 63);
  fd_case fc = {.op = "group_norm", .out_slots = {"Y", "Mean", "Variance"},
                .out_names = {"y", "mean", "var"}, .nout = 3, .attrs = set_gn_attrs, .arg = &c,
                .tol = 1e-6};
  fc.in[fc.nin] = (fd_input){"X", "x", {0}, nd, x, true};
  memcpy(fc.in[fc.nin++].dims, xd, nd * sizeof(int64_t));
  if (scale) fc.in[fc.nin++] = (fd_input){"Scale", "scale", {ch}, 1, s, true};
  if (bias) fc.in[fc.nin++] = (fd_input){"Bias", "bias", {ch}, 1, b, true};
  fd_check(&fc);
  free(x);
}

Test(group_norm, gradients_match_finite_differences) {
  gn_grad(DIMS(2, 4, 3), (gn_cfg){2, 1e-5f, false}, true, true);
  gn_grad(DIMS(2, 6, 2, 2), (gn_cfg){3, 1e-5f, false}, true, true);
  gn_grad(DIMS(1, 4, 2, 3), (gn_cfg){1, 1e-3f, false}, true, false);
  gn_grad(DIMS(2, 4, 5), (gn_cfg){4, 1e-5f, false}, false, true);
  gn_grad(DIMS(2, 6, 3), (gn_cfg){2, 1e-5f, false}, false, false);
  gn_grad(DIMS(2, 3, 2, 4), (gn_cfg){2, 1e-5f, true}, true, true); /* NHWC, 4 channels */
}

/* Paddle recovers the normalised input from Y, so a channel whose Scale is 0 gets no
 * Scale gradient (its recovered input is 0) and its X gradient is only the group terms. */
Test(group_norm, zero_scale_channel_as_paddle) {
  int64_t xd[] = {1, 2, 1, 3};
  double x[] = {1, 2, 4, -1, 0, 3}, sc[] = {0, 2}, bi[] = {0.5, -1}, dy[] = {1, -2, 3, 0.5, 1, 2};
  op_harness *h = harness("group_norm");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, xd, 4, x);
  bind_input(h, "Scale", "s", RILL_DTYPE_FP64, DIMS(2), sc);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP64, DIMS(2), bi);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_output(h, "Mean", "mean"));
  OK(op_harness_output(h, "Variance", "var"));
  OK(op_harness_attr_int(h, "groups", 1));
  OK(op_harness_attr_float(h, "epsilon", 1e-5f));
  OK(op_harness_run(h));
  const double *y = rill_tensor_ptr(op_harness_tensor(h, "y"));
  double var = *(const double *)rill_tensor_ptr(op_harness_tensor(h, "var"));
  double yv[6];
  memcpy(yv, y, sizeof yv);
  op_harness_destroy(h);

  h = harness("group_norm_grad");
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, xd, 4, yv);
  bind_input(h, "Scale", "s", RILL_DTYPE_FP64, DIMS(2), sc);
  bind_input(h, "Bias", "b", RILL_DTYPE_FP64, DIMS(2), bi);
  bind_input(h, "Variance", "var", RILL_DTYPE_FP64, DIMS(1, 1), &var);
  bind_input(h, "Y@GRAD", "y@GRAD", RILL_DTYPE_FP64, xd, 4, dy);
  OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
  OK(op_harness_output(h, "Scale@GRAD", "s@GRAD"));
  OK(op_harness_output(h, "Bias@GRAD", "b@GRAD"));
  OK(op_harness_attr_int(h, "groups", 1));
  OK(op_harness_attr_float(h, "epsilon", 1e-5f));
  OK(op_harness_run(h));
  double xh[6], dps = 0, dpb = 0, want_dx[6], want_ds[2] = {0, 0}, want_db[2] = {0, 0};
  for (int k = 0; k < 6; k++) {
    int c = k / 3;
    xh[k] = sc[c] != 0 ? (yv[k] - bi[c]) / sc[c] : 0;
    dps += dy[k] * sc[c] * xh[k];
    dpb += dy[k] * sc[c];
    want_ds[c] += dy[k] * xh[k];
    want_db[c] += dy[k];
  }
  for (int k = 0; k < 6; k++)
    want_dx[k] = (dy[k] * sc[k / 3] - dps * xh[k] / 6 - dpb / 6) / sqrt(var + 1e-5f);
  cr_expect(want_ds[0] == 0);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "x@GRAD")), want_dx, 6, 1e-12);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "s@GRAD")), want_ds, 2, 1e-12);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "b@GRAD")), want_db, 2, 1e-12);
  op_harness_destroy(h);
}

Test(group_norm, grad_bad_inputs_fail_naming_op_and_variable) {
  op_harness *h = harness("group_norm_grad");
  bind_input(h, "Y", "gn.y", RILL_DTYPE_FP32, DIMS(2, 6, 2), NULL);
  bind_input(h, "Variance", "gn.var", RILL_DTYPE_FP32, DIMS(2, 4), NULL);
  bind_input(h, "Y@GRAD", "gn.y@GRAD", RILL_DTYPE_FP32, DIMS(2, 6, 2), NULL);
  OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
  OK(op_harness_attr_int(h, "groups", 4));
  EXPECT_ERROR(op_harness_infer(h), "group_norm_grad", "Y (gn.y)", "groups = 4");
  op_harness_destroy(h);

  h = harness("group_norm_grad");
  bind_input(h, "Y", "gn.y", RILL_DTYPE_FP32, DIMS(2, 4, 2), NULL);
  bind_input(h, "Scale", "gn.w", RILL_DTYPE_FP32, DIMS(3), NULL);
  bind_input(h, "Variance", "gn.var", RILL_DTYPE_FP32, DIMS(2, 2), NULL);
  bind_input(h, "Y@GRAD", "gn.y@GRAD", RILL_DTYPE_FP32, DIMS(2, 4, 2), NULL);
  OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
  OK(op_harness_attr_int(h, "groups", 2));
  EXPECT_ERROR(op_harness_infer(h), "group_norm_grad", "Scale (gn.w)");
  op_harness_destroy(h);

  h = harness("group_norm_grad");
  bind_input(h, "Y", "gn.y", RILL_DTYPE_FP32, DIMS(2, 4, 2), NULL);
  bind_input(h, "Y@GRAD", "gn.y@GRAD", RILL_DTYPE_FP32, DIMS(2, 4, 2), NULL);
  OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
  OK(op_harness_attr_int(h, "groups", 2));
  EXPECT_ERROR(op_harness_infer(h), "group_norm_grad", "Variance");
  op_harness_destroy(h);
}
