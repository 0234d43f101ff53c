/* retinanet_target_assign: RetinaNet's training targets, rpn_target_assign's labelling
 * without sampling or straddle pruning: per image (GtBoxes' LoD), every anchor against
 * its non-crowd boxes scaled by ImInfo's scale; foreground when it is some box's best
 * anchor (within 1e-5) or its best IoU reaches positive_overlap, labelled with that
 * box's GtLabels value; background (label 0) when its best IoU is below
 * negative_overlap. An anchor both best-of-a-box and background stays background and
 * adds a zero-weight LocationIndex row (the first foreground's), as Paddle's.
 * ForegroundNumber is each image's LocationIndex rows + 1. Row counts depend on the
 * data; the kernel (kernels/cpu/rpn_target_assign.c) sizes the outputs. */
#include "operators/detection.h"

enum { IN_ANCHOR, IN_GT, IN_GT_LABELS, IN_CROWD, IN_IM_INFO };
enum { OUT_LOC, OUT_SCORE, OUT_TARGET_BBOX, OUT_TARGET_LABEL, OUT_INSIDE_WEIGHT, OUT_FG_NUM };

static const rill_slot_schema inputs[] = {
    [IN_ANCHOR] = {"Anchor", RILL_SLOT_NO_GRAD, "[M, 4] pixel anchors of the scaled image"},
    [IN_GT] = {"GtBoxes", RILL_SLOT_NO_GRAD, "[G, 4] boxes at the original scale, one LoD level"},
    [IN_GT_LABELS] = {"GtLabels", RILL_SLOT_NO_GRAD, "int32 [G, 1]: each box's class"},
    [IN_CROWD] = {"IsCrowd", RILL_SLOT_NO_GRAD, "int32 [G, 1]: non-zero for crowd boxes"},
    [IN_IM_INFO] = {"ImInfo", RILL_SLOT_NO_GRAD, "[N, 3]: height, width, scale per image"},
};
static const rill_slot_schema outputs[] = {
    [OUT_LOC] = {"LocationIndex", 0, "int32 [F]: anchors given a regression target"},
    [OUT_SCORE] = {"ScoreIndex", 0, "int32 [F' + B]: foreground then background anchors"},
    [OUT_TARGET_BBOX] = {"TargetBBox", 0, "[F, 4] deltas from anchor to its box"},
    [OUT_TARGET_LABEL] = {"TargetLabel", 0, "int32 [F' + B, 1]: box classes, then 0"},
    [OUT_INSIDE_WEIGHT] = {"BBoxInsideWeight", 0, "[F, 4]: 1, or 0 for a relabelled anchor"},
    [OUT_FG_NUM] = {"ForegroundNumber", 0, "int32 [N, 1]: LocationIndex rows + 1 per image"},
};
static const rill_attr_schema attrs[] = {
    {"positive_overlap", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f), "IoU making an anchor foreground"},
    {"negative_overlap", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.4f),
     "IoU below which an anchor is background"},
};

static rill_status *retinanet_target_assign_infer(rill_infer_ctx *ctx) {
  rill_dtype dt;
  bool ready;
  RILL_TRY(rill_target_infer_inputs(ctx, 1u << IN_GT_LABELS | 1u << IN_CROWD, &dt, &ready));
  if (!ready) return NULL;
  rill_anchor_target_outputs(ctx, dt);
  rill_dims dl = {.n = 2, .d = {-1, 1}};
  rill_meta_set(rill_infer_out(ctx, OUT_FG_NUM, 0), RILL_DTYPE_INT32, &dl, 1, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_retinanet_target_assign = {
    .type = "retinanet_target_assign",
    .doc = "RetinaNet training targets: every anchor labelled by IoU with the boxes.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = retinanet_target_assign_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_ANCHOR,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(retinanet_target_assign);
