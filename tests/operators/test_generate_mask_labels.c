/* generate_mask_labels: the output shapes and LoD, a square polygon rasterized by hand
 * into its ROI's class slot, an image without a foreground ROI (one ignored row), and the
 * errors naming the op and the variable. */
#include "op_test.h"

static rill_tensor *lod_tensor(rill_dtype dt, const int64_t *dims, size_t nd, const void *data,
                               size_t nlevels, const uint64_t *const *levels,
                               const size_t *counts) {
  rill_tensor *t = op_harness_make(dt, dims, nd, data);
  cr_assert_not_null(t);
  if (nlevels) OK(rill_tensor_set_lod(t, nlevels, levels, counts));
  return t;
}

static void input(op_harness *h, const char *slot, const char *name, rill_tensor *t) {
  OK(op_harness_input(h, slot, name, t));
  op_harness_free_tensor(t);
}

/* Two images. Image 0: a class-2 square (1,1)-(3,3) and a crowd object; ROI 0 (class 2)
 * covers [0, 4] so one mask cell is one pixel, ROI 1 is background. Image 1 (scale 2):
 * background ROIs only. */
static const float im_info[] = {32, 32, 1, 64, 64, 2};
static const int32_t gt_classes[] = {2, 1, 1};
static const int32_t is_crowd[] = {0, 1, 0};
static const float segms[] = {1, 1, 3, 1, 3, 3, 1, 3, 5, 5, 9, 5, 9, 9, 5, 9,
                              2, 2, 6, 2, 6, 6, 2, 6};
static const uint64_t gt_lod[] = {0, 2, 3};
static const uint64_t seg_l0[] = {0, 2, 3}, seg_l1[] = {0, 1, 2, 3}, seg_l2[] = {0, 4, 8, 12};
static const float rois[] = {0, 0, 4, 4, 10, 10, 20, 20, 6, 6, 18, 18, 2, 2, 4, 4};
static const uint64_t roi_lod[] = {0, 2, 4};

static op_harness *setup(const int32_t *labels, const uint64_t *rlod, int32_t classes) {
  op_harness *h = harness("generate_mask_labels");
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(2, 3), im_info);
  const size_t c3 = 3;
  input(h, "GtClasses", "gt_classes",
        lod_tensor(RILL_DTYPE_INT32, DIMS(3, 1), gt_classes, 1, (const uint64_t *const[]){gt_lod}, &c3));
  input(h, "IsCrowd", "is_crowd",
        lod_tensor(RILL_DTYPE_INT32, DIMS(3, 1), is_crowd, 1, (const uint64_t *const[]){gt_lod}, &c3));
  input(h, "GtSegms", "gt_segms",
        lod_tensor(RILL_DTYPE_FP32, DIMS(12, 2), segms, 3,
                   (const uint64_t *const[]){seg_l0, seg_l1, seg_l2}, (const size_t[]){3, 4, 4}));
  if (rlod) {
    input(h, "Rois", "rois",
          lod_tensor(RILL_DTYPE_FP32, DIMS(4, 4), rois, 1, (const uint64_t *const[]){rlod}, &c3));
  } else {
    bind_input(h, "Rois", "rois_nolod", RILL_DTYPE_FP32, DIMS(4, 4), rois);
  }
  input(h, "LabelsInt32", "labels",
        lod_tensor(RILL_DTYPE_INT32, DIMS(4, 1), labels, 1, (const uint64_t *const[]){roi_lod}, &c3));
  OK(op_harness_output(h, "MaskRois", "mask_rois"));
  OK(op_harness_output(h, "RoiHasMaskInt32", "has_mask"));
  OK(op_harness_output(h, "MaskInt32", "mask"));
  OK(op_harness_attr_int(h, "num_classes", classes));
  OK(op_harness_attr_int(h, "resolution", 4));
  return h;
}

