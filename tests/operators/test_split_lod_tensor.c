/* split_lod_tensor and merge_lod_tensor against a naive reference: rows without LoD,
 * sequences of one and two LoD levels (level 0 and 1), an empty branch, the round trip,
 * both gradients by finite differences, and the errors. */
#include "op_test.h"
#include "support/grad_check.h"

static void set_lod2(rill_tensor *t, const uint64_t *l0, size_t n0, const uint64_t *l1, size_t n1) {
  const uint64_t *levels[2] = {l0, l1};
  size_t counts[2] = {n0, n1};
  OK(rill_tensor_set_lod(t, l1 ? 2 : (l0 ? 1 : 0), levels, counts));
}

static void bind_lod(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                     const int64_t *dims, size_t nd, const void *data, const uint64_t *l0,
                     size_t n0, const uint64_t *l1, size_t n1) {
  rill_tensor *t = op_harness_make(dt, dims, nd, data);
  cr_assert_not_null(t);
  if (l0) set_lod2(t, l0, n0, l1, n1);
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

static void expect_lod(const rill_tensor *t, size_t level, const uint64_t *want, size_t n) {
  cr_assert_gt(t->lod.nlevels, level, "LoD level %zu missing", level);
  cr_assert_eq(t->lod.levels[level].n, n, "level %zu has %zu offsets, want %zu", level,
               t->lod.levels[level].n, n);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(t->lod.levels[level].offsets[i], want[i], "level %zu offset %zu", level, i);
}

/* The reference: rows of X [rows, d] for the sequences whose mask element is `want`. */
static int64_t ref_split(const float *x, int64_t d, const uint64_t *lod, int64_t nseq,
                         const bool *mask, bool want, float *out) {
  int64_t at = 0;
  for (int64_t i = 0; i < nseq; i++) {
    if (mask[i] != want) continue;
    int64_t a = lod ? (int64_t)lod[i] : i, b = lod ? (int64_t)lod[i + 1] : i + 1;
    for (int64_t r = a; r < b; r++, at++)
      for (int64_t k = 0; k < d; k++) out[at * d + k] = x[r * d + k];
  }
  return at;
}

static void split_and_check(const float *x, int64_t rows, int64_t d, const uint64_t *lod,
                            const bool *mask, int64_t nseq) {
  op_harness *h = harness("split_lod_tensor");
  bind_lod(h, "X", "x", RILL_DTYPE_FP32, DIMS(rows, d), x, lod, lod ? (size_t)nseq + 1 : 0, NULL, 0);
  bind_input(h, "Mask", "m", RILL_DTYPE_BOOL, DIMS(nseq, 1), mask);
  OK(op_harness_output(h, "OutTrue", "t"));
  OK(op_harness_output(h, "OutFalse", "f"));
  OK(op_harness_run(h));
  float want[64];
  for (int side = 0; side < 2; side++) {
    rill_tensor *o = op_harness_tensor(h, side ? "f" : "t");
    int64_t n = ref_split(x, d, lod, nseq, mask, side == 0, want);
    expect_dims(o, (const int64_t[]){n, d}, 2);
    if (n) expect_close_f32(rill_tensor_ptr(o), want, n * d, 0);
    if (lod) {
      uint64_t offs[16] = {0};
      size_t k = 1;
      for (int64_t i = 0; i < nseq; i++)
        if (mask[i] == (side == 0)) {
          offs[k] = offs[k - 1] + (lod[i + 1] - lod[i]);
          k++;
        }
      expect_lod(o, 0, offs, k);
    } else {
      cr_assert_eq(o->lod.nlevels, 0);
    }
  }
  /* merge puts them back */
  op_harness *m = harness("merge_lod_tensor");
  bind_lod(m, "X", "x", RILL_DTYPE_FP32, DIMS(rows, d), x, lod, lod ? (size_t)nseq + 1 : 0, NULL, 0);
  bind_input(m, "Mask", "m", RILL_DTYPE_BOOL, DIMS(nseq, 1), mask);
  OK(op_harness_input(m, "InTrue", "t", op_harness_tensor(h, "t")));
  OK(op_harness_input(m, "InFalse", "f", op_harness_tensor(h, "f")));
  OK(op_harness_output(m, "Out", "y"));
  OK(op_harness_run(m));
  rill_tensor *y = op_harness_tensor(m, "y");
  expect_dims(y, DIMS(rows, d));
  expect_close_f32(rill_tensor_ptr(y), x, rows * d, 0);
  if (lod) expect_lod(y, 0, lod, (size_t)nseq + 1);
  op_harness_destroy(m);
  op_harness_destroy(h);
}

Test(split_lod_tensor, rows_and_sequences_split_and_merge_back) {
  float x[30];
  for (int i = 0; i < 30; i++) x[i] = (float)i * 0.5f - 3;
  split_and_check(x, 5, 3, NULL, (const bool[]){true, false, false, true, true}, 5);
  split_and_check(x, 5, 3, NULL, (const bool[]){true, true, true, true, true}, 5);
  split_and_check(x, 10, 3, (const uint64_t[]){0, 2, 3, 3, 7, 10},
                  (const bool[]){false, true, true, false, true}, 5);
  split_and_check(x, 10, 3, (const uint64_t[]){0, 4, 10}, (const bool[]){false, false}, 2);
}

/* Two LoD levels split at level 0 keep both levels below; at level 1, the sub-sequences. */
Test(split_lod_tensor, two_levels_at_level_0_and_1) {
  float x[7];
  for (int i = 0; i < 7; i++) x[i] = (float)i;
  const uint64_t l0[] = {0, 2, 3}, l1[] = {0, 1, 3, 7};
  op_harness *h = harness("split_lod_tensor");
  bind_lod(h, "X", "x", RILL_DTYPE_FP32, DIMS(7, 1), x, l0, 3, l1, 4);
  bind_input(h, "Mask", "m", RILL_DTYPE_BOOL, DIMS(2), (const bool[]){false, true});
  OK(op_harness_output(h, "OutTrue", "t"));
  OK(op_harness_output(h, "OutFalse", "f"));
  OK(op_harness_run(h));
  rill_tensor *t = op_harness_tensor(h, "t"), *f = op_harness_tensor(h, "f");
  expect_dims(t, DIMS(4, 1));
  expect_close_f32(rill_tensor_ptr(t), (const float[]){3, 4, 5, 6}, 4, 0);
  expect_lod(t, 0, (const uint64_t[]){0, 1}, 2);
  expect_lod(t, 1, (const uint64_t[]){0, 4}, 2);
  expect_dims(f, DIMS(3, 1));
  expect_lod(f, 0, (const uint64_t[]){0, 2}, 2);
  expect_lod(f, 1, (const uint64_t[]){0, 1, 3}, 3);
  /* level 1: one mask element per sub-sequence; merge restores X's level 0 */
  OK(op_harness_attr_int(h, "level", 1));
  bind_input(h, "Mask", "m", RILL_DTYPE_BOOL, DIMS(3, 1), (const bool[]){true, false, true});
  OK(op_harness_run(h));
  t = op_harness_tensor(h, "t");
  f = op_harness_tensor(h, "f");
  expect_close_f32(rill_tensor_ptr(t), (const float[]){0, 3, 4, 5, 6}, 5, 0);
  cr_assert_eq(t->lod.nlevels, 1);
  expect_lod(t, 0, (const uint64_t[]){0, 1, 5}, 3);
  expect_lod(f, 0, (const uint64_t[]){0, 2}, 2);
  op_harness *m = harness("merge_lod_tensor");
  OK(op_harness_attr_int(m, "level", 1));
  bind_lod(m, "X", "x", RILL_DTYPE_FP32, DIMS(7, 1), x, l0, 3, l1, 4);
  bind_input(m, "Mask", "m", RILL_DTYPE_BOOL, DIMS(3, 1), (const bool[]){true, false, true});
  OK(op_harness_input(m, "InTrue", "t", t));
  OK(op_harness_input(m, "InFalse", "f", f));
  OK(op_harness_output(m, "Out", "y"));
  OK(op_harness_run(m));
  rill_tensor *y = op_harness_tensor(m, "y");
  expect_close_f32(rill_tensor_ptr(y), x, 7, 0);
  expect_lod(y, 0, l0, 3);
  expect_lod(y, 1, l1, 4);
  op_harness_destroy(m);
  op_harness_destroy(h);
}

/* A branch no row picks may hold no tensor (its conditional block did not run). */
Test(split_lod_tensor, merge_takes_one_branch_when_the_other_is_absent) {
  const double t[] = {1, 2, 3, 4};
  op_harness *m = harness("merge_lod_tensor");
  bind_input(m, "X", "x", RILL_DTYPE_FP64, DIMS(2, 2), t);
  bind_input(m, "Mask", "m", RILL_DTYPE_BOOL, DIMS(2, 1), (const bool[]){true, true});
  bind_input(m, "InTrue", "t", RILL_DTYPE_FP64, DIMS(2, 2), t);
  OK(op_harness_output(m, "Out", "y"));
  OK(op_harness_run(m));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(m, "y")), t, 4, 0);
  op_harness_destroy(m);
  m = harness("merge_lod_tensor");
  bind_input(m, "X", "x", RILL_DTYPE_FP64, DIMS(2, 2), t);
  bind_input(m, "Mask", "cond", RILL_DTYPE_BOOL, DIMS(2, 1), (const bool[]){true, false});
  bind_input(m, "InTrue", "t", RILL_DTYPE_FP64, DIMS(1, 2), t);
  OK(op_harness_output(m, "Out", "y"));
  EXPECT_ERROR(op_harness_run(m), "merge_lod_tensor", "cond", "InFalse", "picks 1");
  op_harness_destroy(m);
}

