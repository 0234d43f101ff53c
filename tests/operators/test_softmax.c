#include "op_test.h"

/* Reference along `axis` of dims, from the definition in long double. */
static void ref_softmax(const double *x, const int64_t *d, int r, int axis, double *out) {
  int64_t outer = 1, inner = 1, n = d[axis];
  for (int i = 0; i < axis; i++) outer *= d[i];
  for (int i = axis + 1; i < r; i++) inner *= d[i];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t j = 0; j < inner; j++) {
      long double mx = -INFINITY, s = 0;
      for (int64_t k = 0; k < n; k++) {
        double v = x[(o * n + k) * inner + j];
        if (v > mx) mx = v;
      }
      /* Paddle's CPU softmax clips the shifted logits from below at -64 */
      for (int64_t k = 0; k < n; k++) s += expl(fmaxl(x[(o * n + k) * inner + j] - mx, -64));
      for (int64_t k = 0; k < n; k++)
        out[(o * n + k) * inner + j] = (double)(expl(fmaxl(x[(o * n + k) * inner + j] - mx, -64)) / s);
    }
}

static void run_softmax(rill_dtype dt, const int64_t *d, size_t r, int axis, bool attr,
                        double scale, bool inplace) {
  int64_t n = numel_of(d, r);
  double *x = malloc((size_t)n * sizeof *x), *want = malloc((size_t)n * sizeof *want);
  for (int64_t i = 0; i < n; i++) x[i] = ((double)((i * 7) % 9) - 4) * scale;
  int ax = axis < 0 ? axis + (int)r : axis;
  ref_softmax(x, d, (int)r, ax, want);
  op_harness *h = harness("softmax");
  float *xf = malloc((size_t)n * sizeof *xf);
  for (int64_t i = 0; i < n; i++) xf[i] = (float)x[i];
  bind_input(h, "X", "x", dt, d, r, dt == RILL_DTYPE_FP32 ? (void *)xf : (void *)x);
  const char *oname = inplace ? "x" : "o";
  OK(op_harness_output(h, "Out", oname));
  if (attr) OK(op_harness_attr_int(h, "axis", axis));
  OK(op_harness_run(h));
  rill_tensor *o = op_harness_tensor(h, oname);
  expect_dims(o, d, r);
  for (int64_t i = 0; i < n; i++) {
    double got = dt == RILL_DTYPE_FP32 ? ((float *)rill_tensor_ptr(o))[i] : ((double *)rill_tensor_ptr(o))[i];
    cr_assert(fabs(got - want[i]) <= (dt == RILL_DTYPE_FP32 ? 1e-6 : 1e-13), "[%lld] %g != %g",
              (long long)i, got, want[i]);
    /* relative too, so the clipped tail (exp(-64) / sum) is checked */
    cr_assert(fabs(got - want[i]) <= (dt == RILL_DTYPE_FP32 ? 1e-5 : 1e-12) * want[i] + 1e-30,
              "[%lld] %.10g != %.10g (relative)", (long long)i, got, want[i]);
    cr_assert(isfinite(got));
  }
  op_harness_destroy(h);
  free(x);
  free(xf);
  free(want);
}

Test(softmax, last_axis_by_default) {
  run_softmax(RILL_DTYPE_FP32, DIMS(4, 10), -1, false, 1, false);
  run_softmax(RILL_DTYPE_FP64, DIMS(3, 2, 5), -1, false, 1, false);
}

Test(softmax, other_axes) {
  run_softmax(RILL_DTYPE_FP32, DIMS(3, 4, 5), 1, true, 1, false);
  run_softmax(RILL_DTYPE_FP64, DIMS(3, 4, 5), 0, true, 1, false);
  run_softmax(RILL_DTYPE_FP32, DIMS(3, 4, 5), -2, true, 1, false);
}

Test(softmax, numerically_stable_for_large_inputs) {
  run_softmax(RILL_DTYPE_FP32, DIMS(2, 6), -1, false, 300, false);
  run_softmax(RILL_DTYPE_FP64, DIMS(2, 6), -1, false, 1000, false);
}

Test(softmax, in_place) {
  run_softmax(RILL_DTYPE_FP32, DIMS(5, 7), -1, false, 1, true);
  run_softmax(RILL_DTYPE_FP32, DIMS(5, 7, 3), 1, true, 1, true);
}

Test(softmax, axis_out_of_range_names_op_and_variable) {
  op_harness *h = harness("softmax");
  bind_input(h, "X", "logits", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_attr_int(h, "axis", 2));
  EXPECT_ERROR(op_harness_run(h), "softmax", "logits", "axis");
  op_harness_destroy(h);
}

/* Rows long enough for the 8-lane float path, with tails of every length (2074: a
 * word2vec vocabulary), against the reference; -inf entries (masked) come out as
 * exp(-64) / sum, the clipped value Paddle's CPU softmax gives them, and a NaN makes its
 * row NaN. */
Test(softmax, long_rows_masks_and_nan) {
  const int64_t lens[] = {8, 9, 15, 16, 23, 2074};
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    run_softmax(RILL_DTYPE_FP32, DIMS(2, lens[li]), -1, false, 1.7, false);
    run_softmax(RILL_DTYPE_FP32, DIMS(2, lens[li]), -1, false, 40, true);
  }
  float x[2 * 13];
  for (int i = 0; i < 26; i++) x[i] = (float)(i % 5) * 0.5f;
  x[3] = x[11] = -INFINITY;
  x[13 + 6] = NAN;
  op_harness *h = harness("softmax");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(2, 13), x);
  OK(op_harness_output(h, "Out", "o"));
  OK(op_harness_run(h));
  const float *o = rill_tensor_ptr(op_harness_tensor(h, "o"));
  double s = 0;
  for (int i = 0; i < 13; i++) s += o[i];
  double ms = 0;
  for (int i = 0; i < 13; i++) ms += i == 3 || i == 11 ? exp(-64.0) : exp(x[i] - 2.0);
  for (int i = 3; i < 13; i += 8)
    cr_expect(fabs(o[i] - exp(-64.0) / ms) <= 1e-5 * exp(-64.0), "masked entry [%d]: %g", i, o[i]);
  cr_expect(fabs(s - 1) < 1e-6, "row 0 sums to %.9g", s);
  for (int i = 13; i < 26; i++) cr_expect(isnan(o[i]), "row 1 [%d] = %g with a NaN in the row", i - 13, o[i]);
  op_harness_destroy(h);
}
