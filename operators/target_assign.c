/* target_assign: gathers per-prior targets from matched entities. For instance i and
 * prior j with MatchIndices[i][j] = id >= 0, Out[i][j] = X[lod[i] + id][j % P] (X is
 * [rows, P, K] with one LoD level giving each instance's rows) and OutWeight[i][j] = 1;
 * unmatched priors get mismatch_value and weight 0. Each NegIndices entry of instance i
 * (a prior index) then sets Out[i][neg] = mismatch_value with weight 1. */
#include "operators/op_util.h"

enum { IN_X, IN_MATCH, IN_NEG };
enum { OUT_OUT, OUT_WEIGHT };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", RILL_SLOT_NO_GRAD, "[rows, P, K] entities, one LoD level (instances)"},
    [IN_MATCH] = {"MatchIndices", RILL_SLOT_NO_GRAD, "int32 [N, M]: row within the instance, -1 none"},
    [IN_NEG] = {"NegIndices", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                "int32 [Neg, 1] with one LoD level: each instance's negative priors"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUT] = {"Out", 0, "[N, M, K] assigned targets"},
    [OUT_WEIGHT] = {"OutWeight", 0, "float32 [N, M, 1]: 1 where assigned or negative"},
};
static const rill_attr_schema attrs[] = {
    {"mismatch_value", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the target of unmatched priors"},
};

static rill_status *target_assign_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *m = rill_infer_in(ctx, IN_MATCH, 0);
  const rill_tensor_meta *neg = rill_infer_in(ctx, IN_NEG, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0), *wt = rill_infer_out(ctx, OUT_WEIGHT, 0);
  if (!x || !m || !out || !wt)
    return rill_infer_error(ctx, "needs inputs X and MatchIndices and outputs Out and OutWeight");
  if (!x->known || !m->known || (neg && !neg->known)) {
    rill_meta_unknown(out);
    rill_meta_unknown(wt);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_X, 0), *mn = rill_infer_in_name(ctx, IN_MATCH, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64 && x->dtype != RILL_DTYPE_INT32)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32, float64 or int32", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 3)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [rows, P, K]", xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  if (m->dtype != RILL_DTYPE_INT32 || m->dims.n != 2)
    return rill_infer_error(ctx, "input MatchIndices (%s) is %s %s, expected int32 [N, M]", mn,
                            rill_dtype_name(m->dtype), rill_dims_str(&m->dims, s, sizeof s));
  if (neg && neg->dtype != RILL_DTYPE_INT32)
    return rill_infer_error(ctx, "input NegIndices (%s) is %s, expected int32",
                            rill_infer_in_name(ctx, IN_NEG, 0), rill_dtype_name(neg->dtype));
  rill_dims d = {.n = 3, .d = {m->dims.d[0], m->dims.d[1], x->dims.d[2]}};
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  d.d[2] = 1;
  rill_meta_set(wt, RILL_DTYPE_FP32, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_target_assign = {
    .type = "target_assign",
    .doc = "Per-prior targets and weights gathered through match indices.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = target_assign_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(target_assign);
