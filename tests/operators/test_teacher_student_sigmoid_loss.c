/* teacher_student_sigmoid_loss against the loss written out per label kind, its gradient
 * against finite differences and at the clamp bounds, and its errors. */
#include "nn_test.h"

static double sp(double x) { return log(1 + exp(x)); }

static const double X[] = {0.7, -1.3, 2.1, -0.4, 0.05, -2.6, 1.2, 3.5};
static const double LAB[] = {-2, -1, 0.3, 1.6, 0, 1, -1.5, 1.95};

Test(teacher_student_sigmoid_loss, matches_reference) {
  double want[8];
  for (int i = 0; i < 8; i++) {
    double x = X[i], l = LAB[i];
    if (l < -1) want[i] = sp(x);            /* no teacher, no click */
    else if (l < 0) want[i] = sp(x) - x;    /* no teacher, click */
    else if (l < 1) want[i] = sp(x) + sp(x) - l * x;  /* teacher l, no click */
    else want[i] = sp(x) - x + sp(x) - (l - 1) * x;   /* click and teacher l - 1 */
  }
  op_harness *h = harness("teacher_student_sigmoid_loss");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(8, 1), X);
  bind_input(h, "Label", "lab", RILL_DTYPE_FP64, DIMS(8, 1), LAB);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "y"), DIMS(8, 1));
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "y")), want, 8, 1e-12);
  op_harness_destroy(h);

  float xf[8], lf[8], wf[8];
  for (int i = 0; i < 8; i++) xf[i] = (float)X[i], lf[i] = (float)LAB[i], wf[i] = (float)want[i];
  h = harness("teacher_student_sigmoid_loss");
  bind_input(h, "X", "x", RILL_DTYPE_FP32, DIMS(8, 1), xf);
  bind_input(h, "Label", "lab", RILL_DTYPE_FP32, DIMS(8, 1), lf);
  OK(op_harness_output(h, "Y", "y"));
  OK(op_harness_run(h));
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "y")), wf, 8, 1e-5f);
  op_harness_destroy(h);
}

static void set_bounds(op_harness *h, const void *arg) {
  const float *b = arg;
  OK(op_harness_attr_float(h, "soft_max_up_bound", b[0]));
  OK(op_harness_attr_float(h, "soft_max_lower_bound", b[1]));
}

Test(teacher_student_sigmoid_loss, gradients_match_finite_differences) {
  static const float bounds[2] = {15.0f, -15.0f};
  fd_case fc = {.op = "teacher_student_sigmoid_loss", .out_slots = {"Y"}, .out_names = {"y"},
                .nout = 1, .attrs = set_bounds, .arg = bounds, .tol = 1e-6};
  fc.in[fc.nin++] = (fd_input){"X", "x", {8, 1}, 2, (double *)X, true};
  fc.in[fc.nin++] = (fd_input){"Label", "lab", {8, 1}, 2, (double *)LAB, false};
  fd_check(&fc);
}

Test(teacher_student_sigmoid_loss, gradient_is_zero_beyond_the_bounds) {
  static const double x[] = {2.5, -2.5, 1.0, -3.0};
  static const double lab[] = {0.5, -1, 1.5, -2};
  static const double dy[] = {1, 1, 2, 1};
  op_harness *h = harness("teacher_student_sigmoid_loss_grad");
  bind_input(h, "X", "x", RILL_DTYPE_FP64, DIMS(4, 1), x);
  bind_input(h, "Label", "lab", RILL_DTYPE_FP64, DIMS(4, 1), lab);
  bind_input(h, "Y@GRAD", "y@GRAD", RILL_DTYPE_FP64, DIMS(4, 1), dy);
  OK(op_harness_output(h, "X@GRAD", "x@GRAD"));
  OK(op_harness_attr_float(h, "soft_max_up_bound", 2.0f));
  OK(op_harness_attr_float(h, "soft_max_lower_bound", -2.0f));
  OK(op_harness_run(h));
  double p = 1 / (1 + exp(-1.0));
  double want[] = {0, 0, -2 * (1.5 - 2 * p), 0};
  expect_close_f64(rill_tensor_ptr(op_harness_tensor(h, "x@GRAD")), want, 4, 1e-12);
  op_harness_destroy(h);
}

Test(teacher_student_sigmoid_loss, bad_input_fails_naming_op_and_variable) {
  op_harness *h = harness("teacher_student_sigmoid_loss");
  bind_input(h, "X", "score", RILL_DTYPE_FP32, DIMS(4, 1), NULL);
  bind_input(h, "Label", "clk", RILL_DTYPE_FP32, DIMS(3, 1), NULL);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_infer(h), "teacher_student_sigmoid_loss", "Label (clk)", "score");
  op_harness_destroy(h);

  h = harness("teacher_student_sigmoid_loss");
  bind_input(h, "X", "score", RILL_DTYPE_FP32, DIMS(4, 3), NULL);
  bind_input(h, "Label", "clk", RILL_DTYPE_FP32, DIMS(4, 1), NULL);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_infer(h), "teacher_student_sigmoid_loss", "X (score)", "[N, 1]");
  op_harness_destroy(h);

  h = harness("teacher_student_sigmoid_loss");
  bind_input(h, "X", "score", RILL_DTYPE_INT64, DIMS(4, 1), NULL);
  bind_input(h, "Label", "clk", RILL_DTYPE_FP32, DIMS(4, 1), NULL);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_infer(h), "teacher_student_sigmoid_loss", "X (score)", "int64");
  op_harness_destroy(h);

  /* at run time too: a Label whose rows differ from X's */
  static const double x[] = {1, 2, 3}, lab[] = {0, 1};
  h = harness("teacher_student_sigmoid_loss");
  bind_input(h, "X", "score", RILL_DTYPE_FP64, DIMS(3, 1), x);
  bind_input(h, "Label", "clk", RILL_DTYPE_FP64, DIMS(2, 1), lab);
  OK(op_harness_output(h, "Y", "y"));
  EXPECT_ERROR(op_harness_run(h), "teacher_student_sigmoid_loss", "clk");
  op_harness_destroy(h);
}
