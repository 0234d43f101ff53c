/* log_softmax: Out = X - log(sum(exp(X))) along `axis` (numerically stable), and its
 * gradient in Paddle's layout (Out, Out@GRAD -> X@GRAD):
 * X@GRAD = Out@GRAD - exp(Out) * sum(Out@GRAD along axis). Kernels: kernels/cpu/log_softmax.c. */
#include "operators/activation.h"

static const rill_slot_schema inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "log of softmax of X along axis, same shape"}};
static const rill_attr_schema attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "dim to normalize over; negative counts from the end"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *log_softmax_infer(rill_infer_ctx *ctx) {
  RILL_TRY(rill_act_infer(ctx));
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  int axis;
  if (x->known) RILL_TRY(rill_act_check_axis(ctx, ctx->attrs[RILL_LOG_SOFTMAX_ATTR_AXIS].v.i, x->dims.n, 0, &axis));
  return NULL;
}

const rill_op_schema rill_schema_log_softmax = {
    .type = "log_softmax",
    .doc = "Out = X - max - log(sum(exp(X - max))) along axis.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = log_softmax_infer,
    .grad = rill_act_grad_from_out,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"Out", 0, "the forward output"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"}};

static rill_status *log_softmax_grad_infer(rill_infer_ctx *ctx) {
  RILL_TRY(rill_act_grad_infer(ctx));
  const rill_tensor_meta *out = rill_infer_in(ctx, 0, 0);
  int axis;
  if (out->known) RILL_TRY(rill_act_check_axis(ctx, ctx->attrs[RILL_LOG_SOFTMAX_ATTR_AXIS].v.i, out->dims.n, 0, &axis));
  return NULL;
}

const rill_op_schema rill_schema_log_softmax_grad = {
    .type = "log_softmax_grad",
    .doc = "Gradient of log_softmax: X@GRAD = Out@GRAD - exp(Out) * sum(Out@GRAD) along axis.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = log_softmax_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(log_softmax);
