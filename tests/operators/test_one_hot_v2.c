#include "op_test.h"

static void run_one_hot(rill_dtype idt, const int64_t *idx, const int64_t *xd, size_t xn, int depth,
                        bool depth_tensor, bool allow, rill_dtype odt) {
  int64_t n = numel_of(xd, xn);
  void *xb = malloc((size_t)n * 8);
  for (int64_t i = 0; i < n; i++) {
    if (idt == RILL_DTYPE_INT32) ((int32_t *)xb)[i] = (int32_t)idx[i];
    else ((int64_t *)xb)[i] = idx[i];
  }
  op_harness *h = harness("one_hot_v2");
  bind_input(h, "X", "label", idt, xd, xn, xb);
  if (depth_tensor) {
    bind_input(h, "depth_tensor", "d", RILL_DTYPE_INT32, DIMS(1), (int32_t[]){depth});
    OK(op_harness_attr_int(h, "depth", 1)); /* the tensor wins */
  } else {
    OK(op_harness_attr_int(h, "depth", depth));
  }
  OK(op_harness_attr_int(h, "dtype", odt));
  OK(op_harness_attr_bool(h, "allow_out_of_range", allow));
  OK(op_harness_output(h, "Out", "oh"));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "oh");
  int64_t od[8];
  memcpy(od, xd, xn * sizeof *od);
  od[xn] = depth;
  expect_dims(t, od, xn + 1);
  cr_assert_eq(t->dtype, odt);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < depth; j++) {
      double v = odt == RILL_DTYPE_FP32 ? ((float *)rill_tensor_ptr(t))[i * depth + j]
                                        : (double)((int64_t *)rill_tensor_ptr(t))[i * depth + j];
      cr_assert_eq(v, idx[i] == j ? 1.0 : 0.0, "[%lld, %lld]", (long long)i, (long long)j);
    }
  op_harness_destroy(h);
  free(xb);
}

Test(one_hot_v2, encodes_indices) {
  run_one_hot(RILL_DTYPE_INT64, (int64_t[]){0, 3, 1, 2, 2, 0}, DIMS(2, 3), 4, false, false, RILL_DTYPE_FP32);
  run_one_hot(RILL_DTYPE_INT32, (int64_t[]){5, 0, 29}, DIMS(3), 30, false, false, RILL_DTYPE_FP32);
  run_one_hot(RILL_DTYPE_INT64, (int64_t[]){1, 0}, DIMS(2, 1), 2, true, false, RILL_DTYPE_INT64);
  /* out of range rows stay zero with allow_out_of_range */
  run_one_hot(RILL_DTYPE_INT64, (int64_t[]){-1, 4, 2}, DIMS(3), 3, false, true, RILL_DTYPE_FP32);
}

Test(one_hot_v2, out_of_range_and_bad_depth_fail) {
  op_harness *h = harness("one_hot_v2");
  bind_input(h, "X", "label", RILL_DTYPE_INT64, DIMS(2), (int64_t[]){1, 7});
  OK(op_harness_attr_int(h, "depth", 5));
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "one_hot_v2", "label", "7", "allow_out_of_range");
  op_harness_destroy(h);

  h = harness("one_hot_v2");
  bind_input(h, "X", "label", RILL_DTYPE_INT64, DIMS(2), (int64_t[]){1, 2});
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "one_hot_v2", "depth");
  op_harness_destroy(h);

  h = harness("one_hot_v2");
  bind_input(h, "X", "label", RILL_DTYPE_FP32, DIMS(2), NULL);
  OK(op_harness_attr_int(h, "depth", 5));
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "one_hot_v2", "label", "float32");
  op_harness_destroy(h);
}

/* Fluid 1.x's one_hot: [N, 1] -> [N, depth] (the trailing 1 replaced), same encoding. */
Test(one_hot, replaces_the_trailing_one) {
  op_harness *h = harness("one_hot");
  bind_input(h, "X", "label", RILL_DTYPE_INT64, DIMS(3, 1), (int64_t[]){2, 0, 3});
  OK(op_harness_attr_int(h, "depth", 4));
  OK(op_harness_output(h, "Out", "oh"));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "oh");
  expect_dims(t, DIMS(3, 4));
  const float *o = rill_tensor_ptr(t);
  const int64_t idx[3] = {2, 0, 3};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) cr_assert_eq(o[i * 4 + j], idx[i] == j ? 1.0f : 0.0f, "[%d, %d]", i, j);
  op_harness_destroy(h);

  h = harness("one_hot");
  bind_input(h, "X", "ids", RILL_DTYPE_INT64, DIMS(3, 2), (int64_t[]){0, 1, 0, 1, 0, 1});
  OK(op_harness_attr_int(h, "depth", 4));
  OK(op_harness_output(h, "Out", "oh"));
  EXPECT_ERROR(op_harness_run(h), "one_hot", "ids", "1");
  op_harness_destroy(h);
}
