/* elementwise_mod and elementwise_floordiv on int32 and int64 against Paddle 1.8.5's
 * values (C's truncating remainder and division), broadcast against a one-element Y;
 * elementwise_mod on floats (the divisor's sign); and the errors: a zero divisor, a
 * float floordiv. */
#include "op_test.h"

static void check(const char *type, rill_dtype dt, const int64_t *want, const int64_t *want_scalar) {
  const int64_t x64[] = {7, -7, 7, -7, 0, 5}, y64[] = {3, 3, -3, -3, 2, 5};
  const int32_t x32[] = {7, -7, 7, -7, 0, 5}, y32[] = {3, 3, -3, -3, 2, 5};
  bool is64 = dt == RILL_DTYPE_INT64;
  op_harness *h = harness(type);
  bind_input(h, "X", "x", dt, DIMS(6), is64 ? (const void *)x64 : (const void *)x32);
  bind_input(h, "Y", "y", dt, DIMS(6), is64 ? (const void *)y64 : (const void *)y32);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "out");
  for (int i = 0; i < 6; i++) {
    int64_t got = is64 ? ((const int64_t *)rill_tensor_ptr(o))[i] : ((const int32_t *)rill_tensor_ptr(o))[i];
    cr_assert_eq(got, want[i], "%s %s [%d]: %lld", type, rill_dtype_name(dt), i, (long long)got);
  }
  /* Y = [-2] broadcast */
  bind_input(h, "Y", "y", dt, DIMS(1), is64 ? (const void *)(const int64_t[]){-2} : (const void *)(const int32_t[]){-2});
  OK(op_harness_run(h));
  o = op_harness_tensor(h, "out");
  for (int i = 0; i < 6; i++) {
    int64_t got = is64 ? ((const int64_t *)rill_tensor_ptr(o))[i] : ((const int32_t *)rill_tensor_ptr(o))[i];
    cr_assert_eq(got, want_scalar[i], "%s %s by -2 [%d]: %lld", type, rill_dtype_name(dt), i, (long long)got);
  }
  op_harness_destroy(h);
}

Test(elementwise_mod, truncating_remainder_and_division_as_paddle) {
  const int64_t mod[] = {1, -1, 1, -1, 0, 0}, mod2[] = {1, -1, 1, -1, 0, 1};
  const int64_t div[] = {2, -2, -2, 2, 0, 1}, div2[] = {-3, 3, -3, 3, 0, -2};
  check("elementwise_mod", RILL_DTYPE_INT32, mod, mod2);
  check("elementwise_mod", RILL_DTYPE_INT64, mod, mod2);
  check("elementwise_floordiv", RILL_DTYPE_INT32, div, div2);
  check("elementwise_floordiv", RILL_DTYPE_INT64, div, div2);
}

/* Paddle 1.8.5's float remainders: the sign of the divisor, 0 kept, NaN for 0 */
Test(elementwise_mod, float_remainder_takes_the_divisors_sign) {
  const double x[] = {7.5, -7.5, 7.5, -7.5, 5, 6, -1, 0, 3};
  const double y[] = {2, 2, -2, -2, 2, 0.5, 5, 7, 0};
  const double want[] = {1.5, 0.5, -0.5, -1.5, 1, 0, 4, 0, NAN};
  float xf[9], yf[9];
  for (int i = 0; i < 9; i++) xf[i] = (float)x[i], yf[i] = (float)y[i];
  for (int dt = 0; dt < 2; dt++) {
    op_harness *h = harness("elementwise_mod");
    bind_input(h, "X", "x", dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32, DIMS(9), dt ? (const void *)x : (const void *)xf);
    bind_input(h, "Y", "y", dt ? RILL_DTYPE_FP64 : RILL_DTYPE_FP32, DIMS(9), dt ? (const void *)y : (const void *)yf);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_run(h));
    const rill_tensor *o = op_harness_tensor(h, "out");
    for (int i = 0; i < 9; i++) {
      double got = dt ? ((const double *)rill_tensor_ptr(o))[i] : ((const float *)rill_tensor_ptr(o))[i];
      if (isnan(want[i]))
        cr_assert(isnan(got), "[%d]: %g", i, got);
      else
        cr_assert_eq(got, want[i], "dtype %d [%d]: %g, want %g", dt, i, got, want[i]);
    }
    op_harness_destroy(h);
  }
}

Test(elementwise_mod, errors_name_op_and_variable) {
  op_harness *h = harness("elementwise_mod");
  bind_input(h, "X", "a", RILL_DTYPE_INT64, DIMS(2), (const int64_t[]){4, 5});
  bind_input(h, "Y", "b", RILL_DTYPE_INT64, DIMS(2), (const int64_t[]){2, 0});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "elementwise_mod", "b", "zero divisor");
  op_harness_destroy(h);
  h = harness("elementwise_floordiv");
  bind_input(h, "X", "a", RILL_DTYPE_FP32, DIMS(2), (const float[]){4, 5});
  bind_input(h, "Y", "b", RILL_DTYPE_FP32, DIMS(2), (const float[]){2, 1});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "elementwise_floordiv", "float32");
  op_harness_destroy(h);
}
