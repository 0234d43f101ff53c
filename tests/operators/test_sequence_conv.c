/* sequence_conv against a naive reference (context window gathered row by row, then a
 * dot product per output column): zero and trainable padding, windows before, around
 * and after the row, sequences shorter than the window, empty sequences. */
#include "op_test.h"
#include "support/grad_check.h"

static void ref_conv(const float *x, int64_t d, const uint64_t *lod, size_t n, const float *f,
                     int64_t nout, int len, int start, const float *pad, float *out) {
  int up = start < 0 ? -start : 0;
  for (size_t s = 0; s + 1 < n; s++)
    for (int64_t t = (int64_t)lod[s]; t < (int64_t)lod[s + 1]; t++)
      for (int64_t o = 0; o < nout; o++) {
        double acc = 0;
        for (int j = 0; j < len; j++) {
          int64_t r = t + start + j;
          for (int64_t k = 0; k < d; k++) {
            float v = 0;
            if (r >= (int64_t)lod[s] && r < (int64_t)lod[s + 1]) v = x[r * d + k];
            else if (pad && r < (int64_t)lod[s]) v = pad[(up + r - (int64_t)lod[s]) * d + k];
            else if (pad) v = pad[(up + r - (int64_t)lod[s + 1]) * d + k];
            acc += (double)v * f[(j * d + k) * nout + o];
          }
        }
        out[t * nout + o] = (float)acc;
      }
}

static void check_conv(int64_t rows, int64_t d, int64_t nout, const uint64_t *lod, size_t n,
                       int len, int start, bool trainable) {
  int up = start < 0 ? -start : 0, down = start + len - 1 > 0 ? start + len - 1 : 0;
  float *x = malloc((size_t)(rows * d + 1) * sizeof *x);
  float *f = malloc((size_t)(len * d * nout) * sizeof *f);
  float *pad = malloc((size_t)((up + down) * d + 1) * sizeof *pad);
  float *want = malloc((size_t)(rows * nout + 1) * sizeof *want);
  for (int64_t i = 0; i < rows * d; i++) x[i] = (float)cos((double)i * 0.7);
  for (int64_t i = 0; i < len * d * nout; i++) f[i] = (float)((i % 7) - 3) * 0.25f;
  for (int64_t i = 0; i < (up + down) * d; i++) pad[i] = 10.0f + (float)i;
  ref_conv(x, d, lod, n, f, nout, len, start, trainable ? pad : NULL, want);
  op_harness *h = harness("sequence_conv");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(rows, d), x);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &n));
  OK(op_harness_input(h, "X", "emb", t));
  op_harness_free_tensor(t);
  bind_input(h, "Filter", "conv.w", RILL_DTYPE_FP32, DIMS(len * d, nout), f);
  if (trainable) bind_input(h, "PaddingData", "conv.pad", RILL_DTYPE_FP32, DIMS(up + down, d), pad);
  OK(op_harness_output(h, "Out", "conv.out"));
  OK(op_harness_attr_int(h, "contextLength", len));
  OK(op_harness_attr_int(h, "contextStart", start));
  OK(op_harness_attr_bool(h, "paddingTrainable", trainable));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "conv.out");
  expect_dims(out, DIMS(rows, nout));
  expect_close_f32(rill_tensor_ptr(out), want, rows * nout, 1e-4f);
  cr_assert_eq(out->lod.nlevels, 1, "Out keeps X's LoD");
  cr_assert_eq(out->lod.levels[0].n, n);
  op_harness_destroy(h);
  free(x); free(f); free(pad); free(want);
}

Test(sequence_conv, matches_reference) {
  const uint64_t l1[] = {0, 4, 9}, l2[] = {0, 1, 1, 6, 8}, l3[] = {0, 30};
  for (int tr = 0; tr < 2; tr++) {
    check_conv(9, 3, 2, l1, 3, 3, -1, tr);  /* centred window */
    check_conv(9, 3, 4, l1, 3, 5, -2, tr);
    check_conv(8, 2, 3, l2, 5, 3, 0, tr);   /* forward window, short and empty sequences */
    check_conv(8, 2, 3, l2, 5, 4, 2, tr);   /* window entirely after the row */
    check_conv(8, 4, 1, l2, 5, 2, -3, tr);  /* entirely before */
    check_conv(30, 16, 8, l3, 2, 3, -1, tr);
  }
  check_conv(9, 3, 2, l1, 3, 1, 0, false); /* contextLength 1: a plain matmul */
}

