/* sequence_reverse, sequence_expand, sequence_expand_as, sequence_pad, sequence_unpad and
 * sequence_enumerate against naive references written here (empty sequences included),
 * their gradients by finite differences, and the errors. */
#include "op_test.h"
#include "support/grad_check.h"

/* Binds slot `slot` as `name`: [rows, d] of dt with one LoD level (NULL: none). */
static void bind_seq(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                     const void *x, int64_t rows, int64_t d, const uint64_t *lod, size_t n) {
  rill_tensor *t = op_harness_make(dt, DIMS(rows, d), x);
  cr_assert_not_null(t);
  if (lod) {
    const uint64_t *levels[1] = {lod};
    size_t counts[1] = {n};
    OK(rill_tensor_set_lod(t, 1, levels, counts));
  }
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

static void expect_offsets(const rill_tensor *t, const uint64_t *want, size_t n) {
  cr_assert_eq(t->lod.nlevels, 1, "one LoD level, got %zu", t->lod.nlevels);
  cr_assert_eq(t->lod.levels[0].n, n);
  for (size_t i = 0; i < n; i++) cr_assert_eq(t->lod.levels[0].offsets[i], want[i], "offset %zu", i);
}

static void check_grad(op_harness *h, const char *slot, const char *out) {
  rill_status *st = grad_check(h, (const char *const[]){slot}, 1, (const char *const[]){out}, 1, NULL);
  cr_assert_null(st, "%s", st ? rill_status_message(st) : "");
}

static const uint64_t lod5[] = {0, 3, 4, 4, 8}; /* 4 sequences, one empty, 8 rows */

static void fill(double *x, int n) {
  for (int i = 0; i < n; i++) x[i] = ((i * 7) % 13) * 0.2 - 1.1;
}

Test(sequence_ops, reverse_matches_reference_and_gradient) {
  double x[16], want[16];
  fill(x, 16);
  for (int s = 0; s < 4; s++)
    for (uint64_t r = lod5[s]; r < lod5[s + 1]; r++)
      for (int k = 0; k < 2; k++) want[(lod5[s] + lod5[s + 1] - 1 - r) * 2 + k] = x[r * 2 + k];
  op_harness *h = harness("sequence_reverse");
  bind_seq(h, "X", "x", RILL_DTYPE_FP64, x, 8, 2, lod5, 5);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "y")), want, 16, 0);
  expect_offsets(op_harness_tensor(h, "y"), lod5, 5);
  check_grad(h, "X", "Y");
  op_harness_destroy(h);
}

/* Reference expand: sequence i of X (rows xa[i]..xa[i+1], or row i) rep[i] times. */
static int64_t ref_expand(const double *x, int64_t d, const uint64_t *xa, const uint64_t *ya,
                          int64_t nseq, double *out) {
  int64_t at = 0;
  for (int64_t i = 0; i < nseq; i++)
    for (uint64_t k = ya[i]; k < ya[i + 1]; k++) {
      int64_t a = xa ? (int64_t)xa[i] : i, b = xa ? (int64_t)xa[i + 1] : i + 1;
      for (int64_t r = a; r < b; r++, at++)
        for (int64_t e = 0; e < d; e++) out[at * d + e] = x[r * d + e];
    }
  return at;
}

static const double zeros7[7];

/* `type` run on X [rows, d] (LoD xlod of nx offsets, or none) and Y [7, 1] of LoD ya. */
static op_harness *run_expand(const char *type, const double *x, int64_t rows, int64_t d,
                              const uint64_t *xlod, size_t nx, const uint64_t *ya) {
  op_harness *h = harness(type);
  bind_seq(h, "X", "x", RILL_DTYPE_FP64, x, rows, d, xlod, nx);
  bind_seq(h, "Y", "y", RILL_DTYPE_FP64, zeros7, 7, 1, ya, 5);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  return h;
}

Test(sequence_ops, expand_with_and_without_lod_and_expand_as) {
  double x[16], want[64];
  fill(x, 16);
  const uint64_t ya[] = {0, 2, 3, 3, 7}; /* repeats 2, 1, 0, 4 */
  /* X with LoD: sequence i repeated */
  op_harness *h = run_expand("sequence_expand", x, 8, 2, lod5, 5, ya);
  int64_t rows = ref_expand(x, 2, lod5, ya, 4, want);
  rill_tensor *o = op_harness_tensor(h, "out");
  expect_dims(o, (const int64_t[]){rows, 2}, 2);
  expect_close_f64(rill_tensor_ptr(o), want, rows * 2, 0);
  expect_offsets(o, (const uint64_t[]){0, 3, 6, 7, 11, 15, 19, 23}, 8);
  check_grad(h, "X", "Out");
  op_harness_destroy(h);
  /* X without LoD: row i repeated; Out without LoD */
  h = run_expand("sequence_expand", x, 4, 3, NULL, 0, ya);
  rows = ref_expand(x, 3, NULL, ya, 4, want);
  o = op_harness_tensor(h, "out");
  expect_dims(o, (const int64_t[]){rows, 3}, 2);
  expect_close_f64(rill_tensor_ptr(o), want, rows * 3, 0);
  cr_assert_eq(o->lod.nlevels, 0);
  check_grad(h, "X", "Out");
  op_harness_destroy(h);
  /* expand_as: the same rows, Out takes Y's level */
  h = run_expand("sequence_expand_as", x, 4, 3, NULL, 0, ya);
  o = op_harness_tensor(h, "out");
  expect_close_f64(rill_tensor_ptr(o), want, rows * 3, 0);
  expect_offsets(o, ya, 5);
  check_grad(h, "X", "Out");
  op_harness_destroy(h);
}

