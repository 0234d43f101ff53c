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
#include "operators/op_util.h"

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
  const rill_tensor_meta *in[4];
  for (size_t i = 0; i < 4; i++) in[i] = rill_infer_in(ctx, i, 0);
  rill_tensor_meta *out[5];
  for (size_t i = 0; i < 5; i++) out[i] = rill_infer_out(ctx, i, 0);
  if (!in[0] || !in[1] || !in[2] || !in[3] || !out[0] || !out[1] || !out[2] || !out[3] || !out[4])
    return rill_infer_error(ctx, "needs inputs Anchor, GtBoxes, IsCrowd and ImInfo and outputs "
                            "LocationIndex, ScoreIndex, TargetBBox, TargetLabel and BBoxInsideWeight");
  if (!in[0]->known || !in[1]->known || !in[2]->known || !in[3]->known) {
    for (size_t i = 0; i < 5; i++) rill_meta_unknown(out[i]);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  rill_dtype dt = in[IN_ANCHOR]->dtype;
  if (dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Anchor (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, IN_ANCHOR, 0), rill_dtype_name(dt));
  static const size_t ins[] = {IN_ANCHOR, IN_GT, IN_IM_INFO};
  for (size_t k = 0; k < 3; k++) {
    size_t i = ins[k];
    if (in[i]->dtype != dt)
      return rill_infer_error(ctx, "input %s (%s) is %s, Anchor %s: they must agree",
                              ctx->schema->inputs[i].name, rill_infer_in_name(ctx, i, 0),
                              rill_dtype_name(in[i]->dtype), rill_dtype_name(dt));
    if (in[i]->dims.n != 2)
      return rill_infer_error(ctx, "input %s (%s) has shape %s, expected rank 2",
                              ctx->schema->inputs[i].name, rill_infer_in_name(ctx, i, 0),
                              rill_dims_str(&in[i]->dims, s, sizeof s));
  }
  if (in[IN_CROWD]->dtype != RILL_DTYPE_INT32)
    return rill_infer_error(ctx, "input IsCrowd (%s) is %s, expected int32",
                            rill_infer_in_name(ctx, IN_CROWD, 0), rill_dtype_name(in[IN_CROWD]->dtype));
  rill_dims d1 = {.n = 1, .d = {-1}}, d4 = {.n = 2, .d = {-1, 4}}, dl = {.n = 2, .d = {-1, 1}};
  rill_meta_set(out[OUT_LOC], RILL_DTYPE_INT32, &d1, 1, -1, -1);
  rill_meta_set(out[OUT_SCORE], RILL_DTYPE_INT32, &d1, 1, -1, -1);
  rill_meta_set(out[OUT_TARGET_BBOX], dt, &d4, 1, -1, -1);
  rill_meta_set(out[OUT_TARGET_LABEL], RILL_DTYPE_INT32, &dl, 1, -1, -1);
  rill_meta_set(out[OUT_INSIDE_WEIGHT], dt, &d4, 1, -1, -1);
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
