/* sequence_pool against a naive reference: every pooltype, one and two LoD levels,
 * empty sequences (pad_value, MaxIndex -1), wider rows; and the errors. */
#include "op_test.h"
#include "support/grad_check.h"

static void set_lod(rill_tensor *t, const uint64_t *l0, size_t n0, const uint64_t *l1, size_t n1) {
  const uint64_t *levels[2] = {l0, l1};
  size_t counts[2] = {n0, n1};
  OK(rill_tensor_set_lod(t, l1 ? 2 : 1, levels, counts));
}

/* Binds X [rows, d] with the given LoD (level 1 optional). */
static void bind_seq(op_harness *h, const float *x, int64_t rows, int64_t d, const uint64_t *l0,
                     size_t n0, const uint64_t *l1, size_t n1) {
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(rows, d), x);
  cr_assert_not_null(t);
  set_lod(t, l0, n0, l1, n1);
  OK(op_harness_input(h, "X", "words", t));
  op_harness_free_tensor(t);
}

static void ref_pool(const char *type, const float *x, int64_t d, const uint64_t *lod, size_t n,
                     float pad, float *out, int32_t *idx) {
  for (size_t s = 0; s + 1 < n; s++) {
    int64_t a = (int64_t)lod[s], b = (int64_t)lod[s + 1];
    for (int64_t k = 0; k < d; k++) {
      float *o = &out[s * d + k];
      int32_t *ix = &idx[s * d + k];
      if (a == b) {
        *o = pad;
        *ix = -1;
        continue;
      }
      double sum = 0;
      float mx = x[a * d + k];
      *ix = (int32_t)a;
      for (int64_t r = a; r < b; r++) {
        sum += x[r * d + k];
        if (x[r * d + k] > mx) {
          mx = x[r * d + k];
          *ix = (int32_t)r;
        }
      }
      if (!strcmp(type, "SUM")) *o = (float)sum;
      else if (!strcmp(type, "AVERAGE")) *o = (float)(sum / (double)(b - a));
      else if (!strcmp(type, "SQRT")) *o = (float)(sum / sqrt((double)(b - a)));
      else if (!strcmp(type, "MAX")) *o = mx;
      else if (!strcmp(type, "LAST")) *o = x[(b - 1) * d + k];
      else *o = x[a * d + k];
    }
  }
}

static void check_pool(const char *type, int64_t rows, int64_t d, const uint64_t *lod, size_t n,
                       float pad) {
  float *x = malloc((size_t)(rows * d + 1) * sizeof *x);
  for (int64_t i = 0; i < rows * d; i++) x[i] = (float)sin((double)i * 1.3) * 3;
  int64_t nseq = (int64_t)n - 1;
  float *want = malloc((size_t)(nseq * d + 1) * sizeof *want);
  int32_t *widx = malloc((size_t)(nseq * d + 1) * sizeof *widx);
  ref_pool(type, x, d, lod, n, pad, want, widx);
  op_harness *h = harness("sequence_pool");
  bind_seq(h, x, rows, d, lod, n, NULL, 0);
  OK(op_harness_output(h, "Out", "pooled"));
  OK(op_harness_output(h, "MaxIndex", "max_index"));
  OK(op_harness_attr_string(h, "pooltype", type));
  OK(op_harness_attr_float(h, "pad_value", pad));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "pooled");
  expect_dims(out, DIMS(nseq, d));
  cr_assert_eq(out->lod.nlevels, 0, "%s: one LoD level in, none out", type);
  expect_close_f32(rill_tensor_ptr(out), want, nseq * d, 1e-5f);
  if (!strcmp(type, "MAX")) {
    const int32_t *got = rill_tensor_ptr(op_harness_tensor(h, "max_index"));
    for (int64_t i = 0; i < nseq * d; i++) cr_assert_eq(got[i], widx[i], "MaxIndex[%lld]", (long long)i);
  }
  op_harness_destroy(h);
  free(x); free(want); free(widx);
}

Test(sequence_pool, every_pooltype_matches_reference) {
  const char *types[] = {"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"};
  for (size_t t = 0; t < 6; t++) {
    check_pool(types[t], 7, 3, (const uint64_t[]){0, 3, 7}, 3, 0.0f);
    check_pool(types[t], 6, 1, (const uint64_t[]){0, 1, 2, 6}, 4, 0.0f);
    check_pool(types[t], 9, 5, (const uint64_t[]){0, 0, 4, 4, 9}, 5, -2.5f); /* empty ones */
    check_pool(types[t], 40, 17, (const uint64_t[]){0, 13, 40}, 3, 0.0f);
  }
}

