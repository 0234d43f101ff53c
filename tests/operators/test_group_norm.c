/* group_norm against a naive reference (per sample and group, two-pass statistics). */
#include "op_test.h"

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
