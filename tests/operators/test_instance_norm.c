/* instance_norm against a reference loop (per sample and channel), its gradients against
 * finite differences, and its errors. */
#include "nn_test.h"

static void check_in(const int64_t *xd, size_t nd, bool affine, float eps, rill_dtype dt) {
  int64_t nx = numel_of(xd, nd), n = xd[0], c = xd[1], s = nx / (n * c);
  double *x = malloc((size_t)nx * sizeof *x), *y = malloc((size_t)nx * sizeof *y);
  double *m = malloc((size_t)(n * c) * sizeof *m), *v = malloc((size_t)(n * c) * sizeof *v);
  double sc[16], bi[16];
  fill_rand(x, nx, 71);
  fill_rand(sc, c, 72);
  fill_rand(bi, c, 73);
  for (int64_t p = 0; p < n * c; p++) {
    double mu = 0, var = 0;
    for (int64_t k = 0; k < s; k++) mu += x[p * s + k];
    mu /= (double)s;
    for (int64_t k = 0; k < s; k++) var += (x[p * s + k] - mu) * (x[p * s + k] - mu);
    var /= (double)s;
    m[p] = mu;
    v[p] = 1.0 / sqrt(var + eps);
    double a = affine ? sc[p % c] : 1, b = affine ? bi[p % c] : 0;
    for (int64_t k = 0; k < s; k++) y[p * s + k] = (x[p * s + k] - mu) * v[p] * a + b;
  }
  bool f64 = dt == RILL_DTYPE_FP64;
  float *xf = to_f32(x, nx), *sf = to_f32(sc, c), *bf = to_f32(bi, c);
  op_harness *h = harness("instance_norm");
  bind_input(h, "X", "x", dt, xd, nd, f64 ? (void *)x : (void *)xf);
  if (affine) {
    bind_input(h, "Scale", "in.w", dt, &c, 1, f64 ? (void *)sc : (void *)sf);
    bind_input(h, "Bias", "in.b", dt, &c, 1, f64 ? (void *)bi : (void *)bf);
  }
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_output(h, "SavedMean", "mean"));
  OK(op_harness_output(h, "SavedVariance", "invstd"));
  OK(op_harness_attr_float(h, "epsilon", eps));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "y"), xd, nd);
  expect_dims(op_harness_tensor(h, "mean"), DIMS(n * c));
  const char *names[3] = {"y", "mean", "invstd"};
  const double *want[3] = {y, m, v};
  int64_t cnt[3] = {nx, n * c, n * c};
  for (int i = 0; i < 3; i++) {
    const void *got = rill_tensor_ptr(op_harness_tensor(h, names[i]));
    if (f64) {
      expect_close_f64(got, want[i], cnt[i], 1e-10);
    } else {
      float *wf = to_f32(want[i], cnt[i]);
      expect_close_f32(got, wf, cnt[i], 1e-4f);
      free(wf);
    }
  }
  op_harness_destroy(h);
  free(x); free(y); free(m); free(v); free(xf); free(sf); free(bf);
}

Test(instance_norm, matches_reference) {
  for (int dt = 0; dt < 2; dt++) {
    rill_dtype t = dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32;
    check_in(DIMS(2, 3, 4, 5), true, 1e-5f, t);
    check_in(DIMS(3, 2, 7), false, 1e-3f, t);
    check_in(DIMS(1, 4, 2, 3, 2), true, 0.0f, t);
    check_in(DIMS(2, 5, 1, 1), true, 1e-5f, t); /* one element per plane: Y is Bias */
  }
}

static void in_attrs(op_harness *h, const void *arg) {
  OK(op_harness_attr_float(h, "epsilon", *(const float *)arg));
}

static void in_grad(const int64_t *xd, size_t nd, bool scale, bool bias, float eps) {
  int64_t nx = numel_of(xd, nd), c = xd[1];
  double *x = malloc((size_t)nx * sizeof *x), s[16], b[16];
  fill_rand(x, nx, 81);
  fill_rand(s, c, 82);
  fill_rand(b, c, 83);
  fd_case fc = {.op = "instance_norm", .out_slots = {"Y", "SavedMean", "SavedVariance"},
                .out_names = {"y", "mean", "invstd"}, .nout = 3, .attrs = in_attrs, .arg = &eps,
                .tol = 1e-6};
  fc.in[fc.nin] = (fd_input){"X", "x", {0}, nd, x, true};
  memcpy(fc.in[fc.nin++].dims, xd, nd * sizeof(int64_t));
  if (scale) fc.in[fc.nin++] = (fd_input){"Scale", "scale", {c}, 1, s, true};
  if (bias) fc.in[fc.nin++] = (fd_input){"Bias", "bias", {c}, 1, b, true};
  fd_check(&fc);
  free(x);
}

Test(instance_norm, gradients_match_finite_differences) {
  in_grad(DIMS(2, 3, 2, 2), true, true, 1e-5f);
  in_grad(DIMS(2, 2, 5), true, false, 1e-3f);
  in_grad(DIMS(1, 3, 2, 3), false, true, 1e-5f);
  in_grad(DIMS(3, 2, 4), false, false, 1e-5f);
}

Test(instance_norm, bad_inputs_fail_naming_op_and_variable) {
  op_harness *h = harness("instance_norm");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(2, 3, 4, 4), NULL);
  bind_input(h, "Scale", "in.w", RILL_DTYPE_FP32, DIMS(4), NULL);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_infer(h), "instance_norm", "Scale (in.w)", "X (img)");
  op_harness_destroy(h);

  h = harness("instance_norm");
  bind_input(h, "X", "vec", RILL_DTYPE_FP32, DIMS(6), NULL);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_infer(h), "instance_norm", "X (vec)", "rank must be 2 to 5");
  op_harness_destroy(h);

  h = harness("instance_norm");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(2, 3, 4), NULL);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_attr_float(h, "epsilon", 0.01f));
  EXPECT_ERROR(op_harness_infer(h), "instance_norm", "epsilon");
  op_harness_destroy(h);

  h = harness("instance_norm_grad");
  bind_input(h, "X", "img", RILL_DTYPE_FP32, DIMS(2, 3, 4), NULL);
  bind_input(h, "Y@GRAD", "y@GRAD", RILL_DTYPE_FP32, DIMS(2, 3, 4), NULL);
  OK(op_harness_output(h, "X@GRAD", "img@GRAD"));
  EXPECT_ERROR(op_harness_infer(h), "instance_norm_grad", "SavedMean");
  op_harness_destroy(h);
}