Test(sequence_pool, empty_sequence_gets_pad_value_and_index_minus_one) {
  float x[] = {1, 2, 3, 4};
  op_harness *h = harness("sequence_pool");
  bind_seq(h, x, 2, 2, (const uint64_t[]){0, 2, 2}, 3, NULL, 0);
  OK(op_harness_output(h, "Out", "pooled"));
  OK(op_harness_output(h, "MaxIndex", "mi"));
  OK(op_harness_attr_string(h, "pooltype", "MAX"));
  OK(op_harness_attr_float(h, "pad_value", 7.5f));
  OK(op_harness_run(h));
  const float *o = rill_tensor_ptr(op_harness_tensor(h, "pooled"));
  const int32_t *mi = rill_tensor_ptr(op_harness_tensor(h, "mi"));
  float want[] = {3, 4, 7.5f, 7.5f};
  expect_close_f32(o, want, 4, 0);
  cr_assert(mi[0] == 1 && mi[1] == 1 && mi[2] == -1 && mi[3] == -1);
  op_harness_destroy(h);
}

/* Two levels: pooled over the second (the words of each sentence); Out keeps the first
 * level (sentences of each paragraph) as its LoD, as Paddle does. */
Test(sequence_pool, two_levels_pool_the_last_and_keep_the_first) {
  float x[12];
  for (int i = 0; i < 12; i++) x[i] = (float)i;
  op_harness *h = harness("sequence_pool");
  bind_seq(h, x, 6, 2, (const uint64_t[]){0, 2, 3}, 3, (const uint64_t[]){0, 1, 4, 6}, 4);
  OK(op_harness_output(h, "Out", "pooled"));
  OK(op_harness_attr_string(h, "pooltype", "SUM"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "pooled");
  expect_dims(out, DIMS(3, 2));
  float want[] = {0, 1, 2 + 4 + 6, 3 + 5 + 7, 8 + 10, 9 + 11};
  expect_close_f32(rill_tensor_ptr(out), want, 6, 0);
  cr_assert_eq(out->lod.nlevels, 1);
  cr_assert_eq(out->lod.levels[0].n, 3);
  cr_assert(out->lod.levels[0].offsets[1] == 2 && out->lod.levels[0].offsets[2] == 3);
  op_harness_destroy(h);
}

Test(sequence_pool, float64_average) {
  double x[] = {1, 2, 3, 4, 5, 6};
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(3, 2), x);
  set_lod(t, (const uint64_t[]){0, 1, 3}, 3, NULL, 0);
  op_harness *h = harness("sequence_pool");
  OK(op_harness_input(h, "X", "x", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "y"));
  OK(op_harness_run(h)); /* pooltype defaults to AVERAGE */
  double want[] = {1, 2, 4, 5};
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "y")), want, 4, 1e-12);
  op_harness_destroy(h);
}

Test(sequence_pool, errors_name_op_and_variable) {
  float x[6] = {0};
  /* no LoD */
  op_harness *h = harness("sequence_pool");
  bind_input(h, "X", "words", RILL_DTYPE_FP32, DIMS(3, 2), x);
  OK(op_harness_output(h, "Out", "pooled"));
  EXPECT_ERROR(op_harness_run(h), "sequence_pool", "words", "LoD levels");
  op_harness_destroy(h);
  /* unknown pooltype */
  h = harness("sequence_pool");
  bind_seq(h, x, 3, 2, (const uint64_t[]){0, 3}, 2, NULL, 0);
  OK(op_harness_output(h, "Out", "pooled"));
  OK(op_harness_attr_string(h, "pooltype", "MEDIAN"));
  EXPECT_ERROR(op_harness_run(h), "sequence_pool", "pooltype", "MEDIAN");
  op_harness_destroy(h);
  /* integer input */
  int32_t xi[6] = {0};
  h = harness("sequence_pool");
  bind_input(h, "X", "ids", RILL_DTYPE_INT32, DIMS(3, 2), xi);
  OK(op_harness_output(h, "Out", "pooled"));
  EXPECT_ERROR(op_harness_run(h), "sequence_pool", "ids", "int32");
  op_harness_destroy(h);
}

