/* row_conv against a reference loop (LoD sequences, one empty, and a padded batch), its
 * gradients against finite differences, and its errors. */
#include "nn_test.h"

#include "support/grad_check.h"

enum { D = 3, K1 = 3 };
static const uint64_t LOD[] = {0, 4, 4, 5, 9}; /* 4, 0, 1 and 4 steps */

static op_harness *rc_harness(const double *x, const int64_t *xd, size_t nd, bool lod,
                              const double *f) {
  op_harness *h = harness("row_conv");
  rill_tensor *t = op_harness_make(RILL_DTYPE_FP64, xd, nd, x);
  cr_assert_not_null(t);
  if (lod) {
    const uint64_t *levels[1] = {LOD};
    size_t counts[1] = {RILL_COUNTOF(LOD)};
    OK(rill_tensor_set_lod(t, 1, levels, counts));
  }
  OK(op_harness_input(h, "X", "x", t));
  op_harness_free_tensor(t);
  bind_input(h, "Filter", "f", RILL_DTYPE_FP64, DIMS(K1, D), f);
  OK(op_harness_output(h, "Out", "out"));
  return h;
}

/* Reference over sequences [b, e) of `seqs` spans. */
static void reference(const double *x, const double *f, const int64_t *spans, int n,
                      double *out) {
  for (int s = 0; s < n; s++)
    for (int64_t t = spans[2 * s]; t < spans[2 * s + 1]; t++)
      for (int j = 0; j < D; j++) {
        double acc = 0;
        for (int i = 0; i < K1 && t + i < spans[2 * s + 1]; i++)
          acc += x[(t + i) * D + j] * f[i * D + j];
        out[t * D + j] = acc;
      }
}

Test(row_conv, matches_reference_and_finite_differences) {
  double x[9 * D], f[K1 * D], want[9 * D];
  fill_rand(x, 9 * D, 131);
  fill_rand(f, K1 * D, 132);
  static const int64_t lod_spans[] = {0, 4, 4, 4, 4, 5, 5, 9};
  reference(x, f, lod_spans, 4, want);
  grad_check_opts o = {.rtol = 1e-6, .atol = 1e-6};
  op_harness *h = rc_harness(x, DIMS(9, D), true, f);
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), want, 9 * D, 1e-12);
  OK(grad_check(h, GC_SLOTS("X", "Filter"), GC_SLOTS("Out"), &o));
  op_harness_destroy(h);

  static const int64_t padded[] = {0, 4, 4, 8};
  double w2[8 * D];
  reference(x, f, padded, 2, w2);
  h = rc_harness(x, DIMS(2, 4, D), false, f);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(2, 4, D));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), w2, 8 * D, 1e-12);
  OK(grad_check(h, GC_SLOTS("X", "Filter"), GC_SLOTS("Out"), &o));
  op_harness_destroy(h);
}

Test(row_conv, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("row_conv");
  bind_input(h, "X", "frames", RILL_DTYPE_FP32, DIMS(9, D), NULL);
  bind_input(h, "Filter", "look", RILL_DTYPE_FP32, DIMS(K1, D + 1), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "row_conv", "Filter (look)", "frames");
  op_harness_destroy(h);

  double x[9 * D] = {0}, f[K1 * D] = {0};
  h = harness("row_conv");
  bind_input(h, "X", "frames", RILL_DTYPE_FP64, DIMS(9, D), x); /* 2-D without LoD */
  bind_input(h, "Filter", "look", RILL_DTYPE_FP64, DIMS(K1, D), f);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_run(h), "row_conv", "X (frames)", "no LoD");
  op_harness_destroy(h);
}
