/* generate_proposal_labels on one hand-worked image at scale 2: the boxes themselves are
 * proposals (a crowd box neither foreground nor background), a RoI matching a box with
 * IoU 0.9 and its weighted deltas, a background; the foreground quota truncating,
 * class-agnostic targets, float64, inference and the errors. */
#include <math.h>

#include "tensor_test.h"

/* g0 [0,0,9,9] class 1; g1 [20,20,29,29] class 2, crowd */
static const float GT[] = {0, 0, 9, 9, 20, 20, 29, 29};
static const int32_t CLASSES[] = {1, 2}, CROWD[] = {0, 1};
/* r0 / 2 = [0,0,9,8] (IoU 0.9 with g0), r1 / 2 = [20,0,29,9] (IoU 0) */
static const float ROIS[] = {0, 0, 18, 16, 40, 0, 58, 18};
static const float INFO[] = {40, 60, 2};

static void bind_lod(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                     const int64_t *dims, size_t nd, const void *data) {
  static const uint64_t lod[] = {0, 2};
  size_t nl = 2;
  rill_tensor *t = op_harness_make(dt, dims, nd, data);
  cr_assert_not_null(t);
  OK(rill_tensor_set_lod(t, 1, (const uint64_t *const[]){lod}, &nl));
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

static op_harness *setup(int batch, int classes, const int32_t *cls) {
  op_harness *h = harness("generate_proposal_labels");
  bind_lod(h, "RpnRois", "rpn_rois", RILL_DTYPE_FP32, DIMS(2, 4), ROIS);
  bind_lod(h, "GtClasses", "gt_classes", RILL_DTYPE_INT32, DIMS(2, 1), cls);
  bind_lod(h, "IsCrowd", "crowd", RILL_DTYPE_INT32, DIMS(2, 1), CROWD);
  bind_lod(h, "GtBoxes", "gt", RILL_DTYPE_FP32, DIMS(2, 4), GT);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(1, 3), INFO);
  OK(op_harness_attr_int(h, "batch_size_per_im", batch));
  OK(op_harness_attr_float(h, "fg_fraction", 0.5f));
  OK(op_harness_attr_float(h, "fg_thresh", 0.5f));
  OK(op_harness_attr_float(h, "bg_thresh_hi", 0.5f));
  OK(op_harness_attr_float(h, "bg_thresh_lo", 0.0f));
  OK(op_harness_attr(h, "bbox_reg_weights",
                     &(rill_attr_value){.type = RILL_ATTR_FLOATS, .n = 4,
                                        .list.floats = (float[]){0.1f, 0.1f, 0.2f, 0.2f}}));
  OK(op_harness_attr_int(h, "class_nums", classes));
  OK(op_harness_attr_bool(h, "use_random", false));
  OK(op_harness_output(h, "Rois", "rois"));
  OK(op_harness_output(h, "LabelsInt32", "labels"));
  OK(op_harness_output(h, "BboxTargets", "targets"));
  OK(op_harness_output(h, "BboxInsideWeights", "inside"));
  OK(op_harness_output(h, "BboxOutsideWeights", "outside"));
  return h;
}

Test(generate_proposal_labels, hand_worked_sampling_and_targets) {
  op_harness *h = setup(4, 3, CLASSES);
  OK(op_harness_run(h));
  /* proposals g0 (fg), g1 (crowd: neither), r0 (fg), r1 (bg) */
  const rill_tensor *r = op_harness_tensor(h, "rois");
  expect_dims(r, DIMS(3, 4));
  const float wr[] = {0, 0, 18, 18, 0, 0, 18, 16, 40, 0, 58, 18};
  expect_close_f32(rill_tensor_ptr(r), wr, 12, 1e-5f);
  cr_assert(r->lod.nlevels == 1 && r->lod.levels[0].offsets[1] == 3);
  const int32_t *lab = rill_tensor_ptr(op_harness_tensor(h, "labels"));
  cr_assert(lab[0] == 1 && lab[1] == 1 && lab[2] == 0);
  const rill_tensor *t = op_harness_tensor(h, "targets");
  expect_dims(t, DIMS(3, 12));
  float want[36] = {0}, ww[36] = {0};
  /* r0 at the original scale [0,0,9,8] to g0: dy = 0.5 / 9, dh = log(10 / 9), over the
   * weights 0.1 and 0.2, in class 1's columns */
  want[12 + 5] = (0.5f / 9) / 0.1f;
  want[12 + 7] = logf(10.0f / 9) / 0.2f;
  for (int q = 4; q < 8; q++) ww[q] = ww[12 + q] = 1;
  expect_close_f32(rill_tensor_ptr(t), want, 36, 1e-5f);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "inside")), ww, 36, 0);
  expect_close_f32(rill_tensor_ptr(op_harness_tensor(h, "outside")), ww, 36, 0);
  op_harness_destroy(h);
}