Test(sequence_conv, errors_name_op_and_variable) {
  float x[12] = {0}, f[36] = {0};
  size_t n = 2;
  /* Filter rows must be contextLength * D */
  op_harness *h = harness("sequence_conv");
  bind_input(h, "X", "emb", RILL_DTYPE_FP32, DIMS(4, 3), x);
  bind_input(h, "Filter", "conv.w", RILL_DTYPE_FP32, DIMS(8, 2), f);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_int(h, "contextLength", 3));
  EXPECT_ERROR(op_harness_run(h), "sequence_conv", "conv.w", "[8, 2]");
  op_harness_destroy(h);
  /* X without LoD */
  h = harness("sequence_conv");
  bind_input(h, "X", "emb", RILL_DTYPE_FP32, DIMS(4, 3), x);
  bind_input(h, "Filter", "conv.w", RILL_DTYPE_FP32, DIMS(9, 2), f);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_int(h, "contextLength", 3));
  EXPECT_ERROR(op_harness_run(h), "sequence_conv", "emb", "LoD");
  op_harness_destroy(h);
  /* paddingTrainable without PaddingData; stride other than 1 */
  h = harness("sequence_conv");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP32, DIMS(4, 3), x);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){(const uint64_t[]){0, 4}}, &n));
  OK(op_harness_input(h, "X", "emb", t));
  op_harness_free_tensor(t);
  bind_input(h, "Filter", "conv.w", RILL_DTYPE_FP32, DIMS(9, 2), f);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_int(h, "contextLength", 3));
  OK(op_harness_attr_bool(h, "paddingTrainable", true));
  EXPECT_ERROR(op_harness_run(h), "sequence_conv", "PaddingData");
  OK(op_harness_attr_bool(h, "paddingTrainable", false));
  OK(op_harness_attr_int(h, "contextStride", 2));
  EXPECT_ERROR(op_harness_run(h), "sequence_conv", "contextStride");
  OK(op_harness_attr_int(h, "contextStride", 1));
  OK(op_harness_run(h));
  op_harness_destroy(h);
}

/* Gradients of X, Filter and (trainable) PaddingData by finite differences, for windows
 * before, around and after the row, short and empty sequences. */
static void check_conv_grad(int64_t rows, int64_t d, int64_t nout, const uint64_t *lod, size_t n,
                            int len, int start, bool trainable) {
  int up = start < 0 ? -start : 0, down = start + len - 1 > 0 ? start + len - 1 : 0;
  double x[64], f[128], pad[32];
  cr_assert(rows * d <= 64 && len * d * nout <= 128 && (up + down) * d <= 32);
  for (int64_t i = 0; i < rows * d; i++) x[i] = cos((double)i * 0.7);
  for (int64_t i = 0; i < len * d * nout; i++) f[i] = sin((double)i * 0.3 + 0.1);
  for (int64_t i = 0; i < (up + down) * d; i++) pad[i] = 0.5 - 0.1 * (double)i;
  op_harness *h = harness("sequence_conv");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, DIMS(rows, d), x);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &n));
  OK(op_harness_input(h, "X", "emb", t));
  op_harness_free_tensor(t);
  bind_input(h, "Filter", "conv.w", RILL_DTYPE_FP64, DIMS(len * d, nout), f);
  if (trainable) bind_input(h, "PaddingData", "conv.pad", RILL_DTYPE_FP64, DIMS(up + down, d), pad);
  OK(op_harness_output(h, "Out", "conv.out"));
  OK(op_harness_attr_int(h, "contextLength", len));
  OK(op_harness_attr_int(h, "contextStart", start));
  OK(op_harness_attr_bool(h, "paddingTrainable", trainable));
  rill_status *st = trainable
                        ? grad_check(h, GC_SLOTS("X", "Filter", "PaddingData"), GC_SLOTS("Out"), NULL)
                        : grad_check(h, GC_SLOTS("X", "Filter"), GC_SLOTS("Out"), NULL);
  cr_assert_null(st, "len %d start %d trainable %d: %s", len, start, trainable,
                 rill_status_message(st));
  op_harness_destroy(h);
}

Test(sequence_conv, gradients_match_finite_differences) {
  const uint64_t l1[] = {0, 4, 9}, l2[] = {0, 1, 1, 6, 8};
  for (int tr = 0; tr < 2; tr++) {
    check_conv_grad(9, 3, 2, l1, 3, 3, -1, tr);
    check_conv_grad(8, 2, 3, l2, 5, 3, 0, tr);
    check_conv_grad(8, 2, 3, l2, 5, 4, 2, tr);
    check_conv_grad(8, 2, 1, l2, 5, 2, -3, tr);
  }
}
