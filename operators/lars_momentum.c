/* lars_momentum (Paddle's lars_momentum op): momentum with a layer-wise learning rate, dense gradients. */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"Grad", 0, "dense gradient"},
    {"Velocity", 0, "velocity, Param's shape"},
    {"LearningRate", 0, "one-element learning rate"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter"},
    {"VelocityOut", 0, "updated velocity"},
};
static const rill_attr_schema attrs[] = {
    {"mu", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0.0f), "momentum factor"},
    {"lars_coeff", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.001f), "trust coefficient"},
    {"lars_weight_decay", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0005f), "weight decay inside the update"},
};

static const rill_opt_io io[] = {{0, 0, false, false}, {1, -1, true, false}, {2, 1, true, false}, {3, -1, false, true}};

static rill_status *lars_momentum_infer(rill_infer_ctx *ctx) {
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_lars_momentum = {
    .type = "lars_momentum",
    .doc = "LARS momentum: local_lr = lr * lars_coeff * |P| / (|G| + lars_weight_decay |P|) when both norms are positive, lr otherwise; VelocityOut = mu v + local_lr (g + lars_weight_decay p); ParamOut = Param - VelocityOut. Dense Grad only.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = lars_momentum_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(lars_momentum);
