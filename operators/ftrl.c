/* ftrl (Paddle's ftrl op): squared and linear accumulators, dense gradients. */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"SquaredAccumulator", 0, "sum of g^2, Param's shape"},
    {"LinearAccumulator", 0, "linear term z, Param's shape"},
    {"Grad", 0, "dense gradient"},
    {"LearningRate", 0, "one-element learning rate"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter"},
    {"SquaredAccumOut", 0, "updated squared accumulator"},
    {"LinearAccumOut", 0, "updated linear accumulator"},
};
static const rill_attr_schema attrs[] = {
    {"l1", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "L1 strength"},
    {"l2", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "L2 strength"},
    {"lr_power", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(-0.5f), "learning-rate power"},
};

static const rill_opt_io io[] = {{0, 0, false, false}, {1, 1, true, false}, {2, 2, true, false}, {3, -1, true, false}, {4, -1, false, true}};

static rill_status *ftrl_infer(rill_infer_ctx *ctx) {
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_ftrl = {
    .type = "ftrl",
    .doc = "FTRL-proximal: n' = n + g^2; z' = z + g - (n'^-p - n^-p) / lr * Param (p = lr_power, sqrt for -0.5); ParamOut = |z'| > l1 ? (l1 sign(z') - z') / (n'^-p / lr + 2 l2) : 0, with l1 and l2 each plus 1e-10 (Paddle). Dense Grad only.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = ftrl_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(ftrl);
