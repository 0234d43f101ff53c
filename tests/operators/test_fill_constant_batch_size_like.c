#include "op_test.h"

#include "framework/data/tensor.h"

Test(fill_constant_batch_size_like, batch_from_input_dim) {
  /* faccy: Input [-1(=5), 7, 96], shape [4, -1, 96], input_dim_idx 0, output_dim_idx 1 */
  op_harness *h = harness("fill_constant_batch_size_like");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(5, 7, 96), NULL);
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){4, -1, 96}, 3));
  OK(op_harness_attr_int(h, "output_dim_idx", 1));
  OK(op_harness_attr_string(h, "str_value", "0.0"));
  OK(op_harness_attr_float(h, "value", 3.0f)); /* str_value wins */
  OK(op_harness_output(h, "Out", "h0"));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "h0");
  expect_dims(t, DIMS(4, 5, 96));
  const float *p = rill_tensor_ptr(t);
  for (int i = 0; i < 4 * 5 * 96; i++) cr_assert_eq(p[i], 0.0f);
  op_harness_destroy(h);

  h = harness("fill_constant_batch_size_like");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(2, 6), NULL);
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){-1, 3}, 2));
  OK(op_harness_attr_int(h, "input_dim_idx", 1));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_INT64));
  OK(op_harness_attr_string(h, "str_value", "9007199254740993"));
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_run(h));
  t = op_harness_tensor(h, "o");
  expect_dims(t, DIMS(6, 3));
  cr_assert_eq(((int64_t *)rill_tensor_ptr(t))[17], 9007199254740993LL);
  op_harness_destroy(h);

  h = harness("fill_constant_batch_size_like");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(2, 6), NULL);
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){-1, 2}, 2));
  OK(op_harness_attr_float(h, "value", -1.5f));
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_run(h));
  t = op_harness_tensor(h, "o");
  expect_dims(t, DIMS(2, 2));
  cr_assert_eq(((float *)rill_tensor_ptr(t))[3], -1.5f);
  op_harness_destroy(h);
}

Test(fill_constant_batch_size_like, lod_input_counts_sequences) {
  op_harness *h = harness("fill_constant_batch_size_like");
  rill_tensor *in = op_harness_make(RILL_DTYPE_FP32, DIMS(7, 2), NULL);
  uint64_t offs[4] = {0, 3, 5, 7};
  rill_lod_level lvl = {4, offs};
  rill_lod lod = {1, &lvl};
  OK(rill_lod_copy(&in->lod, &lod));
  OK(op_harness_input(h, "Input", "seq", in));
  op_harness_free_tensor(in);
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){-1, 4}, 2));
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "o"), DIMS(3, 4));
  op_harness_destroy(h);
}

Test(fill_constant_batch_size_like, bad_indices_fail) {
  op_harness *h = harness("fill_constant_batch_size_like");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(2, 6), NULL);
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){-1, 2}, 2));
  OK(op_harness_attr_int(h, "input_dim_idx", 3));
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "fill_constant_batch_size_like", "input_dim_idx", "feat");
  op_harness_destroy(h);

  h = harness("fill_constant_batch_size_like");
  bind_input(h, "Input", "feat", RILL_DTYPE_FP32, DIMS(2, 6), NULL);
  OK(op_harness_output(h, "Out", "o"));
  EXPECT_ERROR(op_harness_run(h), "fill_constant_batch_size_like", "shape");
  op_harness_destroy(h);
}
