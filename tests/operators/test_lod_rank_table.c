/* DynamicRNN's ops: the rank table of sequences of lengths 2, 0, 3, 1, 3 (worked out
 * here), max_sequence_len, lod_tensor_to_array against a per-step gather and
 * array_to_lod_tensor restoring the batch and its LoD (each op is the other's gradient,
 * so the round trip also checks the gradients), shrink_rnn_memory and
 * reorder_lod_tensor_by_rank against references and by finite differences, and errors.
 * Then the same ops on LoDs nested below the ranked level (paragraphs of sentences of
 * words, worked out by hand): each item's data and LoD, the round trip, the gradient
 * ops the makers emit, a table at level 1 over three levels, and the errors. */
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

/* ---- LoD nested below the ranked level ----
 * Paragraphs of 2, 0, 3 and 1 sentences; sentences of 1, 3, 2, 0, 1 and 2 words; word r
 * holds r + 1. Rank order: paragraph 2 (3 sentences), 0 (2), 3 (1), 1 (0). */
static const uint64_t para[] = {0, 2, 2, 5, 6}, words[] = {0, 1, 4, 6, 6, 7, 9};
static const double xw[ROWS] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
/* item t: sentence t of paragraphs 2, 0, 3 that have one */
static const double item0[] = {5, 6, 1, 8, 9}, item1[] = {2, 3, 4}, item2[] = {7};
static const uint64_t lod0[] = {0, 2, 3, 5}, lod1[] = {0, 0, 3}, lod2[] = {0, 1};

static rill_tensor *lod_tensor(rill_dtype dt, const int64_t *dims, size_t nd, const void *v,
                               size_t nlevels, const uint64_t *const *levels,
                               const size_t *counts) {
  rill_tensor *t = op_harness_make(dt, dims, nd, v);
  cr_assert_not_null(t);
  OK(rill_tensor_set_lod(t, nlevels, levels, counts));
  return t;
}

static rill_tensor *paragraphs(const double *v) {
  const uint64_t *levels[2] = {para, words};
  size_t counts[2] = {RILL_COUNTOF(para), RILL_COUNTOF(words)};
  return lod_tensor(RILL_DTYPE_FP64, DIMS(ROWS, 1), v, 2, levels, counts);
}

/* The rank table of `x` at `level`; the caller frees it. */
static rill_tensor *table_of(rill_tensor *x, int32_t level) {
  op_harness *h = harness("lod_rank_table");
  OK(op_harness_input(h, "X", "x", x));
  OK(op_harness_output(h, "Out", "table"));
  OK(op_harness_attr_int(h, "level", level));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "table");
  rill_tensor *out = op_harness_make(RILL_DTYPE_INT64, o->dims.d, o->dims.n, NULL);
  OK(rill_tensor_copy(out, o));
  OK(rill_lod_copy(&out->lod, &o->lod));
  op_harness_destroy(h);
  return out;
}

static void bind_nested_table(op_harness *h, int32_t level, rill_tensor *x) {
  rill_tensor *t = table_of(x, level);
  OK(op_harness_input(h, "RankTable", "table", t));
  op_harness_free_tensor(t);
}

static void expect_level(const rill_tensor *t, size_t level, const uint64_t *want, size_t n,
                         const char *what) {
  cr_assert(t->lod.nlevels > level, "%s: no LoD level %zu", what, level);
  const rill_lod_level *lv = &t->lod.levels[level];
  cr_assert(lv->n == n && memcmp(lv->offsets, want, n * sizeof *want) == 0,
            "%s: LoD level %zu (%zu offsets, want %zu)", what, level, lv->n, n);
}

static void expect_item(const rill_tensor_array *a, size_t s, const double *v, size_t rows,
                        const uint64_t *lod_s, size_t n, double scale) {
  const rill_tensor *it = &a->items[s];
  expect_dims(it, DIMS((int64_t)rows, 1));
  for (size_t r = 0; r < rows; r++)
    cr_assert_eq(((const double *)rill_tensor_ptr(it))[r], v[r] * scale, "item %zu row %zu", s, r);
  cr_assert_eq(it->lod.nlevels, 1, "item %zu keeps the word level", s);
  expect_level(it, 0, lod_s, n, "item");
}

