/* adam (Paddle 2.x): moments, bias-corrected step, and the beta pow accumulators
 * updated by the op itself (Beta1PowOut = Beta1Pow * beta1). */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"Grad", 0, "gradient: dense or selected rows"},
    {"LearningRate", 0, "one-element learning rate"},
    {"Moment1", 0, "first moment, Param's shape"},
    {"Moment2", 0, "second moment, Param's shape"},
    {"Beta1Pow", 0, "one element: beta1^t"},
    {"Beta2Pow", 0, "one element: beta2^t"},
    {"Beta1Tensor", RILL_SLOT_DISPENSABLE, "one element overriding beta1"},
    {"Beta2Tensor", RILL_SLOT_DISPENSABLE, "one element overriding beta2"},
    {"EpsilonTensor", RILL_SLOT_DISPENSABLE, "one element overriding epsilon"},
    {"MasterParam", RILL_SLOT_DISPENSABLE, "fp32 master copy (unused here)"},
    {"SkipUpdate", RILL_SLOT_DISPENSABLE, "one bool: skip this step when true"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter"},
    {"Moment1Out", 0, "updated first moment"},
    {"Moment2Out", 0, "updated second moment"},
    {"Beta1PowOut", 0, "Beta1Pow * beta1"},
    {"Beta2PowOut", 0, "Beta2Pow * beta2"},
    {"MasterParamOut", RILL_SLOT_DISPENSABLE, "unused"},
};
static const rill_attr_schema attrs[] = {
    {"beta1", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.9f), "first-moment decay"},
    {"beta2", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.999f), "second-moment decay"},
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0e-8f), "numerical stabilizer"},
    {"lazy_mode", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "selected-rows Grad: update only the rows present"},
    {"min_row_size_to_use_multithread", RILL_ATTR_LONG, RILL_ATTR_EXTRA, RILL_DEF_LONG(1000),
     "ignored"},
    {"multi_precision", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_global_beta_pow", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "leave Beta1PowOut/Beta2PowOut to other ops"},
};

static const rill_opt_io io[] = {
    {0, 0, false, false}, {1, -1, true, false}, {2, -1, false, true}, {3, 1, true, false},
    {4, 2, true, false},  {5, 3, false, true},  {6, 4, false, true},
};

static rill_status *adam_infer(rill_infer_ctx *ctx) { return rill_opt_infer(ctx, io, RILL_COUNTOF(io)); }

const rill_op_schema rill_schema_adam = {
    .type = "adam",
    .doc = "Adam: m1 = b1 m1 + (1-b1) g; m2 = b2 m2 + (1-b2) g^2; lr' = lr sqrt(1-b2^t)/(1-b1^t); "
           "p -= lr' m1 / (sqrt(m2) + eps sqrt(1-b2^t)); beta pows multiplied by b1, b2.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = adam_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(adam);
