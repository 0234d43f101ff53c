/* set_value against slices enumerated index by index (Paddle's rules: negative indices
 * wrap, a negative step runs down to end exclusive with end -1 meaning through 0). */
#include "op_test.h"

/* The indices of one sliced axis, in order; returns the count. */
static int slice_ids(int64_t dim, int64_t s, int64_t e, int64_t st, int64_t *ids) {
  int n = 0;
  if (st > 0) {
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (s < 0) s = 0;
    if (e > dim) e = dim;
    for (int64_t i = s; i < e; i += st) ids[n++] = i;
  } else {
    if (s < 0) s += dim;
    if (e < -1) e += dim;
    if (s > dim - 1) s = dim - 1;
    for (int64_t i = s; i > e && i >= 0; i += st) ids[n++] = i;
  }
  return n;
}

Test(set_value, strided_slice_with_broadcast_value) {
  float x[12], v[3] = {100, 200, 300}, want[12];
  for (int i = 0; i < 12; i++) x[i] = want[i] = (float)i;
  int64_t ids[4];
  int n = slice_ids(4, 1, 4, 2, ids);
  cr_assert_eq(n, 2);
  for (int r = 0; r < 3; r++)
    for (int k = 0; k < n; k++) want[r * 4 + ids[k]] = v[r];
  op_harness *h = harness("set_value");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(3, 4), x);
  bind_input(h, "ValueTensor", "v", RILL_DTYPE_FP32, DIMS(3, 1), v);
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_ints(h, "axes", (const int32_t[]){1}, 1));
  OK(op_harness_attr_longs(h, "starts", (const int64_t[]){1}, 1));
  OK(op_harness_attr_longs(h, "ends", (const int64_t[]){4}, 1));
  OK(op_harness_attr_longs(h, "steps", (const int64_t[]){2}, 1));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "y");
  expect_dims(t, DIMS(3, 4));
  expect_close_f32(rill_tensor_ptr(t), want, 12, 0);
  /* Input itself is unchanged when Out is another variable */
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "x")), x, 12, 0);
  op_harness_destroy(h);
}

Test(set_value, in_place_with_tensor_bounds_and_decrease_axes) {
  /* fsie_table: buf[:, t] = v, with t from a tensor; Out is Input */
  float x[24] = {0}, v[8], want[24] = {0};
  for (int i = 0; i < 8; i++) v[i] = (float)(i + 1);
  for (int b = 0; b < 2; b++)
    for (int c = 0; c < 4; c++) want[(b * 3 + 2) * 4 + c] = v[b * 4 + c];
  op_harness *h = harness("set_value");
  bind_input(h, "Input", "buf", RILL_DTYPE_FP32, DIMS(2, 3, 4), x);
  bind_input(h, "ValueTensor", "v", RILL_DTYPE_FP32, DIMS(2, 4), v);
  bind_input(h, "StartsTensorList", "t", RILL_DTYPE_INT64, DIMS(1), (int64_t[]){2});
  bind_input(h, "EndsTensorList", "t1", RILL_DTYPE_INT64, DIMS(1), (int64_t[]){3});
  OK(op_harness_output(h, "Out", "buf"));
  OK(op_harness_attr_ints(h, "axes", (const int32_t[]){1}, 1));
  OK(op_harness_attr_longs(h, "steps", (const int64_t[]){1}, 1));
  OK(op_harness_attr_ints(h, "decrease_axes", (const int32_t[]){1}, 1));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "buf");
  expect_dims(t, DIMS(2, 3, 4));
  expect_close_f32(rill_tensor_ptr(t), want, 24, 0);
  op_harness_destroy(h);
}

Test(set_value, negative_step_and_attribute_values) {
  int64_t x[6] = {0, 1, 2, 3, 4, 5}, want[6];
  memcpy(want, x, sizeof x);
  int64_t ids[6];
  int n = slice_ids(6, -2, -1, -2, ids); /* 4, 2, 0 */
  cr_assert_eq(n, 3);
  for (int k = 0; k < n; k++) want[ids[k]] = -7;
  op_harness *h = harness("set_value");
  bind_input(h, "Input", "x", RILL_DTYPE_INT64, DIMS(6), x);
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_ints(h, "axes", (const int32_t[]){0}, 1));
  OK(op_harness_attr_longs(h, "starts", (const int64_t[]){-2}, 1));
  OK(op_harness_attr_longs(h, "ends", (const int64_t[]){-1}, 1));
  OK(op_harness_attr_longs(h, "steps", (const int64_t[]){-2}, 1));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_INT64));
  OK(op_harness_attr_longs(h, "shape", (const int64_t[]){1}, 1));
  OK(op_harness_attr_longs(h, "int64_values", (const int64_t[]){-7}, 1));
  OK(op_harness_run(h));
  const int64_t *y = rill_tensor_ptr(op_harness_tensor(h, "y"));
  for (int i = 0; i < 6; i++) cr_assert_eq(y[i], want[i], "[%d]", i);
  op_harness_destroy(h);
}

Test(set_value, none_axes_and_two_axes) {
  /* x[None, 0:2, 1] = [[10, 20]] on x [2, 3]: slice [2, 1], decrease 1 -> [2], none at 0 -> [1, 2] */
  float x[6] = {0, 1, 2, 3, 4, 5}, want[6] = {0, 10, 2, 3, 20, 5};
  op_harness *h = harness("set_value");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(2, 3), x);
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_ints(h, "axes", (const int32_t[]){0, 1}, 2));
  OK(op_harness_attr_longs(h, "starts", (const int64_t[]){0, 1}, 2));
  OK(op_harness_attr_longs(h, "ends", (const int64_t[]){2, 2}, 2));
  OK(op_harness_attr_longs(h, "steps", (const int64_t[]){1, 1}, 2));
  OK(op_harness_attr_ints(h, "decrease_axes", (const int32_t[]){1}, 1));
  OK(op_harness_attr_ints(h, "none_axes", (const int32_t[]){0}, 1));
  OK(op_harness_attr_longs(h, "shape", (const int64_t[]){1, 2}, 2));
  float fv[2] = {10, 20};
  rill_attr_value a = {.type = RILL_ATTR_FLOATS, .n = 2};
  a.list.floats = fv;
  OK(op_harness_attr(h, "fp32_values", &a));
  OK(op_harness_run(h));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "y")), want, 6, 0);
  op_harness_destroy(h);
}

Test(set_value, mismatched_value_fails) {
  op_harness *h = harness("set_value");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(3, 4), NULL);
  bind_input(h, "ValueTensor", "val", RILL_DTYPE_FP32, DIMS(3, 3), NULL);
  OK(op_harness_output(h, "Out", "x"));
  OK(op_harness_attr_ints(h, "axes", (const int32_t[]){1}, 1));
  OK(op_harness_attr_longs(h, "starts", (const int64_t[]){0}, 1));
  OK(op_harness_attr_longs(h, "ends", (const int64_t[]){2}, 1));
  EXPECT_ERROR(op_harness_run(h), "set_value", "x", "broadcast");
  op_harness_destroy(h);

  h = harness("set_value");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(3, 4), NULL);
  OK(op_harness_output(h, "Out", "x"));
  OK(op_harness_attr_ints(h, "axes", (const int32_t[]){2}, 1));
  OK(op_harness_attr_longs(h, "starts", (const int64_t[]){0}, 1));
  OK(op_harness_attr_longs(h, "ends", (const int64_t[]){2}, 1));
  EXPECT_ERROR(op_harness_run(h), "set_value", "axes", "x");
  op_harness_destroy(h);
}
