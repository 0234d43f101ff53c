/* DynamicRNN's ops: the rank table of sequences of lengths 2, 0, 3, 1, 3 (worked out
 * here), max_sequence_len, lod_tensor_to_array against a per-step gather and
 * array_to_lod_tensor restoring the batch and its LoD (each op is the other's gradient,
 * so the round trip also checks the gradients), shrink_rnn_memory and
 * reorder_lod_tensor_by_rank against references and by finite differences, and errors. */
#include "op_test.h"

#include "framework/data/scope.h"
#include "support/grad_check.h"

static const uint64_t lod[] = {0, 2, 2, 5, 6, 9}; /* 2, 0, 3, 1 and 3 rows */
enum { NSEQ = 5, ROWS = 9, W = 2 };
/* rank order: longest first, ties in index order */
static const int64_t want_table[NSEQ][2] = {{2, 3}, {4, 3}, {0, 2}, {3, 1}, {1, 0}};

static rill_tensor *with_lod(rill_dtype dt, const int64_t *dims, size_t nd, const void *v) {
  rill_tensor *t = op_harness_make(dt, dims, nd, v);
  cr_assert_not_null(t);
  const uint64_t *levels[1] = {lod};
  size_t counts[1] = {RILL_COUNTOF(lod)};
  OK(rill_tensor_set_lod(t, 1, levels, counts));
  return t;
}

/* The rank table of `lod` (run through lod_rank_table); the caller frees it. */
static rill_tensor *table(void) {
  op_harness *h = harness("lod_rank_table");
  float x[ROWS] = {0};
  rill_tensor *t = with_lod(RILL_DTYPE_FP32, DIMS(ROWS, 1), x);
  OK(op_harness_input(h, "X", "x", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "table"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_make(RILL_DTYPE_INT64, DIMS(NSEQ, 2), NULL);
  OK(rill_tensor_copy(out, op_harness_tensor(h, "table")));
  op_harness_destroy(h);
  return out;
}

static void bind_table(op_harness *h) {
  rill_tensor *t = table();
  OK(op_harness_input(h, "RankTable", "table", t));
  op_harness_free_tensor(t);
}

Test(lod_rank_table, ranks_longest_first_and_max_sequence_len_reads_it) {
  rill_tensor *t = table();
  expect_dims(t, DIMS(NSEQ, 2));
  cr_assert_eq(t->lod.nlevels, 0, "no coarse levels at level 0");
  const int64_t *v = rill_tensor_ptr(t);
  for (int k = 0; k < NSEQ; k++)
    cr_assert(v[2 * k] == want_table[k][0] && v[2 * k + 1] == want_table[k][1],
              "row %d: (%lld, %lld)", k, (long long)v[2 * k], (long long)v[2 * k + 1]);
  op_harness *h = harness("max_sequence_len");
  OK(op_harness_input(h, "RankTable", "table", t));
  OK(op_harness_output(h, "Out", "n"));
  OK(op_harness_run(h));
  cr_assert_eq(*(int64_t *)rill_tensor_ptr(op_harness_tensor(h, "n")), 3);
  op_harness_destroy(h);
  op_harness_free_tensor(t);
}

Test(lod_rank_table, keeps_the_coarse_levels_above_the_ranked_one) {
  static const uint64_t top[] = {0, 2, 6}, low[] = {0, 1, 3, 3, 4, 6, 9};
  op_harness *h = harness("lod_rank_table");
  float x[ROWS] = {0};
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(ROWS, 1), x);
  const uint64_t *levels[2] = {top, low};
  size_t counts[2] = {3, 7};
  OK(rill_tensor_set_lod(t, 2, levels, counts));
  OK(op_harness_input(h, "X", "x", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "table"));
  OK(op_harness_attr_int(h, "level", 1));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "table");
  expect_dims(o, DIMS(6, 2));
  cr_assert_eq(o->lod.nlevels, 1);
  cr_assert(o->lod.levels[0].n == 3 && o->lod.levels[0].offsets[2] == 6, "the top level");
  const int64_t *v = rill_tensor_ptr(o);
  static const int64_t order[] = {5, 1, 4, 0, 3, 2};
  for (int k = 0; k < 6; k++) cr_assert_eq(v[2 * k], order[k], "rank %d", k);
  op_harness_destroy(h);
}