/* Rows of any trailing shape pool element by element: X [4, 2, 3] -> Out [2, 2, 3]. */
Test(sequence_pool, trailing_dims_pool_elementwise) {
  float x[24];
  for (int i = 0; i < 24; i++) x[i] = (float)((i * 7) % 11);
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(4, 2, 3), x);
  set_lod(t, (const uint64_t[]){0, 3, 4}, 3, NULL, 0);
  op_harness *h = harness("sequence_pool");
  OK(op_harness_input(h, "X", "feat", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_output(h, "MaxIndex", "mi"));
  OK(op_harness_attr_string(h, "pooltype", "MAX"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "o"), DIMS(2, 2, 3));
  expect_dims(op_harness_tensor(h, "mi"), DIMS(2, 2, 3));
  float want[12];
  int32_t wi[12];
  ref_pool("MAX", x, 6, (const uint64_t[]){0, 3, 4}, 3, 0, want, wi);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "o")), want, 12, 0);
  const int32_t *mi = rill_tensor_ptr(op_harness_tensor(h, "mi"));
  for (int i = 0; i < 12; i++) cr_assert_eq(mi[i], wi[i]);
  op_harness_destroy(h);
}

/* Gradients: X [8, 3] in sequences of 3, 1, 0 and 4 rows (one empty), every pooltype,
 * by finite differences; values are distinct in every column, so MAX has no ties. */
static op_harness *pool_f64(const char *type, const double *x, int64_t rows, int64_t d,
                            const uint64_t *lod, size_t n) {
  op_harness *h = harness("sequence_pool");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(rows, d), x);
  cr_assert_not_null(t);
  set_lod(t, lod, n, NULL, 0);
  OK(op_harness_input(h, "X", "words", t));
  op_harness_free_tensor(t);
  OK(op_harness_output(h, "Out", "pooled"));
  OK(op_harness_output(h, "MaxIndex", "max_index"));
  OK(op_harness_attr_string(h, "pooltype", type));
  return h;
}

Test(sequence_pool, gradients_match_finite_differences_for_every_pooltype) {
  static const char *const types[] = {"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"};
  const uint64_t lod[] = {0, 3, 4, 4, 8};
  double x[24];
  for (int i = 0; i < 24; i++) x[i] = ((i * 11) % 24) * 0.1 - 1.2;
  for (size_t k = 0; k < RILL_COUNTOF(types); k++) {
    op_harness *h = pool_f64(types[k], x, 8, 3, lod, 5);
    rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
    cr_assert_null(st, "%s: %s", types[k], rill_status_message(st));
    op_harness_destroy(h);
  }
}

Test(sequence_pool, max_gradient_reads_max_index_and_average_divides) {
  /* X@GRAD by hand: MAX puts dOut on the MaxIndex row, AVERAGE spreads dOut / length. */
  const uint64_t lod[] = {0, 2, 5};
  double x[5] = {1, 4, 2, 9, 3}, dout[2] = {10, 20};
  for (int avg = 0; avg < 2; avg++) {
    op_harness *h = harness("sequence_pool_grad");
    rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(5, 1), x);
    set_lod(t, lod, 3, NULL, 0);
    OK(op_harness_input(h, "X", "words", t));
    op_harness_free_tensor(t);
    if (!avg) bind_input(h, "MaxIndex", "mi", RILL_DTYPE_INT32, DIMS(2, 1), (int32_t[]){1, 3});
    bind_input(h, "Out@GRAD", "g", RILL_DTYPE_FP64, DIMS(2, 1), dout);
    OK(op_harness_output(h, "X@GRAD", "dx"));
    OK(op_harness_attr_string(h, "pooltype", avg ? "AVERAGE" : "MAX"));
    OK(op_harness_run(h));
    const double want_max[5] = {0, 10, 0, 20, 0}, want_avg[5] = {5, 5, 20.0 / 3, 20.0 / 3, 20.0 / 3};
    rill_tensor *dx = op_harness_tensor(h, "dx");
    expect_dims(dx, DIMS(5, 1));
    expect_close_f64(rill_tensor_ptr(dx), avg ? want_avg : want_max, 5, 1e-12);
    cr_assert_eq(dx->lod.nlevels, 1, "X@GRAD keeps X's LoD");
    op_harness_destroy(h);
  }
}

Test(sequence_pool, max_gradient_without_max_index_fails) {
  const uint64_t lod[] = {0, 2};
  op_harness *h = harness("sequence_pool_grad");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(2, 1), (float[]){1, 2});
  set_lod(t, lod, 2, NULL, 0);
  OK(op_harness_input(h, "X", "words", t));
  op_harness_free_tensor(t);
  bind_input(h, "Out@GRAD", "g", RILL_DTYPE_FP32, DIMS(1, 1), (float[]){1});
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(op_harness_attr_string(h, "pooltype", "MAX"));
  EXPECT_ERROR(op_harness_run(h), "sequence_pool_grad", "MaxIndex");
  op_harness_destroy(h);
}
