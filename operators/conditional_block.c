/* conditional_block: runs its sub-block in a child scope when its condition holds
 * (Fluid's if/else, layers.cond, IfElse, Switch). */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"Cond", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "with is_scalar_condition: one bool tensor of one element, the condition"},
    {"Input", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_ANY_PLACE,
     "the parent variables the sub-block reads; without is_scalar_condition the block runs "
     "only when every one of them has elements"},
};
static const rill_slot_schema outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "the parent variables the sub-block writes (written in place, through the scope chain)"},
    {"Scope", RILL_SLOT_DISPENSABLE,
     "the step scope (Paddle's STEP_SCOPES), kept until the run ends for "
     "conditional_block_grad; holds no scope when the block did not run"},
};
static const rill_attr_schema attrs[] = {
    {"sub_block", RILL_ATTR_BLOCK, RILL_ATTR_REQUIRED, {.type = RILL_ATTR_BLOCK, .v.block = 0},
     "the block to run"},
    {"is_scalar_condition", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "true: Cond[0] decides; false: the block runs when no Input is empty"},
    {"skip_eager_deletion_vars", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "Paddle's garbage-collection hint; unused"},
};

/* Paddle's ConditionalBlockGradMaker: the backward pass points sub_block at the gradient
 * block it builds from the forward block. */
static rill_status *cond_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "Input")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "conditional_block_grad", &op));
  static const char *const fwd[] = {"Cond", "Input", "Out", "Scope"};
  for (size_t i = 0; i < RILL_COUNTOF(fwd); i++) RILL_TRY(rill_grad_forward(ctx, op, fwd[i]));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  return rill_grad_of_input(ctx, op, "Input");
}

const rill_op_schema rill_schema_conditional_block = {
    .type = "conditional_block",
    .doc = "Runs sub_block in a new child scope of the op's scope when the condition holds: "
           "with is_scalar_condition, the one bool element of Cond[0]; otherwise, when every "
           "Input tensor has elements. The block's own variables live in the child scope, "
           "which the Scope output keeps until the run ends (dropped at once without Scope); "
           "it reads and writes its parents' variables where they are.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_SUBBLOCK | RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = cond_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

/* conditional_block_grad runs the gradient block (its sub_block, which the backward pass
 * builds from the forward block) in the forward's kept step scope and hands the
 * gradients of Input to the enclosing block; zeros when the forward did not run. */
static const rill_slot_schema grad_inputs[] = {
    {"Cond", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "the forward's condition"},
    {"Input", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "the forward's inputs (shapes for the zero gradients)"},
    {"Out", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "the forward's outputs"},
    {"Out@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "gradients of Out, read by the gradient block through the scope chain"},
    {"Scope", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "the forward's step scope"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "gradients of Input: the gradient block's `<input>@GRAD`, or zeros"},
};

const rill_op_schema rill_schema_conditional_block_grad = {
    .type = "conditional_block_grad",
    .doc = "When the forward ran its block (the same condition), runs sub_block (the "
           "gradient block) in the step scope the forward kept in Scope and copies each "
           "`<Input>@GRAD` the gradient block computed there to Input@GRAD; an input the "
           "gradient block did not reach, and every input when the forward skipped its "
           "block, gets zeros shaped like the input.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_SUBBLOCK | RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(conditional_block);
