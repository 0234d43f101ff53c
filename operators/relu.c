/* relu: Out = max(X, 0). */
#include "operators/activation.h"

static const rill_slot_schema inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "max(X, 0), same shape as X"}};
static const rill_attr_schema attrs[] = {
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *relu_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_relu = {
    .type = "relu",
    .doc = "Rectified linear unit: Out = max(X, 0), elementwise.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INPLACE | RILL_OP_FUSABLE_ACT | RILL_OP_FC_ACT,
    .infer = relu_infer,
    .grad = rill_act_grad_from_out, /* relu_grad: operators/activation.c */
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(relu);