/* Binds the array `name` of `n` items to input X of `h`. */
static void bind_array(op_harness *h, const char *name, rill_tensor *const *items, size_t n) {
  OK(op_harness_input(h, "X", name, NULL));
  rill_tensor_array *a = rill_variable_array(rill_scope_find(op_harness_scope(h), name));
  cr_assert_not_null(a);
  OK(rill_tensor_array_resize(a, n));
  for (size_t s = 0; s < n; s++)
    if (items[s]) {
      OK(rill_tensor_copy(&a->items[s], items[s]));
      OK(rill_lod_copy(&a->items[s].lod, &items[s]->lod));
    }
}

/* The three items above times `scale`, with their LoDs. */
static void make_items(rill_tensor *items[3], double scale) {
  static const double *const v[3] = {item0, item1, item2};
  static const uint64_t *const l[3] = {lod0, lod1, lod2};
  static const size_t rows[3] = {5, 3, 1}, n[3] = {4, 3, 2};
  for (size_t s = 0; s < 3; s++) {
    double d[5];
    for (size_t r = 0; r < rows[s]; r++) d[r] = v[s][r] * scale;
    items[s] = lod_tensor(RILL_DTYPE_FP64, DIMS((int64_t)rows[s], 1), d, 1, &l[s], &n[s]);
  }
}

static rill_variable *scope_var(op_harness *h, const char *name) {
  rill_variable *v = NULL;
  OK(rill_scope_var(op_harness_scope(h), name, &v));
  return v;
}

static bool want_every_grad(void *impl, const char *var) {
  (void)impl;
  (void)var;
  return true;
}

/* Runs the one gradient op the schema of `h`'s op makes (of type `want_type`) in `h`'s
 * scope. */
static void run_grad_ops(op_harness *h, const char *want_type) {
  OK(rill_registry_init());
  const rill_op_desc *d = op_harness_desc(h);
  const rill_op_schema *sc = rill_schema_find(d->type);
  rill_grad_ctx g = {.fwd = d, .schema = sc, .wants_grad = want_every_grad};
  OK(sc->grad(&g));
  cr_assert_eq(g.nops, 1);
  cr_assert_str_eq(g.ops[0].type, want_type);
  op_harness *gh;
  OK(op_harness_create_from_desc(&g.ops[0], op_harness_scope(h), &gh));
  OK(op_harness_run(gh));
  op_harness_destroy(gh);
  rill_grad_ctx_clear(&g);
}

Test(lod_tensor_to_array, items_keep_the_levels_below_the_ranked_one) {
  rill_tensor *x = paragraphs(xw);
  rill_tensor *t = table_of(x, 0);
  static const int64_t want[4][2] = {{2, 3}, {0, 2}, {3, 1}, {1, 0}};
  cr_assert(memcmp(rill_tensor_ptr(t), want, sizeof want) == 0, "rank order 2, 0, 3, 1");
  op_harness_free_tensor(t);
  op_harness *h = harness("lod_tensor_to_array");
  OK(op_harness_input(h, "X", "x", x));
  bind_nested_table(h, 0, x);
  op_harness_free_tensor(x);
  OK(op_harness_output(h, "Out", "arr"));
  OK(op_harness_run(h));
  rill_variable *av = rill_scope_find(op_harness_scope(h), "arr");
  cr_assert(av && av->kind == RILL_VARKIND_TENSOR_ARRAY && av->u.array.n == 3, "3 steps");
  expect_item(&av->u.array, 0, item0, 5, lod0, 4, 1);
  expect_item(&av->u.array, 1, item1, 3, lod1, 3, 1); /* paragraph 2's sentence 1 is empty */
  expect_item(&av->u.array, 2, item2, 1, lod2, 2, 1);

  /* array_to_lod_tensor restores both levels */
  op_harness *b = harness("array_to_lod_tensor");
  rill_tensor *got[3] = {&av->u.array.items[0], &av->u.array.items[1], &av->u.array.items[2]};
  bind_array(b, "arr", got, 3);
  x = paragraphs(xw);
  bind_nested_table(b, 0, x);
  op_harness_free_tensor(x);
  OK(op_harness_output(b, "Out", "back"));
  OK(op_harness_run(b));
  rill_tensor *back = op_harness_tensor(b, "back");
  expect_dims(back, DIMS(ROWS, 1));
  expect_close_f64(rill_tensor_ptr(back), xw, ROWS, 0);
  cr_assert_eq(back->lod.nlevels, 2);
  expect_level(back, 0, para, RILL_COUNTOF(para), "back");
  expect_level(back, 1, words, RILL_COUNTOF(words), "back");
  op_harness_destroy(b);
  op_harness_destroy(h);
}

