/* chunk_eval against chunks worked out by hand in each scheme, with excluded types, over
 * LoD and padded sequences; and the errors. */
#include "op_test.h"

typedef struct want {
  int64_t infer, label, correct;
} want;

static void bind_seq(op_harness *h, const char *slot, const char *name, const int64_t *v,
                     int64_t n, const uint64_t *lod, size_t nlod) {
  rill_tensor *t = op_harness_make(RILL_DTYPE_INT64, DIMS(n, 1), v);
  cr_assert_not_null(t);
  if (lod) {
    const uint64_t *levels[1] = {lod};
    size_t counts[1] = {nlod};
    OK(rill_tensor_set_lod(t, 1, levels, counts));
  }
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

static op_harness *chunk_harness(const char *scheme, int types, const int32_t *excl, size_t nexcl) {
  op_harness *h = harness("chunk_eval");
  OK(op_harness_attr_int(h, "num_chunk_types", types));
  OK(op_harness_attr_string(h, "chunk_scheme", scheme));
  if (nexcl) OK(op_harness_attr_ints(h, "excluded_chunk_types", excl, nexcl));
  OK(op_harness_output(h, "Precision", "p"));
  OK(op_harness_output(h, "Recall", "r"));
  OK(op_harness_output(h, "F1-Score", "f1"));
  OK(op_harness_output(h, "NumInferChunks", "ni"));
  OK(op_harness_output(h, "NumLabelChunks", "nl"));
  OK(op_harness_output(h, "NumCorrectChunks", "nc"));
  return h;
}

static void expect_counts(op_harness *h, want w, const char *what) {
  OK(op_harness_run(h));
  const char *names[3] = {"ni", "nl", "nc"};
  int64_t counts[3] = {w.infer, w.label, w.correct};
  for (int k = 0; k < 3; k++) {
    rill_tensor *t = op_harness_tensor(h, names[k]);
    expect_dims(t, DIMS(1));
    cr_assert_eq(t->dtype, RILL_DTYPE_INT64);
    cr_assert_eq(*(int64_t *)rill_tensor_ptr(t), counts[k], "%s: %s is %lld, expected %lld", what,
                 names[k], (long long)*(int64_t *)rill_tensor_ptr(t), (long long)counts[k]);
  }
  float p = w.infer ? (float)w.correct / (float)w.infer : 0.0f;
  float r = w.label ? (float)w.correct / (float)w.label : 0.0f;
  float f = w.correct ? 2.0f * p * r / (p + r) : 0.0f;
  float ratios[3] = {p, r, f};
  const char *rnames[3] = {"p", "r", "f1"};
  for (int k = 0; k < 3; k++) {
    rill_tensor *t = op_harness_tensor(h, rnames[k]);
    expect_dims(t, DIMS(1));
    cr_assert_eq(t->dtype, RILL_DTYPE_FP32);
    cr_assert_eq(*(float *)rill_tensor_ptr(t), ratios[k], "%s: %s is %g, expected %g", what,
                 rnames[k], (double)*(float *)rill_tensor_ptr(t), (double)ratios[k]);
  }
}

static void run_one(const char *scheme, int types, const int64_t *x, const int64_t *y, int64_t n,
                    want w) {
  op_harness *h = chunk_harness(scheme, types, NULL, 0);
  const uint64_t lod[] = {0, (uint64_t)n};
  bind_seq(h, "Inference", "infer", x, n, lod, 2);
  bind_seq(h, "Label", "label", y, n, lod, 2);
  expect_counts(h, w, scheme);
  op_harness_destroy(h);
}

/* IOB with 3 types: B-t = 2t, I-t = 2t + 1, O = 6. */
static const int64_t iob_y[] = {0, 1, 6, 2, 3, 3, 6, 4}; /* (0-1 t0) (3-5 t1) (7 t2) */
static const int64_t iob_x[] = {0, 1, 6, 2, 3, 6, 6, 5}; /* (0-1 t0) (3-4 t1) (7 t2): I after O */

Test(chunk_eval, iob_chunks_begin_at_b_or_a_new_type) {
  run_one("IOB", 3, iob_x, iob_y, 8, (want){3, 3, 2});
  /* B B of one type are two chunks; I of another type opens one */
  run_one("IOB", 3, (int64_t[]){0, 0, 1, 3}, (int64_t[]){0, 1, 1, 3}, 4, (want){3, 2, 1});
}

Test(chunk_eval, ioe_chunks_end_at_e) {
  /* I-t = 2t, E-t = 2t + 1, O = 4 */
  const int64_t y[] = {0, 1, 1, 4, 2, 2, 3}; /* (0-1 t0) (2 t0) (4-6 t1) */
  const int64_t x[] = {0, 1, 0, 4, 2, 3, 3}; /* (0-1 t0) (2 t0) (4-5 t1) (6 t1) */
  run_one("IOE", 2, x, y, 7, (want){4, 3, 2});
}

Test(chunk_eval, iobes_singles_and_spans) {
  /* B-t = 4t, I-t = 4t + 1, E-t = 4t + 2, S-t = 4t + 3, O = 8 */
  const int64_t y[] = {3, 0, 1, 2, 7, 8, 4, 6}; /* (0 t0) (1-3 t0) (4 t1) (6-7 t1) */
  const int64_t x[] = {3, 0, 1, 1, 7, 8, 8, 7}; /* (0 t0) (1-3 t0) (4 t1) (7 t1) */
  run_one("IOBES", 2, x, y, 8, (want){4, 4, 3});
}

Test(chunk_eval, plain_chunks_are_runs_of_one_type) {
  /* type t = t, O = 3 */
  const int64_t y[] = {0, 0, 1, 3, 2, 2}; /* (0-1 t0) (2 t1) (4-5 t2) */
  const int64_t x[] = {0, 0, 0, 3, 2, 3}; /* (0-2 t0) (4 t2) */
  run_one("plain", 3, x, y, 6, (want){2, 3, 0});
  run_one("plain", 3, y, y, 6, (want){3, 3, 3});
}

Test(chunk_eval, no_chunks_gives_zeros) {
  run_one("IOB", 3, (int64_t[]){6, 6, 6}, (int64_t[]){6, 6, 6}, 3, (want){0, 0, 0});
  run_one("IOB", 3, (int64_t[]){6, 0, 6}, (int64_t[]){6, 6, 6}, 3, (want){1, 0, 0});
}

Test(chunk_eval, excluded_types_count_nowhere) {
  const uint64_t lod[] = {0, 8};
  struct {
    int32_t excl[2];
    size_t n;
    want w;
  } cases[] = {{{1}, 1, {2, 2, 2}}, {{0, 2}, 2, {1, 1, 0}}, {{5}, 1, {3, 3, 2}}};
  for (size_t c = 0; c < RILL_COUNTOF(cases); c++) {
    op_harness *h = chunk_harness("IOB", 3, cases[c].excl, cases[c].n);
    bind_seq(h, "Inference", "infer", iob_x, 8, lod, 2);
    bind_seq(h, "Label", "label", iob_y, 8, lod, 2);
    expect_counts(h, cases[c].w, "excluded");
    op_harness_destroy(h);
  }
}

/* The IOB rows cut into two sequences of 4: no chunk runs across the cut. */
static const int64_t cut_y[] = {0, 1, 6, 2, 3, 3, 6, 4}; /* (0-1 t0) (3 t1) | (0-1 t1) (3 t2) */
static const int64_t cut_x[] = {0, 1, 6, 2, 3, 6, 6, 5}; /* (0-1 t0) (3 t1) | (0 t1) (3 t2) */
static const want cut_want = {4, 4, 3};

Test(chunk_eval, lod_sequences_are_cut_apart) {
  const uint64_t lod[] = {0, 4, 4, 8};
  op_harness *h = chunk_harness("IOB", 3, NULL, 0);
  bind_seq(h, "Inference", "infer", cut_x, 8, lod, 4);
  bind_seq(h, "Label", "label", cut_y, 8, lod, 4);
  expect_counts(h, cut_want, "lod");
  op_harness_destroy(h);
}

Test(chunk_eval, padded_rows_stop_at_seq_length) {
  /* rows of 6, the last two of each past its length and holding labels out of range */
  int64_t xp[12], yp[12];
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 6; k++) {
      xp[i * 6 + k] = k < 4 ? cut_x[i * 4 + k] : 99;
      yp[i * 6 + k] = k < 4 ? cut_y[i * 4 + k] : -5;
    }
  for (int rank3 = 0; rank3 < 2; rank3++) {
    op_harness *h = chunk_harness("IOB", 3, NULL, 0);
    if (rank3) {
      bind_input(h, "Inference", "infer", RILL_DTYPE_INT64, DIMS(2, 6, 1), xp);
      bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(2, 6, 1), yp);
    } else {
      bind_input(h, "Inference", "infer", RILL_DTYPE_INT64, DIMS(2, 6), xp);
      bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(2, 6), yp);
    }
    bind_input(h, "SeqLength", "len", RILL_DTYPE_INT64, DIMS(2), (int64_t[]){4, 4});
    expect_counts(h, cut_want, rank3 ? "padded [N, S, 1]" : "padded [N, S]");
    /* a shorter second row drops its chunk at step 3 from both */
    bind_input(h, "SeqLength", "len", RILL_DTYPE_INT64, DIMS(2), (int64_t[]){4, 3});
    expect_counts(h, (want){3, 3, 2}, "padded, shorter");
    op_harness_destroy(h);
  }
}

