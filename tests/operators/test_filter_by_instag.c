/* filter_by_instag: rows and LoD sequences kept by their tags against a naive reference
 * (a per-instance scan of both tag lists), the three outputs' shapes, values and LoD, the
 * empty case (out_val_if_empty), filter_by_instag_grad by hand and by finite differences,
 * and the errors naming op and variable. */
#include "op_test.h"
#include "support/grad_check.h"

enum { ROWS = 5, D = 3 };

static void set_lod(rill_tensor *t, const uint64_t *off, size_t n) {
  const uint64_t *levels[1] = {off};
  size_t counts[1] = {n};
  OK(rill_tensor_set_lod(t, 1, levels, counts));
}

/* Ins [ROWS, D] fp64 (with ins_lod when given), tags with their per-instance lengths. */
static op_harness *fi_harness(const double *x, const uint64_t *ins_lod, size_t nl,
                              const int64_t *tags, const uint64_t *tag_lod, size_t ntl,
                              const int64_t *flt, int64_t nf, int64_t empty) {
  op_harness *h = harness("filter_by_instag");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(ROWS, D), x);
  if (ins_lod) set_lod(t, ins_lod, nl);
  OK(op_harness_input(h, "Ins", "ins", t));
  op_harness_free_tensor(t);
  t = op_harness_make(RILL_DTYPE_INT64, (const int64_t[]){(int64_t)tag_lod[ntl - 1], 1}, 2, tags);
  set_lod(t, tag_lod, ntl);
  OK(op_harness_input(h, "Ins_tag", "ins_tag", t));
  op_harness_free_tensor(t);
  bind_input(h, "Filter_tag", "filter_tag", RILL_DTYPE_INT64, (const int64_t[]){nf}, 1, flt);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "LossWeight", "loss_weight"));
  OK(op_harness_output(h, "IndexMap", "index_map"));
  OK(op_harness_attr_bool(h, "is_lod", ins_lod != NULL));
  OK(op_harness_attr_long(h, "out_val_if_empty", empty));
  return h;
}

static double X[ROWS * D];
static void fill(void) {
  for (int i = 0; i < ROWS * D; i++) X[i] = 0.5 * i - 2;
}

/* Checks the outputs against a scan: instance i spans Ins rows [b[i], b[i+1]). */
static void expect_reference(op_harness *h, const uint64_t *b, int ninst, const int64_t *tags,
                             const uint64_t *tl, const int64_t *flt, int nf) {
  double want[ROWS * D];
  int64_t map[ROWS * 3];
  int rows = 0, kept = 0;
  for (int i = 0; i < ninst; i++) {
    bool hit = false;
    for (uint64_t j = tl[i]; j < tl[i + 1]; j++)
      for (int k = 0; k < nf; k++) hit |= tags[j] == flt[k];
    if (!hit) continue;
    map[3 * kept] = rows, map[3 * kept + 1] = (int64_t)b[i], map[3 * kept + 2] = (int64_t)(b[i + 1] - b[i]);
    for (uint64_t r = b[i]; r < b[i + 1]; r++, rows++)
      for (int j = 0; j < D; j++) want[rows * D + j] = X[r * D + j];
    kept++;
  }
  cr_assert_gt(kept, 0);
  const rill_tensor *o = op_harness_tensor(h, "out"), *w = op_harness_tensor(h, "loss_weight"),
                    *m = op_harness_tensor(h, "index_map");
  expect_dims(o, (const int64_t[]){rows, D}, 2);
  expect_dims(w, (const int64_t[]){kept, 1}, 2);
  expect_dims(m, (const int64_t[]){kept, 3}, 2);
  expect_close_f64(rill_tensor_ptr(o), want, rows * D, 0);
  const int64_t *mp = rill_tensor_ptr(m);
  const float *wp = rill_tensor_ptr(w);
  for (int k = 0; k < kept; k++) {
    cr_assert_eq(wp[k], 1.0f);
    for (int c = 0; c < 3; c++) cr_assert_eq(mp[3 * k + c], map[3 * k + c], "map [%d, %d]", k, c);
    cr_assert_eq(o->lod.levels[0].offsets[k + 1], (uint64_t)(map[3 * k] + map[3 * k + 2]));
    cr_assert_eq(m->lod.levels[0].offsets[k + 1], (uint64_t)(k + 1));
  }
  cr_assert_eq(o->lod.levels[0].n, (size_t)kept + 1);
}

Test(filter_by_instag, rows_match_reference) {
  fill();
  const int64_t tags[] = {1, 2, 3, 2, 5, 4, 6};
  const uint64_t tl[] = {0, 2, 3, 5, 6, 7};
  const int64_t flt[] = {2, 6};
  const uint64_t b[] = {0, 1, 2, 3, 4, 5};
  op_harness *h = fi_harness(X, NULL, 0, tags, tl, 6, flt, 2, 0);
  OK(op_harness_run(h));
  expect_reference(h, b, 5, tags, tl, flt, 2);
  op_harness_destroy(h);
}

Test(filter_by_instag, sequences_match_reference) {
  fill();
  const int64_t tags[] = {1, 2, 3, 5};
  const uint64_t tl[] = {0, 2, 3, 4};
  const int64_t flt[] = {5, 1};
  const uint64_t b[] = {0, 2, 3, 5};
  op_harness *h = fi_harness(X, b, 4, tags, tl, 4, flt, 2, 0);
  OK(op_harness_run(h));
  expect_reference(h, b, 3, tags, tl, flt, 2);
  op_harness_destroy(h);
}