Test(sequence_ops, pad_and_unpad_match_reference_and_gradients) {
  double x[16], pad_step[2] = {9, -9};
  fill(x, 16);
  for (int step = 0; step < 2; step++) {
    op_harness *h = harness("sequence_pad");
    bind_seq(h, "X", "x", RILL_DTYPE_FP64, x, 8, 2, lod5, 5);
    if (step)
      bind_input(h, "PadValue", "pv", RILL_DTYPE_FP64, DIMS(2), pad_step);
    else
      bind_input(h, "PadValue", "pv", RILL_DTYPE_FP64, DIMS(1), (const double[]){-7});
    OK(op_harness_attr_int(h, "padded_length", step ? 5 : -1));
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_output(h, "Length", "len"));
    OK(op_harness_run(h));
    int64_t L = step ? 5 : 4;
    rill_tensor *o = op_harness_tensor(h, "out");
    expect_dims(o, (const int64_t[]){4, L, 2}, 3);
    const double *op = rill_tensor_ptr(o);
    const int64_t *lp = rill_tensor_ptr(op_harness_tensor(h, "len"));
    for (int s = 0; s < 4; s++) {
      int64_t n = (int64_t)(lod5[s + 1] - lod5[s]);
      cr_assert_eq(lp[s], n);
      for (int64_t t = 0; t < L; t++)
        for (int k = 0; k < 2; k++) {
          double w = t < n ? x[(lod5[s] + (uint64_t)t) * 2 + k] : step ? pad_step[k] : -7;
          cr_assert_eq(op[(s * L + t) * 2 + k], w, "seq %d step %lld", s, (long long)t);
        }
    }
    check_grad(h, "X", "Out");
    op_harness_destroy(h);
  }
  /* unpad: the first Length[i] steps of X [3, 4, 2] */
  double p[24];
  fill(p, 24);
  op_harness *h = harness("sequence_unpad");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(3, 4, 2), p);
  bind_input(h, "Length", "len", RILL_DTYPE_INT64, DIMS(3), (const int64_t[]){2, 0, 4});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(6, 2));
  double want[12] = {p[0], p[1], p[2], p[3]};
  for (int i = 0; i < 8; i++) want[4 + i] = p[16 + i];
  expect_close_f64(rill_tensor_ptr(o), want, 12, 0);
  expect_offsets(o, (const uint64_t[]){0, 2, 2, 6}, 4);
  check_grad(h, "X", "Out");
  op_harness_destroy(h);
}

Test(sequence_ops, enumerate_windows_pad_past_each_end) {
  const int64_t ids[] = {1, 2, 3, 4, 5, 6, 7, 8};
  op_harness *h = harness("sequence_enumerate");
  bind_seq(h, "X", "ids", RILL_DTYPE_INT64, ids, 8, 1, lod5, 5);
  OK(op_harness_attr_int(h, "win_size", 3));
  OK(op_harness_attr_int(h, "pad_value", -1));
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  const int64_t want[24] = {1, 2, 3, 2, 3, -1, 3, -1, -1, 4, -1, -1,
                            5, 6, 7, 6, 7, 8, 7, 8, -1, 8, -1, -1};
  rill_tensor *o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(8, 3));
  for (int i = 0; i < 24; i++) cr_assert_eq(((const int64_t *)rill_tensor_ptr(o))[i], want[i], "[%d]", i);
  op_harness_destroy(h);
  const int32_t ids32[] = {4, 5};
  h = harness("sequence_enumerate");
  bind_seq(h, "X", "ids", RILL_DTYPE_INT32, ids32, 2, 1, (const uint64_t[]){0, 2}, 2);
  OK(op_harness_attr_int(h, "win_size", 2));
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  const int32_t *g = rill_tensor_ptr(op_harness_tensor(h, "out"));
  cr_assert(g[0] == 4 && g[1] == 5 && g[2] == 5 && g[3] == 0);
  op_harness_destroy(h);
}

