/* rmsprop (Paddle's rmsprop op): mean square, optional mean gradient (centered), momentum. */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"MeanSquare", 0, "running mean of g^2, Param's shape"},
    {"MeanGrad", RILL_SLOT_DISPENSABLE, "running mean of g, Param's shape (centered)"},
    {"LearningRate", 0, "one-element learning rate"},
    {"Grad", 0, "gradient: dense or selected rows"},
    {"Moment", 0, "momentum accumulator, Param's shape"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter"},
    {"MomentOut", 0, "updated moment"},
    {"MeanSquareOut", 0, "updated mean square"},
    {"MeanGradOut", RILL_SLOT_DISPENSABLE, "updated mean gradient (centered)"},
};
static const rill_attr_schema attrs[] = {
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0e-10f), "added to the mean square under the root"},
    {"decay", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.9f), "decay of the running means (rho)"},
    {"momentum", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "momentum factor"},
    {"centered", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "subtract the squared mean gradient"},
};

static const rill_opt_io io[] = {{0, 0, false, false}, {1, 2, true, false}, {2, 3, true, false}, {3, -1, false, true}, {4, -1, true, false}, {5, 1, true, false}};

static rill_status *rmsprop_infer(rill_infer_ctx *ctx) {
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_rmsprop = {
    .type = "rmsprop",
    .doc = "RMSProp: MeanSquareOut = decay ms + (1-decay) g^2; centered: MeanGradOut = decay mg + (1-decay) g, MomentOut = momentum mom + lr g / sqrt(ms - mg^2 + eps), else MomentOut = momentum mom + lr g / sqrt(ms + eps); ParamOut = Param - MomentOut. A selected-rows Grad counts as zero in the rows it lacks (every row is updated), as in Paddle.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = rmsprop_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(rmsprop);
