/* matrix_nms: Matrix NMS (SOLOv2) over a batch of images. Per class, candidates above
 * score_threshold (the best nms_top_k) are not removed but have their scores decayed by
 * their overlap with every higher-scoring candidate; those still above post_threshold
 * are kept, then at most keep_top_k per image, by decayed score.
 *   BBoxes [N, M, 4], Scores [N, C, M] -> Out [K, 6] (label, decayed score, box), Index
 *   [K, 1] int32 (row in the flattened [N * M] boxes)
 * Both outputs carry one LoD level giving each image's rows; the row count depends on the
 * data: the kernel sizes them. */
#include "operators/detection.h"

enum { IN_BOXES, IN_SCORES };
enum { OUT_OUT, OUT_INDEX };

static const rill_slot_schema inputs[] = {
    [IN_BOXES] = {"BBoxes", RILL_SLOT_NO_GRAD, "[N, M, 4] boxes shared by the classes"},
    [IN_SCORES] = {"Scores", RILL_SLOT_NO_GRAD, "[N, C, M] scores"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUT] = {"Out", 0, "[K, 6]: label, decayed score, xmin, ymin, xmax, ymax"},
    [OUT_INDEX] = {"Index", RILL_SLOT_DISPENSABLE,
                   "int32 [K, 1]: each kept box's row in the flattened [N * M] boxes"},
};
static const rill_attr_schema attrs[] = {
    {"background_label", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "class skipped (-1: none)"},
    {"score_threshold", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0.0f),
     "only scores above it are candidates"},
    {"post_threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
     "only decayed scores above it are kept"},
    {"nms_top_k", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(-1),
     "highest-scoring candidates per class (-1: all)"},
    {"keep_top_k", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(-1),
     "detections kept per image, by decayed score (-1: all)"},
    {"normalized", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "false: pixel boxes, widths count both ends (+1)"},
    {"use_gaussian", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "decay exp((max_iou^2 - iou^2) * gaussian_sigma) instead of (1 - iou) / (1 - max_iou)"},
    {"gaussian_sigma", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(2.0f), "the Gaussian decay's factor"},
};

static rill_status *matrix_nms_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *boxes = rill_infer_in(ctx, IN_BOXES, 0);
  const rill_tensor_meta *scores = rill_infer_in(ctx, IN_SCORES, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0), *index = rill_infer_out(ctx, OUT_INDEX, 0);
  if (!boxes || !scores || !out)
    return rill_infer_error(ctx, "needs inputs BBoxes and Scores and output Out");
  if (!boxes->known || !scores->known) {
    rill_meta_unknown(out);
    if (index) rill_meta_unknown(index);
    return NULL;
  }
  RILL_TRY(rill_nms_infer_batched(ctx, boxes, scores));
  /* Paddle records M rows at compile time */
  rill_dims od = {.n = 2, .d = {boxes->dims.d[1], 6}};
  rill_meta_set(out, boxes->dtype, &od, 1, -1, -1);
  if (index) {
    rill_dims id = {.n = 2, .d = {boxes->dims.d[1], 1}};
    rill_meta_set(index, RILL_DTYPE_INT32, &id, 1, -1, -1);
  }
  return NULL;
}

const rill_op_schema rill_schema_matrix_nms = {
    .type = "matrix_nms",
    .doc = "Matrix NMS: scores decayed by overlap with higher-scoring boxes, per class.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = matrix_nms_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_BOXES,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(matrix_nms);