Test(lod_tensor_to_array, gradients_are_array_to_lod_tensor_and_back) {
  /* d arr: item t's rows numbered 10, 20, ... across the items; x@GRAD puts each row back
   * where the forward took it: word 0 <- item 0 row 2, words 1-3 <- item 1, words 4-5 <-
   * item 0 rows 0-1, word 6 <- item 2, words 7-8 <- item 0 rows 3-4 */
  rill_tensor *x = paragraphs(xw);
  op_harness *h = harness("lod_tensor_to_array");
  OK(op_harness_input(h, "X", "x", x));
  bind_nested_table(h, 0, x);
  op_harness_free_tensor(x);
  OK(op_harness_output(h, "Out", "arr"));
  OK(op_harness_run(h));
  static const double g0[] = {10, 20, 30, 40, 50}, g1[] = {60, 70, 80}, g2[] = {90};
  rill_tensor *g[3];
  const uint64_t *l[3] = {lod0, lod1, lod2};
  size_t n[3] = {4, 3, 2};
  g[0] = lod_tensor(RILL_DTYPE_FP64, DIMS(5, 1), g0, 1, &l[0], &n[0]);
  g[1] = lod_tensor(RILL_DTYPE_FP64, DIMS(3, 1), g1, 1, &l[1], &n[1]);
  g[2] = lod_tensor(RILL_DTYPE_FP64, DIMS(1, 1), g2, 1, &l[2], &n[2]);
  rill_tensor_array *ga = rill_variable_array(scope_var(h, "arr@GRAD"));
  cr_assert_not_null(ga);
  OK(rill_tensor_array_resize(ga, 3));
  for (size_t s = 0; s < 3; s++) {
    OK(rill_tensor_copy(&ga->items[s], g[s]));
    OK(rill_lod_copy(&ga->items[s].lod, &g[s]->lod));
    op_harness_free_tensor(g[s]);
  }
  run_grad_ops(h, "array_to_lod_tensor");
  rill_tensor *dx = op_harness_tensor(h, "x@GRAD");
  static const double want[ROWS] = {30, 60, 70, 80, 10, 20, 90, 40, 50};
  expect_dims(dx, DIMS(ROWS, 1));
  expect_close_f64(rill_tensor_ptr(dx), want, ROWS, 0);
  expect_level(dx, 0, para, RILL_COUNTOF(para), "x@GRAD");
  expect_level(dx, 1, words, RILL_COUNTOF(words), "x@GRAD");
  op_harness_destroy(h);

  /* array_to_lod_tensor's gradient splits back@GRAD like the forward split x */
  h = harness("array_to_lod_tensor");
  rill_tensor *items[3];
  make_items(items, 1);
  bind_array(h, "arr", items, 3);
  for (size_t s = 0; s < 3; s++) op_harness_free_tensor(items[s]);
  x = paragraphs(xw);
  bind_nested_table(h, 0, x);
  op_harness_free_tensor(x);
  OK(op_harness_output(h, "Out", "back"));
  OK(op_harness_run(h));
  double gb[ROWS];
  for (int r = 0; r < ROWS; r++) gb[r] = 100 * xw[r];
  rill_tensor *gt = paragraphs(gb);
  rill_tensor *slot = rill_variable_tensor(scope_var(h, "back@GRAD"));
  OK(rill_tensor_copy(slot, gt));
  OK(rill_lod_copy(&slot->lod, &gt->lod));
  op_harness_free_tensor(gt);
  run_grad_ops(h, "lod_tensor_to_array");
  rill_variable *dav = rill_scope_find(op_harness_scope(h), "arr@GRAD");
  cr_assert(dav && dav->kind == RILL_VARKIND_TENSOR_ARRAY && dav->u.array.n == 3);
  expect_item(&dav->u.array, 0, item0, 5, lod0, 4, 100);
  expect_item(&dav->u.array, 1, item1, 3, lod1, 3, 100);
  expect_item(&dav->u.array, 2, item2, 1, lod2, 2, 100);
  op_harness_destroy(h);
}

