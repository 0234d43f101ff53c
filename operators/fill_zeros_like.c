/* fill_zeros_like: Out = zeros of X's shape and dtype (gradients nothing produced). */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "tensor whose shape and dtype Out takes (or a tensor array: Out is an array of zeros like its items)"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "zeros shaped like X"}};

const rill_op_schema rill_schema_fill_zeros_like = {
    .type = "fill_zeros_like",
    .doc = "Out = a tensor of zeros with X's shape, dtype and LoD (for an array X, an array of "
           "such zeros item by item).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = rill_infer_like_input,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(fill_zeros_like);
