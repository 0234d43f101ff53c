/* expand_v2 against a reference that indexes X with broadcast (modulo) indices. */
#include "op_test.h"

static void check_expand(const float *x, const int64_t *xd, size_t xn, const rill_tensor *out,
                         const int64_t *od, size_t on) {
  expect_dims(out, od, on);
  const float *o = rill_tensor_ptr(out);
  int64_t n = numel_of(od, on);
  for (int64_t i = 0; i < n; i++) {
    int64_t r = i, xo = 0, idx[8];
    for (int k = (int)on - 1; k >= 0; k--) {
      idx[k] = r % od[k];
      r /= od[k];
    }
    for (size_t k = 0; k < xn; k++) {
      int64_t e = xd[k];
      xo = xo * e + (e == 1 ? 0 : idx[on - xn + k]);
    }
    cr_assert_eq(o[i], x[xo], "[%lld]", (long long)i);
  }
}

static float *pattern(int64_t n) {
  float *p = malloc((size_t)n * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = (float)i * 0.5f - 3;
  return p;
}

static void run_attr(const int64_t *xd, size_t xn, const int32_t *shape, size_t sn,
                     const int64_t *od, size_t on) {
  float *x = pattern(numel_of(xd, xn));
  op_harness *h = harness("expand_v2");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, xd, xn, x);
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_ints(h, "shape", shape, sn));
  OK(op_harness_run(h));
  check_expand(x, xd, xn, op_harness_tensor(h, "y"), od, on);
  op_harness_destroy(h);
  free(x);
}

Test(expand_v2, shape_attribute_with_minus_one) {
  run_attr(DIMS(1, 3), (const int32_t[]){4, 3}, 2, DIMS(4, 3));
  run_attr(DIMS(3, 1), (const int32_t[]){2, -1, 5}, 3, DIMS(2, 3, 5));
  run_attr(DIMS(2, 1, 4), (const int32_t[]){2, 3, -1}, 3, DIMS(2, 3, 4));
  run_attr(DIMS(1), (const int32_t[]){2, 2, 3}, 3, DIMS(2, 2, 3));
  run_attr(DIMS(2, 3), (const int32_t[]){2, 3}, 2, DIMS(2, 3));
}

Test(expand_v2, shape_from_tensors) {
  /* the OCR model: X [1, 3, 2], shape [-2, 3, 2] with expand_shapes_tensor [batch, 3, 2] */
  float *x = pattern(6);
  op_harness *h = harness("expand_v2");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(1, 3, 2), x);
  bind_input(h, "expand_shapes_tensor", "batch", RILL_DTYPE_INT32, DIMS(1), (int32_t[]){4});
  bind_input(h, "expand_shapes_tensor", "c3", RILL_DTYPE_INT32, DIMS(1), (int32_t[]){3});
  bind_input(h, "expand_shapes_tensor", "c2", RILL_DTYPE_INT64, DIMS(1), (int64_t[]){-1});
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){-2, 3, 2}, 3));
  OK(op_harness_run(h));
  check_expand(x, DIMS(1, 3, 2), op_harness_tensor(h, "y"), DIMS(4, 3, 2));
  op_harness_destroy(h);

  h = harness("expand_v2");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(3, 1), x);
  bind_input(h, "Shape", "shp", RILL_DTYPE_INT64, DIMS(2), (int64_t[]){3, 5});
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){9, 9}, 2)); /* Shape wins */
  OK(op_harness_run(h));
  check_expand(x, DIMS(3, 1), op_harness_tensor(h, "y"), DIMS(3, 5));
  op_harness_destroy(h);
  free(x);
}

Test(expand_v2, int64_and_bad_targets) {
  op_harness *h = harness("expand_v2");
  bind_input(h, "X", "ids", RILL_DTYPE_INT64, DIMS(2, 1), (int64_t[]){7, -8});
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2, 3}, 2));
  OK(op_harness_run(h));
  const int64_t *y = rill_tensor_ptr(op_harness_tensor(h, "y"));
  cr_assert(y[0] == 7 && y[2] == 7 && y[3] == -8 && y[5] == -8);
  op_harness_destroy(h);

  h = harness("expand_v2");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){2, 4}, 2));
  EXPECT_ERROR(op_harness_run(h), "expand_v2", "feat", "dim 1");
  op_harness_destroy(h);

  h = harness("expand_v2");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_attr_ints(h, "shape", (const int32_t[]){-1, 2, 3}, 3));
  EXPECT_ERROR(op_harness_run(h), "expand_v2", "feat", "-1");
  op_harness_destroy(h);
}
