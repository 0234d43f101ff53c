#include "tensor_test.h"

/* Reference values: repeatedly the largest remaining value. The indices of tied values
 * follow Paddle's std::partial_sort, checked against Paddle's own below. */
static void ref_top_k(const double *row, int64_t n, int64_t k, double *v) {
  bool used[256] = {false};
  for (int64_t j = 0; j < k; j++) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; i++)
      if (!used[i] && (best < 0 || row[i] > row[best])) best = i;
    used[best] = true;
    v[j] = row[best];
  }
}

/* paddle: Paddle 1.8.5's indices for these rows (NULL: each index only checked to hold
 * its value, once). */
static void check_top_k(int64_t rows, int64_t n, int64_t k, bool k_tensor, const int64_t *paddle) {
  double *x = malloc((size_t)(rows * n) * sizeof *x);
  for (int64_t i = 0; i < rows * n; i++) x[i] = (double)((i * 37) % 11) - 5; /* many ties */
  op_harness *h = harness("top_k");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, (const int64_t[]){rows, n}, 2, x);
  if (k_tensor) {
    OK(op_harness_attr_int(h, "k", 1));
    bind_input(h, "K", "k", RILL_DTYPE_INT32, DIMS(1), (const int32_t[]){(int32_t)k});
  } else {
    OK(op_harness_attr_int(h, "k", (int32_t)k));
  }
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Indices", "idx"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out"), *idx = op_harness_tensor(h, "idx");
  expect_dims(out, (const int64_t[]){rows, k}, 2);
  expect_dims(idx, (const int64_t[]){rows, k}, 2);
  cr_assert_eq(idx->dtype, RILL_DTYPE_INT64);
  double v[256];
  const int64_t *got = rill_tensor_ptr(idx);
  for (int64_t r = 0; r < rows; r++) {
    ref_top_k(x + r * n, n, k, v);
    bool seen[256] = {false};
    for (int64_t j = 0; j < k; j++) {
      int64_t at = got[r * k + j];
      cr_assert_eq(((double *)rill_tensor_ptr(out))[r * k + j], v[j], "row %lld #%lld", (long long)r, (long long)j);
      cr_assert(at >= 0 && at < n && !seen[at] && x[r * n + at] == v[j], "row %lld #%lld: index %lld",
                (long long)r, (long long)j, (long long)at);
      seen[at] = true;
      if (paddle) cr_assert_eq(at, paddle[r * k + j], "row %lld #%lld", (long long)r, (long long)j);
    }
  }
  op_harness_destroy(h);
  free(x);
}

Test(top_k, ties_come_out_in_paddles_order) {
  static const int64_t p3x10k4[] = {8, 5, 2, 7, 9, 6, 3, 0, 7, 4, 1, 9};
  static const int64_t p1x7k3[] = {5, 2, 4};
  static const int64_t p2x10k10[] = {8, 5, 2, 7, 4, 1, 9, 6, 3, 0, 9, 6, 3, 0, 8, 5, 2, 7, 4, 1};
  static const int64_t p2x60k20[] = {52, 8,  19, 41, 30, 16, 49, 38, 5,  27, 46, 35, 2,  57,
                                     13, 24, 32, 43, 10, 54, 3,  25, 58, 36, 47, 14, 22, 55,
                                     33, 11, 0,  44, 30, 8,  19, 52, 41, 16, 27, 49};
  check_top_k(3, 10, 1, false, NULL);
  check_top_k(3, 10, 4, false, p3x10k4);
  check_top_k(2, 10, 10, false, p2x10k10);
  check_top_k(2, 60, 20, false, p2x60k20);
  check_top_k(4, 40, 40, true, NULL);
  check_top_k(1, 7, 3, true, p1x7k3);
}

Test(top_k, int_and_float32_rows) {
  op_harness *h = harness("top_k");
  bind_input(h, "X", "x", RILL_DTYPE_INT64, DIMS(2, 2, 3), (const int64_t[]){3, 9, 9, 1, 0, 2, 5, 5, 5, -1, 7, -3});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Indices", "idx"));
  OK(op_harness_attr_int(h, "k", 2));
  OK(op_harness_run(h));
  const int64_t *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  const int64_t *i = rill_tensor_ptr(op_harness_tensor(h, "idx"));
  const int64_t wo[] = {9, 9, 2, 1, 5, 5, 7, -1}, wi[] = {2, 1, 2, 0, 0, 1, 1, 0}; /* partial_sort's order */
  for (int j = 0; j < 8; j++) cr_assert(o[j] == wo[j] && i[j] == wi[j], "[%d] %lld@%lld", j, (long long)o[j], (long long)i[j]);
  op_harness_destroy(h);
}

Test(top_k, k_too_large_names_op_and_variable) {
  op_harness *h = harness("top_k");
  bind_input(h, "X", "logits", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Indices", "idx"));
  OK(op_harness_attr_int(h, "k", 4));
  EXPECT_ERROR(op_harness_run(h), "top_k", "X (logits)", "k = 4");
  OK(op_harness_attr_int(h, "k", 0));
  EXPECT_ERROR(op_harness_run(h), "top_k", "k is 0");
  op_harness_destroy(h);
}

Test(top_k, compile_time_shapes) {
  op_harness *h = harness("top_k");
  OK(op_harness_attr_int(h, "k", 5));
  rill_tensor_meta ins[2] = {meta_of(RILL_DTYPE_FP32, DIMS(-1, 10))}, outs[2];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 0}, outs));
  expect_meta_dims(&outs[0], DIMS(-1, 5));
  expect_meta_dims(&outs[1], DIMS(-1, 5));
  cr_assert_eq(outs[1].dtype, RILL_DTYPE_INT64);
  ins[1] = meta_of(RILL_DTYPE_INT32, DIMS(1));
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1}, outs));
  expect_meta_dims(&outs[0], DIMS(-1, -1));
  op_harness_destroy(h);
}

Test(top_k, finite_difference_gradient) {
  op_harness *h = harness("top_k");
  double x[12];
  for (int i = 0; i < 12; i++) x[i] = (double)((i * 5) % 12) * 0.1; /* distinct per row */
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Indices", "idx"));
  OK(op_harness_attr_int(h, "k", 2));
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(top_k, maker_follows_paddle) {
  op_harness *h = harness("top_k");
  OK(op_harness_input(h, "X", "x", NULL));
  OK(op_harness_output(h, "Out", "v"));
  OK(op_harness_output(h, "Indices", "i"));
  rill_grad_ctx g = run_maker(h);
  cr_assert_eq(g.nops, 1);
  cr_assert_str_eq(g.ops[0].type, "top_k_grad");
  expect_slot(&g.ops[0], true, "X", "x");
  expect_slot(&g.ops[0], true, "Indices", "i");
  expect_slot(&g.ops[0], true, "Out@GRAD", "v@GRAD");
  expect_slot(&g.ops[0], false, "X@GRAD", "x@GRAD");
  rill_grad_ctx_clear(&g);
  op_harness_destroy(h);
}
