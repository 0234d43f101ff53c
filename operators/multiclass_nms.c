/* multiclass_nms, multiclass_nms2, multiclass_nms3: per-class non-maximum suppression
 * over a batch of images, then at most keep_top_k detections per image. One schema
 * layout serves the three versions; each exposes a prefix of the slots:
 *   multiclass_nms   BBoxes, Scores                -> Out
 *   multiclass_nms2  BBoxes, Scores                -> Out, Index
 *   multiclass_nms3  BBoxes, Scores, RoisNum       -> Out, Index, NmsRoisNum
 * Out has one row [label, score, xmin, ymin, xmax, ymax] per kept box, images one after
 * another (its LoD gives each image's rows), within an image by label ascending and
 * within a label in the order kept. Its row count depends on the data: the kernel sizes
 * it. */
#include "operators/detection.h"

enum { IN_BOXES, IN_SCORES, IN_ROIS_NUM };
enum { OUT_OUT, OUT_INDEX, OUT_ROIS_NUM };

static const rill_slot_schema inputs[] = {
    [IN_BOXES] = {"BBoxes", RILL_SLOT_NO_GRAD,
                  "[N, M, 4] boxes shared by the classes, or [M, C, 4] per class (with LoD or "
                  "RoisNum giving each image's rows)"},
    [IN_SCORES] = {"Scores", RILL_SLOT_NO_GRAD, "[N, C, M] or [M, C] scores"},
    [IN_ROIS_NUM] = {"RoisNum", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                     "int32/int64 [N]: rows per image when Scores is [M, C]"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUT] = {"Out", 0, "[K, 6]: label, score, xmin, ymin, xmax, ymax; [1, 1] = -1 when "
                           "nothing is kept and there is no Index"},
    [OUT_INDEX] = {"Index", 0, "int32 [K, 1]: each kept box's row in the flattened input"},
    [OUT_ROIS_NUM] = {"NmsRoisNum", RILL_SLOT_DISPENSABLE, "int32 [N]: kept boxes per image"},
};
static const rill_attr_schema attrs[] = {
    {"background_label", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
              "class skipped by NMS (-1: none)"},
    {"score_threshold", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0.0f),
                   "only scores above it are considered"},
    {"nms_top_k", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(-1),
                     "highest-scoring candidates per class before NMS (-1: all)"},
    {"nms_threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.3f),
                 "a box overlapping a kept one by more IoU is dropped"},
    {"nms_eta", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f),
               "adaptive NMS: the threshold is multiplied by it after each kept box while above "
               "0.5"},
    {"keep_top_k", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(-1),
                      "detections kept per image after NMS (-1: all)"},
    {"normalized", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
                "false: pixel boxes, widths count both ends (+1)"},
};

static rill_status *multiclass_nms_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *boxes = rill_infer_in(ctx, IN_BOXES, 0);
  const rill_tensor_meta *scores = rill_infer_in(ctx, IN_SCORES, 0);
  const rill_tensor_meta *rois =
      ctx->schema->ninputs > IN_ROIS_NUM ? rill_infer_in(ctx, IN_ROIS_NUM, 0) : NULL;
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0);
  rill_tensor_meta *index =
      ctx->schema->noutputs > OUT_INDEX ? rill_infer_out(ctx, OUT_INDEX, 0) : NULL;
  rill_tensor_meta *nums =
      ctx->schema->noutputs > OUT_ROIS_NUM ? rill_infer_out(ctx, OUT_ROIS_NUM, 0) : NULL;
  if (!boxes || !scores || !out)
    return rill_infer_error(ctx, "needs inputs BBoxes and Scores and output Out");
  if (!boxes->known || !scores->known) {
    rill_meta_unknown(out);
    if (index) rill_meta_unknown(index);
    if (nums) rill_meta_unknown(nums);
    return NULL;
  }
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *bn = rill_infer_in_name(ctx, IN_BOXES, 0), *sn = rill_infer_in_name(ctx, IN_SCORES, 0);
  RILL_TRY(rill_nms_infer_dtypes(ctx, boxes, scores));
  const rill_dims *bd = &boxes->dims, *sd = &scores->dims;
  if (bd->n != 3)
    return rill_infer_error(ctx, "input BBoxes (%s) has shape %s, expected [N, M, 4] or "
                            "[M, C, 4]", bn, rill_dims_str(bd, a, sizeof a));
  RILL_TRY(rill_nms_infer_box_dim(ctx, bd));