Test(sequence_ops, errors_name_op_and_variable) {
  double x[16] = {0};
  op_harness *h = harness("sequence_reverse");
  bind_seq(h, "X", "words", RILL_DTYPE_FP64, x, 8, 2, NULL, 0);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_run(h), "sequence_reverse", "words", "no LoD");
  op_harness_destroy(h);
  h = harness("sequence_expand");
  bind_seq(h, "X", "feat", RILL_DTYPE_FP64, x, 3, 2, NULL, 0);
  bind_seq(h, "Y", "ref", RILL_DTYPE_FP64, x, 8, 1, lod5, 5);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "sequence_expand", "feat", "3 rows", "ref", "4 sequences");
  op_harness_destroy(h);
  h = harness("sequence_pad");
  bind_seq(h, "X", "x", RILL_DTYPE_FP64, x, 8, 2, lod5, 5);
  bind_input(h, "PadValue", "pv", RILL_DTYPE_FP64, DIMS(3), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Length", "len"));
  EXPECT_ERROR(op_harness_run(h), "sequence_pad", "pv", "3 values");
  bind_input(h, "PadValue", "pv", RILL_DTYPE_FP64, DIMS(1), x);
  OK(op_harness_attr_int(h, "padded_length", 2));
  EXPECT_ERROR(op_harness_run(h), "sequence_pad", "padded_length 2", "x", "4 steps");
  op_harness_destroy(h);
  h = harness("sequence_unpad");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(2, 4, 2), x);
  bind_input(h, "Length", "n", RILL_DTYPE_INT64, DIMS(2), (const int64_t[]){5, -1});
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "sequence_unpad", "n", "Length[0] = 5");
  op_harness_destroy(h);
}

Test(sequence_ops, concat_slice_reshape_match_reference_and_gradients) {
  double a[16], b[10];
  fill(a, 16);
  for (int i = 0; i < 10; i++) b[i] = 0.3 * i - 1.4;
  const uint64_t lb[] = {0, 1, 1, 3, 5}; /* b: 5 rows of 2, lengths 1, 0, 2, 2 */
  op_harness *h = harness("sequence_concat");
  bind_seq(h, "X", "a", RILL_DTYPE_FP64, a, 8, 2, lod5, 5);
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(5, 2), b);
  const uint64_t *levels[1] = {lb};
  size_t counts[1] = {5};
  OK(rill_tensor_set_lod(t, 1, levels, counts));
  OK(op_harness_input(h, "X", "b", t)); /* the second argument of X */
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  double want[26];
  int64_t at = 0;
  for (int s = 0; s < 4; s++) {
    for (uint64_t r = lod5[s]; r < lod5[s + 1]; r++, at++) want[at * 2] = a[r * 2], want[at * 2 + 1] = a[r * 2 + 1];
    for (uint64_t r = lb[s]; r < lb[s + 1]; r++, at++) want[at * 2] = b[r * 2], want[at * 2 + 1] = b[r * 2 + 1];
  }
  rill_tensor *o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(13, 2));
  expect_close_f64(rill_tensor_ptr(o), want, 26, 0);
  expect_offsets(o, (const uint64_t[]){0, 4, 5, 7, 13}, 5);
  check_grad(h, "X", "Out");
  op_harness_destroy(h);

  h = harness("sequence_slice");
  bind_seq(h, "X", "a", RILL_DTYPE_FP64, a, 8, 2, lod5, 5);
  bind_input(h, "Offset", "off", RILL_DTYPE_INT64, DIMS(4, 1), (const int64_t[]){1, 0, 0, 2});
  bind_input(h, "Length", "len", RILL_DTYPE_INT64, DIMS(4, 1), (const int64_t[]){2, 1, 0, 2});
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  const int rows[] = {1, 2, 3, 6, 7};
  for (int i = 0; i < 5; i++) want[i * 2] = a[rows[i] * 2], want[i * 2 + 1] = a[rows[i] * 2 + 1];
  o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(5, 2));
  expect_close_f64(rill_tensor_ptr(o), want, 10, 0);
  expect_offsets(o, (const uint64_t[]){0, 2, 3, 3, 5}, 5);
  check_grad(h, "X", "Out");
  bind_input(h, "Length", "len", RILL_DTYPE_INT64, DIMS(4, 1), (const int64_t[]){3, 1, 0, 2});
  EXPECT_ERROR(op_harness_run(h), "sequence_slice", "slice 0", "Offset 1, Length 3", "a");
  op_harness_destroy(h);

  h = harness("sequence_reshape");
  bind_seq(h, "X", "a", RILL_DTYPE_FP64, a, 8, 2, lod5, 5);
  OK(op_harness_attr_int(h, "new_dim", 1));
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(16, 1));
  expect_close_f64(rill_tensor_ptr(o), a, 16, 0);
  expect_offsets(o, (const uint64_t[]){0, 6, 8, 8, 16}, 5);
  check_grad(h, "X", "Out");
  OK(op_harness_attr_int(h, "new_dim", 4));
  EXPECT_ERROR(op_harness_run(h), "sequence_reshape", "a", "new_dim 4");
  op_harness_destroy(h);
}
