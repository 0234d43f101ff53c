#include "tensor_test.h"

static void check_arg_max(const int64_t *xd, size_t r, int64_t axis, bool keep, bool flatten,
                          int dtype, const int64_t *od, size_t on) {
  int64_t n = numel_of(xd, r);
  float *x = malloc((size_t)n * sizeof *x);
  for (int64_t i = 0; i < n; i++) x[i] = (float)((i * 7) % 5); /* ties */
  op_harness *h = harness("arg_max");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, xd, r, x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_long(h, "axis", axis));
  OK(op_harness_attr_bool(h, "keepdims", keep));
  OK(op_harness_attr_bool(h, "flatten", flatten));
  if (dtype) OK(op_harness_attr_int(h, "dtype", dtype));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, od, on);
  cr_assert_eq(out->dtype, dtype == RILL_DTYPE_INT32 ? RILL_DTYPE_INT32 : RILL_DTYPE_INT64);
  /* reference: first maximum */
  int a = flatten ? 0 : (int)(axis < 0 ? axis + (int64_t)r : axis);
  int64_t outer = flatten ? 1 : numel_of(xd, (size_t)a), len = flatten ? n : xd[a];
  int64_t inner = flatten ? 1 : numel_of(xd + a + 1, r - (size_t)a - 1);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < inner; i++) {
      int64_t best = 0;
      for (int64_t j = 1; j < len; j++)
        if (x[(o * len + j) * inner + i] > x[(o * len + best) * inner + i]) best = j;
      int64_t got = out->dtype == RILL_DTYPE_INT32 ? ((int32_t *)rill_tensor_ptr(out))[o * inner + i]
                                                   : ((int64_t *)rill_tensor_ptr(out))[o * inner + i];
      cr_assert_eq(got, best, "(%lld, %lld)", (long long)o, (long long)i);
    }
  op_harness_destroy(h);
  free(x);
}

Test(arg_max, matches_reference) {
  check_arg_max(DIMS(3, 4), 1, false, false, 0, DIMS(3));
  check_arg_max(DIMS(3, 4), 0, true, false, RILL_DTYPE_INT32, DIMS(1, 4));
  check_arg_max(DIMS(2, 3, 4), -2, false, false, RILL_DTYPE_INT64, DIMS(2, 4));
  check_arg_max(DIMS(2, 3, 4), 0, false, true, 0, DIMS(1));
  check_arg_max(DIMS(7), 0, false, false, 0, NULL, 0);
}

Test(arg_max, int_input) {
  op_harness *h = harness("arg_max");
  bind_input(h, "X", "x", RILL_DTYPE_INT64, DIMS(2, 3), (const int64_t[]){1, 5, 5, -2, -1, -3});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_long(h, "axis", 1));
  OK(op_harness_run(h));
  const int64_t *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  cr_assert(o[0] == 1 && o[1] == 1);
  op_harness_destroy(h);
}

Test(arg_max, bad_axis_and_dtype_name_op_and_variable) {
  op_harness *h = harness("arg_max");
  bind_input(h, "X", "scores", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "arg_max", "axis");
  OK(op_harness_attr_long(h, "axis", 2));
  EXPECT_ERROR(op_harness_run(h), "arg_max", "X (scores)", "axis 2");
  OK(op_harness_attr_long(h, "axis", 1));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_FP32));
  EXPECT_ERROR(op_harness_run(h), "arg_max", "Out (out)", "dtype 5");
  op_harness_destroy(h);
}

Test(arg_min, first_minimum_along_axis) {
  /* columns with ties: the first minimum wins. */
  const float x[12] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 1};
  op_harness *h = harness("arg_min");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(3, 4), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_long(h, "axis", -1));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(3));
  const int64_t *o = rill_tensor_ptr(out);
  cr_assert(o[0] == 1 && o[1] == 2 && o[2] == 3, "%lld %lld %lld", (long long)o[0],
            (long long)o[1], (long long)o[2]);
  OK(op_harness_attr_long(h, "axis", 0));
  OK(op_harness_attr_bool(h, "keepdims", true));
  OK(op_harness_run(h));
  out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(1, 4));
  o = rill_tensor_ptr(out);
  cr_assert(o[0] == 0 && o[1] == 0 && o[2] == 1 && o[3] == 0);
  OK(op_harness_attr_long(h, "axis", 2));
  EXPECT_ERROR(op_harness_run(h), "arg_min", "X (x)", "axis 2 is out of range");
  op_harness_destroy(h);
}