Test(lod_tensor_to_array, a_table_at_level_1_keeps_the_coarse_level_and_the_one_below) {
  /* 2 documents of 1 and 2 paragraphs; paragraphs of 2, 0, 1 sentences; sentences of 1,
   * 2, 1 words. Ranked: paragraph 0 (2 sentences), 2 (1), 1 (0). Item 0: sentence 0
   * (word 0) and sentence 2 (word 3); item 1: sentence 1 (words 1, 2). */
  static const uint64_t docs[] = {0, 1, 3}, paras3[] = {0, 2, 2, 3}, words3[] = {0, 1, 3, 4};
  static const double v[4] = {1, 2, 3, 4};
  const uint64_t *levels[3] = {docs, paras3, words3};
  size_t counts[3] = {3, 4, 4};
  rill_tensor *x = lod_tensor(RILL_DTYPE_FP64, DIMS(4, 1), v, 3, levels, counts);
  op_harness *h = harness("lod_tensor_to_array");
  OK(op_harness_input(h, "X", "x", x));
  bind_nested_table(h, 1, x);
  OK(op_harness_output(h, "Out", "arr"));
  OK(op_harness_run(h));
  rill_variable *av = rill_scope_find(op_harness_scope(h), "arr");
  cr_assert(av && av->u.array.n == 2, "2 steps");
  static const double i0[] = {1, 4}, i1[] = {2, 3};
  static const uint64_t l0[] = {0, 1, 2}, l1[] = {0, 2};
  expect_item(&av->u.array, 0, i0, 2, l0, 3, 1);
  expect_item(&av->u.array, 1, i1, 2, l1, 2, 1);
  op_harness *b = harness("array_to_lod_tensor");
  rill_tensor *got[2] = {&av->u.array.items[0], &av->u.array.items[1]};
  bind_array(b, "arr", got, 2);
  bind_nested_table(b, 1, x);
  op_harness_free_tensor(x);
  OK(op_harness_output(b, "Out", "back"));
  OK(op_harness_run(b));
  rill_tensor *back = op_harness_tensor(b, "back");
  expect_close_f64(rill_tensor_ptr(back), v, 4, 0);
  cr_assert_eq(back->lod.nlevels, 3);
  expect_level(back, 0, docs, 3, "back");
  expect_level(back, 1, paras3, 4, "back");
  expect_level(back, 2, words3, 4, "back");
  op_harness_destroy(b);
  op_harness_destroy(h);
}

Test(shrink_rnn_memory, keeps_the_running_top_level_sequences_with_their_levels) {
  /* X in rank order: top-level sequences of 3, 2, 1, 0 sentences; sentences of 2, 0, 1, 1,
   * 1, 2 rows. The table is the paragraphs' (lengths 3, 2, 1, 0). */
  static const uint64_t top[] = {0, 3, 5, 6, 6}, low[] = {0, 2, 2, 3, 4, 5, 7};
  static const uint64_t want_low[3][7] = {{0, 2, 2, 3, 4, 5, 7}, {0, 2, 2, 3, 4, 5},
                                          {0, 2, 2, 3}};
  static const size_t keep[3] = {3, 2, 1}, nlow[3] = {7, 6, 4};
  double v[7];
  for (int i = 0; i < 7; i++) v[i] = 0.4 * i - 1.3;
  for (int64_t step = 0; step < 3; step++) {
    op_harness *h = harness("shrink_rnn_memory");
    const uint64_t *levels[2] = {top, low};
    size_t counts[2] = {5, 7};
    rill_tensor *x = lod_tensor(RILL_DTYPE_FP64, DIMS(7, 1), v, 2, levels, counts);
    OK(op_harness_input(h, "X", "x", x));
    op_harness_free_tensor(x);
    bind_input(h, "I", "i", RILL_DTYPE_INT64, DIMS(1), &step);
    rill_tensor *px = paragraphs(xw);
    bind_nested_table(h, 0, px);
    op_harness_free_tensor(px);
    OK(op_harness_output(h, "Out", "out"));
    OK(op_harness_run(h));
    rill_tensor *o = op_harness_tensor(h, "out");
    int64_t rows = (int64_t)want_low[step][nlow[step] - 1];
    expect_dims(o, DIMS(rows, 1));
    expect_close_f64(rill_tensor_ptr(o), v, (size_t)rows, 0);
    cr_assert_eq(o->lod.nlevels, 2);
    expect_level(o, 0, top, keep[step] + 1, "out");
    expect_level(o, 1, want_low[step], nlow[step], "out");
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
    op_harness_destroy(h);
  }
}

