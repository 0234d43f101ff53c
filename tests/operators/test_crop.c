/* crop and crop_tensor: the box against loops written here, gradients by finite
 * differences, boxes that do not fit. */
#include "tensor_test.h"

static const double X12[12] = {1, -2, 3, 0.5, 4, 6, -1, 2, 0.25, 7, -3, 5};

static void expect_box(op_harness *h, int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, (const int64_t[]){rows, cols}, 2);
  const double *o = rill_tensor_ptr(out);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      cr_assert_eq(o[i * cols + j], X12[(r0 + i) * 4 + c0 + j], "(%lld, %lld)", (long long)i, (long long)j);
}

Test(crop, attributes_y_and_offsets_tensor) {
  op_harness *h = harness("crop");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2, 2}, 2));
  OK(op_harness_attr_ints(h, "offsets", (const int32_t[]){1, 2}, 2));
  OK(op_harness_run(h));
  expect_box(h, 1, 2, 2, 2);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  OK(op_harness_attr_ints(h, "offsets", (const int32_t[]){2, 2}, 2));
  EXPECT_ERROR(op_harness_run(h), "crop", "X (x)", "exceeds");
  op_harness_destroy(h);

  h = harness("crop");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  bind_input(h, "Y", "like", RILL_DTYPE_FP32, DIMS(3, 3), NULL);
  bind_input(h, "Offsets", "offs", RILL_DTYPE_INT32, DIMS(2), (const int32_t[]){0, 1});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_box(h, 0, 1, 3, 3);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(crop_tensor, minus_one_lists_and_tensors) {
  op_harness *h = harness("crop_tensor");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2, -1}, 2));
  OK(op_harness_attr_ints(h, "offsets", (const int32_t[]){1, 1}, 2));
  OK(op_harness_run(h));
  expect_box(h, 1, 1, 2, 3);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);

  h = harness("crop_tensor");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  bind_input(h, "Shape", "shape", RILL_DTYPE_INT32, DIMS(2), (const int32_t[]){1, 2});
  rill_tensor *o0 = op_harness_make(RILL_DTYPE_INT32, DIMS(1), (const int32_t[]){2});
  rill_tensor *o1 = op_harness_make(RILL_DTYPE_INT32, DIMS(1), (const int32_t[]){1});
  OK(op_harness_input(h, "OffsetsTensor", "o0", o0));
  OK(op_harness_input(h, "OffsetsTensor", "o1", o1));
  op_harness_free_tensor(o0);
  op_harness_free_tensor(o1);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_box(h, 2, 1, 1, 2);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);

  h = harness("crop_tensor");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  bind_input(h, "Shape", "shape", RILL_DTYPE_INT32, DIMS(3), (const int32_t[]){1, 2, 3});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "crop_tensor", "holds 3 values for rank 2");
  op_harness_destroy(h);
}
