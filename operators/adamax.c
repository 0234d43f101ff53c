/* adamax (Paddle's adamax op): first moment and infinity norm; Beta1Pow is read, not written. */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"Grad", 0, "dense gradient"},
    {"LearningRate", 0, "one-element learning rate"},
    {"Moment", 0, "first moment, Param's shape"},
    {"InfNorm", 0, "infinity norm, Param's shape"},
    {"Beta1Pow", 0, "one element: beta1^t"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter"},
    {"MomentOut", 0, "updated moment"},
    {"InfNormOut", 0, "updated infinity norm"},
};
static const rill_attr_schema attrs[] = {
    {"beta1", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.9f), "first-moment decay"},
    {"beta2", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.999f), "infinity-norm decay"},
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0e-8f), "added to the decayed norm"},
};

static const rill_opt_io io[] = {{0, 0, false, false}, {1, -1, true, false}, {2, -1, false, true}, {3, 1, true, false}, {4, 2, true, false}, {5, -1, false, true}};

static rill_status *adamax_infer(rill_infer_ctx *ctx) {
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_adamax = {
    .type = "adamax",
    .doc = "Adamax: MomentOut = b1 m + (1-b1) g; InfNormOut = max(b2 u + eps, |g|); ParamOut = Param - lr / (1 - Beta1Pow) * MomentOut / InfNormOut. Beta1Pow is advanced by a scale op the optimizer appends; dense Grad only.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = adamax_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(adamax);