Test(filter_by_instag, nothing_kept) {
  fill();
  const int64_t tags[] = {1, 2, 3, 5};
  const uint64_t tl[] = {0, 2, 3, 4};
  const int64_t flt[] = {9};
  const uint64_t b[] = {0, 2, 3, 5};
  op_harness *h = fi_harness(X, b, 4, tags, tl, 4, flt, 1, 7);
  OK(op_harness_run(h));
  const rill_tensor *o = op_harness_tensor(h, "out"), *w = op_harness_tensor(h, "loss_weight"),
                    *m = op_harness_tensor(h, "index_map");
  expect_dims(o, DIMS(1, D));
  expect_close_f64(rill_tensor_ptr(o), (const double[]){7, 7, 7}, D, 0);
  cr_assert_eq(*(const float *)rill_tensor_ptr(w), 0.0f);
  const int64_t *mp = rill_tensor_ptr(m);
  cr_assert(mp[0] == 0 && mp[1] == 1 && mp[2] == 1);
  cr_assert(o->lod.levels[0].n == 2 && o->lod.levels[0].offsets[1] == 1);
  op_harness_destroy(h);
}

/* Ins@GRAD: Out@GRAD's rows in the kept rows, zero elsewhere; zero in the empty case. */
Test(filter_by_instag, grad_by_hand) {
  fill();
  const int64_t tags[] = {1, 2, 3, 5};
  const uint64_t tl[] = {0, 2, 3, 4};
  const uint64_t b[] = {0, 2, 3, 5};
  for (int empty = 0; empty < 2; empty++) {
    const int64_t flt[] = {empty ? 9 : 5};
    op_harness *h = fi_harness(X, b, 4, tags, tl, 4, flt, 1, 0);
    OK(op_harness_run(h));
    op_harness *g = harness("filter_by_instag_grad");
    OK(op_harness_input(g, "Ins", "ins", op_harness_tensor(h, "ins")));
    OK(op_harness_input(g, "LossWeight", "loss_weight", op_harness_tensor(h, "loss_weight")));
    OK(op_harness_input(g, "IndexMap", "index_map", op_harness_tensor(h, "index_map")));
    int64_t orows = op_harness_tensor(h, "out")->dims.d[0];
    double dout[ROWS * D];
    for (int i = 0; i < orows * D; i++) dout[i] = i + 1;
    bind_input(g, "Out@GRAD", "out@GRAD", RILL_DTYPE_FP64, (const int64_t[]){orows, D}, 2, dout);
    OK(op_harness_output(g, "Ins@GRAD", "ins@GRAD"));
    OK(op_harness_attr_bool(g, "is_lod", true));
    OK(op_harness_run(g));
    const rill_tensor *dx = op_harness_tensor(g, "ins@GRAD");
    expect_dims(dx, DIMS(ROWS, D));
    double want[ROWS * D] = {0};
    if (!empty) /* the third sequence (rows 3, 4) is kept as Out rows 0, 1 */
      for (int i = 0; i < 2 * D; i++) want[3 * D + i] = dout[i];
    expect_close_f64(rill_tensor_ptr(dx), want, ROWS * D, 0);
    op_harness_destroy(g);
    op_harness_destroy(h);
  }
}

Test(filter_by_instag, finite_difference_gradient) {
  fill();
  const int64_t tags[] = {1, 2, 3, 2, 5, 4, 6};
  const uint64_t tl[] = {0, 2, 3, 5, 6, 7};
  const int64_t flt[] = {2, 6};
  op_harness *h = fi_harness(X, NULL, 0, tags, tl, 6, flt, 2, 0);
  OK(grad_check(h, GC_SLOTS("Ins"), GC_SLOTS("Out"), NULL));
  op_harness_destroy(h);
}

Test(filter_by_instag, errors_name_op_and_variable) {
  fill();
  const int64_t tags[] = {1, 2, 3, 5};
  const uint64_t tl[] = {0, 1, 2, 3, 4};
  const int64_t flt[] = {5};
  const uint64_t b[] = {0, 2, 3, 5};
  /* four tag sequences, three Ins sequences */
  op_harness *h = fi_harness(X, b, 4, tags, tl, 5, flt, 1, 0);
  EXPECT_ERROR(op_harness_run(h), "filter_by_instag", "ins", "ins_tag");
  op_harness_destroy(h);
  /* Ins_tag without LoD */
  h = harness("filter_by_instag");
  bind_input(h, "Ins", "ins", RILL_DTYPE_FP64, DIMS(ROWS, D), X);
  bind_input(h, "Ins_tag", "ins_tag", RILL_DTYPE_INT64, DIMS(4, 1), tags);
  bind_input(h, "Filter_tag", "filter_tag", RILL_DTYPE_INT64, DIMS(1), flt);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "LossWeight", "loss_weight"));
  OK(op_harness_output(h, "IndexMap", "index_map"));
  OK(op_harness_attr_bool(h, "is_lod", false));
  EXPECT_ERROR(op_harness_run(h), "filter_by_instag", "ins_tag", "LoD");
  op_harness_destroy(h);
  /* int32 tags */
  h = harness("filter_by_instag");
  bind_input(h, "Ins", "ins", RILL_DTYPE_FP64, DIMS(ROWS, D), X);
  bind_input(h, "Ins_tag", "ins_tag", RILL_DTYPE_INT32, DIMS(4, 1), (int32_t[4]){0});
  bind_input(h, "Filter_tag", "filter_tag", RILL_DTYPE_INT64, DIMS(1), flt);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "LossWeight", "loss_weight"));
  OK(op_harness_output(h, "IndexMap", "index_map"));
  OK(op_harness_attr_bool(h, "is_lod", false));
  EXPECT_ERROR(op_harness_run(h), "filter_by_instag", "ins_tag", "int64");
  op_harness_destroy(h);
}
