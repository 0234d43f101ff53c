/* beam_search, beam_search_decode and gather_tree on small cases whose results were
 * worked out by hand and agree with Paddle 1.8.5's; and their errors. */
#include "op_test.h"

#include "framework/data/scope.h"

static rill_tensor *lod2(rill_dtype dt, const int64_t *dims, size_t nd, const void *v,
                         const uint64_t *l0, size_t n0, const uint64_t *l1, size_t n1) {
  rill_tensor *t = op_harness_make(dt, dims, nd, v);
  cr_assert_not_null(t);
  const uint64_t *levels[2] = {l0, l1};
  size_t counts[2] = {n0, n1};
  OK(rill_tensor_set_lod(t, n1 ? 2 : 1, levels, counts));
  return t;
}

static void bind(op_harness *h, const char *slot, const char *name, rill_tensor *t) {
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

static void expect_lod(const rill_tensor *t, size_t level, const uint64_t *want, size_t n) {
  cr_assert_gt(t->lod.nlevels, level, "LoD has %zu levels", t->lod.nlevels);
  cr_assert_eq(t->lod.levels[level].n, n, "level %zu has %zu offsets, expected %zu", level,
               t->lod.levels[level].n, n);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(t->lod.levels[level].offsets[i], want[i], "level %zu offset %zu", level, i);
}

static void expect_i64(const rill_tensor *t, const int64_t *want, int64_t n) {
  cr_assert_eq(rill_tensor_numel(t), n);
  const int64_t *v = rill_tensor_ptr(t);
  for (int64_t i = 0; i < n; i++) cr_assert_eq(v[i], want[i], "[%lld] %lld != %lld", (long long)i,
                                               (long long)v[i], (long long)want[i]);
}

static void expect_f32(const rill_tensor *t, const float *want, int64_t n) {
  cr_assert_eq(rill_tensor_numel(t), n);
  expect_close_f32(rill_tensor_ptr(t), want, n, 1e-6f);
}

/* Two sources over three prefix rows: source 0 holds rows 0 (id 1) and 1 (ended, id 9),
 * source 1 holds row 2 (id 4). */
static const uint64_t L0[] = {0, 2, 3}, L1[] = {0, 1, 2, 3};
static const int64_t PRE_IDS[] = {1, 9, 4};
static const float PRE_SCORES[] = {-0.5f, -0.25f, -1.0f};

static op_harness *step(const int64_t *pre_ids, const int64_t *ids, const float *scores,
                        int64_t width, int beam, bool accumulated) {
  op_harness *h = harness("beam_search");
  bind(h, "pre_ids", "pre_ids", lod2(RILL_DTYPE_INT64, DIMS(3, 1), pre_ids, L0, 3, L1, 4));
  bind(h, "pre_scores", "pre_scores", lod2(RILL_DTYPE_FP32, DIMS(3, 1), PRE_SCORES, L0, 3, L1, 4));
  if (ids) bind(h, "ids", "ids", lod2(RILL_DTYPE_INT64, DIMS(3, width), ids, L0, 3, L1, 4));
  bind(h, "scores", "scores", lod2(RILL_DTYPE_FP32, DIMS(3, width), scores, L0, 3, L1, 4));
  OK(op_harness_attr_int(h, "beam_size", beam));
  OK(op_harness_attr_int(h, "end_id", 9));
  OK(op_harness_attr_bool(h, "is_accumulated", accumulated));
  OK(op_harness_output(h, "selected_ids", "sel_ids"));
  OK(op_harness_output(h, "selected_scores", "sel_scores"));
  OK(op_harness_output(h, "parent_idx", "parent"));
  return h;
}

static const int64_t IDS[] = {2, 3, 9, 5, 6, 7, 9, 1, 2};
static const float SCORES[] = {-0.75f, -1.5f, -0.6f, -0.3f, -0.3f, -2.0f, -1.25f, -1.5f, -1.25f};

Test(beam_search, accumulated_scores_ended_prefix_and_ties) {
  /* source 0: the ended row 1 offers only 9 at -0.25, row 0 its best 9 at -0.6; source 1:
   * the tie at -1.25 keeps the first candidate first */
  op_harness *h = step(PRE_IDS, IDS, SCORES, 3, 2, true);
  OK(op_harness_run(h));
  rill_tensor *ids = op_harness_tensor(h, "sel_ids"), *sc = op_harness_tensor(h, "sel_scores");
  expect_dims(ids, DIMS(4, 1));
  expect_i64(ids, (const int64_t[]){9, 9, 9, 2}, 4);
  expect_f32(sc, (const float[]){-0.6f, -0.25f, -1.25f, -1.25f}, 4);
  const int32_t *par = rill_tensor_ptr(op_harness_tensor(h, "parent"));
  cr_assert(par[0] == 0 && par[1] == 1 && par[2] == 2 && par[3] == 2);
  expect_lod(ids, 0, (const uint64_t[]){0, 2, 3}, 3);
  expect_lod(ids, 1, (const uint64_t[]){0, 1, 2, 4}, 4);
  expect_lod(sc, 1, (const uint64_t[]){0, 1, 2, 4}, 4);
  op_harness_destroy(h);
}

Test(beam_search, probabilities_without_ids) {
  /* scores are probabilities: pre_score + log(p); ids are the columns */
  const float probs[] = {0.5f, 0.2f, 0.3f, 0.1f, 0.6f, 0.3f, 0.25f, 0.25f, 0.5f};
  op_harness *h = step(PRE_IDS, NULL, probs, 3, 3, false);
  OK(op_harness_run(h));
  rill_tensor *ids = op_harness_tensor(h, "sel_ids"), *sc = op_harness_tensor(h, "sel_scores");
  expect_i64(ids, (const int64_t[]){0, 2, 9, 2, 0, 1}, 6);
  const float want[] = {-0.5f + logf(0.5f), -0.5f + logf(0.3f), -0.25f, -1.0f + logf(0.5f),
                        -1.0f + logf(0.25f), -1.0f + logf(0.25f)};
  expect_f32(sc, want, 6);
  expect_lod(ids, 1, (const uint64_t[]){0, 2, 3, 6}, 4);
  op_harness_destroy(h);
}

Test(beam_search, drops_a_source_whose_beams_all_ended) {
  const int64_t pre[] = {1, 9, 9};
  op_harness *h = step(pre, IDS, SCORES, 3, 2, true);
  OK(op_harness_run(h));
  rill_tensor *ids = op_harness_tensor(h, "sel_ids");
  expect_i64(ids, (const int64_t[]){9, 9}, 2);
  expect_f32(op_harness_tensor(h, "sel_scores"), (const float[]){-0.6f, -0.25f}, 2);
  expect_lod(ids, 0, (const uint64_t[]){0, 2, 3}, 3);
  expect_lod(ids, 1, (const uint64_t[]){0, 1, 2, 2}, 4);
  op_harness_destroy(h);
}

Test(beam_search, sources_at_level_one) {
  op_harness *h = step(PRE_IDS, IDS, SCORES, 3, 1, true);
  OK(op_harness_attr_int(h, "level", 1));
  OK(op_harness_run(h));
  rill_tensor *ids = op_harness_tensor(h, "sel_ids");
  expect_i64(ids, (const int64_t[]){9, 2}, 2);
  expect_lod(ids, 0, (const uint64_t[]){0, 1, 2, 3}, 4);
  expect_lod(ids, 1, (const uint64_t[]){0, 1, 1, 2}, 4);
  op_harness_destroy(h);
}

Test(beam_search, errors_name_the_op_and_variable) {
  op_harness *h = step(PRE_IDS, IDS, SCORES, 3, 2, true);
  OK(op_harness_attr_int(h, "level", 2));
  EXPECT_ERROR(op_harness_run(h), "beam_search", "scores", "2 LoD levels", "level 2");
  op_harness_destroy(h);

  h = harness("beam_search");
  bind(h, "pre_ids", "pre_ids", op_harness_make(RILL_DTYPE_INT64, DIMS(2, 1), PRE_IDS));
  bind(h, "pre_scores", "pre_scores", lod2(RILL_DTYPE_FP32, DIMS(3, 1), PRE_SCORES, L0, 3, L1, 4));
  bind(h, "scores", "scores", lod2(RILL_DTYPE_FP32, DIMS(3, 3), SCORES, L0, 3, L1, 4));
  OK(op_harness_attr_int(h, "beam_size", 2));
  OK(op_harness_attr_int(h, "end_id", 9));
  OK(op_harness_output(h, "selected_ids", "a"));
  OK(op_harness_output(h, "selected_scores", "b"));
  EXPECT_ERROR(op_harness_run(h), "beam_search", "pre_ids", "2 elements", "(3)");
  bind(h, "pre_ids", "pre_ids", lod2(RILL_DTYPE_INT64, DIMS(3, 1), PRE_IDS, L0, 3, L1, 4));
  bind(h, "ids", "ids", lod2(RILL_DTYPE_INT64, DIMS(3, 2), IDS, L0, 3, L1, 4));
  EXPECT_ERROR(op_harness_run(h), "beam_search", "ids", "6 elements", "scores");
  op_harness_destroy(h);

  /* scores without LoD */
  h = harness("beam_search");
  bind(h, "pre_ids", "pre_ids", op_harness_make(RILL_DTYPE_INT64, DIMS(3, 1), PRE_IDS));
  bind(h, "pre_scores", "pre_scores", op_harness_make(RILL_DTYPE_FP32, DIMS(3, 1), PRE_SCORES));
  bind(h, "scores", "plain", op_harness_make(RILL_DTYPE_FP32, DIMS(3, 3), SCORES));
  OK(op_harness_attr_int(h, "beam_size", 2));
  OK(op_harness_attr_int(h, "end_id", 9));
  OK(op_harness_output(h, "selected_ids", "a"));
  OK(op_harness_output(h, "selected_scores", "b"));
  EXPECT_ERROR(op_harness_run(h), "beam_search", "scores (plain)", "0 LoD levels");
  OK(op_harness_attr_int(h, "beam_size", 0));
  EXPECT_ERROR(op_harness_run(h), "beam_search", "beam_size");
  op_harness_destroy(h);
}

/* ---- beam_search_decode ---- */

typedef struct dstep {
  const int64_t *ids;
  const float *scores;
  int64_t n;
  const uint64_t *l0;
  size_t n0;
  const uint64_t *l1;
  size_t n1;
} dstep;

static void fill_array(op_harness *h, const char *name, const dstep *s, size_t nsteps, bool ids) {
  rill_variable *v;
  OK(rill_scope_var(op_harness_scope(h), name, &v));
  rill_tensor_array *a = rill_variable_array(v);
  cr_assert_not_null(a);
  OK(rill_tensor_array_resize(a, nsteps));
  for (size_t t = 0; t < nsteps; t++) {
    rill_tensor *x = ids ? lod2(RILL_DTYPE_INT64, DIMS(s[t].n, 1), s[t].ids, s[t].l0, s[t].n0,
                                s[t].l1, s[t].n1)
                         : lod2(RILL_DTYPE_FP32, DIMS(s[t].n, 1), s[t].scores, s[t].l0, s[t].n0,
                                s[t].l1, s[t].n1);
    OK(rill_tensor_copy(&a->items[t], x));
    OK(rill_lod_copy(&a->items[t].lod, &x->lod));
    op_harness_free_tensor(x);
  }
}

/* Source 0 ends one sentence at step 2 and another at step 3; source 1 ends both its
 * sentences by step 2 and is dropped at step 3. */
static const dstep STEPS[] = {
    {(const int64_t[]){1, 1}, (const float[]){0, 0}, 2, (const uint64_t[]){0, 1, 2},
     3, (const uint64_t[]){0, 1, 2}, 3},
    {(const int64_t[]){3, 4, 5, 9}, (const float[]){-0.5f, -0.7f, -0.2f, -0.4f}, 4,
     (const uint64_t[]){0, 1, 2}, 3, (const uint64_t[]){0, 2, 4}, 3},
    {(const int64_t[]){9, 7, 9, 9}, (const float[]){-0.9f, -1.1f, -0.6f, -0.4f}, 4,
     (const uint64_t[]){0, 2, 4}, 3, (const uint64_t[]){0, 2, 2, 3, 4}, 5},
    {(const int64_t[]){9, 2}, (const float[]){-0.9f, -1.3f}, 2, (const uint64_t[]){0, 2, 4}, 3,
     (const uint64_t[]){0, 1, 2, 2, 2}, 5},
};

static op_harness *decode(const dstep *s, size_t n, int beam) {
  op_harness *h = harness("beam_search_decode");
  fill_array(h, "ids", s, n, true);
  fill_array(h, "scores", s, n, false);
  OK(op_harness_input(h, "Ids", "ids", NULL));
  OK(op_harness_input(h, "Scores", "scores", NULL));
  OK(op_harness_attr_int(h, "beam_size", beam));
  OK(op_harness_attr_int(h, "end_id", 9));
  OK(op_harness_output(h, "SentenceIds", "sent_ids"));
  OK(op_harness_output(h, "SentenceScores", "sent_scores"));
  return h;
}

Test(beam_search_decode, traces_sentences_back_and_sorts_by_score) {
  op_harness *h = decode(STEPS, 4, 2);
  OK(op_harness_run(h));
  rill_tensor *ids = op_harness_tensor(h, "sent_ids"), *sc = op_harness_tensor(h, "sent_scores");
  expect_dims(ids, DIMS(12));
  expect_i64(ids, (const int64_t[]){1, 3, 9, 1, 3, 7, 2, 1, 9, 1, 5, 9}, 12);
  expect_f32(sc, (const float[]){0, -0.5f, -0.9f, 0, -0.5f, -1.1f, -1.3f, 0, -0.4f, 0, -0.2f,
                                 -0.6f}, 12);
  expect_lod(ids, 0, (const uint64_t[]){0, 2, 4}, 3);
  expect_lod(ids, 1, (const uint64_t[]){0, 3, 7, 9, 12}, 5);
  expect_lod(sc, 1, (const uint64_t[]){0, 3, 7, 9, 12}, 5);
  op_harness_destroy(h);
}

Test(beam_search_decode, float64_scores) {
  op_harness *h = decode(STEPS, 4, 2);
  rill_variable *v = rill_scope_find(op_harness_scope(h), "scores");
  rill_tensor_array *a = rill_variable_array(v);
  for (size_t t = 0; t < 4; t++) {
    rill_tensor *x = &a->items[t];
    int64_t n = rill_tensor_numel(x);
    double d[4];
    for (int64_t i = 0; i < n; i++) d[i] = ((const float *)rill_tensor_ptr(x))[i];
    rill_tensor *y = lod2(RILL_DTYPE_FP64, DIMS(n, 1), d, STEPS[t].l0, STEPS[t].n0, STEPS[t].l1,
                          STEPS[t].n1);
    OK(rill_tensor_copy(x, y));
    OK(rill_lod_copy(&x->lod, &y->lod));
    op_harness_free_tensor(y);
  }
  OK(op_harness_run(h));
  rill_tensor *sc = op_harness_tensor(h, "sent_scores");
  cr_assert_eq(sc->dtype, RILL_DTYPE_FP64);
  const double *p = rill_tensor_ptr(sc);
  cr_assert(p[2] == (double)-0.9f && p[6] == (double)-1.3f && p[11] == (double)-0.6f);
  op_harness_destroy(h);
}

Test(beam_search_decode, an_empty_last_step_changes_nothing) {
  /* after step 3 every source had ended: step 4 selects nothing */
  dstep s[5] = {STEPS[0], STEPS[1], STEPS[2], STEPS[3],
                {(const int64_t[]){0}, (const float[]){0}, 0, (const uint64_t[]){0, 1, 2}, 3,
                 (const uint64_t[]){0, 0, 0}, 3}};
  op_harness *h = decode(s, 5, 2);
  OK(op_harness_run(h));
  rill_tensor *ids = op_harness_tensor(h, "sent_ids");
  expect_i64(ids, (const int64_t[]){1, 3, 9, 1, 3, 7, 2, 1, 9, 1, 5, 9}, 12);
  expect_lod(ids, 1, (const uint64_t[]){0, 3, 7, 9, 12}, 5);
  op_harness_destroy(h);
}

Test(beam_search_decode, errors_name_the_op_and_variable) {
  /* too many selections for the beam */
  op_harness *h = decode(STEPS, 4, 1);
  EXPECT_ERROR(op_harness_run(h), "beam_search_decode", "Ids (ids)", "beam_size (1)");
  op_harness_destroy(h);

  /* a step with one LoD level */
  dstep bad[2] = {STEPS[0], STEPS[1]};
  bad[1].l0 = bad[1].l1;
  bad[1].n0 = bad[1].n1;
  bad[1].n1 = 0;
  h = decode(bad, 2, 2);
  EXPECT_ERROR(op_harness_run(h), "beam_search_decode", "item 1 of input Ids (ids)",
               "1 LoD levels, expected 2");
  op_harness_destroy(h);

  /* arrays of different lengths */
  h = harness("beam_search_decode");
  fill_array(h, "ids", STEPS, 3, true);
  fill_array(h, "scores", STEPS, 2, false);
  OK(op_harness_input(h, "Ids", "ids", NULL));
  OK(op_harness_input(h, "Scores", "scores", NULL));
  OK(op_harness_attr_int(h, "beam_size", 2));
  OK(op_harness_attr_int(h, "end_id", 9));
  OK(op_harness_output(h, "SentenceIds", "a"));
  OK(op_harness_output(h, "SentenceScores", "b"));
  EXPECT_ERROR(op_harness_run(h), "beam_search_decode", "Ids (ids) has 3 steps",
               "Scores (scores) 2");
  op_harness_destroy(h);

  /* a later step whose rows do not continue the earlier one's */
  dstep gap[3] = {STEPS[0], STEPS[1], STEPS[2]};
  gap[2].l0 = (const uint64_t[]){0, 1, 2};
  gap[2].l1 = (const uint64_t[]){0, 2, 4};
  gap[2].n1 = 3;
  h = decode(gap, 3, 2);
  EXPECT_ERROR(op_harness_run(h), "beam_search_decode", "item 1 of input Ids (ids)",
               "does not hold row 1 of source 1");
  op_harness_destroy(h);
}

/* ---- gather_tree ---- */

Test(gather_tree, follows_parents_back) {
  /* T = 3, batch 2, beam 2 */
  const int64_t ids[] = {2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4};
  const int64_t par[] = {0, 0, 0, 0, 1, 1, 1, 0, 1, 0, 0, 1};
  op_harness *h = harness("gather_tree");
  bind_input(h, "Ids", "ids", RILL_DTYPE_INT64, DIMS(3, 2, 2), ids);
  bind_input(h, "Parents", "parents", RILL_DTYPE_INT64, DIMS(3, 2, 2), par);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  /* batch 0, beam 0: t2 id 1 parent 1 -> t1 id 7 parent 1 -> t0 id 3;
   * beam 1: t2 id 2 parent 0 -> t1 id 6 parent 1 -> t0 id 3;
   * batch 1, beam 0: t2 id 3 parent 0 -> t1 id 8 parent 1 -> t0 id 5;
   * beam 1: t2 id 4 parent 1 -> t1 id 9 parent 0 -> t0 id 4 */
  expect_i64(op_harness_tensor(h, "out"), (const int64_t[]){3, 3, 5, 4, 7, 6, 8, 9, 1, 2, 3, 4},
             12);
  const int64_t badp[] = {0, 0, 0, 0, 1, 1, 1, 0, 2, 0, 0, 1};
  bind_input(h, "Parents", "parents", RILL_DTYPE_INT64, DIMS(3, 2, 2), badp);
  EXPECT_ERROR(op_harness_run(h), "gather_tree", "Parents (parents)", "holds 2", "[0, 2)");
  bind_input(h, "Parents", "parents", RILL_DTYPE_INT64, DIMS(3, 4), par);
  EXPECT_ERROR(op_harness_run(h), "gather_tree", "Parents (parents)", "must agree");
  op_harness_destroy(h);
}
