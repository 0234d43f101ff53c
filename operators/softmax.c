/* softmax: normalized exponentials along `axis`. */
#include "operators/activation.h"

static const rill_slot_schema inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "softmax of X along axis, same shape"}};
static const rill_attr_schema attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "dim to normalize over; negative counts from the end"},
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"data_format", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("AnyLayout"), "ignored"},
    {"is_test", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *softmax_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int axis = ctx->attrs[RILL_SOFTMAX_ATTR_AXIS].v.i, r = x->dims.n;
  if (r == 0 ? (axis != 0 && axis != -1) : (axis < -r || axis >= r))
    return rill_infer_error(ctx, "attribute axis %d is out of range for input X (%s) of rank %d",
                            axis, rill_infer_in_name(ctx, 0, 0), r);
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_softmax = {
    .type = "softmax",
    .doc = "Out = exp(X - max) / sum(exp(X - max)) along axis (numerically stable).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = softmax_infer,
    .grad = rill_act_grad_from_out,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* softmax_grad (Paddle's layout: Out, Out@GRAD -> X@GRAD):
 * X@GRAD = Out * (Out@GRAD - sum(Out@GRAD * Out along axis)). */
static const rill_slot_schema grad_inputs[] = {
    {"Out", 0, "the forward output"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"}};

static rill_status *softmax_grad_infer(rill_infer_ctx *ctx) {
  RILL_TRY(rill_act_grad_infer(ctx));
  const rill_tensor_meta *out = rill_infer_in(ctx, 0, 0);
  int axis;
  if (out && out->known) RILL_TRY(rill_act_check_axis(ctx, ctx->attrs[RILL_SOFTMAX_ATTR_AXIS].v.i, out->dims.n, 0, &axis));
  return NULL;
}

const rill_op_schema rill_schema_softmax_grad = {
    .type = "softmax_grad",
    .doc = "Gradient of softmax: X@GRAD = Out * (Out@GRAD - sum(Out@GRAD * Out)) along axis.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = softmax_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(softmax);
