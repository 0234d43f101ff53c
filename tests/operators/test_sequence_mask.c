/* sequence_mask: the mask against j < len written here, with maxlen from the attribute,
 * from MaxLenTensor and from max(X) (re-read on every run). */
#include "op_test.h"

static void expect_mask(op_harness *h, const int64_t *len, int64_t rows, int64_t width) {
  rill_tensor *y = op_harness_tensor(h, "y");
  expect_dims(y, (const int64_t[]){rows, width}, 2);
  cr_assert_eq(y->dtype, RILL_DTYPE_FP32);
  const float *v = rill_tensor_ptr(y);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < width; j++)
      cr_assert_eq(v[i * width + j], j < len[i] ? 1.0f : 0.0f, "[%lld, %lld]", (long long)i,
                   (long long)j);
}

Test(sequence_mask, maxlen_from_the_attribute_the_tensor_or_max_x) {
  const int64_t a[4] = {3, 0, 5, 1}, b[2] = {2, 7};
  op_harness *h = harness("sequence_mask");
  OK(op_harness_attr_int(h, "out_dtype", RILL_DTYPE_FP32));
  OK(op_harness_output(h, "Y", "y"));
  bind_input(h, "X", "x", RILL_DTYPE_INT64, DIMS(4), a);
  OK(op_harness_run(h)); /* maxlen -1: max(X) */
  expect_mask(h, a, 4, 5);
  bind_input(h, "X", "x", RILL_DTYPE_INT64, DIMS(2), b);
  OK(op_harness_run(h));
  expect_mask(h, b, 2, 7);
  OK(op_harness_attr_int(h, "maxlen", 4));
  OK(op_harness_run(h));
  expect_mask(h, b, 2, 4);
  bind_input(h, "MaxLenTensor", "m", RILL_DTYPE_INT32, DIMS(1), (const int32_t[]){9});
  OK(op_harness_run(h));
  expect_mask(h, b, 2, 9);
  op_harness_destroy(h);
}

Test(sequence_mask, refuses_float_lengths) {
  op_harness *h = harness("sequence_mask");
  OK(op_harness_output(h, "Y", "y"));
  bind_input(h, "X", "lens", RILL_DTYPE_FP32, DIMS(2), (const float[]){1, 2});
  EXPECT_ERROR(op_harness_run(h), "sequence_mask", "X", "lens", "int32 or int64");
  op_harness_destroy(h);
}
