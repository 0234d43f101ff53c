/* mean_iou: counts and mean IOU by hand, the running inputs added, int32 and int64 ids,
 * output shapes at inference, and errors naming the op and the variable. */
#include "op_test.h"

Test(mean_iou, counts_and_running_inputs) {
  /* classes 0..3; class 3 never occurs */
  int64_t pred[6] = {0, 1, 1, 2, 0, 2}, label[6] = {0, 1, 2, 2, 1, 2};
  int32_t in_wrong[4] = {1, 0, 0, 0}, in_correct[4] = {0, 2, 0, 0};
  float in_mean[1] = {0.25f};
  op_harness *h = harness("mean_iou");
  bind_input(h, "Predictions", "pred", RILL_DTYPE_INT64, DIMS(2, 3), pred);
  bind_input(h, "Labels", "label", RILL_DTYPE_INT64, DIMS(2, 3), label);
  bind_input(h, "InWrongs", "w0", RILL_DTYPE_INT32, DIMS(4), in_wrong);
  bind_input(h, "InCorrects", "c0", RILL_DTYPE_INT32, DIMS(4), in_correct);
  bind_input(h, "InMeanIou", "m0", RILL_DTYPE_FP32, DIMS(1), in_mean);
  OK(op_harness_output(h, "OutMeanIou", "miou"));
  OK(op_harness_output(h, "OutWrong", "wrong"));
  OK(op_harness_output(h, "OutCorrect", "correct"));
  OK(op_harness_attr_int(h, "num_classes", 4));
  OK(op_harness_run(h));
  /* matches: 0 (class 0), 1 (1), 2 (2), 2 (2); mismatches: (1 vs 2), (0 vs 1) */
  const int32_t want_c[4] = {1, 3, 2, 0}, want_w[4] = {2, 2, 1, 0};
  const int32_t *c = rill_tensor_ptr(op_harness_tensor(h, "correct"));
  const int32_t *w = rill_tensor_ptr(op_harness_tensor(h, "wrong"));
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(c[i], want_c[i], "correct[%d] = %d", i, c[i]);
    cr_assert_eq(w[i], want_w[i], "wrong[%d] = %d", i, w[i]);
  }
  float want = 0.25f + (1.f / 3 + 3.f / 5 + 2.f / 3) / 3;
  float got = *(const float *)rill_tensor_ptr(op_harness_tensor(h, "miou"));
  cr_assert(fabsf(got - want) < 1e-6f, "mean iou %g, want %g", (double)got, (double)want);
  expect_dims(op_harness_tensor(h, "miou"), DIMS(1));
  op_harness_destroy(h);

  int32_t p32[4] = {1, 1, 0, 1}, l32[4] = {1, 0, 0, 1};
  h = harness("mean_iou");
  bind_input(h, "Predictions", "p", RILL_DTYPE_INT32, DIMS(4), p32);
  bind_input(h, "Labels", "l", RILL_DTYPE_INT32, DIMS(4), l32);
  OK(op_harness_output(h, "OutMeanIou", "miou"));
  OK(op_harness_output(h, "OutWrong", "wrong"));
  OK(op_harness_output(h, "OutCorrect", "correct"));
  OK(op_harness_attr_int(h, "num_classes", 2));
  OK(op_harness_run(h));
  got = *(const float *)rill_tensor_ptr(op_harness_tensor(h, "miou"));
  cr_assert(fabsf(got - (1.f / 2 + 2.f / 3) / 2) < 1e-6f, "int32 mean iou %g", (double)got);
  op_harness_destroy(h);
}

Test(mean_iou, bad_inputs_fail_naming_op_and_variable) {
  int64_t pred[3] = {0, 5, 1}, label[3] = {0, 1, 1};
  op_harness *h = harness("mean_iou");
  bind_input(h, "Predictions", "pred_ids", RILL_DTYPE_INT64, DIMS(3), pred);
  bind_input(h, "Labels", "label_ids", RILL_DTYPE_INT64, DIMS(3), label);
  OK(op_harness_output(h, "OutMeanIou", "miou"));
  OK(op_harness_output(h, "OutWrong", "wrong"));
  OK(op_harness_output(h, "OutCorrect", "correct"));
  OK(op_harness_attr_int(h, "num_classes", 3));
  EXPECT_ERROR(op_harness_run(h), "mean_iou", "pred_ids", "num_classes");
  op_harness_destroy(h);

  float fp[3] = {0, 1, 1};
  h = harness("mean_iou");
  bind_input(h, "Predictions", "scores", RILL_DTYPE_FP32, DIMS(3), fp);
  bind_input(h, "Labels", "label_ids", RILL_DTYPE_INT64, DIMS(3), label);
  OK(op_harness_output(h, "OutMeanIou", "miou"));
  OK(op_harness_output(h, "OutWrong", "wrong"));
  OK(op_harness_output(h, "OutCorrect", "correct"));
  OK(op_harness_attr_int(h, "num_classes", 3));
  EXPECT_ERROR(op_harness_run(h), "mean_iou", "scores", "int32 or int64");
  op_harness_destroy(h);

  int64_t two[2] = {0, 1};
  h = harness("mean_iou");
  bind_input(h, "Predictions", "pred_ids", RILL_DTYPE_INT64, DIMS(3), label);
  bind_input(h, "Labels", "short_labels", RILL_DTYPE_INT64, DIMS(2), two);
  OK(op_harness_output(h, "OutMeanIou", "miou"));
  OK(op_harness_output(h, "OutWrong", "wrong"));
  OK(op_harness_output(h, "OutCorrect", "correct"));
  OK(op_harness_attr_int(h, "num_classes", 3));
  EXPECT_ERROR(op_harness_run(h), "mean_iou", "short_labels");
  op_harness_destroy(h);
}
