/* argsort, where_index, unique, unique_with_counts, and the bool reductions
 * reduce_all / reduce_any and the flags isinf / isnan / isfinite, against values written
 * here. */
#include "tensor_test.h"

Test(argsort, stable_both_directions_every_axis) {
  const double x[6] = {3, 1, 3, -2, 1, 0};
  for (int desc = 0; desc < 2; desc++) {
    op_harness *h = harness("argsort");
    bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(6), x);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_output(h, "Indices", "ix"));
    OK(op_harness_attr_bool(h, "descending", desc));
    OK(op_harness_run(h));
    const int64_t want_up[6] = {3, 5, 1, 4, 0, 2}, want_down[6] = {0, 2, 1, 4, 5, 3};
    const int64_t *ix = rill_tensor_ptr(op_harness_tensor(h, "ix"));
    const double *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
    for (int i = 0; i < 6; i++) {
      int64_t w = desc ? want_down[i] : want_up[i];
      cr_assert_eq(ix[i], w, "descending %d [%d]", desc, i);
      cr_assert_eq(o[i], x[w]);
    }
    op_harness_destroy(h);
  }
  op_harness *h = harness("argsort");
  bind_input(h, "X", "x", RILL_DTYPE_INT32, DIMS(2, 3), (const int32_t[]){5, 1, 4, 2, 7, 0});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Indices", "ix"));
  OK(op_harness_attr_int(h, "axis", 0));
  OK(op_harness_run(h));
  const int32_t *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  const int64_t *ix = rill_tensor_ptr(op_harness_tensor(h, "ix"));
  const int32_t wo[6] = {2, 1, 0, 5, 7, 4};
  const int64_t wi[6] = {1, 0, 1, 0, 1, 0};
  for (int i = 0; i < 6; i++) cr_assert(o[i] == wo[i] && ix[i] == wi[i], "[%d]", i);
  OK(op_harness_attr_int(h, "axis", 2));
  EXPECT_ERROR(op_harness_run(h), "argsort", "X (x)", "axis 2 is out of range");
  op_harness_destroy(h);
}

Test(where_index, coordinates_in_order) {
  op_harness *h = harness("where_index");
  bind_input(h, "Condition", "c", RILL_DTYPE_BOOL, DIMS(2, 3), (const bool[]){0, 1, 0, 1, 0, 1});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(3, 2));
  const int64_t want[6] = {0, 1, 1, 0, 1, 2};
  for (int i = 0; i < 6; i++) cr_assert_eq(((int64_t *)rill_tensor_ptr(out))[i], want[i]);
  op_harness_destroy(h);

  h = harness("where_index");
  bind_input(h, "Condition", "c", RILL_DTYPE_FP32, DIMS(3), (const float[]){0, 0, 0});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(0, 1));
  op_harness_destroy(h);
}

Test(unique, first_appearance_order_index_and_counts) {
  op_harness *h = harness("unique_with_counts");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(7), (const float[]){2, 3, 3, 1, 5, 3, -0.0f});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Index", "ix"));
  OK(op_harness_output(h, "Count", "cnt"));
  OK(op_harness_attr_int(h, "dtype", RILL_DTYPE_INT64));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  expect_dims(out, DIMS(5));
  expect_close_f32(rill_tensor_ptr(out), (const float[]){2, 3, 1, 5, 0}, 5, 0);
  const int64_t *ix = rill_tensor_ptr(op_harness_tensor(h, "ix"));
  const int64_t *cnt = rill_tensor_ptr(op_harness_tensor(h, "cnt"));
  const int64_t wi[7] = {0, 1, 1, 2, 3, 1, 4}, wc[5] = {1, 3, 1, 1, 1};
  for (int i = 0; i < 7; i++) cr_assert_eq(ix[i], wi[i], "index [%d]", i);
  for (int i = 0; i < 5; i++) cr_assert_eq(cnt[i], wc[i], "count [%d]", i);
  op_harness_destroy(h);

  h = harness("unique");
  bind_input(h, "X", "x", RILL_DTYPE_INT64, DIMS(4), (const int64_t[]){9, 9, 9, 9});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Index", "ix"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(1));
  cr_assert_eq(op_harness_tensor(h, "ix")->dtype, RILL_DTYPE_INT32);
  op_harness_destroy(h);

  h = harness("unique");
  bind_input(h, "X", "grid", RILL_DTYPE_INT64, DIMS(2, 2), (const int64_t[]){1, 2, 3, 4});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Index", "ix"));
  EXPECT_ERROR(op_harness_run(h), "unique", "X (grid)", "1-D");
  op_harness_destroy(h);
}

Test(reduce_all, and_or_over_dims) {
  const bool x[6] = {1, 1, 0, 1, 1, 1};
  for (int any = 0; any < 2; any++) {
    op_harness *h = harness(any ? "reduce_any" : "reduce_all");
    bind_input(h, "X", "x", RILL_DTYPE_BOOL, DIMS(2, 3), x);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_attr_ints(h, "dim", (const int32_t[]){1}, 1));
    OK(op_harness_run(h));
    const bool *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
    expect_dims(op_harness_tensor(h, "out"), DIMS(2));
    cr_assert(o[0] == (bool)any && o[1] == true, "any %d", any);
    OK(op_harness_attr_bool(h, "reduce_all", true));
    OK(op_harness_run(h));
    cr_assert_eq(*(bool *)rill_tensor_ptr(op_harness_tensor(h, "out")), (bool)any);
    op_harness_destroy(h);
  }
}

Test(isinf, flags_over_the_whole_tensor) {
  const char *ops[3] = {"isinf", "isnan", "isfinite"};
  const double clean[3] = {1, -2, 0}, inf[3] = {1, -INFINITY, 0}, nan[3] = {1, NAN, 0};
  const bool want[3][3] = {{false, true, false}, {false, false, true}, {true, false, false}};
  const double *xs[3] = {clean, inf, nan};
  for (int o = 0; o < 3; o++)
    for (int k = 0; k < 3; k++) {
      op_harness *h = harness(ops[o]);
      bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3), xs[k]);
      OK(op_harness_output(h, "Out", "out"));
      OK(op_harness_run(h));
      rill_tensor *out = op_harness_tensor(h, "out");
      expect_dims(out, DIMS(1));
      cr_assert_eq(out->dtype, RILL_DTYPE_BOOL);
      cr_assert_eq(*(bool *)rill_tensor_ptr(out), want[o][k], "%s on input %d", ops[o], k);
      op_harness_destroy(h);
    }
}
