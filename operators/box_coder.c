/* box_coder: encodes target boxes as offsets from prior boxes (encode_center_size) or
 * decodes such offsets back into boxes (decode_center_size), scaled by per-prior
 * variances (PriorBoxVar), by the 4-value attribute `variance`, or by nothing. */
#include <string.h>

#include "operators/op_util.h"

enum { IN_PRIOR, IN_PRIOR_VAR, IN_TARGET };
enum { OUT_BOX };

static const rill_slot_schema inputs[] = {
    [IN_PRIOR] = {"PriorBox", RILL_SLOT_NO_GRAD, "[M, 4] prior boxes xmin, ymin, xmax, ymax"},
    [IN_PRIOR_VAR] = {"PriorBoxVar", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                      "[M, 4] per-prior variances"},
    [IN_TARGET] = {"TargetBox", RILL_SLOT_NO_GRAD,
                   "encode: [N, 4] boxes (LoD allowed); decode: [N, M, 4] (axis 0) or [M, N, 4] "
                   "(axis 1) offsets"},
};
static const rill_slot_schema outputs[] = {
    [OUT_BOX] = {"OutputBox", 0, "encode: [N, M, 4] offsets; decode: TargetBox's shape, boxes"},
};
static const rill_attr_schema attrs[] = {
    {"code_type", RILL_ATTR_STRING, 0, RILL_DEF_STRING("encode_center_size"),
                "encode_center_size or decode_center_size"},
    {"box_normalized", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
                "false: boxes are in pixels and widths count both ends (+1)"},
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
                "decode: the TargetBox dim the priors run along (0: dim 1, 1: dim 0)"},
    {"variance", RILL_ATTR_FLOATS, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
               "4 variances for every prior when PriorBoxVar is absent"},
};

static rill_status *box_coder_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *prior = rill_infer_in(ctx, IN_PRIOR, 0);
  const rill_tensor_meta *pvar = rill_infer_in(ctx, IN_PRIOR_VAR, 0);
  const rill_tensor_meta *target = rill_infer_in(ctx, IN_TARGET, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_BOX, 0);
  if (!prior || !target || !out)
    return rill_infer_error(ctx, "needs inputs PriorBox and TargetBox and output OutputBox");
  const char *code = ctx->attrs[RILL_BOX_CODER_ATTR_CODE_TYPE].v.s ? ctx->attrs[RILL_BOX_CODER_ATTR_CODE_TYPE].v.s : "";
  bool encode = strcmp(code, "encode_center_size") == 0;
  if (!encode && strcmp(code, "decode_center_size") != 0)
    return rill_infer_error(ctx, "attribute code_type \"%s\" is not encode_center_size or "
                            "decode_center_size", code);
  int32_t axis = ctx->attrs[RILL_BOX_CODER_ATTR_AXIS].v.i;
  if (axis != 0 && axis != 1)
    return rill_infer_error(ctx, "attribute axis is %d, must be 0 or 1", (int)axis);
  size_t nv = ctx->attrs[RILL_BOX_CODER_ATTR_VARIANCE].n;
  if (nv != 0 && nv != 4)
    return rill_infer_error(ctx, "attribute variance has %zu values, expected 4 (or none)", nv);
  if (pvar && nv)
    return rill_infer_error(ctx, "input PriorBoxVar (%s) and attribute variance must not be used "
                            "together", rill_infer_in_name(ctx, IN_PRIOR_VAR, 0));
  if (!prior->known || !target->known || (pvar && !pvar->known)) {
    rill_meta_unknown(out);
    return NULL;
  }
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *pn = rill_infer_in_name(ctx, IN_PRIOR, 0), *tn = rill_infer_in_name(ctx, IN_TARGET, 0);
  if (prior->dtype != RILL_DTYPE_FP32 && prior->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input PriorBox (%s) is %s, expected float32 or float64", pn,
                            rill_dtype_name(prior->dtype));
  if (target->dtype != prior->dtype || (pvar && pvar->dtype != prior->dtype))
    return rill_infer_error(ctx, "inputs TargetBox (%s, %s) and PriorBoxVar must have PriorBox's "
                            "dtype %s", tn, rill_dtype_name(target->dtype), rill_dtype_name(prior->dtype));
  if (prior->dims.n != 2 || (prior->dims.d[1] >= 0 && prior->dims.d[1] != 4))
    return rill_infer_error(ctx, "input PriorBox (%s) has shape %s, expected [M, 4]", pn,
                            rill_dims_str(&prior->dims, a, sizeof a));
  if (pvar) {
    bool same = pvar->dims.n == 2;
    for (int i = 0; same && i < 2; i++)
      same = pvar->dims.d[i] < 0 || prior->dims.d[i] < 0 || pvar->dims.d[i] == prior->dims.d[i];
    if (!same)
      return rill_infer_error(ctx, "input PriorBoxVar (%s) has shape %s, PriorBox (%s) %s: they "
                              "must be equal", rill_infer_in_name(ctx, IN_PRIOR_VAR, 0),
                              rill_dims_str(&pvar->dims, a, sizeof a), pn,
                              rill_dims_str(&prior->dims, b, sizeof b));
  }
  int64_t m = prior->dims.d[0];
  if (encode) {
    if (target->dims.n != 2 || (target->dims.d[1] >= 0 && target->dims.d[1] != 4))
      return rill_infer_error(ctx, "input TargetBox (%s) has shape %s, expected [N, 4] to encode",
                              tn, rill_dims_str(&target->dims, a, sizeof a));
    rill_dims d = {.n = 3, .d = {target->dims.d[0], m, 4}};
    rill_meta_set(out, prior->dtype, &d, target->lod_level, IN_TARGET, 0);
    return NULL;
  }
  int64_t along = target->dims.n == 3 ? target->dims.d[axis == 0 ? 1 : 0] : -1;
  if (target->dims.n != 3 || (target->dims.d[2] >= 0 && target->dims.d[2] != 4) ||
      (along >= 0 && m >= 0 && along != m))
    return rill_infer_error(ctx, "input TargetBox (%s) has shape %s, expected [N, %lld, 4] (axis "
                            "0) or [%lld, N, 4] (axis 1) with the %lld priors of PriorBox (%s); "
                            "axis is %d", tn, rill_dims_str(&target->dims, a, sizeof a),
                            (long long)m, (long long)m, (long long)m, pn, (int)axis);
  if (axis == 1)
    rill_meta_set(out, prior->dtype, &target->dims, prior->lod_level, IN_PRIOR, 0);
  else
    rill_meta_set(out, prior->dtype, &target->dims, target->lod_level, IN_TARGET, 0);
  return NULL;
}

const rill_op_schema rill_schema_box_coder = {
    .type = "box_coder",
    .doc = "Encodes boxes as centre/size offsets from prior boxes, or decodes such offsets.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = box_coder_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_PRIOR,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(box_coder);
