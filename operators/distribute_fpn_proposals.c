/* distribute_fpn_proposals: sends each region of interest to the FPN level matching its
 * size, level = floor(log2(sqrt(area) / refer_scale) + refer_level) clamped to
 * [min_level, max_level], area counting pixel ends ((w + 1) * (h + 1)).
 *   FpnRois [R, 4] (one LoD level: the images) -> MultiFpnRois (max_level - min_level + 1
 *   tensors [R_l, 4], each with a LoD level over the images), RestoreIndex int32 [R, 1]
 *   (row i of FpnRois is row RestoreIndex[i] of the levels concatenated)
 * The row counts depend on the data: the kernel sizes the outputs. */
#include "operators/op_util.h"

enum { IN_ROIS };
enum { OUT_MULTI, OUT_RESTORE };
enum { A_MIN, A_MAX, A_REFER_LEVEL, A_REFER_SCALE };

static const rill_slot_schema inputs[] = {
    [IN_ROIS] = {"FpnRois", RILL_SLOT_NO_GRAD, "[R, 4] boxes with one LoD level (the images)"},
};
static const rill_slot_schema outputs[] = {
    [OUT_MULTI] = {"MultiFpnRois", RILL_SLOT_DUPLICABLE,
                   "one [R_l, 4] tensor per level, min_level first, rows in input order"},
    [OUT_RESTORE] = {"RestoreIndex", 0,
                     "int32 [R, 1]: each input row's position in the levels concatenated"},
};
static const rill_attr_schema attrs[] = {
    [A_MIN] = {"min_level", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
               "the lowest level"},
    [A_MAX] = {"max_level", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
               "the highest level"},
    [A_REFER_LEVEL] = {"refer_level", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
                       "the level of a box of refer_scale"},
    [A_REFER_SCALE] = {"refer_scale", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
                       "the size (square root of the area) that belongs to refer_level"},
};

static rill_status *distribute_fpn_proposals_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *rois = rill_infer_in(ctx, IN_ROIS, 0);
  rill_tensor_meta *restore = rill_infer_out(ctx, OUT_RESTORE, 0);
  size_t n = ctx->nout[OUT_MULTI];
  if (!rois || !restore || n == 0)
    return rill_infer_error(ctx, "needs input FpnRois and outputs MultiFpnRois and RestoreIndex");
  int32_t lo = ctx->attrs[A_MIN].v.i, hi = ctx->attrs[A_MAX].v.i;
  if (hi < lo || (int64_t)hi - lo + 1 != (int64_t)n)
    return rill_infer_error(ctx, "has %zu outputs MultiFpnRois (first %s) for levels %d to %d: "
                            "expected max_level - min_level + 1 of them", n,
                            rill_infer_out_name(ctx, OUT_MULTI, 0), lo, hi);
  if (ctx->attrs[A_REFER_SCALE].v.i <= 0)
    return rill_infer_error(ctx, "refer_scale is %d, expected a positive size",
                            ctx->attrs[A_REFER_SCALE].v.i);
  if (!rois->known) {
    for (size_t i = 0; i < n; i++) rill_meta_unknown(&ctx->out[OUT_MULTI][i]);
    rill_meta_unknown(restore);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  const char *rn = rill_infer_in_name(ctx, IN_ROIS, 0);
  if (rois->dtype != RILL_DTYPE_FP32 && rois->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input FpnRois (%s) is %s, expected float32 or float64", rn,
                            rill_dtype_name(rois->dtype));
  if (rois->dims.n != 2 || (rois->dims.d[1] >= 0 && rois->dims.d[1] != 4))
    return rill_infer_error(ctx, "input FpnRois (%s) has shape %s, expected [R, 4]", rn,
                            rill_dims_str(&rois->dims, s, sizeof s));
  rill_dims od = {.n = 2, .d = {-1, 4}};
  for (size_t i = 0; i < n; i++) rill_meta_set(&ctx->out[OUT_MULTI][i], rois->dtype, &od, 1, -1, -1);
  rill_dims rd = {.n = 2, .d = {-1, 1}};
  rill_meta_set(restore, RILL_DTYPE_INT32, &rd, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_distribute_fpn_proposals = {
    .type = "distribute_fpn_proposals",
    .doc = "Splits regions of interest among FPN levels by size, with the order to restore.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = distribute_fpn_proposals_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_ROIS,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(distribute_fpn_proposals);
