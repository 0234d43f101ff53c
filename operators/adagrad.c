/* adagrad: MomentOut = Moment + Grad^2; ParamOut = Param - lr * Grad / (sqrt(MomentOut) + eps). */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"Grad", 0, "gradient: dense or selected rows (only those rows are updated)"},
    {"Moment", 0, "sum of squared gradients, Param's shape"},
    {"LearningRate", 0, "one-element learning rate"},
    {"MasterParam", RILL_SLOT_DISPENSABLE, "fp32 master copy (unused here)"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter"},
    {"MomentOut", 0, "updated moment"},
    {"MasterParamOut", RILL_SLOT_DISPENSABLE, "unused"},
};
static const rill_attr_schema attrs[] = {
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0e-6f), "numerical stabilizer"},
    {"multi_precision", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static const rill_opt_io io[] = {
    {0, 0, false, false},
    {1, -1, true, false},
    {2, 1, true, false},
    {3, -1, false, true},
};

static rill_status *adagrad_infer(rill_infer_ctx *ctx) {
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_adagrad = {
    .type = "adagrad",
    .doc = "Adagrad; Param and Moment are updated in place.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = adagrad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(adagrad);