/* x row r = (r, -r) scaled; to_array then back, in both float types. */
static void round_trip(rill_dtype dt) {
  double xd[ROWS * W];
  float xf[ROWS * W];
  for (int i = 0; i < ROWS * W; i++) xd[i] = xf[i] = (float)(i % 2 ? -i : i) * 0.5f;
  const void *xv = dt == RILL_DTYPE_FP64 ? (const void *)xd : (const void *)xf;
  size_t es = dt == RILL_DTYPE_FP64 ? 8 : 4;
  op_harness *h = harness("lod_tensor_to_array");
  rill_tensor *t = with_lod(dt, DIMS(ROWS, W), xv);
  OK(op_harness_input(h, "X", "x", t));
  op_harness_free_tensor(t);
  bind_table(h);
  OK(op_harness_output(h, "Out", "arr"));
  OK(op_harness_run(h));
  rill_variable *av = rill_scope_find(op_harness_scope(h), "arr");
  cr_assert(av && av->kind == RILL_VARKIND_TENSOR_ARRAY && av->u.array.n == 3, "3 steps");
  /* item s: row s of each sequence longer than s, in rank order */
  for (size_t s = 0; s < 3; s++) {
    const rill_tensor *it = &av->u.array.items[s];
    size_t active = 0;
    for (int k = 0; k < NSEQ; k++)
      if ((size_t)want_table[k][1] > s) {
        const char *row = (const char *)xv + (lod[want_table[k][0]] + s) * W * es;
        cr_assert(memcmp((const char *)rill_tensor_ptr(it) + active * W * es, row, W * es) == 0,
                  "item %zu, rank %d", s, k);
        active++;
      }
    cr_assert_eq(it->dims.d[0], (int64_t)active, "item %zu rows", s);
  }
  op_harness *b = harness("array_to_lod_tensor");
  OK(op_harness_input(b, "X", "arr", NULL));
  rill_variable *dst = rill_scope_find(op_harness_scope(b), "arr");
  cr_assert_not_null(dst);
  rill_tensor_array *da = rill_variable_array(dst);
  cr_assert_not_null(da);
  OK(rill_tensor_array_resize(da, av->u.array.n));
  for (size_t s = 0; s < av->u.array.n; s++) OK(rill_tensor_copy(&da->items[s], &av->u.array.items[s]));
  bind_table(b);
  OK(op_harness_output(b, "Out", "back"));
  OK(op_harness_run(b));
  rill_tensor *back = op_harness_tensor(b, "back");
  expect_dims(back, DIMS(ROWS, W));
  cr_assert(memcmp(rill_tensor_ptr(back), xv, ROWS * W * es) == 0, "the batch comes back");
  cr_assert(back->lod.nlevels == 1 && back->lod.levels[0].n == RILL_COUNTOF(lod) &&
                memcmp(back->lod.levels[0].offsets, lod, sizeof lod) == 0,
            "and its LoD");
  op_harness_destroy(b);
  op_harness_destroy(h);
}

Test(lod_tensor_to_array, splits_by_step_and_array_to_lod_tensor_restores_fp32) {
  round_trip(RILL_DTYPE_FP32);
}
Test(lod_tensor_to_array, splits_by_step_and_array_to_lod_tensor_restores_fp64) {
  round_trip(RILL_DTYPE_FP64);
}

