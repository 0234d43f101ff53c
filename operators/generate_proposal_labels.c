/* generate_proposal_labels: Fast R-CNN's RoI sampling and targets. Per image (RpnRois'
 * LoD): RpnRois divided by ImInfo's scale, after the image's GtBoxes (which are
 * proposals too); each proposal's best pixel IoU with the boxes (-1 for a crowd box
 * itself); foreground when it reaches fg_thresh (its box: the first within 1e-5 of the
 * best), background when in [bg_thresh_lo, bg_thresh_hi); at most
 * floor(batch_size_per_im * fg_fraction) foregrounds, then at most the rest of the batch
 * in backgrounds (reservoir sampling with use_random, else the first ones). Rois are the
 * foregrounds then the backgrounds times the scale; LabelsInt32 their boxes' GtClasses
 * (0 for backgrounds); a foreground of class c > 0 (1 with is_cls_agnostic) gets its
 * BoxToDelta target (divided by bbox_reg_weights) in columns 4c..4c+3 of BboxTargets,
 * and 1 in both weights there. Row counts depend on the data. */
#include "operators/detection.h"

enum { IN_ROIS, IN_GT_CLASSES, IN_CROWD, IN_GT_BOXES, IN_IM_INFO };
enum { OUT_ROIS, OUT_LABELS, OUT_TARGETS, OUT_INSIDE, OUT_OUTSIDE };

static const rill_slot_schema inputs[] = {
    [IN_ROIS] = {"RpnRois", RILL_SLOT_NO_GRAD, "[R, 4] proposals of the scaled images, one LoD level"},
    [IN_GT_CLASSES] = {"GtClasses", RILL_SLOT_NO_GRAD, "int32 [G, 1] box classes, one LoD level"},
    [IN_CROWD] = {"IsCrowd", RILL_SLOT_NO_GRAD, "int32 [G, 1]: non-zero for crowd boxes"},
    [IN_GT_BOXES] = {"GtBoxes", RILL_SLOT_NO_GRAD, "[G, 4] boxes at the original scale, one LoD level"},
    [IN_IM_INFO] = {"ImInfo", RILL_SLOT_NO_GRAD, "[N, 3]: height, width, scale per image"},
};
static const rill_slot_schema outputs[] = {
    [OUT_ROIS] = {"Rois", 0, "[P, 4] sampled RoIs of the scaled images, one LoD level"},
    [OUT_LABELS] = {"LabelsInt32", 0, "int32 [P, 1] their classes (0: background)"},
    [OUT_TARGETS] = {"BboxTargets", 0, "[P, 4 * class_nums] regression targets"},
    [OUT_INSIDE] = {"BboxInsideWeights", 0, "[P, 4 * class_nums]: 1 where a target is"},
    [OUT_OUTSIDE] = {"BboxOutsideWeights", 0, "[P, 4 * class_nums]: 1 where a target is"},
};
static const rill_attr_schema attrs[] = {
    {"batch_size_per_im", RILL_ATTR_INT, 0, RILL_DEF_INT(256), "RoIs sampled per image"},
    {"fg_fraction", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.25f), "share of the batch for foregrounds"},
    {"fg_thresh", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.25f), "IoU making a RoI foreground"},
    {"bg_thresh_hi", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f), "backgrounds' IoU is below it"},
    {"bg_thresh_lo", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "backgrounds' IoU is at least it"},
    {"bbox_reg_weights", RILL_ATTR_FLOATS, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
     "four divisors of the deltas (empty: 1)"},
    {"class_nums", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
     "classes, background included: BboxTargets has 4 columns each"},
    {"use_random", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "sample at random; false keeps the first RoIs in order"},
    {"is_cls_agnostic", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "every foreground's target in class 1's columns"},
    {"is_cascade_rcnn", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "Cascade R-CNN's later stages (not supported: must be false)"},
};

static rill_status *generate_proposal_labels_infer(rill_infer_ctx *ctx) {
  int32_t classes = ctx->attrs[RILL_GENERATE_PROPOSAL_LABELS_ATTR_CLASS_NUMS].v.i;
  if (classes < 1)
    return rill_infer_error(ctx, "attribute class_nums is %d, expected at least 1", classes);
  if (ctx->attrs[RILL_GENERATE_PROPOSAL_LABELS_ATTR_IS_CASCADE_RCNN].v.b)
    return rill_error(RILL_UNIMPLEMENTED, "%s: attribute is_cascade_rcnn true (Cascade R-CNN's "
                      "later stages) is not supported", ctx->schema->type);
  const rill_attr_value *w = &ctx->attrs[RILL_GENERATE_PROPOSAL_LABELS_ATTR_BBOX_REG_WEIGHTS];
  if (w->n != 0 && w->n != 4)
    return rill_infer_error(ctx, "attribute bbox_reg_weights has %zu values, expected 4", (size_t)w->n);
  rill_dtype dt;
  bool ready;
  RILL_TRY(rill_target_infer_inputs(ctx, 1u << IN_GT_CLASSES | 1u << IN_CROWD, &dt, &ready));
  if (!ready) return NULL;
  rill_dims d4 = {.n = 2, .d = {-1, 4}}, d1 = {.n = 2, .d = {-1, 1}};
  rill_dims dc = {.n = 2, .d = {-1, 4 * (int64_t)classes}};
  rill_meta_set(rill_infer_out(ctx, OUT_ROIS, 0), dt, &d4, 1, -1, -1);
  rill_meta_set(rill_infer_out(ctx, OUT_LABELS, 0), RILL_DTYPE_INT32, &d1, 1, -1, -1);
  for (size_t i = OUT_TARGETS; i <= OUT_OUTSIDE; i++)
    rill_meta_set(rill_infer_out(ctx, i, 0), dt, &dc, 1, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_generate_proposal_labels = {
    .type = "generate_proposal_labels",
    .doc = "Fast R-CNN RoI sampling: foreground and background RoIs with their targets.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES | RILL_OP_RANDOM,
    .infer = generate_proposal_labels_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_ROIS,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(generate_proposal_labels);
