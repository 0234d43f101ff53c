#include "op_test.h"
#include "support/grad_check.h"

/* Naive reference: X viewed as [m, k], Y as [k, n]. */
static void ref_mul(const double *x, const double *y, int64_t m, int64_t k, int64_t n, double *out) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t l = 0; l < k; l++) s += x[i * k + l] * y[l * n + j];
      out[i * n + j] = s;
    }
}

static void run_mul(rill_dtype dt, const int64_t *xd, size_t xn, const int64_t *yd, size_t yn,
                    int xcol, int ycol, const int64_t *od, size_t on, const char *out_name) {
  int64_t nx = numel_of(xd, xn), ny = numel_of(yd, yn);
  int64_t m = numel_of(xd, (size_t)xcol), k = nx / m, n = ny / k;
  double *x = malloc((size_t)nx * sizeof *x), *y = malloc((size_t)ny * sizeof *y);
  double *want = malloc((size_t)(m * n) * sizeof *want);
  for (int64_t i = 0; i < nx; i++) x[i] = (double)((i * 5) % 11) * 0.25 - 1;
  for (int64_t i = 0; i < ny; i++) y[i] = (double)((i * 3) % 7) * 0.5 - 1.5;
  ref_mul(x, y, m, k, n, want);
  op_harness *h = harness("mul");
  if (dt == RILL_DTYPE_FP64) {
    bind_input(h, "X", "x", dt, xd, xn, x);
    bind_input(h, "Y", "y", dt, yd, yn, y);
  } else {
    float *xf = malloc((size_t)nx * sizeof *xf), *yf = malloc((size_t)ny * sizeof *yf);
    for (int64_t i = 0; i < nx; i++) xf[i] = (float)x[i];
    for (int64_t i = 0; i < ny; i++) yf[i] = (float)y[i];
    bind_input(h, "X", "x", dt, xd, xn, xf);
    bind_input(h, "Y", "y", dt, yd, yn, yf);
    free(xf);
    free(yf);
  }
  OK(op_harness_output(h, "Out", out_name));
  if (xcol != 1) OK(op_harness_attr_int(h, "x_num_col_dims", xcol));
  if (ycol != 1) OK(op_harness_attr_int(h, "y_num_col_dims", ycol));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, out_name);
  expect_dims(out, od, on);
  if (dt == RILL_DTYPE_FP64) {
    expect_close_f64(rill_tensor_ptr(out), want, m * n, 1e-12);
  } else {
    float *wf = malloc((size_t)(m * n) * sizeof *wf);
    for (int64_t i = 0; i < m * n; i++) wf[i] = (float)want[i];
    expect_close_f32(rill_tensor_ptr(out), wf, m * n, 1e-5f);
    free(wf);
  }
  op_harness_destroy(h);
  free(x);
  free(y);
  free(want);
}

Test(mul, two_d_matches_reference) {
  run_mul(RILL_DTYPE_FP32, DIMS(2, 3), DIMS(3, 4), 1, 1, DIMS(2, 4), "out");
  run_mul(RILL_DTYPE_FP64, DIMS(2, 3), DIMS(3, 4), 1, 1, DIMS(2, 4), "out");
  run_mul(RILL_DTYPE_FP32, DIMS(1, 1), DIMS(1, 1), 1, 1, DIMS(1, 1), "out");
  run_mul(RILL_DTYPE_FP32, DIMS(37, 65), DIMS(65, 19), 1, 1, DIMS(37, 19), "out");
  /* one row (an fc layer at batch 1) goes through GEMV */
  run_mul(RILL_DTYPE_FP32, DIMS(1, 65), DIMS(65, 19), 1, 1, DIMS(1, 19), "out");
  run_mul(RILL_DTYPE_FP64, DIMS(1, 7), DIMS(7, 300), 1, 1, DIMS(1, 300), "out");
  run_mul(RILL_DTYPE_FP32, DIMS(1, 2, 3), DIMS(6, 5), 1, 1, DIMS(1, 5), "out");
}

Test(mul, num_col_dims_flatten_and_shape_output) {
  /* X [2,3,4] with x_num_col_dims 2 is [6,4]; out [2,3,5] */
  run_mul(RILL_DTYPE_FP32, DIMS(2, 3, 4), DIMS(4, 5), 2, 1, DIMS(2, 3, 5), "out");
  /* X [6,2,2] with x_num_col_dims 1 is [6,4] (an fc over an image) */
  run_mul(RILL_DTYPE_FP64, DIMS(6, 2, 2), DIMS(4, 5), 1, 1, DIMS(6, 5), "out");
  /* Y [2,2,5] with y_num_col_dims 2 is [4,5]; Y [4,2,3] with 1 is [4,6] -> out [6,2,3] */
  run_mul(RILL_DTYPE_FP32, DIMS(6, 4), DIMS(2, 2, 5), 1, 2, DIMS(6, 5), "out");
  run_mul(RILL_DTYPE_FP32, DIMS(6, 4), DIMS(4, 2, 3), 1, 1, DIMS(6, 2, 3), "out");
}

Test(mul, out_aliasing_an_input_is_correct) {
  run_mul(RILL_DTYPE_FP32, DIMS(3, 3), DIMS(3, 3), 1, 1, DIMS(3, 3), "x");
  run_mul(RILL_DTYPE_FP64, DIMS(4, 4), DIMS(4, 4), 1, 1, DIMS(4, 4), "y");
  run_mul(RILL_DTYPE_FP32, DIMS(1, 1), DIMS(1, 1), 1, 1, DIMS(1, 1), "x"); /* GEMV in place */
}

