/* conditional_block: runs its sub-block in a child scope when its condition holds
 * (Fluid's if/else, layers.cond, IfElse, Switch). */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"Cond", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD,
     "with is_scalar_condition: one bool tensor of one element, the condition"},
    {"Input", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "the parent variables the sub-block reads; without is_scalar_condition the block runs "
     "only when every one of them has elements"},
};
static const rill_slot_schema outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "the parent variables the sub-block writes (written in place, through the scope chain)"},
    {"Scope", RILL_SLOT_DISPENSABLE, "the step scope (Paddle's STEP_SCOPES); left empty"},
};
static const rill_attr_schema attrs[] = {
    {"sub_block", RILL_ATTR_BLOCK, RILL_ATTR_REQUIRED, {.type = RILL_ATTR_BLOCK, .v.block = 0},
     "the block to run"},
    {"is_scalar_condition", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "true: Cond[0] decides; false: the block runs when no Input is empty"},
    {"skip_eager_deletion_vars", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "Paddle's garbage-collection hint; unused"},
};

const rill_op_schema rill_schema_conditional_block = {
    .type = "conditional_block",
    .doc = "Runs sub_block in a new child scope of the op's scope when the condition holds: "
           "with is_scalar_condition, the one bool element of Cond[0]; otherwise, when every "
           "Input tensor has elements. The block's own variables live in the child scope, "
           "which is dropped when the op returns; it reads and writes its parents' variables "
           "where they are.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_SUBBLOCK | RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(conditional_block);