Test(split_lod_tensor, gradients_match_finite_differences) {
  double x[12];
  for (int i = 0; i < 12; i++) x[i] = 0.3 * i - 1.1;
  op_harness *h = harness("split_lod_tensor");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(4, 3), x);
  bind_input(h, "Mask", "m", RILL_DTYPE_BOOL, DIMS(4, 1), (const bool[]){true, false, false, true});
  OK(op_harness_output(h, "OutTrue", "t"));
  OK(op_harness_output(h, "OutFalse", "f"));
  rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("OutTrue", "OutFalse"), NULL);
  cr_assert_null(st, "%s", st ? rill_status_message(st) : "");
  op_harness_destroy(h);
  op_harness *m = harness("merge_lod_tensor");
  bind_input(m, "X", "x", RILL_DTYPE_FP64, DIMS(4, 3), x);
  bind_input(m, "Mask", "m", RILL_DTYPE_BOOL, DIMS(4, 1), (const bool[]){true, false, false, true});
  bind_input(m, "InTrue", "t", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(m, "InFalse", "f", RILL_DTYPE_FP64, DIMS(2, 3), x + 6);
  OK(op_harness_output(m, "Out", "y"));
  st = grad_check(m, GC_SLOTS("InTrue", "InFalse"), GC_SLOTS("Out"), NULL);
  cr_assert_null(st, "%s", st ? rill_status_message(st) : "");
  op_harness_destroy(m);
}

