/* kron, trace and expand_as: forward against loops written here, gradients by finite
 * differences, bad dims. */
#include "tensor_test.h"

static const double X12[12] = {1, -2, 3, 0.5, 4, 6, -1, 2, 0.25, 7, -3, 5};

Test(kron, product_and_gradients) {
  op_harness *h = harness("kron");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3), X12);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, DIMS(2, 2), X12 + 6);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(4, 6));
  const double *o = rill_tensor_ptr(out);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++)
      cr_assert_eq(o[i * 6 + j], X12[(i / 2) * 3 + j / 2] * X12[6 + (i % 2) * 2 + j % 2]);
  OK(grad_check(h, GC_SLOTS("X", "Y"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);

  /* Ranks 1 and 2: X is padded to [1, 4]. */
  h = harness("kron");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(4), X12);
  bind_input(h, "Y", "y", RILL_DTYPE_FP64, DIMS(2, 3), X12 + 4);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(2, 12));
  OK(grad_check(h, GC_SLOTS("X", "Y"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(trace, diagonals_and_gradient) {
  op_harness *h = harness("trace");
  bind_input(h, "Input", "m", RILL_DTYPE_FP64, DIMS(3, 4), X12);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "offset", 1));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(1));
  cr_assert_eq(*(double *)rill_tensor_ptr(op_harness_tensor(h, "out")), X12[1] + X12[6] + X12[11]);
  OK(grad_check(h, GC_SLOTS("Input"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);

  /* [3, 2, 2] with dims (-1, 0) and offset -1: one element per middle index. */
  h = harness("trace");
  bind_input(h, "Input", "m", RILL_DTYPE_FP64, DIMS(3, 2, 2), X12);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "offset", -1));
  OK(op_harness_attr_int(h, "dim1", -1));
  OK(op_harness_attr_int(h, "dim2", 0));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(2));
  /* The rows run along dim 0 (the lower of the two, as Paddle orders them): offset -1
   * takes (a, b, c) = (k + 1, b, k), k = 0 and 1: X[1, b, 0] + X[2, b, 1]. */
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")),
                   (const double[]){X12[4] + X12[9], X12[6] + X12[11]}, 2, 0);
  OK(grad_check(h, GC_SLOTS("Input"), GC_SLOTS("Out"), NULL));
  OK(op_harness_attr_int(h, "dim2", 2));
  EXPECT_ERROR(op_harness_run(h), "trace", "Input (m)", "dim1 -1 and dim2 2");
  op_harness_destroy(h);
}

Test(expand_as, tiles_to_the_target_and_gradient) {
  op_harness *h = harness("expand_as");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 2), X12);
  bind_input(h, "target_tensor", "t", RILL_DTYPE_FP32, DIMS(4, 6), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(4, 6));
  const double *o = rill_tensor_ptr(out);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 6; j++) cr_assert_eq(o[i * 6 + j], X12[(i % 2) * 2 + j % 2]);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);

  h = harness("expand_as");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 2), X12);
  bind_input(h, "target_tensor", "t", RILL_DTYPE_FP32, DIMS(4, 5), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "expand_as", "target_tensor (t)", "X (x)", "whole number");
  op_harness_destroy(h);
}