Test(chunk_eval, labels_out_of_range_are_errors_naming_the_input) {
  const uint64_t lod[] = {0, 4};
  op_harness *h = chunk_harness("IOB", 3, NULL, 0);
  bind_seq(h, "Inference", "infer", (int64_t[]){0, 1, 6, 6}, 4, lod, 2);
  bind_seq(h, "Label", "label", (int64_t[]){0, 1, 7, 6}, 4, lod, 2);
  EXPECT_ERROR(op_harness_run(h), "chunk_eval", "Label", "label", "label 7 at row 2", "[0, 6]");
  bind_seq(h, "Label", "label", (int64_t[]){0, 1, 6, 6}, 4, lod, 2);
  bind_seq(h, "Inference", "infer", (int64_t[]){0, -1, 6, 6}, 4, lod, 2);
  EXPECT_ERROR(op_harness_run(h), "chunk_eval", "Inference", "infer", "label -1 at row 1");
  bind_seq(h, "Inference", "infer", (int64_t[]){0, 1, 6, 6}, 4, lod, 2);
  expect_counts(h, (want){1, 1, 1}, "valid again");
  op_harness_destroy(h);
}

Test(chunk_eval, bad_layouts_and_attributes_are_errors) {
  const uint64_t lod[] = {0, 2, 4}, other_lod[] = {0, 1, 4};
  const int64_t v[] = {0, 1, 6, 6};
  op_harness *h = chunk_harness("IOB", 3, NULL, 0);
  bind_seq(h, "Inference", "infer", v, 4, other_lod, 3);
  bind_seq(h, "Label", "label", v, 4, lod, 3);
  EXPECT_ERROR(op_harness_run(h), "chunk_eval", "Inference", "infer", "LoD of Label", "label");
  bind_seq(h, "Inference", "infer", v, 4, NULL, 0);
  bind_seq(h, "Label", "label", v, 4, NULL, 0);
  EXPECT_ERROR(op_harness_run(h), "chunk_eval", "Label", "label", "SeqLength");
  op_harness_destroy(h);

  h = chunk_harness("IOB", 3, NULL, 0);
  bind_input(h, "Inference", "infer", RILL_DTYPE_INT64, DIMS(2, 2), v);
  bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(2, 2), v);
  bind_input(h, "SeqLength", "len", RILL_DTYPE_INT64, DIMS(2), (int64_t[]){2, 3});
  EXPECT_ERROR(op_harness_run(h), "chunk_eval", "SeqLength", "len", "length 3 of row 1");
  bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(4, 1), v);
  EXPECT_ERROR(op_harness_run(h), "chunk_eval", "Label", "label", "Inference", "infer");
  op_harness_destroy(h);

  h = chunk_harness("BIO", 3, NULL, 0);
  bind_seq(h, "Inference", "infer", v, 4, lod, 3);
  bind_seq(h, "Label", "label", v, 4, lod, 3);
  EXPECT_ERROR(op_harness_run(h), "chunk_eval", "chunk_scheme", "BIO");
  op_harness_destroy(h);

  h = chunk_harness("IOB", 0, NULL, 0);
  bind_seq(h, "Inference", "infer", v, 4, lod, 3);
  bind_seq(h, "Label", "label", v, 4, lod, 3);
  EXPECT_ERROR(op_harness_run(h), "chunk_eval", "num_chunk_types", "0");
  op_harness_destroy(h);

  h = chunk_harness("IOB", 3, NULL, 0);
  bind_input(h, "Inference", "infer", RILL_DTYPE_INT32, DIMS(4, 1), (int32_t[]){0, 1, 6, 6});
  bind_seq(h, "Label", "label", v, 4, lod, 3);
  EXPECT_ERROR(op_harness_run(h), "chunk_eval", "Inference", "infer", "int64");
  op_harness_destroy(h);
}
