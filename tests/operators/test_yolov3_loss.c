/* yolov3_loss: a hand-computed loss (one ground truth, one cell, zero logits), the masks
 * (positives carry their score, ignored predictions -1, boxes matched to an anchor
 * outside anchor_mask and padding boxes -1 in GTMatchMask), the gradient against finite
 * differences with and without GTScore and label smoothing, and the errors. */
#include "op_test.h"
#include "support/grad_check.h"

static const int32_t anchors[6] = {4, 5, 8, 10, 14, 12};
static const int32_t mask[2] = {1, 2};

static op_harness *yl_harness(rill_dtype dt, const void *x, int64_t n, int64_t h, const void *box,
                              const int32_t *label, const void *score, int64_t b, int cls) {
  op_harness *hh = harness("yolov3_loss");
  bind_input(hh, "X", "head", dt, DIMS(n, 2 * (5 + cls), h, h), x);
  bind_input(hh, "GTBox", "gt_box", dt, DIMS(n, b, 4), box);
  bind_input(hh, "GTLabel", "gt_label", RILL_DTYPE_INT32, DIMS(n, b), label);
  if (score) bind_input(hh, "GTScore", "gt_score", dt, DIMS(n, b), score);
  OK(op_harness_output(hh, "Loss", "loss"));
  OK(op_harness_output(hh, "ObjectnessMask", "obj_mask"));
  OK(op_harness_output(hh, "GTMatchMask", "match_mask"));
  OK(op_harness_attr_ints(hh, "anchors", anchors, 6));
  OK(op_harness_attr_ints(hh, "anchor_mask", mask, 2));
  OK(op_harness_attr_int(hh, "class_num", cls));
  OK(op_harness_attr_float(hh, "ignore_thresh", 0.7f));
  OK(op_harness_attr_int(hh, "downsample_ratio", 8));
  return hh;
}

static double sce(double x, double t) { return fmax(x, 0) - x * t + log(1 + exp(-fabs(x))); }

/* All logits 0 on a 1 x 1 map (input 8 pixels), one box (0.5, 0.5, 1, 1.25) whose best
 * anchor is 8 x 10 (mask index 0): location 2 * (2 - 1.25) * log 2 ... written out below. */
Test(yolov3_loss, hand_computed) {
  double x[2 * 7] = {0};
  const double box[4] = {0.5, 0.5, 1.0, 1.25}, score[1] = {0.5};
  const int32_t label[1] = {1};
  op_harness *h = yl_harness(RILL_DTYPE_FP64, x, 1, 1, box, label, score, 1, 2);
  OK(op_harness_attr_bool(h, "use_label_smooth", false));
  OK(op_harness_run(h));
  double ws = (2 - 1.25) * 0.5;
  double want = sce(0, 0.5) * ws * 2                           /* x, y: targets 0.5 */
                + (fabs(log(8.0 / 8)) + fabs(log(10.0 / 10))) * ws /* w, h exact */
                + (sce(0, 0) + sce(0, 1)) * 0.5                /* classes */
                + sce(0, 1) * 0.5;                             /* the positive's objectness */
  /* the second masked anchor (14 x 12) at the same cell: its box (0.5, 0.5, 1.75, 1.5)
   * overlaps the truth by IoU 1.25 / 2.625 < 0.7, so it is a negative */
  want += sce(0, 0);
  const double *l = rill_tensor_ptr(op_harness_tensor(h, "loss"));
  cr_assert_float_eq(l[0], want, 1e-12, "%g != %g", l[0], want);
  const double *om = rill_tensor_ptr(op_harness_tensor(h, "obj_mask"));
  cr_assert_float_eq(om[0], 0.5, 0);
  cr_assert_float_eq(om[1], 0, 0);
  cr_assert_eq(*(const int32_t *)rill_tensor_ptr(op_harness_tensor(h, "match_mask")), 0);
  op_harness_destroy(h);
}

static void fill(double *x, int64_t n, double a) {
  for (int64_t i = 0; i < n; i++) x[i] = sin((double)i * a) * 1.3;
}

Test(yolov3_loss, gradient_matches_finite_differences) {
  enum { N = 2, H = 3, CLS = 2, B = 4 };
  double x[N * 2 * (5 + CLS) * H * H];
  fill(x, N * 2 * (5 + CLS) * H * H, 0.71);
  /* distinct cells; image 0's last box fits anchor 4 x 5 (not masked); image 1's last box
   * is padding */
  const double box[N * B * 4] = {0.2, 0.3, 0.4, 0.5, 0.7, 0.8, 0.6, 0.45, 0.5, 0.1, 0.3, 0.3,
                                 0.9, 0.5, 0.15, 0.2,
                                 0.1, 0.9, 0.55, 0.35, 0.5, 0.5, 0.35, 0.6, 0.85, 0.15, 0.5, 0.5,
                                 0, 0, 0, 0};
  const int32_t label[N * B] = {0, 1, 1, 0, 1, 0, 1, 0};
  const double score[N * B] = {0.9, 0.6, 1.0, 0.8, 0.7, 0.5, 0.95, 1.0};
  for (int variant = 0; variant < 2; variant++) {
    op_harness *h = yl_harness(RILL_DTYPE_FP64, x, N, H, box, label, variant ? score : NULL, B, CLS);
    OK(op_harness_attr_bool(h, "use_label_smooth", variant == 0));
    if (variant) OK(op_harness_attr_float(h, "scale_x_y", 1.1f));
    OK(op_harness_run(h));
    const int32_t *mm = rill_tensor_ptr(op_harness_tensor(h, "match_mask"));
    cr_assert_eq(mm[3], -1, "the 4 x 5 box matches no masked anchor");
    cr_assert_eq(mm[7], -1, "padding");
    grad_check_opts o = {.eps = 1e-6, .rtol = 1e-5, .atol = 1e-6};
    OK(grad_check(h, GC_SLOTS("X"), GC_SLOTS("Loss"), &o));
    op_harness_destroy(h);
  }
}

Test(yolov3_loss, errors_name_op_and_variable) {
  float x[2 * 7 * 4] = {0}, box[4] = {1.0f, 0.5f, 0.2f, 0.2f};
  const int32_t label[1] = {0};
  op_harness *h = yl_harness(RILL_DTYPE_FP32, x, 1, 2, box, label, NULL, 1, 2);
  EXPECT_ERROR(op_harness_run(h), "yolov3_loss", "gt_box", "outside");
  op_harness_destroy(h);
  h = yl_harness(RILL_DTYPE_FP32, x, 1, 2, box, label, NULL, 1, 2);
  OK(op_harness_attr_int(h, "class_num", 3)); /* 2 * 8 channels, X has 14 */
  EXPECT_ERROR(op_harness_run(h), "yolov3_loss", "head", "[N, 16, H, H]");
  op_harness_destroy(h);
  h = yl_harness(RILL_DTYPE_FP32, x, 1, 2, box, label, NULL, 1, 2);
  OK(op_harness_attr_ints(h, "anchor_mask", (const int32_t[]){1, 3}, 2));
  EXPECT_ERROR(op_harness_run(h), "yolov3_loss", "anchor_mask[1]");
  op_harness_destroy(h);
}
