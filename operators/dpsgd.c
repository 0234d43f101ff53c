/* dpsgd (Paddle's dpsgd op): differentially private SGD. The gradient is scaled down to
 * L2 norm `clip` when longer, and one Gaussian noise value of std `sigma` per run, divided
 * by `batch_size`, is added to every element before the SGD step. Dense gradients. */
#include "operators/optimizer.h"

static const rill_slot_schema inputs[] = {
    {"Param", 0, "parameter"},
    {"Grad", 0, "dense gradient, Param's shape"},
    {"LearningRate", 0, "one-element learning rate"},
};
static const rill_slot_schema outputs[] = {
    {"ParamOut", 0, "updated parameter (usually Param itself)"},
};
static const rill_attr_schema attrs[] = {
    {"clip", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.9f), "L2 norm the gradient is clipped to"},
    {"batch_size", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.999f), "the noise is divided by it"},
    {"sigma", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-8f), "standard deviation of the noise"},
    {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
     "nonzero: the same noise on every run; 0: a new draw each run"},
};

static const rill_opt_io io[] = {{0, 0, false, false}, {1, -1, true, false}, {2, -1, false, true}};

static rill_status *dpsgd_infer(rill_infer_ctx *ctx) {
  return rill_opt_infer(ctx, io, RILL_COUNTOF(io));
}

const rill_op_schema rill_schema_dpsgd = {
    .type = "dpsgd",
    .doc = "ParamOut = Param - LearningRate * (Grad / s + n / batch_size), s = max(1, "
           "|Grad|_2 / clip), n one N(0, sigma^2) draw per run shared by every element.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_RANDOM,
    .infer = dpsgd_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(dpsgd);
