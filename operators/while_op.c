/* while: runs its sub-block again and again while a bool condition holds (Fluid's
 * layers.While). */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_ANY_PLACE,
     "the parent variables the sub-block reads (where they are)"},
    {"Condition", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "bool tensor of one element, read before the first step and after every step; the "
     "sub-block must write it (a condition it never writes loops until the run is "
     "cancelled or passes its deadline)"},
};
static const rill_slot_schema outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "the parent variables the sub-block writes (written in place, through the scope chain)"},
    {"StepScopes", RILL_SLOT_DISPENSABLE,
     "the per-step scopes (STEP_SCOPES), a fresh one per step, kept in step order for "
     "while_grad until the run ends (unless is_test)"},
};
static const rill_attr_schema attrs[] = {
    {"sub_block", RILL_ATTR_BLOCK, RILL_ATTR_REQUIRED, {.type = RILL_ATTR_BLOCK, .v.block = 0},
     "the block to run at each step"},
    {"is_test", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "inference only: no step scope is kept, and every step runs in one child scope made "
     "for the loop, as when StepScopes is absent (the block's own variables carry over "
     "from step to step; Paddle's is_test loop does the same)"},
    {"skip_eager_deletion_vars", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "Paddle's garbage-collection hint; unused"},
};

/* Paddle's WhileGradOpMaker: while_grad reads the forward's X, Out and StepScopes and
 * writes X@GRAD. The backward pass points sub_block at the gradient block it builds and,
 * from that block's ops, fills Out@GRAD and original_output_grad (the gradients the
 * block reads from the enclosing block) and empties the X@GRAD it never writes. */
static rill_status *while_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "while_grad", &op));
  static const char *const fwd[] = {"X", "Out", "StepScopes"};
  for (size_t i = 0; i < RILL_COUNTOF(fwd); i++) RILL_TRY(rill_grad_forward(ctx, op, fwd[i]));
  return rill_grad_of_input(ctx, op, "X");
}

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
    .flags = RILL_OP_SUBBLOCK | RILL_OP_LOOP | RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = while_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "the forward's X (their gradients are X@GRAD; shapes for zero gradients)"},
    {"Out", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "the forward's outputs"},
    {"Out@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "the gradients the gradient block reads from the enclosing block (loop-carried ones "
     "it also writes there, step after step)"},
    {"StepScopes", RILL_SLOT_NO_GRAD, "the forward's step scopes"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "gradients of X summed over the steps (@EMPTY@ for those the gradient block never "
     "writes)"},
};
static const rill_attr_schema grad_attrs[] = {
    {"sub_block", RILL_ATTR_BLOCK, RILL_ATTR_REQUIRED, {.type = RILL_ATTR_BLOCK, .v.block = 0},
     "the gradient block, run once per forward step, last step first"},
    {"is_test", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "must be false: an is_test while keeps no step scopes"},
    {"original_output_grad", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "the names the gradient block reads Out@GRAD by (one per Out@GRAD, the same names)"},
    {"skip_eager_deletion_vars", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "Paddle's garbage-collection hint; unused"},
};

const rill_op_schema rill_schema_while_grad = {
    .type = "while_grad",
    .doc = "Runs sub_block (the gradient block) in each step scope the forward while kept, "
           "last step first. The block reads and writes the enclosing block's variables "
           "where they are (the loop-carried gradients in Out@GRAD, the counter it steps "
           "back); each `<X>@GRAD` it declares itself (a gradient local to the step) is "
           "summed over the steps into X@GRAD, which a loop that never ran leaves zero.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = grad_attrs,
    .nattrs = RILL_COUNTOF(grad_attrs),
    .flags = RILL_OP_SUBBLOCK | RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(while_op);
