/* prelu against a naive reference for each mode (all, channel on [N, C, H, W] and on
 * [N, C], element), float32 and float64; gradients of X and Alpha by finite differences;
 * and the errors. */
#include "op_test.h"
#include "support/grad_check.h"

/* Alpha index of element i of X [dims] under `mode`. */
static int64_t alpha_index(const char *mode, const int64_t *dims, size_t nd, int64_t i) {
  int64_t per_sample = 1, inner = 1;
  for (size_t k = 1; k < nd; k++) per_sample *= dims[k];
  for (size_t k = 2; k < nd; k++) inner *= dims[k];
  if (!strcmp(mode, "all")) return 0;
  if (!strcmp(mode, "channel")) return (i % per_sample) / inner;
  return i % per_sample;
}

static void check_mode(const char *mode, const int64_t *dims, size_t nd, int64_t nalpha) {
  int64_t n = numel_of(dims, nd);
  double *x = malloc((size_t)n * sizeof *x), *want = malloc((size_t)n * sizeof *want);
  double *a = malloc((size_t)nalpha * sizeof *a);
  float *xf = malloc((size_t)n * sizeof *xf), *af = malloc((size_t)nalpha * sizeof *af);
  for (int64_t i = 0; i < n; i++) x[i] = sin((double)i * 0.9) * 2 + 0.05, xf[i] = (float)x[i];
  for (int64_t k = 0; k < nalpha; k++) a[k] = 0.1 + 0.07 * (double)k, af[k] = (float)a[k];
  for (int64_t i = 0; i < n; i++) {
    double s = a[alpha_index(mode, dims, nd, i)];
    want[i] = x[i] > 0 ? x[i] : s * x[i];
  }
  op_harness *h = harness("prelu");
  OK(op_harness_attr_string(h, "mode", mode));
  bind_input(h, "X", "x", RILL_DTYPE_FP64, dims, nd, x);
  bind_input(h, "Alpha", "alpha", RILL_DTYPE_FP64, (const int64_t[]){nalpha}, 1, a);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), dims, nd);
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), want, n, 1e-15);
  rill_status *st = grad_check(h, GC_SLOTS("X", "Alpha"), GC_SLOTS("Out"), NULL);
  cr_assert_null(st, "%s: %s", mode, st ? rill_status_message(st) : "");
  op_harness_destroy(h);
  h = harness("prelu");
  OK(op_harness_attr_string(h, "mode", mode));
  bind_input(h, "X", "x", RILL_DTYPE_FP32, dims, nd, xf);
  bind_input(h, "Alpha", "alpha", RILL_DTYPE_FP32, (const int64_t[]){nalpha}, 1, af);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  const float *got = rill_tensor_ptr(op_harness_tensor(h, "out"));
  for (int64_t i = 0; i < n; i++) cr_assert_float_eq(got[i], (float)want[i], 1e-6, "%s [%lld]", mode, (long long)i);
  op_harness_destroy(h);
  free(x), free(want), free(a), free(xf), free(af);
}

Test(prelu, every_mode_matches_reference_with_gradients) {
  check_mode("all", (const int64_t[]){2, 3, 2, 2}, 4, 1);
  check_mode("channel", (const int64_t[]){2, 3, 2, 2}, 4, 3);
  check_mode("channel", (const int64_t[]){4, 5}, 2, 5);
  check_mode("element", (const int64_t[]){2, 3, 2}, 3, 6);
  check_mode("element", (const int64_t[]){5}, 1, 1);
}

Test(prelu, errors_name_op_and_variable) {
  float x[6] = {1, -2, 3, -4, 5, -6}, a[2] = {0.25f, 0.5f};
  op_harness *h = harness("prelu");
  OK(op_harness_attr_string(h, "mode", "channel"));
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3), x);
  bind_input(h, "Alpha", "slopes", RILL_DTYPE_FP32, DIMS(2), a);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "prelu", "Alpha", "slopes", "needs 3", "feat");
  OK(op_harness_attr_string(h, "mode", "row"));
  EXPECT_ERROR(op_harness_run(h), "prelu", "mode", "row");
  op_harness_destroy(h);
  h = harness("prelu");
  bind_input(h, "X", "feat", RILL_DTYPE_INT32, DIMS(6), (const int32_t[]){1, 2, 3, 4, 5, 6});
  bind_input(h, "Alpha", "slopes", RILL_DTYPE_FP32, DIMS(1), a);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "prelu", "feat", "float32 or float64");
  op_harness_destroy(h);
}
