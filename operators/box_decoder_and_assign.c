/* box_decoder_and_assign: Faster R-CNN's per-class box decoding. For ROI i (PriorBox row
 * i, pixel box) and class j, TargetBox's deltas decode against the ROI with the 4
 * variances of PriorBoxVar (dw and dh clipped at box_clip) into DecodeBox [R, C * 4];
 * OutputAssignBox [R, 4] is the decoded box of the best-scoring class other than 0
 * (BoxScore [R, C]), or the ROI itself when no such class scores above -1. */
#include "operators/op_util.h"

enum { IN_PRIOR, IN_VAR, IN_TARGET, IN_SCORE };
enum { OUT_DECODE, OUT_ASSIGN };

static const rill_slot_schema inputs[] = {
    [IN_PRIOR] = {"PriorBox", RILL_SLOT_NO_GRAD, "[R, 4] ROIs xmin, ymin, xmax, ymax in pixels"},
    [IN_VAR] = {"PriorBoxVar", RILL_SLOT_NO_GRAD, "[4] variances"},
    [IN_TARGET] = {"TargetBox", RILL_SLOT_NO_GRAD, "[R, C * 4] deltas per class (LoD allowed)"},
    [IN_SCORE] = {"BoxScore", RILL_SLOT_NO_GRAD, "[R, C] class scores"},
};
static const rill_slot_schema outputs[] = {
    [OUT_DECODE] = {"DecodeBox", 0, "[R, C * 4] decoded boxes; TargetBox's LoD"},
    [OUT_ASSIGN] = {"OutputAssignBox", 0, "[R, 4] the best class's box; TargetBox's LoD"},
};
static const rill_attr_schema attrs[] = {
    {"box_clip", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(4.135f),
     "upper bound of the scaled width and height deltas (log(1000 / 16))"},
};

static rill_status *box_decoder_and_assign_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *p = rill_infer_in(ctx, IN_PRIOR, 0), *v = rill_infer_in(ctx, IN_VAR, 0);
  const rill_tensor_meta *t = rill_infer_in(ctx, IN_TARGET, 0), *s = rill_infer_in(ctx, IN_SCORE, 0);
  rill_tensor_meta *dec = rill_infer_out(ctx, OUT_DECODE, 0), *as = rill_infer_out(ctx, OUT_ASSIGN, 0);
  if (!p || !v || !t || !s || !dec || !as)
    return rill_infer_error(ctx, "needs inputs PriorBox, PriorBoxVar, TargetBox and BoxScore and "
                            "outputs DecodeBox and OutputAssignBox");
  if (!p->known || !v->known || !t->known || !s->known) {
    rill_meta_unknown(dec);
    rill_meta_unknown(as);
    return NULL;
  }
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *pn = rill_infer_in_name(ctx, IN_PRIOR, 0), *tn = rill_infer_in_name(ctx, IN_TARGET, 0);
  if (p->dtype != RILL_DTYPE_FP32 && p->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input PriorBox (%s) is %s, expected float32 or float64", pn,
                            rill_dtype_name(p->dtype));
  if (v->dtype != p->dtype || t->dtype != p->dtype || s->dtype != p->dtype)
    return rill_infer_error(ctx, "inputs PriorBoxVar, TargetBox (%s) and BoxScore must have "
                            "PriorBox's (%s) dtype %s", tn, pn, rill_dtype_name(p->dtype));
  if (p->dims.n != 2 || (p->dims.d[1] >= 0 && p->dims.d[1] != 4))
    return rill_infer_error(ctx, "input PriorBox (%s) has shape %s, expected [R, 4]", pn,
                            rill_dims_str(&p->dims, a, sizeof a));
  if (v->dims.n != 1 || (v->dims.d[0] >= 0 && v->dims.d[0] != 4))
    return rill_infer_error(ctx, "input PriorBoxVar (%s) has shape %s, expected [4]",
                            rill_infer_in_name(ctx, IN_VAR, 0), rill_dims_str(&v->dims, a, sizeof a));
  bool fits = t->dims.n == 2 && s->dims.n == 2 &&
              (t->dims.d[1] < 0 || s->dims.d[1] < 0 || t->dims.d[1] == 4 * s->dims.d[1]) &&
              (t->dims.d[0] < 0 || p->dims.d[0] < 0 || t->dims.d[0] == p->dims.d[0]);
  if (!fits)
    return rill_infer_error(ctx, "inputs TargetBox (%s) %s and BoxScore (%s) %s must be [R, C * 4] "
                            "and [R, C] with PriorBox's R", tn, rill_dims_str(&t->dims, a, sizeof a),
                            rill_infer_in_name(ctx, IN_SCORE, 0), rill_dims_str(&s->dims, b, sizeof b));
  rill_meta_set(dec, p->dtype, &t->dims, t->lod_level, IN_TARGET, 0);
  rill_meta_set(as, p->dtype, &p->dims, t->lod_level, IN_TARGET, 0);
  return NULL;
}

const rill_op_schema rill_schema_box_decoder_and_assign = {
    .type = "box_decoder_and_assign",
    .doc = "Decodes per-class box deltas and keeps the best-scoring class's box.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = box_decoder_and_assign_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_PRIOR,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(box_decoder_and_assign);
