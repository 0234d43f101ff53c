/* cos_sim: forward against a naive reference (same rows and one broadcast row of Y),
 * gradients of X and Y by finite differences, shape errors. */
#include "op_test.h"
#include "support/grad_check.h"

static void ref_cos(const double *x, const double *y, int64_t n, int64_t ny, int64_t d, double *out) {
  for (int64_t i = 0; i < n; i++) {
    const double *yr = y + (ny == 1 ? 0 : i) * d;
    double xx = 0, yy = 0, xy = 0;
    for (int64_t k = 0; k < d; k++) {
      xx += x[i * d + k] * x[i * d + k];
      yy += yr[k] * yr[k];
      xy += x[i * d + k] * yr[k];
    }
    out[i] = xy / sqrt(xx * yy);
  }
}

static op_harness *cos_harness(rill_dtype dt, const void *x, const void *y, int64_t n, int64_t ny) {
  op_harness *h = harness("cos_sim");
  bind_input(h, "X", "query", dt, DIMS(n, 2, 2), x);
  bind_input(h, "Y", "doc", dt, DIMS(ny, 2, 2), y);
  OK(op_harness_output(h, "Out", "sim"));
  OK(op_harness_output(h, "XNorm", "xnorm"));
  OK(op_harness_output(h, "YNorm", "ynorm"));
  return h;
}

Test(cos_sim, forward_matches_reference_with_and_without_broadcast) {
  double x[12], y[12], want[3];
  float xf[12], yf[12];
  for (int i = 0; i < 12; i++) {
    x[i] = sin(i * 0.9) + 0.2;
    y[i] = cos(i * 0.4) - 0.1;
    xf[i] = (float)x[i];
    yf[i] = (float)y[i];
  }
  for (int64_t ny = 1; ny <= 3; ny += 2) {
    ref_cos(x, y, 3, ny, 4, want);
    op_harness *h = cos_harness(RILL_DTYPE_FP64, x, y, 3, ny);
    OK(op_harness_run(h));
    expect_dims(op_harness_tensor(h, "sim"), DIMS(3, 1));
    expect_dims(op_harness_tensor(h, "ynorm"), DIMS(ny, 1));
    expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "sim")), want, 3, 1e-12);
    const double *xn = rill_tensor_ptr(op_harness_tensor(h, "xnorm"));
    cr_assert(fabs(xn[1] - sqrt(x[4] * x[4] + x[5] * x[5] + x[6] * x[6] + x[7] * x[7])) < 1e-12);
    op_harness_destroy(h);
    h = cos_harness(RILL_DTYPE_FP32, xf, yf, 3, ny);
    OK(op_harness_run(h));
    const float *of = rill_tensor_ptr(op_harness_tensor(h, "sim"));
    for (int i = 0; i < 3; i++) cr_assert(fabs(of[i] - want[i]) < 1e-5, "row %d", i);
    op_harness_destroy(h);
  }
}

Test(cos_sim, gradients_match_finite_differences) {
  double x[12], y[12];
  for (int i = 0; i < 12; i++) {
    x[i] = sin(i * 0.9) + 0.2;
    y[i] = cos(i * 0.4) - 0.1;
  }
  for (int64_t ny = 1; ny <= 3; ny += 2) {
    op_harness *h = cos_harness(RILL_DTYPE_FP64, x, y, 3, ny);
    rill_status *st = grad_check(h, GC_SLOTS("X", "Y"), GC_SLOTS("Out"), NULL);
    cr_assert_null(st, "Y rows %lld: %s", (long long)ny, rill_status_message(st));
    op_harness_destroy(h);
  }
}

Test(cos_sim, mismatched_shapes_fail_naming_both_inputs) {
  op_harness *h = harness("cos_sim");
  bind_input(h, "X", "query", RILL_DTYPE_FP32, DIMS(3, 4), NULL);
  bind_input(h, "Y", "doc", RILL_DTYPE_FP32, DIMS(2, 4), NULL);
  OK(op_harness_output(h, "Out", "sim"));
  OK(op_harness_output(h, "XNorm", "xnorm"));
  OK(op_harness_output(h, "YNorm", "ynorm"));
  EXPECT_ERROR(op_harness_infer(h), "cos_sim", "X (query)", "Y (doc)", "[2, 4]");
  op_harness_destroy(h);
}
