/* range, linspace, eye, fill_any_like, diag and size against values written here, and
 * their errors. */
#include "tensor_test.h"

static op_harness *range_harness(rill_dtype dt, const void *s, const void *e, const void *st) {
  op_harness *h = harness("range");
  bind_input(h, "Start", "start", dt, DIMS(1), s);
  bind_input(h, "End", "end", dt, DIMS(1), e);
  bind_input(h, "Step", "step", dt, DIMS(1), st);
  OK(op_harness_output(h, "Out", "out"));
  return h;
}

Test(range, counts_and_accumulated_values) {
  op_harness *h = range_harness(RILL_DTYPE_FP32, (const float[]){0.5f}, (const float[]){2.0f},
                                (const float[]){0.3f});
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(5));
  float v = 0.5f;
  for (int i = 0; i < 5; i++, v += 0.3f) cr_assert_eq(((float *)rill_tensor_ptr(out))[i], v, "[%d]", i);
  op_harness_destroy(h);

  h = range_harness(RILL_DTYPE_INT64, (const int64_t[]){10}, (const int64_t[]){-3},
                    (const int64_t[]){-4});
  OK(op_harness_run(h));
  out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(4));
  const int64_t *o = rill_tensor_ptr(out);
  cr_assert(o[0] == 10 && o[1] == 6 && o[2] == 2 && o[3] == -2);
  op_harness_destroy(h);

  h = range_harness(RILL_DTYPE_INT32, (const int32_t[]){3}, (const int32_t[]){3}, (const int32_t[]){1});
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(0));
  op_harness_destroy(h);
}

Test(range, bad_step_names_the_inputs) {
  op_harness *h = range_harness(RILL_DTYPE_INT64, (const int64_t[]){0}, (const int64_t[]){5},
                                (const int64_t[]){0});
  EXPECT_ERROR(op_harness_run(h), "range", "Start (start)", "Step (step)", "step is 0");
  op_harness_destroy(h);
  h = range_harness(RILL_DTYPE_FP64, (const double[]){0}, (const double[]){5}, (const double[]){-1});
  EXPECT_ERROR(op_harness_run(h), "range", "moves away from the end");
  op_harness_destroy(h);
}

Test(linspace, values_and_num) {
  op_harness *h = harness("linspace");
  bind_input(h, "Start", "a", RILL_DTYPE_FP64, DIMS(1), (const double[]){1});
  bind_input(h, "Stop", "b", RILL_DTYPE_FP64, DIMS(1), (const double[]){2});
  bind_input(h, "Num", "n", RILL_DTYPE_INT32, DIMS(1), (const int32_t[]){5});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), (const double[]){1, 1.25, 1.5, 1.75, 2}, 5, 0);
  op_harness_destroy(h);

  h = harness("linspace");
  bind_input(h, "Start", "a", RILL_DTYPE_FP32, DIMS(1), (const float[]){3});
  bind_input(h, "Stop", "b", RILL_DTYPE_FP32, DIMS(1), (const float[]){7});
  bind_input(h, "Num", "n", RILL_DTYPE_INT32, DIMS(1), (const int32_t[]){1});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(1));
  cr_assert_eq(*(float *)rill_tensor_ptr(op_harness_tensor(h, "out")), 3.0f);
  op_harness_destroy(h);

  h = harness("linspace");
  bind_input(h, "Start", "a", RILL_DTYPE_FP32, DIMS(1), (const float[]){3});
  bind_input(h, "Stop", "b", RILL_DTYPE_FP32, DIMS(1), (const float[]){7});
  bind_input(h, "Num", "count", RILL_DTYPE_INT32, DIMS(1), (const int32_t[]){0});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "linspace", "Num (count)", "> 0");
  op_harness_destroy(h);
}

Test(eye, identity_of_each_dtype) {
  op_harness *h = harness("eye");
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_long(h, "num_rows", 2));
  OK(op_harness_attr_long(h, "num_columns", 3));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_INT64));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(2, 3));
  cr_assert_eq(out->dtype, RILL_DTYPE_INT64);
  const int64_t *o = rill_tensor_ptr(out);
  for (int i = 0; i < 6; i++) cr_assert_eq(o[i], i == 0 || i == 4, "[%d]", i);
  OK(op_harness_attr_long(h, "num_columns", -1));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_FP32));
  OK(op_harness_run(h));
  out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(2, 2));
  expect_close_f32(rill_tensor_ptr(out), (const float[]){1, 0, 0, 1}, 4, 0);
  OK(op_harness_attr_long(h, "num_rows", -2));
  EXPECT_ERROR(op_harness_run(h), "eye", "Out (out)", "-2");
  op_harness_destroy(h);
}

Test(fill_any_like, shape_of_x_and_dtype) {
  op_harness *h = harness("fill_any_like");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_float(h, "value", 2.5f));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(2, 3));
  for (int i = 0; i < 6; i++) cr_assert_eq(((float *)rill_tensor_ptr(out))[i], 2.5f);
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_INT32));
  OK(op_harness_run(h));
  out = op_harness_tensor(h, "out");
  cr_assert_eq(out->dtype, RILL_DTYPE_INT32);
  for (int i = 0; i < 6; i++) cr_assert_eq(((int32_t *)rill_tensor_ptr(out))[i], 2);
  op_harness_destroy(h);
}

Test(diag, square_matrix_and_bad_rank) {
  op_harness *h = harness("diag");
  bind_input(h, "Diagonal", "d", RILL_DTYPE_INT32, DIMS(3), (const int32_t[]){4, -5, 6});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(3, 3));
  const int32_t want[9] = {4, 0, 0, 0, -5, 0, 0, 0, 6};
  for (int i = 0; i < 9; i++) cr_assert_eq(((int32_t *)rill_tensor_ptr(out))[i], want[i]);
  op_harness_destroy(h);

  h = harness("diag");
  bind_input(h, "Diagonal", "m", RILL_DTYPE_FP32, DIMS(2, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "diag", "Diagonal (m)", "1-D");
  op_harness_destroy(h);
}

Test(size, element_count) {
  op_harness *h = harness("size");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(2, 3, 4), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(1));
  cr_assert_eq(*(int64_t *)rill_tensor_ptr(out), 24);
  op_harness_destroy(h);
}
