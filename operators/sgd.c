/* sgd: ParamOut = Param - LearningRate * Grad (Grad dense or selected rows). */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"LearningRate", 0, "one-element learning rate"},
    {"Grad", 0, "gradient: dense, or selected rows (only those rows are updated)"},
    {"MasterParam", RILL_SLOT_DISPENSABLE, "fp32 master copy (multi_precision; unused here)"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter (usually Param itself)"},
    {"MasterParamOut", RILL_SLOT_DISPENSABLE, "unused"},
};
static const rill_attr_schema attrs[] = {
    {"multi_precision", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static const rill_opt_io io[] = {
    {0, 0, false, false},
    {1, -1, false, true},
    {2, -1, true, false},
};

static rill_status *sgd_infer(rill_infer_ctx *ctx) { return rill_opt_infer(ctx, io, RILL_COUNTOF(io)); }

const rill_op_schema rill_schema_sgd = {
    .type = "sgd",
    .doc = "ParamOut = Param - LearningRate * Grad; a selected-rows Grad updates its rows only.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = sgd_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sgd);
