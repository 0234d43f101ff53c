/* ctc_align against a reference written here: LoD and padded forms, int32 and int64,
 * merge_repeated on and off, a non-zero blank, padding_value, the all-empty marker [-1]
 * (Paddle 1.8.5's, checked by tests/python/test_seqops.py); errors. */
#include "op_test.h"

/* The reference alignment of v[0, n): returns the length written to out. */
static int64_t ref_align(const int64_t *v, int64_t n, int64_t blank, bool merge, int64_t *out) {
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    if (v[i] == blank) continue;
    if (merge && i > 0 && v[i - 1] == v[i]) continue;
    out[k++] = v[i];
  }
  return k;
}

static int64_t get(const rill_tensor *t, int64_t i) {
  return t->dtype == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(t))[i]
                                      : ((const int64_t *)rill_tensor_ptr(t))[i];
}

static void bind_lod(op_harness *h, const char *name, rill_dtype dt, const int64_t *v, int64_t n,
                     const uint64_t *lod, size_t nlod) {
  int32_t v32[64];
  for (int64_t i = 0; i < n; i++) v32[i] = (int32_t)v[i];
  rill_tensor *t = op_harness_make(dt, DIMS(n, 1), dt == RILL_DTYPE_INT32 ? (const void *)v32 : v);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nlod));
  OK(op_harness_input(h, "Input", name, t));
  op_harness_free_tensor(t);
}

static const int64_t toks[] = {0, 1, 1, 0, 2, 2, 3, 0, 0, 4, 4, 0, 4, 5, 5, 5};
static const uint64_t lod3[] = {0, 7, 9, 9, 16}; /* an empty sequence among them */

Test(ctc_align, lod_form_matches_reference) {
  const rill_dtype dts[] = {RILL_DTYPE_INT32, RILL_DTYPE_INT64};
  for (int k = 0; k < 2; k++)
    for (int m = 0; m < 2; m++)
      for (int64_t blank = 0; blank <= 4; blank += 4) {
        op_harness *h = harness("ctc_align");
        bind_lod(h, "x", dts[k], toks, 16, lod3, 5);
        OK(op_harness_output(h, "Output", "out"));
        OK(op_harness_attr_int(h, "blank", (int32_t)blank));
        OK(op_harness_attr_bool(h, "merge_repeated", m));
        OK(op_harness_run(h));
        rill_tensor *o = op_harness_tensor(h, "out");
        cr_assert_eq(o->dtype, dts[k]);
        cr_assert_eq(o->lod.nlevels, 1);
        int64_t want[16], at = 0;
        for (int s = 0; s < 4; s++) {
          int64_t n = ref_align(toks + lod3[s], (int64_t)(lod3[s + 1] - lod3[s]), blank, m, want + at);
          at += n;
          cr_assert_eq(o->lod.levels[0].offsets[s + 1], (uint64_t)at, "sequence %d", s);
        }
        expect_dims(o, DIMS(at, 1));
        for (int64_t i = 0; i < at; i++)
          cr_assert_eq(get(o, i), want[i], "token %lld, merge %d blank %lld", (long long)i, m,
                       (long long)blank);
        op_harness_destroy(h);
      }
}

Test(ctc_align, all_empty_gives_minus_one) {
  const int64_t blanks[] = {0, 0, 0};
  const uint64_t lod[] = {0, 2, 3};
  op_harness *h = harness("ctc_align");
  bind_lod(h, "x", RILL_DTYPE_INT64, blanks, 3, lod, 3);
  OK(op_harness_output(h, "Output", "out"));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, "out");
  expect_dims(o, DIMS(1, 1));
  cr_assert_eq(get(o, 0), -1);
  cr_assert_eq(o->lod.levels[0].n, 3);
  for (int i = 0; i < 3; i++) cr_assert_eq(o->lod.levels[0].offsets[i], 0);
  op_harness_destroy(h);
}

Test(ctc_align, padded_form_matches_reference) {
  const int64_t x[] = {0, 1, 1, 0, 2, 3, 3, 0, 0, 9, 7, 7, 7, 7, 7};
  const int64_t lens[] = {5, 3, 0};
  int32_t x32[15], l32[3];
  for (int i = 0; i < 15; i++) x32[i] = (int32_t)x[i];
  for (int i = 0; i < 3; i++) l32[i] = (int32_t)lens[i];
  const rill_dtype dts[] = {RILL_DTYPE_INT32, RILL_DTYPE_INT64};
  for (int k = 0; k < 2; k++) {
    op_harness *h = harness("ctc_align");
    bind_input(h, "Input", "x", dts[k], DIMS(3, 5), k ? (const void *)x : x32);
    bind_input(h, "InputLength", "len", dts[k], DIMS(3, 1), k ? (const void *)lens : l32);
    OK(op_harness_output(h, "Output", "out"));
    OK(op_harness_output(h, "OutputLength", "out_len"));
    OK(op_harness_attr_int(h, "padding_value", -7));
    OK(op_harness_run(h));
    rill_tensor *o = op_harness_tensor(h, "out"), *ol = op_harness_tensor(h, "out_len");
    expect_dims(o, DIMS(3, 5));
    expect_dims(ol, DIMS(3, 1));
    for (int64_t n = 0; n < 3; n++) {
      int64_t want[5];
      int64_t got = ref_align(x + n * 5, lens[n], 0, true, want);
      cr_assert_eq(get(ol, n), got, "row %lld", (long long)n);
      for (int64_t j = 0; j < 5; j++)
        cr_assert_eq(get(o, n * 5 + j), j < got ? want[j] : -7, "row %lld col %lld", (long long)n,
                     (long long)j);
    }
    op_harness_destroy(h);
  }
}

Test(ctc_align, errors_name_op_and_variable) {
  const int64_t x[] = {1, 2, 3, 4, 5, 6};
  op_harness *h = harness("ctc_align");
  bind_input(h, "Input", "ids.nolod", RILL_DTYPE_INT64, DIMS(6, 1), x);
  OK(op_harness_output(h, "Output", "out"));
  EXPECT_ERROR(op_harness_run(h), "ctc_align", "Input", "ids.nolod", "LoD");
  op_harness_destroy(h);
  const int64_t bad_len[] = {3, 4};
  h = harness("ctc_align");
  bind_input(h, "Input", "ids", RILL_DTYPE_INT64, DIMS(2, 3), x);
  bind_input(h, "InputLength", "ids.len", RILL_DTYPE_INT64, DIMS(2, 1), bad_len);
  OK(op_harness_output(h, "Output", "out"));
  OK(op_harness_output(h, "OutputLength", "out_len"));
  EXPECT_ERROR(op_harness_run(h), "ctc_align", "InputLength", "ids.len", "4");
  op_harness_destroy(h);
  const float f[] = {1, 2};
  h = harness("ctc_align");
  bind_input(h, "Input", "probs", RILL_DTYPE_FP32, DIMS(2, 1), f);
  OK(op_harness_output(h, "Output", "out"));
  EXPECT_ERROR(op_harness_run(h), "ctc_align", "Input", "probs", "int");
  op_harness_destroy(h);
}
