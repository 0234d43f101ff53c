/* momentum: VelocityOut = mu * Velocity + Grad; ParamOut = Param - lr * VelocityOut, or
 * with Nesterov Param - lr * (Grad + mu * VelocityOut). */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"Grad", 0, "gradient: dense or selected rows"},
    {"Velocity", 0, "velocity accumulator, Param's shape"},
    {"LearningRate", 0, "one-element learning rate"},
    {"MasterParam", RILL_SLOT_DISPENSABLE, "fp32 master copy (unused here)"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter"},
    {"VelocityOut", 0, "updated velocity"},
    {"MasterParamOut", RILL_SLOT_DISPENSABLE, "unused"},
};
static const rill_attr_schema attrs[] = {
    {"mu", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0.0f), "momentum factor"},
    {"use_nesterov", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "Nesterov update"},
    {"regularization_method", RILL_ATTR_STRING, 0, RILL_DEF_STRING(""),
     "\"l2_decay\": Grad += regularization_coeff * Param first"},
    {"regularization_coeff", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "L2 coefficient"},
    {"multi_precision", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"rescale_grad", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "Grad is multiplied by this first"},
};

static const rill_opt_io io[] = {
    {0, 0, false, false},
    {1, -1, true, false},
    {2, 1, true, false},
    {3, -1, false, true},
};

static rill_status *momentum_infer(rill_infer_ctx *ctx) {
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_momentum = {
    .type = "momentum",
    .doc = "Momentum SGD (Paddle's momentum op); Velocity and Param are updated in place.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = momentum_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(momentum);
