#include "op_test.h"

static rill_attr_value list_attr(rill_attr_type t, void *p, size_t n) {
  rill_attr_value v = {.type = t, .n = n};
  v.list.ptr = p;
  return v;
}

Test(assign_value, float32_values_fill_the_shape) {
  op_harness *h = harness("assign_value");
  OK(op_harness_output(h, "Out", "c"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2, 3}, 2));
  float vals[6] = {1.5f, -2, 0, 3.25f, 1e-3f, 7};
  rill_attr_value v = list_attr(RILL_ATTR_FLOATS, vals, 6);
  OK(op_harness_attr(h, "fp32_values", &v));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "c");
  expect_dims(t, DIMS(2, 3));
  cr_assert_eq(t->dtype, RILL_DTYPE_FP32);
  expect_close_f32(rill_tensor_ptr(t), vals, 6, 0);
  op_harness_destroy(h);
}

Test(assign_value, integer_and_bool_dtypes) {
  /* int64 as fsie_table writes it: dtype 3, shape [1], int64_values [500] */
  op_harness *h = harness("assign_value");
  OK(op_harness_output(h, "Out", "c"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){1}, 1));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_INT64));
  OK(op_harness_attr_longs(h, "int64_values", (const int64_t[]){500}, 1));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "c");
  cr_assert_eq(t->dtype, RILL_DTYPE_INT64);
  cr_assert_eq(((int64_t *)rill_tensor_ptr(t))[0], 500);
  op_harness_destroy(h);

  h = harness("assign_value");
  OK(op_harness_output(h, "Out", "c"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){3}, 1));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_INT32));
  OK(op_harness_attr_ints(h, "int32_values", (const int32_t[]){-7, 0, 2147483647}, 3));
  OK(op_harness_run(h));
  t = op_harness_tensor(h, "c");
  cr_assert_eq(t->dtype, RILL_DTYPE_INT32);
  const int32_t *ip = rill_tensor_ptr(t);
  cr_assert(ip[0] == -7 && ip[1] == 0 && ip[2] == 2147483647);
  op_harness_destroy(h);

  h = harness("assign_value");
  OK(op_harness_output(h, "Out", "c"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2, 2}, 2));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_BOOL));
  OK(op_harness_attr_ints(h, "bool_values", (const int32_t[]){1, 0, 0, 5}, 4));
  OK(op_harness_run(h));
  t = op_harness_tensor(h, "c");
  cr_assert_eq(t->dtype, RILL_DTYPE_BOOL);
  const bool *bp = rill_tensor_ptr(t);
  cr_assert(bp[0] && !bp[1] && !bp[2] && bp[3]);
  op_harness_destroy(h);

  h = harness("assign_value");
  OK(op_harness_output(h, "Out", "c"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2}, 1));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_FP64));
  double dv[2] = {0.1, -1e300};
  rill_attr_value v = list_attr(RILL_ATTR_FLOAT64S, dv, 2);
  OK(op_harness_attr(h, "fp64_values", &v));
  OK(op_harness_run(h));
  t = op_harness_tensor(h, "c");
  cr_assert_eq(t->dtype, RILL_DTYPE_FP64);
  cr_assert(((double *)rill_tensor_ptr(t))[0] == 0.1 && ((double *)rill_tensor_ptr(t))[1] == -1e300);
  op_harness_destroy(h);
}

Test(assign_value, empty_shape_is_a_scalar) {
  op_harness *h = harness("assign_value");
  OK(op_harness_output(h, "Out", "c"));
  OK(op_harness_attr_ints(h, "shape", NULL, 0));
  float one = 4.0f;
  rill_attr_value v = list_attr(RILL_ATTR_FLOATS, &one, 1);
  OK(op_harness_attr(h, "fp32_values", &v));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "c");
  cr_assert_eq(t->dims.n, 0);
  cr_assert_eq(((float *)rill_tensor_ptr(t))[0], 4.0f);
  op_harness_destroy(h);
}

Test(assign_value, count_mismatch_and_bad_dtype_fail_at_inference) {
  op_harness *h = harness("assign_value");
  OK(op_harness_output(h, "Out", "const_0"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2, 2}, 2));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_INT64));
  OK(op_harness_attr_longs(h, "int64_values", (const int64_t[]){1, 2, 3}, 3));
  EXPECT_ERROR(op_harness_run(h), "assign_value", "const_0", "int64_values", "[2, 2]");
  op_harness_destroy(h);

  h = harness("assign_value");
  OK(op_harness_output(h, "Out", "c"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){1}, 1));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_INT8));
  EXPECT_ERROR(op_harness_run(h), "assign_value", "dtype");
  op_harness_destroy(h);

  h = harness("assign_value");
  OK(op_harness_output(h, "Out", "c"));
  EXPECT_ERROR(op_harness_run(h), "assign_value", "shape");
  op_harness_destroy(h);
}
