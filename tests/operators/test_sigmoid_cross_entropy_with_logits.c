/* sigmoid_cross_entropy_with_logits: forward against the formula, ignore_index and
 * normalize (numbers checked against Paddle 1.8), gradients by finite differences. */
#include "op_test.h"
#include "support/grad_check.h"

static op_harness *sce_harness(rill_dtype dt, const void *x, const void *l, int ignore, bool norm) {
  op_harness *h = harness("sigmoid_cross_entropy_with_logits");
  bind_input(h, "X", "logits", dt, DIMS(2, 3), x);
  bind_input(h, "Label", "label", dt, DIMS(2, 3), l);
  OK(op_harness_output(h, "Out", "loss"));
  OK(op_harness_attr_int(h, "ignore_index", ignore));
  OK(op_harness_attr_bool(h, "normalize", norm));
  return h;
}

Test(sigmoid_cross_entropy_with_logits, matches_formula_with_ignore_and_normalize) {
  const float x[6] = {1.5f, -2, 0.3f, 0.7f, 4, -1}, l[6] = {1, 0, -1, 0.3f, -1, 1};
  /* Paddle 1.8.5 with ignore_index -1, normalize true: */
  const float paddle[6] = {0.05035333f, 0.03173201f, 0, 0.22329652f, 0, 0.3283154f};
  op_harness *h = sce_harness(RILL_DTYPE_FP32, x, l, -1, true);
  OK(op_harness_run(h));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "loss")), paddle, 6, 1e-6f);
  op_harness_destroy(h);
  /* Default ignore_index -100, no normalize: the plain formula everywhere. */
  float want[6];
  for (int i = 0; i < 6; i++)
    want[i] = (float)(fmax(x[i], 0) - x[i] * l[i] + log1p(exp(-fabs(x[i]))));
  h = sce_harness(RILL_DTYPE_FP32, x, l, -100, false);
  OK(op_harness_run(h));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "loss")), want, 6, 1e-6f);
  op_harness_destroy(h);
}

Test(sigmoid_cross_entropy_with_logits, gradient_matches_paddle_and_finite_differences) {
  const double x[6] = {1.5, -2, 0.3, 0.7, 4, -1}, l[6] = {1, 0, -1, 0.3, -1, 1};
  for (int norm = 0; norm < 2; norm++) {
    op_harness *h = sce_harness(RILL_DTYPE_FP64, x, l, -1, norm);
    rill_status *st = grad_check(h, GC_SLOTS("X"), GC_SLOTS("Out"), NULL);
    cr_assert_null(st, "normalize %d: %s", norm, rill_status_message(st));
    op_harness_destroy(h);
  }
  /* Paddle 1.8.5's X@GRAD of reduce_sum(loss), ignore_index -1, normalize true. */
  const double paddle[6] = {-0.04560639, 0.02980073, 0, 0.09204693, 0, -0.18276465};
  op_harness *h = harness("sigmoid_cross_entropy_with_logits_grad");
  bind_input(h, "X", "logits", RILL_DTYPE_FP64, DIMS(2, 3), x);
  bind_input(h, "Label", "label", RILL_DTYPE_FP64, DIMS(2, 3), l);
  bind_input(h, "Out@GRAD", "g", RILL_DTYPE_FP64, DIMS(2, 3), (double[]){1, 1, 1, 1, 1, 1});
  OK(op_harness_output(h, "X@GRAD", "dx"));
  OK(op_harness_attr_int(h, "ignore_index", -1));
  OK(op_harness_attr_bool(h, "normalize", true));
  OK(op_harness_run(h));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "dx")), paddle, 6, 1e-7);
  op_harness_destroy(h);
}

Test(sigmoid_cross_entropy_with_logits, label_shape_mismatch_fails) {
  op_harness *h = harness("sigmoid_cross_entropy_with_logits");
  bind_input(h, "X", "logits", RILL_DTYPE_FP32, DIMS(2, 3), NULL);
  bind_input(h, "Label", "label", RILL_DTYPE_FP32, DIMS(2, 1), NULL);
  OK(op_harness_output(h, "Out", "loss"));
  EXPECT_ERROR(op_harness_infer(h), "sigmoid_cross_entropy_with_logits", "Label (label)",
               "X (logits)");
  op_harness_destroy(h);
}