Test(shrink_rnn_memory, keeps_the_running_rows_and_its_gradient_checks) {
  double x[NSEQ * W];
  for (int i = 0; i < NSEQ * W; i++) x[i] = 0.3 * i - 1.1;
  for (int64_t step = 0; step < 3; step++) {
    op_harness *h = harness("shrink_rnn_memory");
    bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(NSEQ, W), x);
    bind_input(h, "I", "i", RILL_DTYPE_INT64, DIMS(1), &step);
    bind_table(h);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_run(h));
    int64_t keep = step < 1 ? 4 : step < 2 ? 3 : 2; /* lengths 3, 3, 2, 1, 0 */
    rill_tensor *o = op_harness_tensor(h, "out");
    expect_dims(o, DIMS(keep, W));
    expect_close_f64(rill_tensor_ptr(o), x, keep * W, 0);
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
    op_harness_destroy(h);
  }
}

Test(reorder_lod_tensor_by_rank, takes_rows_in_rank_order_and_its_gradient_checks) {
  double x[NSEQ * W];
  for (int i = 0; i < NSEQ * W; i++) x[i] = 0.7 * i - 2.0;
  op_harness *h = harness("reorder_lod_tensor_by_rank");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(NSEQ, W), x);
  bind_table(h);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  const double *o = rill_tensor_ptr(op_harness_tensor(h, "out"));
  for (int k = 0; k < NSEQ; k++)
    expect_close_f64(o + k * W, x + want_table[k][0] * W, W, 0);
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(reorder_lod_tensor_by_rank, moves_whole_sequences_of_a_lod_input) {
  double x[ROWS];
  for (int i = 0; i < ROWS; i++) x[i] = i;
  op_harness *h = harness("reorder_lod_tensor_by_rank");
  rill_tensor *t = with_lod(RILL_DTYPE_FP64, DIMS(ROWS), x);
  OK(op_harness_input(h, "X", "x", t));
  op_harness_free_tensor(t);
  bind_table(h);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "out");
  static const double want[ROWS] = {2, 3, 4, 6, 7, 8, 0, 1, 5};
  static const uint64_t want_lod[] = {0, 3, 6, 8, 9, 9};
  expect_close_f64(rill_tensor_ptr(o), want, ROWS, 0);
  cr_assert(o->lod.nlevels == 1 && memcmp(o->lod.levels[0].offsets, want_lod, sizeof want_lod) == 0,
            "the sequences' lengths in rank order");
  op_harness_destroy(h);
}

Test(lod_rank_table, errors_name_the_op_and_the_variable) {
  op_harness *h = harness("lod_rank_table");
  float x[3] = {0};
  bind_input(h, "X", "plain", RILL_DTYPE_FP32, DIMS(3), x);
  OK(op_harness_output(h, "Out", "table"));
  EXPECT_ERROR(op_harness_run(h), "lod_rank_table", "level 0 is not a LoD level of X 'plain'");
  op_harness_destroy(h);

  /* a table whose lengths disagree with X's LoD */
  h = harness("lod_tensor_to_array");
  static const uint64_t other[] = {0, 3, 3, 4, 6, 9};
  float xs[ROWS] = {0};
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(ROWS, 1), xs);
  const uint64_t *levels[1] = {other};
  size_t counts[1] = {RILL_COUNTOF(other)};
  OK(rill_tensor_set_lod(t, 1, levels, counts));
  OK(op_harness_input(h, "X", "seqs", t));
  op_harness_free_tensor(t);
  bind_table(h);
  OK(op_harness_output(h, "Out", "arr"));
  EXPECT_ERROR(op_harness_run(h), "lod_tensor_to_array", "X 'seqs'", "the rank table says");
  op_harness_destroy(h);

  /* a table that is not one */
  h = harness("shrink_rnn_memory");
  int64_t step = 0, bad[4] = {0, 1, 1, 5};
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 1), xs);
  bind_input(h, "I", "i", RILL_DTYPE_INT64, DIMS(1), &step);
  bind_input(h, "RankTable", "tbl", RILL_DTYPE_INT64, DIMS(2, 2), bad);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "shrink_rnn_memory", "RankTable 'tbl' is malformed");
  op_harness_destroy(h);
}
