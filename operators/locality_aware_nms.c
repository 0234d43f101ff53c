/* locality_aware_nms: EAST's NMS. Per image and class, boxes are first walked in input
 * order and each one overlapping the previous survivor by more than nms_threshold is
 * merged into it (coordinates averaged by score, scores added); the survivors above
 * score_threshold then go through greedy NMS like multiclass_nms, and at most
 * keep_top_k detections stay per image.
 *   BBoxes [N, M, 4], Scores [N, C, M] -> Out [K, 6] (label, merged score, merged box)
 * with one LoD level giving each image's rows; [1, 1] = -1 when nothing is kept. The
 * row count depends on the data: the kernel sizes Out. */
#include "operators/detection.h"

enum { IN_BOXES, IN_SCORES };

static const rill_slot_schema inputs[] = {
    [IN_BOXES] = {"BBoxes", RILL_SLOT_NO_GRAD, "[N, M, 4] boxes shared by the classes"},
    [IN_SCORES] = {"Scores", RILL_SLOT_NO_GRAD, "[N, C, M] scores"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "[K, 6]: label, score, xmin, ymin, xmax, ymax; [1, 1] = -1 when nothing is "
               "kept"},
};
static const rill_attr_schema attrs[] = {
    {"background_label", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "class skipped (-1: none)"},
    {"score_threshold", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0.0f),
     "only merged scores above it are considered"},
    {"nms_top_k", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(-1),
     "highest-scoring candidates per class before NMS (-1: all)"},
    {"nms_threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.3f),
     "IoU above which boxes are merged, and above which NMS drops a box"},
    {"nms_eta", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f),
     "adaptive NMS: the threshold is multiplied by it after each kept box while above 0.5"},
    {"keep_top_k", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(-1),
     "detections kept per image after NMS (-1: all)"},
    {"normalized", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "false: pixel boxes, widths count both ends (+1)"},
};

static rill_status *locality_aware_nms_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *boxes = rill_infer_in(ctx, IN_BOXES, 0);
  const rill_tensor_meta *scores = rill_infer_in(ctx, IN_SCORES, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!boxes || !scores || !out)
    return rill_infer_error(ctx, "needs inputs BBoxes and Scores and output Out");
  if (!boxes->known || !scores->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  RILL_TRY(rill_nms_infer_batched(ctx, boxes, scores));
  /* Paddle records M rows at compile time */
  rill_dims od = {.n = 2, .d = {boxes->dims.d[1], 6}};
  rill_meta_set(out, boxes->dtype, &od, 1, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_locality_aware_nms = {
    .type = "locality_aware_nms",
    .doc = "Locality-aware NMS (EAST): neighbours merged by score, then per-class NMS.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = locality_aware_nms_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_BOXES,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(locality_aware_nms);
