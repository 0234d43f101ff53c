/* generate_mask_labels: Mask R-CNN mask targets. Per image, every foreground ROI
 * (LabelsInt32 > 0) is matched to the non-crowd foreground ground truth whose polygon
 * bounding box it overlaps most; that object's polygons are rasterized inside the ROI
 * (in original-image pixels, ROI / im_scale) on a resolution x resolution grid, COCO RLE
 * style, and written into the ROI's class slot of MaskInt32 (other classes -1). An image
 * without foreground ROIs yields one row: its first ROI, class 0, all -1.
 * MaskRois, RoiHasMaskInt32 and MaskInt32 have one LoD level (rows per image). */
#include "operators/detection.h"

enum { IN_IM_INFO, IN_GT_CLASSES, IN_IS_CROWD, IN_GT_SEGMS, IN_ROIS, IN_LABELS };
enum { OUT_MASK_ROIS, OUT_HAS_MASK, OUT_MASK };

static const rill_slot_schema inputs[] = {
    [IN_IM_INFO] = {"ImInfo", RILL_SLOT_NO_GRAD, "[N, 3]: height, width, scale of each image"},
    [IN_GT_CLASSES] = {"GtClasses", RILL_SLOT_NO_GRAD, "int32 [G, 1], one LoD level: gt classes"},
    [IN_IS_CROWD] = {"IsCrowd", RILL_SLOT_NO_GRAD, "int32 [G, 1], one LoD level: crowd flags"},
    [IN_GT_SEGMS] = {"GtSegms", RILL_SLOT_NO_GRAD,
                     "[S, 2] polygon points, three LoD levels: image, gt, polygon"},
    [IN_ROIS] = {"Rois", RILL_SLOT_NO_GRAD, "[R, 4] ROIs in scaled pixels, one LoD level"},
    [IN_LABELS] = {"LabelsInt32", RILL_SLOT_NO_GRAD, "int32 [R, 1], one LoD level: ROI classes"},
};
static const rill_slot_schema outputs[] = {
    [OUT_MASK_ROIS] = {"MaskRois", 0, "[K, 4]: the ROIs given a mask target"},
    [OUT_HAS_MASK] = {"RoiHasMaskInt32", 0, "int32 [K, 1]: their row within the image's ROIs"},
    [OUT_MASK] = {"MaskInt32", 0, "int32 [K, num_classes * resolution^2]: 0/1 or -1 (ignore)"},
};
static const rill_attr_schema attrs[] = {
    {"num_classes", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0), "number of classes"},
    {"resolution", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0), "mask side in cells"},
};

static rill_status *generate_mask_labels_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *in[6];
  rill_tensor_meta *out[3];
  for (size_t i = 0; i < 6; i++) {
    in[i] = rill_infer_in(ctx, i, 0);
    if (!in[i]) return rill_infer_error(ctx, "needs input %s", inputs[i].name);
  }
  for (size_t i = 0; i < 3; i++) {
    out[i] = rill_infer_out(ctx, i, 0);
    if (!out[i]) return rill_infer_error(ctx, "needs output %s", outputs[i].name);
  }
  int64_t nc = ctx->attrs[RILL_GENERATE_MASK_LABELS_ATTR_NUM_CLASSES].v.i;
  int64_t res = ctx->attrs[RILL_GENERATE_MASK_LABELS_ATTR_RESOLUTION].v.i;
  if (!rill_mask_labels_attrs_ok(nc, res))
    return rill_infer_error(ctx, "attributes num_classes (%lld) and resolution (%lld) must be "
                            "positive, with num_classes * resolution^2 an int32",
                            (long long)nc, (long long)res);
  for (size_t i = 0; i < 6; i++)
    if (!in[i]->known) {
      for (size_t j = 0; j < 3; j++) rill_meta_unknown(out[j]);
      return NULL;
    }
  char s[RILL_DIMS_STR_MAX];
  if (in[IN_IM_INFO]->dims.n != 2)
    return rill_infer_error(ctx, "input ImInfo (%s) has shape %s, expected [N, 3]",
                            rill_infer_in_name(ctx, IN_IM_INFO, 0),
                            rill_dims_str(&in[IN_IM_INFO]->dims, s, sizeof s));
  const rill_tensor_meta *g = in[IN_GT_SEGMS];
  if (g->dims.n != 2 || g->dims.d[1] != 2)
    return rill_infer_error(ctx, "input GtSegms (%s) has shape %s, expected [S, 2]",
                            rill_infer_in_name(ctx, IN_GT_SEGMS, 0),
                            rill_dims_str(&g->dims, s, sizeof s));
  const rill_tensor_meta *r = in[IN_ROIS];
  if (r->dtype != RILL_DTYPE_FP32)
    return rill_infer_error(ctx, "input Rois (%s) is %s, expected float32",
                            rill_infer_in_name(ctx, IN_ROIS, 0), rill_dtype_name(r->dtype));
  static const size_t ints[] = {IN_GT_CLASSES, IN_IS_CROWD, IN_LABELS};
  for (size_t i = 0; i < 3; i++)
    if (in[ints[i]]->dtype != RILL_DTYPE_INT32)
      return rill_infer_error(ctx, "input %s (%s) is %s, expected int32", inputs[ints[i]].name,
                              rill_infer_in_name(ctx, ints[i], 0),
                              rill_dtype_name(in[ints[i]]->dtype));
  rill_dims d = {.n = 2, .d = {-1, 4}};
  rill_meta_set(out[OUT_MASK_ROIS], r->dtype, &d, 1, -1, -1);
  d.d[1] = 1;
  rill_meta_set(out[OUT_HAS_MASK], RILL_DTYPE_INT32, &d, 1, -1, -1);
  d.d[1] = nc * res * res;
  rill_meta_set(out[OUT_MASK], RILL_DTYPE_INT32, &d, 1, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_generate_mask_labels = {
    .type = "generate_mask_labels",
    .doc = "Mask R-CNN mask targets: gt polygons rasterized inside the foreground ROIs.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = generate_mask_labels_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_ROIS,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(generate_mask_labels);
