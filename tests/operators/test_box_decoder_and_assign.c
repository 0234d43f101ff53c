/* box_decoder_and_assign: a hand-decoded ROI (centre xmin + w / 2, widths +1, xmax - 1),
 * the delta clip, the assignment of the best class but 0 (or the ROI when none scores
 * above -1), LoD carried; the errors. */
#include "op_test.h"

static op_harness *bda_harness(const float *p, const float *t, const float *s, int64_t r,
                               int64_t c, float clip) {
  const float var[4] = {0.1f, 0.1f, 0.2f, 0.2f};
  op_harness *h = harness("box_decoder_and_assign");
  bind_input(h, "PriorBox", "rois", RILL_DTYPE_FP32, DIMS(r, 4), p);
  bind_input(h, "PriorBoxVar", "var", RILL_DTYPE_FP32, DIMS(4), var);
  bind_input(h, "TargetBox", "deltas", RILL_DTYPE_FP32, DIMS(r, c * 4), t);
  bind_input(h, "BoxScore", "scores", RILL_DTYPE_FP32, DIMS(r, c), s);
  OK(op_harness_output(h, "DecodeBox", "decoded"));
  OK(op_harness_output(h, "OutputAssignBox", "assigned"));
  OK(op_harness_attr_float(h, "box_clip", clip));
  return h;
}

Test(box_decoder_and_assign, hand_decoded) {
  /* ROI [0, 0, 9, 19]: 10 x 20, centre (5, 10) */
  const float p[8] = {0, 0, 9, 19, 2, 2, 5, 5};
  const float t[2 * 8] = {0, 0, 0, 0, 1, -1, 5, 50,     /* class 1: dw, dh clipped */
                          0, 0, 0, 0, 0.5f, 0.5f, 0, 0};
  const float s[4] = {0.9f, 0.3f, 0.9f, -2.0f};
  op_harness *h = bda_harness(p, t, s, 2, 2, 0.5f);
  OK(op_harness_run(h));
  const float *d = rill_tensor_ptr(op_harness_tensor(h, "decoded"));
  expect_dims(op_harness_tensor(h, "decoded"), DIMS(2, 8));
  /* class 0: the ROI back with xmax - 1: [0, 0, 9, 19] */
  const float c0[4] = {0, 0, 9, 19};
  expect_close_f32(d, c0, 4, 1e-6f);
  /* class 1: centre (5 + 0.1 * 10, 10 - 0.1 * 20) = (6, 8); width 10 e^0.5 (dw = 0.2 * 5
   * clipped to 0.5), height 20 e^0.5 */
  double w = 10 * exp(0.5), hh = 20 * exp(0.5);
  const float c1[4] = {(float)(6 - w / 2), (float)(8 - hh / 2), (float)(6 + w / 2 - 1),
                       (float)(8 + hh / 2 - 1)};
  expect_close_f32(d + 4, c1, 4, 1e-5f);
  const float *a = rill_tensor_ptr(op_harness_tensor(h, "assigned"));
  expect_close_f32(a, c1, 4, 1e-5f);     /* class 1 scores 0.3 > -1 */
  expect_close_f32(a + 4, p + 4, 4, 0);  /* -2 is not above -1: the ROI */
  op_harness_destroy(h);
}

Test(box_decoder_and_assign, errors_name_op_and_variable) {
  float p[8] = {0}, t[24] = {0}, s[6] = {0};
  op_harness *h = bda_harness(p, t, s, 2, 2, 4.0f);
  OK(op_harness_run(h));
  op_harness_destroy(h);
  h = harness("box_decoder_and_assign");
  const float var[4] = {0.1f, 0.1f, 0.2f, 0.2f};
  bind_input(h, "PriorBox", "rois", RILL_DTYPE_FP32, DIMS(2, 4), p);
  bind_input(h, "PriorBoxVar", "var", RILL_DTYPE_FP32, DIMS(4), var);
  bind_input(h, "TargetBox", "deltas", RILL_DTYPE_FP32, DIMS(2, 12), t);
  bind_input(h, "BoxScore", "scores", RILL_DTYPE_FP32, DIMS(2, 2), s);
  OK(op_harness_output(h, "DecodeBox", "decoded"));
  OK(op_harness_output(h, "OutputAssignBox", "assigned"));
  EXPECT_ERROR(op_harness_run(h), "box_decoder_and_assign", "deltas", "scores", "[R, C * 4]");
  op_harness_destroy(h);
  h = harness("box_decoder_and_assign");
  bind_input(h, "PriorBox", "rois", RILL_DTYPE_FP32, DIMS(2, 4), p);
  bind_input(h, "PriorBoxVar", "var2d", RILL_DTYPE_FP32, DIMS(2, 4), p);
  bind_input(h, "TargetBox", "deltas", RILL_DTYPE_FP32, DIMS(2, 8), t);
  bind_input(h, "BoxScore", "scores", RILL_DTYPE_FP32, DIMS(2, 2), s);
  OK(op_harness_output(h, "DecodeBox", "decoded"));
  OK(op_harness_output(h, "OutputAssignBox", "assigned"));
  EXPECT_ERROR(op_harness_infer(h), "box_decoder_and_assign", "var2d", "[4]");
  op_harness_destroy(h);
}
