/* crf_decoding against the best path by enumeration (crf_test.h), on LoD and padded
 * inputs, with and without Label; and the errors. */
#include "op_test.h"

#include "crf_test.h"

enum { D = 4, ROWS = 10 };
static const uint64_t lod[] = {0, 4, 4, 5, 10}; /* 4, 0, 1 and 5 steps */

static void fill(double *x, double *w) {
  for (int i = 0; i < ROWS * D; i++) x[i] = sin(2.1 * i + 0.3) * 2;
  for (int i = 0; i < (D + 2) * D; i++) w[i] = cos(1.7 * i + 0.5) * 1.5;
}

static void best_paths(const double *x, const double *w, int64_t *want) {
  for (int i = 0; i + 1 < (int)RILL_COUNTOF(lod); i++) {
    int64_t s = (int64_t)lod[i], L = (int64_t)(lod[i + 1] - lod[i]);
    if (L) crf_enumerate(x + s * D, w, D, L, NULL, NULL, want + s);
  }
}

Test(crf_decoding, lod_paths_are_the_best_paths_in_both_dtypes) {
  double x[ROWS * D], w[(D + 2) * D];
  float xf[ROWS * D], wf[(D + 2) * D];
  int64_t want[ROWS];
  fill(x, w);
  for (int i = 0; i < ROWS * D; i++) xf[i] = (float)x[i], x[i] = xf[i];
  for (int i = 0; i < (D + 2) * D; i++) wf[i] = (float)w[i], w[i] = wf[i];
  best_paths(x, w, want);
  for (int f32 = 0; f32 < 2; f32++) {
    op_harness *h = harness("crf_decoding");
    rill_dtype dt = f32 ? RILL_DTYPE_FP32 : RILL_DTYPE_FP64;
    crf_bind_seqs(h, lod, RILL_COUNTOF(lod), "Emission", "emission",
                  dt, DIMS(ROWS, D), f32 ? (const void *)xf : (const void *)x);
    bind_input(h, "Transition", "crfw", dt, DIMS(D + 2, D), f32 ? (const void *)wf : (const void *)w);
    OK(op_harness_output(h, "ViterbiPath", "path"));
    OK(op_harness_run(h));
    rill_tensor *p = op_harness_tensor(h, "path");
    expect_dims(p, DIMS(ROWS, 1));
    cr_assert_eq(p->lod.nlevels, 1, "the path keeps Emission's LoD");
    cr_assert_eq(p->lod.levels[0].n, RILL_COUNTOF(lod));
    const int64_t *got = rill_tensor_ptr(p);
    for (int r = 0; r < ROWS; r++) cr_assert_eq(got[r], want[r], "row %d (float32 %d)", r, f32);
    op_harness_destroy(h);
  }
}

Test(crf_decoding, label_marks_the_rows_decoded_right) {
  double x[ROWS * D], w[(D + 2) * D];
  int64_t want[ROWS], y[ROWS];
  fill(x, w);
  best_paths(x, w, want);
  for (int r = 0; r < ROWS; r++) y[r] = r % 3 ? want[r] : (want[r] + 1) % D;
  op_harness *h = harness("crf_decoding");
  crf_bind_seqs(h, lod, RILL_COUNTOF(lod), "Emission", "emission",
                RILL_DTYPE_FP64, DIMS(ROWS, D), x);
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D), w);
  crf_bind_seqs(h, lod, RILL_COUNTOF(lod), "Label", "label", RILL_DTYPE_INT64, DIMS(ROWS, 1), y);
  OK(op_harness_output(h, "ViterbiPath", "path"));
  OK(op_harness_run(h));
  const int64_t *got = rill_tensor_ptr(op_harness_tensor(h, "path"));
  for (int r = 0; r < ROWS; r++) cr_assert_eq(got[r], r % 3 ? 1 : 0, "row %d", r);
  op_harness_destroy(h);
}

Test(crf_decoding, padded_rows_decode_up_to_length_and_zero_after) {
  double x[ROWS * D], w[(D + 2) * D], xp[4 * 6 * D];
  int64_t want[ROWS], len[4], yp[24] = {0};
  fill(x, w);
  best_paths(x, w, want);
  for (int i = 0; i < 4; i++) {
    len[i] = (int64_t)(lod[i + 1] - lod[i]);
    for (int k = 0; k < 6; k++) {
      for (int j = 0; j < D; j++)
        xp[(i * 6 + k) * D + j] = k < len[i] ? x[((int)lod[i] + k) * D + j] : 5.0 * (j == 3);
      if (k < len[i]) yp[i * 6 + k] = k == 0 ? (want[lod[i]] + 1) % D : want[(int)lod[i] + k];
    }
  }
  for (int with_label = 0; with_label < 2; with_label++) {
    op_harness *h = harness("crf_decoding");
    bind_input(h, "Emission", "emission", RILL_DTYPE_FP64, DIMS(4, 6, D), xp);
    bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D), w);
    bind_input(h, "Length", "length", RILL_DTYPE_INT64, DIMS(4), len);
    if (with_label) bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(4, 6), yp);
    OK(op_harness_output(h, "ViterbiPath", "path"));
    OK(op_harness_run(h));
    rill_tensor *p = op_harness_tensor(h, "path");
    expect_dims(p, DIMS(4, 6));
    const int64_t *got = rill_tensor_ptr(p);
    for (int i = 0; i < 4; i++)
      for (int k = 0; k < 6; k++) {
        int64_t e = k >= len[i] ? 0 : with_label ? k != 0 : want[(int)lod[i] + k];
        cr_assert_eq(got[i * 6 + k], e, "row %d step %d label %d", i, k, with_label);
      }
    op_harness_destroy(h);
  }
}

Test(crf_decoding, bad_inputs_are_errors_naming_them) {
  double x[ROWS * D], w[(D + 2) * D];
  fill(x, w);
  op_harness *h = harness("crf_decoding");
  bind_input(h, "Emission", "emission", RILL_DTYPE_FP64, DIMS(ROWS, D), x);
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D), w);
  OK(op_harness_output(h, "ViterbiPath", "path"));
  EXPECT_ERROR(op_harness_run(h), "crf_decoding", "Emission", "emission", "LoD");
  crf_bind_seqs(h, lod, RILL_COUNTOF(lod), "Emission", "emission",
                RILL_DTYPE_FP64, DIMS(ROWS, D), x);
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D - 1), w);
  EXPECT_ERROR(op_harness_run(h), "crf_decoding", "Transition", "crfw", "[D + 2, D]");
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D), w);
  bind_input(h, "Label", "label", RILL_DTYPE_INT64, DIMS(ROWS / 2, 1), (int64_t[ROWS / 2]){0});
  EXPECT_ERROR(op_harness_run(h), "crf_decoding", "Label", "label", "one tag per row");
  op_harness_destroy(h);
  h = harness("crf_decoding");
  bind_input(h, "Emission", "emission", RILL_DTYPE_FP64, DIMS(2, 5, D), x);
  bind_input(h, "Transition", "crfw", RILL_DTYPE_FP64, DIMS(D + 2, D), w);
  bind_input(h, "Length", "length", RILL_DTYPE_INT64, DIMS(2), (int64_t[]){5, -1});
  OK(op_harness_output(h, "ViterbiPath", "path"));
  EXPECT_ERROR(op_harness_run(h), "crf_decoding", "Length", "length -1");
  op_harness_destroy(h);
}
