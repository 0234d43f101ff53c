/* while: runs its sub-block again and again while a bool condition holds (Fluid's
 * layers.While). */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "the parent variables the sub-block reads"},
    {"Condition", RILL_SLOT_NO_GRAD,
     "bool tensor of one element, read before the first step and after every step; the "
     "sub-block must write it (a condition it never writes loops until the run is "
     "cancelled or passes its deadline)"},
};
static const rill_slot_schema outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "the parent variables the sub-block writes (written in place, through the scope chain)"},
    {"StepScopes", RILL_SLOT_DISPENSABLE,
     "Paddle's per-step scopes (STEP_SCOPES), kept for while_grad; left empty"},
};
static const rill_attr_schema attrs[] = {
    {"sub_block", RILL_ATTR_BLOCK, RILL_ATTR_REQUIRED, {.type = RILL_ATTR_BLOCK, .v.block = 0},
     "the block to run at each step"},
    {"is_test", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "inference only (Paddle then reuses one step scope); rill runs both the same way"},
    {"skip_eager_deletion_vars", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "Paddle's garbage-collection hint; unused"},
};

const rill_op_schema rill_schema_while = {
    .type = "while",
    .doc = "While the one bool element of Condition is true, runs sub_block in a new child "
           "scope of the op's scope, one per step, dropped when the step ends: the block's "
           "own variables start afresh at every step, while it reads and writes its "
           "parents' variables (the condition among them) where they are.",
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

RILL_OP_TABLE_CHECKS(while_op);
