/* adadelta (Paddle's adadelta op): no LearningRate input, dense gradients. */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"Grad", 0, "dense gradient"},
    {"AvgSquaredGrad", 0, "running mean of g^2, Param's shape"},
    {"AvgSquaredUpdate", 0, "running mean of the squared update, Param's shape"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter"},
    {"AvgSquaredGradOut", 0, "updated mean of g^2"},
    {"AvgSquaredUpdateOut", 0, "updated mean of the squared update"},
};
static const rill_attr_schema attrs[] = {
    {"rho", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.95f), "decay of the running means"},
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0e-6f), "numerical stabilizer"},
};

static const rill_opt_io io[] = {{0, 0, false, false}, {1, -1, true, false}, {2, 1, true, false}, {3, 2, true, false}};

static rill_status *adadelta_infer(rill_infer_ctx *ctx) {
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_adadelta = {
    .type = "adadelta",
    .doc = "Adadelta: g2 = rho g2 + (1-rho) g^2; u = -sqrt((u2 + eps) / (g2 + eps)) g; u2 = rho u2 + (1-rho) u^2; ParamOut = Param + u, u recomputed from the new u2 when AvgSquaredUpdateOut is AvgSquaredUpdate (Paddle). No learning rate (Paddle's op has none); dense Grad only.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = adadelta_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(adadelta);
