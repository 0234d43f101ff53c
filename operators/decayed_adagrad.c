/* decayed_adagrad (Paddle's decayed_adagrad op): Adagrad with a decaying moment, dense gradients. */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"Grad", 0, "dense gradient"},
    {"Moment", 0, "decayed sum of g^2, Param's shape"},
    {"LearningRate", 0, "one-element learning rate"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter"},
    {"MomentOut", 0, "updated moment"},
};
static const rill_attr_schema attrs[] = {
    {"decay", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.95f), "decay of the moment"},
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0e-6f), "numerical stabilizer"},
};

static const rill_opt_io io[] = {{0, 0, false, false}, {1, -1, true, false}, {2, 1, true, false}, {3, -1, false, true}};

static rill_status *decayed_adagrad_infer(rill_infer_ctx *ctx) {
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_decayed_adagrad = {
    .type = "decayed_adagrad",
    .doc = "Decayed Adagrad: MomentOut = decay m + (1-decay) g^2; ParamOut = Param - lr g / (sqrt(MomentOut) + eps). Dense Grad only.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = decayed_adagrad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(decayed_adagrad);
