#include "tensor_test.h"

static op_harness *trunc_op(rill_dtype dt, const int32_t *shape, size_t n, int seed) {
  op_harness *h = harness("truncated_gaussian_random");
  OK(op_harness_output(h, "Out", "w"));
  OK(op_harness_attr_ints(h, "shape", shape, n));
  OK(op_harness_attr_int(h, "dtype", dt));
  OK(op_harness_attr_int(h, "seed", seed));
  return h;
}

/* A normal truncated at +-2 std has variance 1 - 4 phi(2) / (Phi(2) - Phi(-2)) = 0.77371. */
Test(truncated_gaussian_random, bounds_moments_and_reproducibility) {
  op_harness *h = trunc_op(RILL_DTYPE_FP64, (const int32_t[]){200, 100}, 2, 7);
  OK(op_harness_attr_float(h, "mean", 1.5f));
  OK(op_harness_attr_float(h, "std", 0.5f));
  OK(op_harness_run(h));
  const rill_tensor *t = op_harness_tensor(h, "w");
  expect_dims(t, DIMS(200, 100));
  const double *p = rill_tensor_ptr(t);
  double sum = 0, sq = 0, lo = 9, hi = -9;
  for (int i = 0; i < 20000; i++) {
    sum += p[i], sq += p[i] * p[i];
    lo = p[i] < lo ? p[i] : lo, hi = p[i] > hi ? p[i] : hi;
  }
  double mean = sum / 20000, var = sq / 20000 - mean * mean;
  cr_assert(lo >= 0.5 && hi <= 2.5, "values in [%g, %g], outside mean +- 2 std", lo, hi);
  cr_assert(lo < 0.52 && hi > 2.48, "the tails are not reached: [%g, %g]", lo, hi);
  cr_assert(fabs(mean - 1.5) < 0.01, "mean %g", mean);
  cr_assert(fabs(var - 0.25 * 0.77371) < 0.006, "variance %g", var);
  double first[16];
  memcpy(first, p, sizeof first);
  OK(op_harness_run(h));
  cr_assert_eq(memcmp(first, rill_tensor_ptr(op_harness_tensor(h, "w")), sizeof first), 0);
  op_harness_destroy(h);
}

Test(truncated_gaussian_random, float32_shape_inference) {
  op_harness *h = trunc_op(RILL_DTYPE_FP32, (const int32_t[]){2, 3, 4}, 3, 0);
  rill_tensor_meta outs[1];
  OK(compile_infer_n(h, NULL, (const size_t[]){0}, outs));
  expect_meta_dims(&outs[0], DIMS(2, 3, 4));
  cr_assert_eq(outs[0].dtype, RILL_DTYPE_FP32);
  OK(op_harness_run(h));
  const float *p = rill_tensor_ptr(op_harness_tensor(h, "w"));
  for (int i = 0; i < 24; i++) cr_assert(p[i] >= -2.0f && p[i] <= 2.0f, "value %g", p[i]);
  op_harness_destroy(h);
}

Test(truncated_gaussian_random, bad_attributes_name_op_and_output) {
  op_harness *h = trunc_op(RILL_DTYPE_INT32, (const int32_t[]){2}, 1, 0);
  EXPECT_ERROR(op_harness_run(h), "truncated_gaussian_random", "dtype", "w");
  op_harness_destroy(h);
  h = trunc_op(RILL_DTYPE_FP32, (const int32_t[]){2, -3}, 2, 0);
  EXPECT_ERROR(op_harness_run(h), "truncated_gaussian_random", "negative", "w");
  op_harness_destroy(h);
  h = trunc_op(RILL_DTYPE_FP32, NULL, 0, 0);
  EXPECT_ERROR(op_harness_run(h), "truncated_gaussian_random", "shape", "w");
  op_harness_destroy(h);
  h = trunc_op(RILL_DTYPE_FP32, (const int32_t[]){2}, 1, 0);
  OK(op_harness_attr_float(h, "std", -1.0f));
  EXPECT_ERROR(op_harness_run(h), "truncated_gaussian_random", "std", "w");
  op_harness_destroy(h);
}