Test(generate_proposal_labels, quota_and_class_agnostic) {
  op_harness *h = setup(2, 3, CLASSES); /* one foreground, one background */
  OK(op_harness_attr_bool(h, "is_cls_agnostic", true));
  OK(op_harness_run(h));
  const rill_tensor *r = op_harness_tensor(h, "rois");
  expect_dims(r, DIMS(2, 4));
  const float wr[] = {0, 0, 18, 18, 40, 0, 58, 18};
  expect_close_f32(rill_tensor_ptr(r), wr, 8, 1e-5f);
  op_harness_destroy(h);
  static const int32_t cls[] = {2, 1};
  h = setup(4, 3, cls);
  OK(op_harness_attr_bool(h, "is_cls_agnostic", true));
  OK(op_harness_run(h));
  const float *in = rill_tensor_ptr(op_harness_tensor(h, "inside"));
  for (int q = 0; q < 12; q++) cr_assert_float_eq(in[q], q >= 4 && q < 8 ? 1.0f : 0.0f, 0, "[%d]", q);
  cr_assert_eq(((const int32_t *)rill_tensor_ptr(op_harness_tensor(h, "labels")))[0], 2);
  op_harness_destroy(h);
}

Test(generate_proposal_labels, random_sampling_keeps_counts) {
  op_harness *h = setup(2, 3, CLASSES);
  OK(op_harness_attr_bool(h, "use_random", true));
  OK(op_harness_run(h));
  const int32_t *lab = rill_tensor_ptr(op_harness_tensor(h, "labels"));
  expect_dims(op_harness_tensor(h, "rois"), DIMS(2, 4));
  cr_assert(lab[0] == 1 && lab[1] == 0);
  op_harness_destroy(h);
}

Test(generate_proposal_labels, compile_time_shapes) {
  op_harness *h = setup(4, 3, CLASSES);
  rill_tensor_meta ins[5] = {meta_of(RILL_DTYPE_FP32, DIMS(-1, 4)), meta_of(RILL_DTYPE_INT32, DIMS(-1, 1)),
                             meta_of(RILL_DTYPE_INT32, DIMS(-1, 1)), meta_of(RILL_DTYPE_FP32, DIMS(-1, 4)),
                             meta_of(RILL_DTYPE_FP32, DIMS(-1, 3))};
  rill_tensor_meta outs[5];
  OK(compile_infer_n(h, ins, (const size_t[]){1, 1, 1, 1, 1}, outs));
  expect_meta_dims(&outs[0], DIMS(-1, 4));
  expect_meta_dims(&outs[2], DIMS(-1, 12));
  cr_assert_eq(outs[1].dtype, RILL_DTYPE_INT32);
  OK(op_harness_attr_bool(h, "is_cascade_rcnn", true));
  EXPECT_ERROR(compile_infer_n(h, ins, (const size_t[]){1, 1, 1, 1, 1}, outs),
               "generate_proposal_labels", "is_cascade_rcnn");
  op_harness_destroy(h);
}

Test(generate_proposal_labels, errors_name_op_and_variable) {
  static const int32_t big[] = {5, 2};
  op_harness *h = setup(4, 3, big);
  EXPECT_ERROR(op_harness_run(h), "generate_proposal_labels", "gt_classes", "class 5");
  op_harness_destroy(h);
  h = harness("generate_proposal_labels");
  bind_input(h, "RpnRois", "rois_nolod", RILL_DTYPE_FP32, DIMS(2, 4), ROIS);
  bind_lod(h, "GtClasses", "gt_classes", RILL_DTYPE_INT32, DIMS(2, 1), CLASSES);
  bind_lod(h, "IsCrowd", "crowd", RILL_DTYPE_INT32, DIMS(2, 1), CROWD);
  bind_lod(h, "GtBoxes", "gt", RILL_DTYPE_FP32, DIMS(2, 4), GT);
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(1, 3), INFO);
  OK(op_harness_attr_int(h, "class_nums", 3));
  OK(op_harness_output(h, "Rois", "rois"));
  OK(op_harness_output(h, "LabelsInt32", "labels"));
  OK(op_harness_output(h, "BboxTargets", "targets"));
  OK(op_harness_output(h, "BboxInsideWeights", "inside"));
  OK(op_harness_output(h, "BboxOutsideWeights", "outside"));
  EXPECT_ERROR(op_harness_run(h), "generate_proposal_labels", "rois_nolod", "LoD");
  op_harness_destroy(h);
}