Test(split_lod_tensor, errors_name_op_and_variable) {
  float x[6] = {0};
  op_harness *h = harness("split_lod_tensor");
  bind_input(h, "X", "words", RILL_DTYPE_FP32, DIMS(3, 2), x);
  bind_input(h, "Mask", "cond", RILL_DTYPE_BOOL, DIMS(2, 1), (const bool[]){true, false});
  OK(op_harness_output(h, "OutTrue", "t"));
  OK(op_harness_output(h, "OutFalse", "f"));
  EXPECT_ERROR(op_harness_run(h), "split_lod_tensor", "cond", "2 elements", "words", "3");
  bind_input(h, "Mask", "cond", RILL_DTYPE_INT32, DIMS(3, 1), (const int32_t[]){1, 0, 1});
  EXPECT_ERROR(op_harness_run(h), "split_lod_tensor", "cond", "bool");
  bind_input(h, "Mask", "cond", RILL_DTYPE_BOOL, DIMS(1, 3), (const bool[]){true, false, true});
  EXPECT_ERROR(op_harness_run(h), "split_lod_tensor", "cond", "[N, 1]");
  op_harness_destroy(h);
  h = harness("split_lod_tensor");
  bind_lod(h, "X", "words", RILL_DTYPE_FP32, DIMS(3, 2), x, (const uint64_t[]){0, 2, 3}, 3, NULL, 0);
  bind_input(h, "Mask", "cond", RILL_DTYPE_BOOL, DIMS(2, 1), (const bool[]){true, false});
  OK(op_harness_output(h, "OutTrue", "t"));
  OK(op_harness_attr_int(h, "level", 1));
  EXPECT_ERROR(op_harness_run(h), "split_lod_tensor", "words", "no level 1");
  op_harness_destroy(h);
}
