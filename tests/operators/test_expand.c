/* expand (Fluid 1.x's tiling): forward against out[i, j, k] = x[i % X0, j % X1, k % X2]
 * written here, with the times from the attribute and from ExpandTimes, and the
 * gradient against finite differences. */
#include "op_test.h"
#include "support/grad_check.h"

static void check_tiles(op_harness *h, const double *x, const int64_t *xd, const int64_t *t) {
  rill_tensor *out = op_harness_tensor(h, "out");
  int64_t od[3] = {xd[0] * t[0], xd[1] * t[1], xd[2] * t[2]};
  expect_dims(out, od, 3);
  const double *o = rill_tensor_ptr(out);
  for (int64_t i = 0; i < od[0]; i++)
    for (int64_t j = 0; j < od[1]; j++)
      for (int64_t k = 0; k < od[2]; k++)
        cr_assert_eq(o[(i * od[1] + j) * od[2] + k],
                     x[((i % xd[0]) * xd[1] + j % xd[1]) * xd[2] + k % xd[2]],
                     "[%lld, %lld, %lld]", (long long)i, (long long)j, (long long)k);
}

Test(expand, tiles_by_the_attribute_or_expand_times) {
  double x[12];
  for (int i = 0; i < 12; i++) x[i] = i * 0.5 - 2;
  const int64_t xd[3] = {2, 3, 2}, t1[3] = {2, 1, 3}, t2[3] = {1, 2, 1};
  op_harness *h = harness("expand");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3, 2), x);
  OK(op_harness_attr_ints(h, "expand_times", (const int32_t[]){2, 1, 3}, 3));
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  check_tiles(h, x, xd, t1);
  bind_input(h, "ExpandTimes", "times", RILL_DTYPE_INT32, DIMS(3), (const int32_t[]){1, 2, 1});
  OK(op_harness_run(h));
  check_tiles(h, x, xd, t2);
  op_harness_destroy(h);
}

/* expand over x (2, 3, 2) with the times 3, <t1>, 2 in expand_times_tensor. */
static op_harness *expand_by_tensors(const double *x, rill_dtype t1_dtype, const int64_t *t1_dims,
                                     size_t t1_nd, const void *t1) {
  op_harness *h = harness("expand");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 3, 2), x);
  OK(op_harness_attr_ints(h, "expand_times", (const int32_t[]){-1, -1, -1}, 3));
  bind_input(h, "expand_times_tensor", "t0", RILL_DTYPE_INT32, DIMS(1), (const int32_t[]){3});
  bind_input(h, "expand_times_tensor", "t1", t1_dtype, t1_dims, t1_nd, t1);
  bind_input(h, "expand_times_tensor", "t2", RILL_DTYPE_INT32, DIMS(1), (const int32_t[]){2});
  OK(op_harness_output(h, "Out", "out"));
  return h;
}

Test(expand, tiles_by_expand_times_tensor_and_checks_each_tensor) {
  double x[12];
  for (int i = 0; i < 12; i++) x[i] = i * 0.25 + 1;
  const int64_t xd[3] = {2, 3, 2}, t[3] = {3, 1, 2};
  op_harness *h = expand_by_tensors(x, RILL_DTYPE_INT64, DIMS(1), (const int64_t[]){1});
  OK(op_harness_run(h));
  check_tiles(h, x, xd, t);
  op_harness_destroy(h);
  h = expand_by_tensors(x, RILL_DTYPE_INT32, DIMS(2), (const int32_t[]){1, 1});
  EXPECT_ERROR(op_harness_run(h), "expand", "expand_times_tensor", "t1", "one int32/int64");
  op_harness_destroy(h);
  h = expand_by_tensors(x, RILL_DTYPE_INT32, DIMS(1), (const int32_t[]){0});
  EXPECT_ERROR(op_harness_run(h), "expand", "must be positive");
  op_harness_destroy(h);
}

Test(expand, gradient_sums_the_tiles) {
  double x[6];
  for (int i = 0; i < 6; i++) x[i] = sin(i * 0.7);
  op_harness *h = harness("expand");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 1, 2), x);
  OK(op_harness_attr_ints(h, "expand_times", (const int32_t[]){2, 3, 2}, 3));
  OK(op_harness_output(h, "Out", "out"));
  rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
  cr_assert_null(st, "%s", rill_status_message(st));
  op_harness_destroy(h);
}

Test(expand, refuses_times_of_the_wrong_rank) {
  op_harness *h = harness("expand");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_attr_ints(h, "expand_times", (const int32_t[]){2, 1, 3}, 3));
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "expand", "expand_times", "x", "rank 2");
  op_harness_destroy(h);
}
