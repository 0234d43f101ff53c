/* retinanet_detection_output: RetinaNet's detections from several FPN levels. Per image
 * and level, the (anchor, class) pairs whose score is above score_threshold (above 0 on
 * the last level), the best nms_top_k of them, are decoded against their anchors into
 * pixel boxes of the original image; then per class greedy NMS over all levels, and the
 * best keep_top_k of the image by score.
 *   BBoxes (L tensors [N, M_l, 4] deltas), Scores (L tensors [N, M_l, C]), Anchors
 *   (L tensors [M_l, 4]), ImInfo [N, 3] (height, width, scale) -> Out [K, 6] (label + 1,
 *   score, xmin, ymin, xmax, ymax) with one LoD level giving each image's rows
 * The row count depends on the data: the kernel sizes Out. */
#include "operators/op_util.h"

enum { IN_BOXES, IN_SCORES, IN_ANCHORS, IN_IM_INFO };

static const rill_slot_schema inputs[] = {
    [IN_BOXES] = {"BBoxes", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD,
                  "one [N, M_l, 4] tensor of box deltas per level"},
    [IN_SCORES] = {"Scores", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD,
                   "one [N, M_l, C] tensor of class scores per level (no background)"},
    [IN_ANCHORS] = {"Anchors", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD,
                    "one [M_l, 4] tensor of anchors per level"},
    [IN_IM_INFO] = {"ImInfo", RILL_SLOT_NO_GRAD, "[N, 3]: height, width, scale of each image"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "[K, 6]: label (class + 1), score, xmin, ymin, xmax, ymax"},
};
static const rill_attr_schema attrs[] = {
    {"score_threshold", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0.05f),
     "scores above it are candidates (the last level takes 0)"},
    {"nms_top_k", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(1000),
     "best candidates per level (-1: all)"},
    {"nms_threshold", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0.3f),
     "a box overlapping a kept one by more IoU is dropped"},
    {"nms_eta", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(1.0f),
     "adaptive NMS: the threshold is multiplied by it after each kept box while above 0.5"},
    {"keep_top_k", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(100),
     "detections kept per image (-1: all)"},
};

static rill_status *retinanet_detection_output_infer(rill_infer_ctx *ctx) {
  size_t n = ctx->nin[IN_BOXES];
  const rill_tensor_meta *info = rill_infer_in(ctx, IN_IM_INFO, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (n == 0 || !info || !out)
    return rill_infer_error(ctx, "needs inputs BBoxes, Scores, Anchors and ImInfo and output "
                            "Out");
  if (ctx->nin[IN_SCORES] != n || ctx->nin[IN_ANCHORS] != n)
    return rill_infer_error(ctx, "has %zu inputs BBoxes (first %s), %zu Scores and %zu "
                            "Anchors: one of each per level", n,
                            rill_infer_in_name(ctx, IN_BOXES, 0), ctx->nin[IN_SCORES],
                            ctx->nin[IN_ANCHORS]);
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  int64_t m0 = -1;
  rill_dtype dt = RILL_DTYPE_FP32;
  for (size_t i = 0; i < n; i++) {
    const rill_tensor_meta *bx = rill_infer_in(ctx, IN_BOXES, i);
    const rill_tensor_meta *sc = rill_infer_in(ctx, IN_SCORES, i);
    const rill_tensor_meta *an = rill_infer_in(ctx, IN_ANCHORS, i);
    if (!bx || !sc || !an)
      return rill_infer_error(ctx, "level %zu lacks BBoxes, Scores or Anchors", i);
    if (!bx->known || !sc->known || !an->known || !info->known) {
      rill_meta_unknown(out);
      return NULL;
    }
    const char *bn = rill_infer_in_name(ctx, IN_BOXES, i), *sn = rill_infer_in_name(ctx, IN_SCORES, i);
    const char *an_name = rill_infer_in_name(ctx, IN_ANCHORS, i);
    if (i == 0) {
      dt = sc->dtype;
      m0 = bx->dims.n == 3 ? bx->dims.d[1] : -1;
    }
    if (sc->dtype != RILL_DTYPE_FP32 && sc->dtype != RILL_DTYPE_FP64)
      return rill_infer_error(ctx, "input Scores (%s) is %s, expected float32 or float64", sn,
                              rill_dtype_name(sc->dtype));
    if (bx->dtype != dt || sc->dtype != dt || an->dtype != dt)
      return rill_infer_error(ctx, "inputs BBoxes (%s), Scores (%s) and Anchors (%s) are %s, "
                              "%s and %s, expected %s", bn, sn, an_name, rill_dtype_name(bx->dtype),
                              rill_dtype_name(sc->dtype), rill_dtype_name(an->dtype),
                              rill_dtype_name(dt));
    if (bx->dims.n != 3 || (bx->dims.d[2] >= 0 && bx->dims.d[2] != 4))
      return rill_infer_error(ctx, "input BBoxes (%s) has shape %s, expected [N, M, 4]", bn,
                              rill_dims_str(&bx->dims, a, sizeof a));
    if (sc->dims.n != 3 || (sc->dims.d[1] >= 0 && bx->dims.d[1] >= 0 &&
                            sc->dims.d[1] != bx->dims.d[1]))
      return rill_infer_error(ctx, "input Scores (%s) has shape %s, BBoxes (%s) %s: expected "
                              "[N, M, C] scores for [N, M, 4] boxes", sn,
                              rill_dims_str(&sc->dims, a, sizeof a), bn,
                              rill_dims_str(&bx->dims, b, sizeof b));
    if (an->dims.n != 2 || (an->dims.d[1] >= 0 && an->dims.d[1] != 4) ||
        (an->dims.d[0] >= 0 && bx->dims.d[1] >= 0 && an->dims.d[0] != bx->dims.d[1]))
      return rill_infer_error(ctx, "input Anchors (%s) has shape %s, BBoxes (%s) %s: expected "
                              "[M, 4] anchors for [N, M, 4] boxes", an_name,
                              rill_dims_str(&an->dims, a, sizeof a), bn,
                              rill_dims_str(&bx->dims, b, sizeof b));
  }
  if (info->dims.n != 2 || (info->dims.d[1] >= 0 && info->dims.d[1] != 3))
    return rill_infer_error(ctx, "input ImInfo (%s) has shape %s, expected [N, 3]",
                            rill_infer_in_name(ctx, IN_IM_INFO, 0),
                            rill_dims_str(&info->dims, a, sizeof a));
  /* Paddle records the first level's M rows and no LoD level at compile time */
  rill_dims od = {.n = 2, .d = {m0, 6}};
  rill_meta_set(out, dt, &od, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_retinanet_detection_output = {
    .type = "retinanet_detection_output",
    .doc = "RetinaNet detections: per-level top candidates decoded, then per-class NMS.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = retinanet_detection_output_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_SCORES,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(retinanet_detection_output);
