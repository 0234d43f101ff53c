/* lamb (Paddle 1.8's lamb op): Adam moments with a layer-wise trust ratio. */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"Grad", 0, "gradient: dense or selected rows"},
    {"LearningRate", 0, "one-element learning rate"},
    {"Moment1", 0, "first moment, Param's shape"},
    {"Moment2", 0, "second moment, Param's shape"},
    {"Beta1Pow", 0, "one element: beta1^t (unused, as in Paddle 1.8)"},
    {"Beta2Pow", 0, "one element: beta2^t (unused, as in Paddle 1.8)"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter"},
    {"Moment1Out", 0, "updated first moment"},
    {"Moment2Out", 0, "updated second moment"},
};
static const rill_attr_schema attrs[] = {
    {"weight_decay", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.01f), "decoupled weight decay in the update"},
    {"beta1", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.9f), "first-moment decay"},
    {"beta2", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.999f), "second-moment decay"},
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0e-6f), "numerical stabilizer"},
};

static const rill_opt_io io[] = {{0, 0, false, false}, {1, -1, true, false}, {2, -1, false, true}, {3, 1, true, false}, {4, 2, true, false}, {5, -1, false, true}, {6, -1, false, true}};

static rill_status *lamb_infer(rill_infer_ctx *ctx) {
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_lamb = {
    .type = "lamb",
    .doc = "LAMB (Paddle 1.8): m1 = b1 m1 + (1-b1) g; m2 = b2 m2 + (1-b2) g^2; r = m1 / (sqrt(m2) + eps) + weight_decay p (no bias correction: Beta1Pow/Beta2Pow are read, unused); ParamOut = Param - lr * ratio * r, ratio = |P| / |r| when both are positive, 1 otherwise. A selected-rows Grad counts as zero in the rows it lacks; one with no rows leaves everything unchanged.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = lamb_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(lamb);
