/* temporal_shift against a reference loop, its gradient against finite differences, and
 * its errors. */
#include "nn_test.h"

#include "support/grad_check.h"

static void set_attrs(op_harness *h, const void *arg) {
  const float *a = arg;
  OK(op_harness_attr_int(h, "seg_num", (int)a[0]));
  OK(op_harness_attr_float(h, "shift_ratio", a[1]));
}

static void check(int clips, int seg, int c, int hw, float ratio) {
  int64_t dims[4] = {clips * seg, c, 1, hw}, n = clips * seg * c * hw;
  double *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
  fill_rand(x, n, 101);
  int c1 = (int)(c * ratio), c2 = (int)(c * 2 * ratio);
  for (int k = 0; k < clips; k++)
    for (int t = 0; t < seg; t++)
      for (int ch = 0; ch < c; ch++)
        for (int p = 0; p < hw; p++) {
          int src = ch < c1 ? t - 1 : ch < c2 ? t + 1 : t;
          int64_t at = (((int64_t)k * seg + t) * c + ch) * hw + p;
          y[at] = src < 0 || src >= seg ? 0 : x[(((int64_t)k * seg + src) * c + ch) * hw + p];
        }
  float attrs[2] = {(float)seg, ratio};
  op_harness *h = harness("temporal_shift");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, dims, 4, x);
  OK(op_harness_output(h, "Out", "out"));
  set_attrs(h, attrs);
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "out")), y, n, 0);
  grad_check_opts o = {.rtol = 1e-6, .atol = 1e-6};
  OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), &o));
  op_harness_destroy(h);
  free(x);
  free(y);
}

Test(temporal_shift, matches_reference_and_finite_differences) {
  check(2, 3, 4, 2, 0.25f);
  check(1, 4, 8, 3, 0.125f);
  check(2, 2, 5, 1, 0.3f); /* c1 = 1, c2 = 3 */
}

Test(temporal_shift, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("temporal_shift");
  bind_input(h, "X", "frames", RILL_DTYPE_FP32, DIMS(5, 4, 2, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "seg_num", 2));
  EXPECT_ERROR(op_harness_infer(h), "temporal_shift", "X (frames)", "seg_num 2");
  op_harness_destroy(h);

  h = harness("temporal_shift");
  bind_input(h, "X", "frames", RILL_DTYPE_FP32, DIMS(4, 4, 2, 2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_attr_int(h, "seg_num", 2));
  OK(op_harness_attr_float(h, "shift_ratio", 0.5f));
  EXPECT_ERROR(op_harness_infer(h), "temporal_shift", "shift_ratio 0.5");
  op_harness_destroy(h);
}