Test(reorder_lod_tensor_by_rank, moves_top_level_sequences_with_their_levels) {
  double v[ROWS];
  for (int i = 0; i < ROWS; i++) v[i] = xw[i] - 0.5;
  op_harness *h = harness("reorder_lod_tensor_by_rank");
  rill_tensor *x = paragraphs(v);
  OK(op_harness_input(h, "X", "x", x));
  bind_nested_table(h, 0, x);
  op_harness_free_tensor(x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  /* paragraphs 2 (words 4-6), 0 (words 0-3), 3 (words 7-8), 1 (none) */
  static const double want[ROWS] = {4.5, 5.5, 6.5, 0.5, 1.5, 2.5, 3.5, 7.5, 8.5};
  static const uint64_t want_top[] = {0, 3, 5, 6, 6}, want_low[] = {0, 2, 2, 3, 4, 7, 9};
  rill_tensor *o = op_harness_tensor(h, "out");
  expect_close_f64(rill_tensor_ptr(o), want, ROWS, 0);
  cr_assert_eq(o->lod.nlevels, 2);
  expect_level(o, 0, want_top, 5, "out");
  expect_level(o, 1, want_low, 7, "out");
  /* the gradient (reorder_lod_tensor_by_rank_grad) puts them back by finite differences */
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(lod_tensor_to_array, nested_lod_errors_name_the_op_and_the_variable) {
  /* a LoD whose word level does not end at the tensor's rows */
  op_harness *h = harness("lod_tensor_to_array");
  rill_tensor *x = paragraphs(xw);
  bind_nested_table(h, 0, x);
  x->lod.levels[1].offsets[6] = 8;
  OK(op_harness_input(h, "X", "bad", x));
  op_harness_free_tensor(x);
  OK(op_harness_output(h, "Out", "arr"));
  EXPECT_ERROR(op_harness_run(h), "lod_tensor_to_array", "X 'bad'", "LoD level 1 ends at 8");
  op_harness_destroy(h);

  /* array_to_lod_tensor: an item without the word level, an unset item, too few sequences */
  for (int c = 0; c < 3; c++) {
    h = harness("array_to_lod_tensor");
    rill_tensor *items[3];
    make_items(items, 1);
    if (c == 0) rill_lod_clear(&items[1]->lod);
    if (c == 2) {
      static const uint64_t one[] = {0, 1};
      const uint64_t *l = one;
      size_t n = 2;
      op_harness_free_tensor(items[1]);
      items[1] = lod_tensor(RILL_DTYPE_FP64, DIMS(1, 1), item2, 1, &l, &n);
    }
    rill_tensor *bound[3] = {items[0], c == 1 ? NULL : items[1], items[2]};
    bind_array(h, "arrs", bound, 3);
    for (size_t s = 0; s < 3; s++) op_harness_free_tensor(items[s]);
    x = paragraphs(xw);
    bind_nested_table(h, 0, x);
    op_harness_free_tensor(x);
    OK(op_harness_output(h, "Out", "back"));
    if (c == 0)
      EXPECT_ERROR(op_harness_run(h), "array_to_lod_tensor", "item 1 of X 'arrs' differs");
    else if (c == 1)
      EXPECT_ERROR(op_harness_run(h), "array_to_lod_tensor", "item 1 of X 'arrs' is unset");
    else
      EXPECT_ERROR(op_harness_run(h), "array_to_lod_tensor", "item 1 of X 'arrs' holds 1 "
                   "sequences; the 2 running sequences need one each");
    op_harness_destroy(h);
  }

  /* reorder: X with fewer top-level sequences than the table */
  h = harness("reorder_lod_tensor_by_rank");
  static const uint64_t three[] = {0, 2, 4, 6};
  const uint64_t *levels[2] = {three, words};
  size_t counts[2] = {4, 7};
  x = lod_tensor(RILL_DTYPE_FP64, DIMS(ROWS, 1), xw, 2, levels, counts);
  OK(op_harness_input(h, "X", "short", x));
  op_harness_free_tensor(x);
  x = paragraphs(xw);
  bind_nested_table(h, 0, x);
  op_harness_free_tensor(x);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "reorder_lod_tensor_by_rank", "X 'short' has 3 top-level "
               "sequences, the rank table 4");
  op_harness_destroy(h);
}
