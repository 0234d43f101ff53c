/* norm (l2_normalize) against a reference on a middle and the last axis, its gradient by
 * finite differences; clip_by_norm below and above max_norm; bad axes named. */
#include "op_test.h"
#include "support/grad_check.h"

static op_harness *norm_h(const double *x, int axis) {
  op_harness *h = harness("norm");
  bind_input(h, "X", "feat", RILL_DTYPE_FP64, DIMS(2, 3, 4), x);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Norm", "nrm"));
  OK(op_harness_attr_int(h, "axis", axis));
  OK(op_harness_attr_float(h, "epsilon", 1e-6f));
  return h;
}

Test(normalize, norm_forward_and_gradient_on_two_axes) {
  double x[24];
  for (int i = 0; i < 24; i++) x[i] = sin(i * 0.7) + 0.1;
  for (int a = 0; a < 2; a++) {
    int axis = a ? -1 : 1;
    op_harness *h = norm_h(x, axis);
    OK(op_harness_run(h));
    const double *out = rill_tensor_ptr(op_harness_tensor(h, "out"));
    const rill_tensor *nt = op_harness_tensor(h, "nrm");
    if (axis == 1) expect_dims(nt, DIMS(2, 1, 4));
    else expect_dims(nt, DIMS(2, 3, 1));
    double eps = (double)1e-6f;
    for (int n = 0; n < 2; n++)
      for (int c = 0; c < 3; c++)
        for (int w = 0; w < 4; w++) {
          double s = 0;
          for (int k = 0; k < (axis == 1 ? 3 : 4); k++) {
            double v = axis == 1 ? x[(n * 3 + k) * 4 + w] : x[(n * 3 + c) * 4 + k];
            s += v * v;
          }
          int i = (n * 3 + c) * 4 + w;
          cr_assert(fabs(out[i] - x[i] / sqrt(s + eps)) < 1e-12, "axis %d [%d]", axis, i);
        }
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL));
    op_harness_destroy(h);
  }
}

Test(normalize, clip_by_norm_scales_only_above_max_norm) {
  double x[4] = {3, 0, -4, 0}; /* L2 norm 5 */
  for (int k = 0; k < 2; k++) {
    float maxn = k ? 10.0f : 2.0f;
    op_harness *h = harness("clip_by_norm");
    bind_input(h, "X", "grad", RILL_DTYPE_FP64, DIMS(2, 2), x);
    OK(op_harness_output(h, "Out", "clipped"));
    OK(op_harness_attr_float(h, "max_norm", maxn));
    OK(op_harness_run(h));
    double f = k ? 1.0 : 2.0 / 5.0, want[4] = {3 * f, 0, -4 * f, 0};
    expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "clipped")), want, 4, 1e-12);
    op_harness_destroy(h);
  }
}

Test(normalize, axis_out_of_range_is_named) {
  op_harness *h = harness("norm");
  bind_input(h, "X", "feat", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "Norm", "nrm"));
  OK(op_harness_attr_int(h, "axis", 2));
  EXPECT_ERROR(op_harness_infer(h), "norm", "axis 2", "X (feat)", "rank 2");
  op_harness_destroy(h);
  h = harness("clip_by_norm");
  bind_input(h, "X", "ids", RILL_DTYPE_INT64, DIMS(2), NULL);
  OK(op_harness_output(h, "Out", "out"));
  EXPECT_ERROR(op_harness_infer(h), "clip_by_norm", "X (ids)", "int64");
  op_harness_destroy(h);
}
