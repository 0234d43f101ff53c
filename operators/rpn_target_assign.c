/* rpn_target_assign: Faster R-CNN's RPN training targets. Per image (GtBoxes' LoD): the
 * anchors lying inside the image (rpn_straddle_thresh; < 0 keeps all), its non-crowd
 * ground-truth boxes scaled by ImInfo's scale, their pixel IoU; an anchor is foreground
 * when it is the best anchor of some box (within 1e-5) or its best IoU reaches
 * rpn_positive_overlap, background when its best IoU is below rpn_negative_overlap; at
 * most rpn_fg_fraction * rpn_batch_size_per_im foregrounds and the rest of the batch in
 * backgrounds are kept (reservoir sampling with use_random, else the first ones). A
 * sampled background that was foreground stays in LocationIndex with a zero
 * BBoxInsideWeight, as Paddle's. Indexes count anchors across the batch (image i's
 * anchor a is i * M + a); every output's row count depends on the data. */
#include "operators/detection.h"

enum { IN_ANCHOR, IN_GT, IN_CROWD, IN_IM_INFO };
enum { OUT_LOC, OUT_SCORE, OUT_TARGET_BBOX, OUT_TARGET_LABEL, OUT_INSIDE_WEIGHT };

static const rill_slot_schema inputs[] = {
    [IN_ANCHOR] = {"Anchor", RILL_SLOT_NO_GRAD, "[M, 4] pixel anchors of the scaled image"},
    [IN_GT] = {"GtBoxes", RILL_SLOT_NO_GRAD, "[G, 4] boxes at the original scale, one LoD level"},
    [IN_CROWD] = {"IsCrowd", RILL_SLOT_NO_GRAD, "int32 [G, 1]: non-zero for crowd boxes"},
    [IN_IM_INFO] = {"ImInfo", RILL_SLOT_NO_GRAD, "[N, 3]: height, width, scale per image"},
};
static const rill_slot_schema outputs[] = {
    [OUT_LOC] = {"LocationIndex", 0, "int32 [F]: anchors given a regression target"},
    [OUT_SCORE] = {"ScoreIndex", 0, "int32 [F' + B]: foreground then background anchors"},
    [OUT_TARGET_BBOX] = {"TargetBBox", 0, "[F, 4] deltas from anchor to its box"},
    [OUT_TARGET_LABEL] = {"TargetLabel", 0, "int32 [F' + B, 1]: 1 then 0"},
    [OUT_INSIDE_WEIGHT] = {"BBoxInsideWeight", 0, "[F, 4]: 1, or 0 for a relabelled anchor"},
};
static const rill_attr_schema attrs[] = {
    {"rpn_batch_size_per_im", RILL_ATTR_INT, 0, RILL_DEF_INT(256), "anchors sampled per image"},
    {"rpn_straddle_thresh", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
     "anchors reaching further outside the image are dropped (< 0: none)"},
    {"rpn_positive_overlap", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.7f),
     "IoU making an anchor foreground"},
    {"rpn_negative_overlap", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.3f),
     "IoU below which an anchor is background"},
    {"rpn_fg_fraction", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.25f),
     "share of the batch for foregrounds (<= 0, or a batch <= 0: no sampling)"},
    {"use_random", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "sample at random; false keeps the first anchors in index order"},
};

static rill_status *rpn_target_assign_infer(rill_infer_ctx *ctx) {
  rill_dtype dt;
  bool ready;
  RILL_TRY(rill_target_infer_inputs(ctx, 1u << IN_CROWD, &dt, &ready));
  if (ready) rill_anchor_target_outputs(ctx, dt);
  return NULL;
}

const rill_op_schema rill_schema_rpn_target_assign = {
    .type = "rpn_target_assign",
    .doc = "RPN training targets: anchors labelled by IoU with the boxes, sampled per image.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES | RILL_OP_RANDOM,
    .infer = rpn_target_assign_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_ANCHOR,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(rpn_target_assign);
