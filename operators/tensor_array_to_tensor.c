/* tensor_array_to_tensor: the items of a tensor array concatenated (or stacked) along an
 * axis into one tensor, with each item's extent along the axis. */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "a tensor array whose items agree in dtype and in every dim but `axis` (every "
             "dim when stacking)"}};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "the items concatenated along axis (stacked along a new axis with use_stack)"},
    {"OutIndex", RILL_SLOT_DISPENSABLE,
     "int32 [items]: each item's extent along axis (1 with use_stack)"},
};
static const rill_attr_schema attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the axis (negative counts from the end)"},
    {"use_stack", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "stack along a new axis instead of concatenating"},
};

static rill_status *maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Out", "OutIndex"}, *const og[] = {"Out"},
                           *const ig[] = {"X"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), og, 1, ig, 1);
}

const rill_op_schema rill_schema_tensor_array_to_tensor = {
    .type = "tensor_array_to_tensor",
    .doc = "Out = concat(X's items, axis), or stack(X's items, axis) with use_stack; "
           "OutIndex holds each item's extent along axis.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "the forward's array (the items' shapes)"},
    {"Out", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "the forward's Out"},
    {"OutIndex", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "the forward's OutIndex"},
    {"Out@GRAD", RILL_SLOT_NO_GRAD, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", 0, "a tensor array: Out@GRAD split back into X's items"}};

const rill_op_schema rill_schema_tensor_array_to_tensor_grad = {
    .type = "tensor_array_to_tensor_grad",
    .doc = "X@GRAD[i] = the part of Out@GRAD that item i of X became (split along axis, or "
           "unstacked).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(tensor_array_to_tensor);
