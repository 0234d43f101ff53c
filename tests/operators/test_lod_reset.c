/* lod_reset from target_lod, from Y's LoD, from Y's int32 offsets, appended below X's
 * levels; its gradient; the errors (a level that does not reach X's rows, a decreasing
 * one, a LoD that does not fit); is_empty. */
#include "op_test.h"

static const float X[] = {0, 1, 2, 3, 4, 5};

static op_harness *reset_of_x(void) {
  op_harness *h = harness("lod_reset");
  rill_tensor *x = op_harness_make(RILL_DTYPE_FP32, DIMS(6, 1), X);
  const uint64_t l0[] = {0, 2, 5, 6};
  const uint64_t *levels[1] = {l0};
  size_t counts[1] = {4};
  OK(rill_tensor_set_lod(x, 1, levels, counts));
  OK(op_harness_input(h, "X", "x", x));
  op_harness_free_tensor(x);
  OK(op_harness_output(h, "Out", "out"));
  return h;
}

static void expect_level(const rill_tensor *t, size_t level, const uint64_t *want, size_t n) {
  cr_assert_gt(t->lod.nlevels, level);
  cr_assert_eq(t->lod.levels[level].n, n);
  for (size_t i = 0; i < n; i++) cr_assert_eq(t->lod.levels[level].offsets[i], want[i]);
}

static void expect_data(const rill_tensor *t) {
  expect_dims(t, DIMS(6, 1));
  expect_close_f32(rill_tensor_ptr(t), X, 6, 0);
}

Test(lod_reset, target_lod_replaces_and_appends) {
  op_harness *h = reset_of_x();
  OK(op_harness_attr_ints(h, "target_lod", (const int32_t[]){0, 4, 6}, 3));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_data(out);
  cr_assert_eq(out->lod.nlevels, 1);
  expect_level(out, 0, (const uint64_t[]){0, 4, 6}, 3);
  OK(op_harness_attr_ints(h, "target_lod", (const int32_t[]){0, 1, 2, 3, 4, 5, 6}, 7));
  OK(op_harness_attr_bool(h, "append", true));
  OK(op_harness_run(h));
  out = op_harness_tensor(h, "out");
  cr_assert_eq(out->lod.nlevels, 2);
  expect_level(out, 0, (const uint64_t[]){0, 2, 5, 6}, 4);
  expect_level(out, 1, (const uint64_t[]){0, 1, 2, 3, 4, 5, 6}, 7);
  /* X keeps its own LoD */
  cr_assert_eq(op_harness_tensor(h, "x")->lod.nlevels, 1);
  op_harness_destroy(h);
}

Test(lod_reset, from_y_lod_or_values) {
  op_harness *h = reset_of_x();
  rill_tensor *y = op_harness_make(RILL_DTYPE_FP32, DIMS(6, 1), X);
  const uint64_t a[] = {0, 1, 3}, b[] = {0, 2, 4, 6};
  const uint64_t *levels[2] = {a, b};
  size_t counts[2] = {3, 4};
  OK(rill_tensor_set_lod(y, 2, levels, counts));
  OK(op_harness_input(h, "Y", "y", y));
  op_harness_free_tensor(y);
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_data(out);
  expect_level(out, 0, a, 3);
  expect_level(out, 1, b, 4);
  op_harness_destroy(h);

  h = reset_of_x();
  bind_input(h, "Y", "offsets", RILL_DTYPE_INT32, DIMS(3), (const int32_t[]){0, 2, 6});
  OK(op_harness_run(h));
  expect_level(op_harness_tensor(h, "out"), 0, (const uint64_t[]){0, 2, 6}, 3);
  bind_input(h, "Y", "offsets", RILL_DTYPE_INT64, DIMS(3), (const int64_t[]){0, 2, 6});
  EXPECT_ERROR(op_harness_run(h), "lod_reset", "Y (offsets)", "int32");
  op_harness_destroy(h);
}

Test(lod_reset, bad_levels_name_the_op_and_variable) {
  op_harness *h = reset_of_x();
  OK(op_harness_attr_ints(h, "target_lod", (const int32_t[]){0, 4, 5}, 3));
  EXPECT_ERROR(op_harness_run(h), "lod_reset", "target_lod", "6 rows", "X (x)");
  OK(op_harness_attr_ints(h, "target_lod", (const int32_t[]){0, 4, 2, 6}, 4));
  EXPECT_ERROR(op_harness_run(h), "lod_reset", "target_lod", "decreases at position 2");
  /* appended below X's 3 sequences, a level of 2 sequences does not fit */
  OK(op_harness_attr_ints(h, "target_lod", (const int32_t[]){0, 3, 6}, 3));
  OK(op_harness_attr_bool(h, "append", true));
  EXPECT_ERROR(op_harness_run(h), "lod_reset", "X (x)", "does not fit");
  op_harness_destroy(h);
}

Test(lod_reset, gradient_takes_x_lod) {
  op_harness *fwd = reset_of_x();
  OK(op_harness_attr_ints(fwd, "target_lod", (const int32_t[]){0, 4, 6}, 3));
  OK(op_harness_run(fwd));
  op_harness *h = harness("lod_reset_grad");
  rill_tensor *x = op_harness_tensor(fwd, "x");
  OK(op_harness_input(h, "X", "x", x));
  const float g[] = {6, 5, 4, 3, 2, 1};
  bind_input(h, "Out@GRAD", "dout", RILL_DTYPE_FP32, DIMS(6, 1), g);
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(op_harness_run(h));
  rill_tensor *dx = op_harness_tensor(h, "dx");
  expect_close_f32(rill_tensor_ptr(dx), g, 6, 0);
  expect_level(dx, 0, (const uint64_t[]){0, 2, 5, 6}, 4);
  op_harness_destroy(h);
  op_harness_destroy(fwd);
}

Test(is_empty, counts_elements) {
  op_harness *h = harness("is_empty");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(6, 1), X);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  cr_assert_eq(*(bool *)rill_tensor_ptr(op_harness_tensor(h, "out")), false);
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(0, 1), NULL);
  OK(op_harness_run(h));
  cr_assert_eq(*(bool *)rill_tensor_ptr(op_harness_tensor(h, "out")), true);
  op_harness_destroy(h);
}