#define NMS_DIFFER(x, y) ((x) >= 0 && (y) >= 0 && (x) != (y))
  int64_t rows;
  if (sd->n == 3) {
    if (NMS_DIFFER(sd->d[2], bd->d[1]) || NMS_DIFFER(sd->d[0], bd->d[0]))
      return rill_infer_error(ctx, "input Scores (%s) has shape %s, BBoxes (%s) %s: expected "
                              "[N, C, M] scores for [N, M, 4] boxes", sn, rill_dims_str(sd, a, sizeof a),
                              bn, rill_dims_str(bd, b, sizeof b));
    /* what Paddle records at compile time: M rows for multiclass_nms and
     * multiclass_nms2, unknown for multiclass_nms3 (phi's inference) */
    rows = ctx->schema->ninputs > IN_ROIS_NUM ? -1 : bd->d[1];
  } else if (sd->n == 2) {
    if (NMS_DIFFER(sd->d[0], bd->d[0]) || NMS_DIFFER(sd->d[1], bd->d[1]))
      return rill_infer_error(ctx, "input Scores (%s) has shape %s, BBoxes (%s) %s: expected "
                              "[M, C] scores for [M, C, 4] boxes", sn, rill_dims_str(sd, a, sizeof a),
                              bn, rill_dims_str(bd, b, sizeof b));
    rows = -1;
  } else {
    return rill_infer_error(ctx, "input Scores (%s) has shape %s, expected [N, C, M] or [M, C]",
                            sn, rill_dims_str(sd, a, sizeof a));
  }
#undef NMS_DIFFER
  if (rois && rois->known && rois->dtype != RILL_DTYPE_INT32 && rois->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input RoisNum (%s) is %s, expected int32 or int64",
                            rill_infer_in_name(ctx, IN_ROIS_NUM, 0), rill_dtype_name(rois->dtype));
  int32_t lod = boxes->lod_level > 1 ? boxes->lod_level : 1;
  rill_dims od = {.n = 2, .d = {rows, bd->d[2] < 0 ? -1 : bd->d[2] + 2}};
  rill_meta_set(out, boxes->dtype, &od, lod, -1, -1);
  if (index) {
    rill_dims id = {.n = 2, .d = {rows, 1}};
    rill_meta_set(index, RILL_DTYPE_INT32, &id, lod, -1, -1);
  }
  if (nums) {
    rill_dims nd = {.n = 1, .d = {-1}};
    rill_meta_set(nums, RILL_DTYPE_INT32, &nd, 0, -1, -1);
  }
  return NULL;
}

#define NMS_SCHEMA(NAME, NIN, NOUT, DOC)                                                 \
  const rill_op_schema rill_schema_##NAME = {                                            \
      .type = #NAME,                                                                     \
      .doc = DOC,                                                                        \
      .inputs = inputs,                                                                  \
      .ninputs = NIN,                                                                    \
      .outputs = outputs,                                                                \
      .noutputs = NOUT,                                                                  \
      .attrs = attrs,                                                                    \
      .nattrs = RILL_COUNTOF(attrs),                                                     \
      .flags = RILL_OP_KERNEL_SHAPES,                                                    \
      .infer = multiclass_nms_infer,                                                     \
      .grad = NULL,                                                                      \
      .kernel_dtype_slot = IN_BOXES,                                                     \
      .dtype_attr = -1,                                                                  \
  };

NMS_SCHEMA(multiclass_nms, 2, 1, "Per-class NMS over a batch; rows of label, score, box.")
NMS_SCHEMA(multiclass_nms2, 2, 2, "multiclass_nms that also returns each kept box's index.")
NMS_SCHEMA(multiclass_nms3, 3, 3,
           "multiclass_nms2 with per-image row counts in (RoisNum) and out (NmsRoisNum).")

RILL_OP_TABLE_CHECKS(multiclass_nms);