Test(mul, inner_mismatch_names_op_and_variables) {
  op_harness *h = harness("mul");
  bind_input(h, "X", "image", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "Y", "fc_0.w_0", RILL_DTYPE_FP32, DIMS(4, 5), NULL);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "mul", "X (image)", "Y (fc_0.w_0)", "3", "4");
  op_harness_destroy(h);
}

Test(mul, rank_too_small_for_num_col_dims) {
  op_harness *h = harness("mul");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(6), NULL);
  bind_input(h, "Y", "y", RILL_DTYPE_FP32, DIMS(6, 5), NULL);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "mul", "X (x)", "x_num_col_dims");
  op_harness_destroy(h);
}

Test(mul, int_dtype_has_no_kernel) {
  op_harness *h = harness("mul");
  bind_input(h, "X", "x", RILL_DTYPE_INT32, DIMS(2, 2), NULL);
  bind_input(h, "Y", "y", RILL_DTYPE_INT32, DIMS(2, 2), NULL);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "mul", "int32");
  op_harness_destroy(h);
}

Test(mul, wrong_attribute_type_names_op_and_attribute) {
  op_harness *h = harness("mul");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 2), NULL);
  bind_input(h, "Y", "y", RILL_DTYPE_FP32, DIMS(2, 2), NULL);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_string(h, "x_num_col_dims", "one"));
  EXPECT_ERROR(op_harness_run(h), "mul", "x_num_col_dims", "STRING");
  op_harness_destroy(h);
}

/* Fills n doubles with a fixed pseudo-random pattern in [-1, 1]. */
static void fill_pattern(double *p, int64_t n, int salt) {
  for (int64_t i = 0; i < n; i++) p[i] = sin((double)(i * 7 + salt * 13) * 0.37);
}

static void check_mul_grad(const int64_t *xd, size_t xn, const int64_t *yd, size_t yn, int xcol,
                           int ycol) {
  double x[64], y[64];
  fill_pattern(x, numel_of(xd, xn), 1);
  fill_pattern(y, numel_of(yd, yn), 2);
  op_harness *h = harness("mul");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, xd, xn, x);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, yd, yn, y);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "x_num_col_dims", xcol));
  OK(op_harness_attr_int(h, "y_num_col_dims", ycol));
  OK(grad_check(h, GC_SLOTS("X", "Y"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(mul, gradient_matches_finite_differences) {
  check_mul_grad(DIMS(2, 3), DIMS(3, 4), 1, 1);
  check_mul_grad(DIMS(1, 1), DIMS(1, 1), 1, 1);
  check_mul_grad(DIMS(2, 3, 2), DIMS(2, 5), 2, 1);
  check_mul_grad(DIMS(3, 4), DIMS(2, 2, 3), 1, 2);
}

Test(mul, gradient_of_one_operand_leaves_the_other_absent) {
  double x[6], y[12];
  fill_pattern(x, 6, 3);
  fill_pattern(y, 12, 4);
  op_harness *h = harness("mul");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(h, "Y", "w", RILL_DTYPE_FP64, DIMS(3, 4), y);
  OK(op_harness_output(h, "Out", "out"));
  /* Only X checked: w@GRAD must never be written (the kernel skips @EMPTY@). */
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  cr_assert_null(op_harness_tensor(h, "w@GRAD"));
  op_harness_destroy(h);
}

Test(mul, float32_gradient_matches_float64) {
  double x[6], y[8], g[4];
  fill_pattern(x, 6, 5);
  fill_pattern(y, 8, 6);
  fill_pattern(g, 4, 7);
  float xf[6], yf[8], gf[4];
  for (int i = 0; i < 6; i++) xf[i] = (float)x[i];
  for (int i = 0; i < 8; i++) yf[i] = (float)y[i];
  for (int i = 0; i < 4; i++) gf[i] = (float)g[i];
  op_harness *h = harness("mul_grad");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), xf);
  bind_input(h, "Y", "y", RILL_DTYPE_FP32, DIMS(3, 2, 1), yf);
  bind_input(h, "Out@GRAD", "out@GRAD", RILL_DTYPE_FP32, DIMS(2, 2, 1), gf);
  OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
  OK(op_harness_output(h, "Y@GRAD", "y@GRAD"));
  OK(op_harness_run(h));
  /* X [2,3], Y [3,2], dOut [2,2]: dX = dOut Y^T, dY = X^T dOut */
  float wx[6], wy[6];
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 3; k++) {
      double s = 0;
      for (int j = 0; j < 2; j++) s += g[i * 2 + j] * y[k * 2 + j];
      wx[i * 3 + k] = (float)s;
    }
  for (int k = 0; k < 3; k++)
    for (int j = 0; j < 2; j++) {
      double s = 0;
      for (int i = 0; i < 2; i++) s += x[i * 3 + k] * g[i * 2 + j];
      wy[k * 2 + j] = (float)s;
    }
  expect_dims(op_harness_tensor(h, "x@GRAD"), DIMS(2, 3));
  expect_dims(op_harness_tensor(h, "y@GRAD"), DIMS(3, 2, 1));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "x@GRAD")), wx, 6, 1e-5f);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "y@GRAD")), wy, 6, 1e-5f);
  op_harness_destroy(h);
}

Test(mul, grad_rejects_out_grad_of_wrong_shape) {
  op_harness *h = harness("mul_grad");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "Y", "y", RILL_DTYPE_FP32, DIMS(3, 4), NULL);
  bind_input(h, "Out@GRAD", "out@GRAD", RILL_DTYPE_FP32, DIMS(2, 5), NULL);
  OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
  EXPECT_ERROR(op_harness_run(h), "mul_grad", "Out@GRAD (out@GRAD)", "[2, 5]");
  op_harness_destroy(h);
}
