#include "op_test.h"

/* fake_init declares Out (shape and dtype) and gives it no storage. */
Test(fake_init, declares_shape_and_dtype_without_data) {
  int64_t shape[2] = {100000, 64};
  int32_t dts[] = {RILL_DTYPE_FP32, RILL_DTYPE_FP64};
  for (size_t k = 0; k < 2; k++) {
    op_harness *h = harness("fake_init");
    OK(op_harness_output(h, "Out", "table"));
    OK(op_harness_attr_longs(h, "shape", shape, 2));
    OK(op_harness_attr_int(h, "dtype", dts[k]));
    OK(op_harness_run(h));
    rill_tensor *t = op_harness_tensor(h, "table");
    cr_assert_not_null(t);
    cr_assert(!rill_tensor_is_set(t), "no storage");
    cr_assert_null(rill_tensor_ptr(t));
    cr_assert_eq(t->dims.n, 2);
    cr_assert_eq(t->dims.d[0], 100000);
    cr_assert_eq(t->dims.d[1], 64);
    cr_assert_eq((int)t->dtype, dts[k]);
    op_harness_destroy(h);
  }
}

Test(fake_init, negative_extent_and_bad_dtype_are_errors) {
  int64_t shape[2] = {4, -2};
  op_harness *h = harness("fake_init");
  OK(op_harness_output(h, "Out", "t"));
  OK(op_harness_attr_longs(h, "shape", shape, 2));
  const char *want[] = {"fake_init", "shape[1]", "negative"};
  expect_error(op_harness_run(h), want, 3);
  op_harness_destroy(h);

  int64_t ok[1] = {3};
  h = harness("fake_init");
  OK(op_harness_output(h, "Out", "t"));
  OK(op_harness_attr_longs(h, "shape", ok, 1));
  OK(op_harness_attr_int(h, "dtype", 999));
  const char *want2[] = {"fake_init", "dtype 999"};
  expect_error(op_harness_run(h), want2, 2);
  op_harness_destroy(h);
}