Test(generate_mask_labels, square_and_background_image) {
  const int32_t labels[] = {2, 0, 0, 0};
  op_harness *h = setup(labels, roi_lod, 3);
  OK(op_harness_run(h));
  const rill_tensor *mr = op_harness_tensor(h, "mask_rois"), *hm = op_harness_tensor(h, "has_mask");
  const rill_tensor *mk = op_harness_tensor(h, "mask");
  expect_dims(mr, DIMS(2, 4));
  expect_dims(hm, DIMS(2, 1));
  expect_dims(mk, DIMS(2, 3 * 16));
  size_t n = 0;
  const uint64_t *lod = rill_tensor_lod(mk, 0, &n);
  cr_assert_eq(n, 3);
  cr_assert(lod[0] == 0 && lod[1] == 1 && lod[2] == 2);
  const float want_rois[] = {0, 0, 4, 4, 6, 6, 18, 18};
  expect_close_f32(rill_tensor_ptr(mr), want_rois, 8, 0);
  const int32_t *hp = rill_tensor_ptr(hm);
  cr_assert_eq(hp[0], 0);
  cr_assert_eq(hp[1], 0);
  /* cell centres 1.5 and 2.5 lie inside [1, 3] on both axes */
  const int32_t square[16] = {0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0};
  const int32_t *m = rill_tensor_ptr(mk);
  for (int c = 0; c < 3 * 16; c++) {
    int32_t want = c < 32 ? -1 : square[c - 32];
    cr_assert_eq(m[c], want, "row 0 cell %d: %d", c, m[c]);
    cr_assert_eq(m[48 + c], -1, "row 1 cell %d: %d", c, m[48 + c]);
  }
  op_harness_destroy(h);
}

Test(generate_mask_labels, infers_shapes) {
  const int32_t labels[] = {2, 0, 0, 0};
  op_harness *h = setup(labels, roi_lod, 5);
  OK(op_harness_infer(h));
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "mask"), DIMS(2, 5 * 16));
  op_harness_destroy(h);

  h = setup(labels, roi_lod, 0);
  EXPECT_ERROR(op_harness_infer(h), "generate_mask_labels", "num_classes (0)");
  op_harness_destroy(h);

  h = harness("generate_mask_labels");
  bind_input(h, "ImInfo", "im_info", RILL_DTYPE_FP32, DIMS(2, 3), im_info);
  bind_input(h, "GtClasses", "gt_classes", RILL_DTYPE_INT32, DIMS(3, 1), gt_classes);
  bind_input(h, "IsCrowd", "is_crowd", RILL_DTYPE_INT32, DIMS(3, 1), is_crowd);
  bind_input(h, "GtSegms", "segms3", RILL_DTYPE_FP32, DIMS(8, 3), segms);
  bind_input(h, "Rois", "rois", RILL_DTYPE_FP32, DIMS(4, 4), rois);
  bind_input(h, "LabelsInt32", "labels", RILL_DTYPE_INT32, DIMS(4, 1), labels);
  OK(op_harness_output(h, "MaskRois", "mask_rois"));
  OK(op_harness_output(h, "RoiHasMaskInt32", "has_mask"));
  OK(op_harness_output(h, "MaskInt32", "mask"));
  OK(op_harness_attr_int(h, "num_classes", 3));
  OK(op_harness_attr_int(h, "resolution", 4));
  EXPECT_ERROR(op_harness_infer(h), "generate_mask_labels", "GtSegms (segms3)", "[S, 2]");
  op_harness_destroy(h);
}

Test(generate_mask_labels, errors_name_op_and_variable) {
  const int32_t labels[] = {2, 0, 0, 0};
  op_harness *h = setup(labels, NULL, 3);
  EXPECT_ERROR(op_harness_run(h), "generate_mask_labels", "Rois (rois_nolod)", "LoD");
  op_harness_destroy(h);

  const int32_t big[] = {7, 0, 0, 0};
  h = setup(big, roi_lod, 3);
  EXPECT_ERROR(op_harness_run(h), "generate_mask_labels", "LabelsInt32 (labels)", "class 7");
  op_harness_destroy(h);

  /* image 0 holds 3 ROIs but only 2 labels */
  const uint64_t skew[] = {0, 3, 4};
  h = setup(labels, skew, 3);
  EXPECT_ERROR(op_harness_run(h), "generate_mask_labels", "rois", "labels", "must agree");
  op_harness_destroy(h);
}
