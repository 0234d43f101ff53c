/* recurrent: Fluid 1.x's StaticRNN. Runs its sub-block once per time step over the
 * leading dimension of its inputs, carrying states from one step to the next, and
 * stacks each step's outputs. rnn_memory_helper is the copy StaticRNN puts between a
 * step's values and the op's outputs and states. */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"inputs", RILL_SLOT_DUPLICABLE | RILL_SLOT_ANY_PLACE,
     "sequences [T, ...]: step t sees row t (row T-1-t with reverse) under the same name "
     "in the sub-block, shaped [...] (a view, on the sequence's place)"},
    {"initial_states", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_ANY_PLACE,
     "the states before the first step, one per ex_states name"},
    {"parameters", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_ANY_PLACE,
     "the enclosing blocks' variables the sub-block reads (weights among them)"},
};
static const rill_slot_schema outputs[] = {
    {"outputs", RILL_SLOT_DUPLICABLE,
     "[T, ...]: row t is the sub-block's variable of the same name after step t"},
    {"step_scopes", 0,
     "the per-step scopes (STEP_SCOPES), kept for recurrent_grad until the run ends "
     "(unless is_train is false)"},
};
static const rill_attr_schema attrs[] = {
    {"sub_block", RILL_ATTR_BLOCK, RILL_ATTR_REQUIRED, {.type = RILL_ATTR_BLOCK, .v.block = 0},
     "the block run at every step"},
    {"ex_states", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "sub-block variables holding the previous step's states (initial_states at the "
     "first step)"},
    {"states", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "sub-block variables holding a step's new states, one per ex_states name"},
    {"reverse", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "run the steps last row first"},
    {"is_train", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "keep every step's scope for the gradient (false: only the previous step's)"},
    {"has_states", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "whether ex_states and states are used"},
    {"skip_eager_deletion_vars", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "Paddle's garbage-collection hint; unused"},
};

/* Paddle's RecurrentGradOpDescMaker: every forward slot, the outputs' gradients, and the
 * gradients of inputs, initial_states and parameters; the backward pass points
 * sub_block at the gradient block it builds. */
static rill_status *recurrent_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"inputs", "initial_states", "parameters", "outputs",
                                    "step_scopes"};
  static const char *const og[] = {"outputs"};
  static const char *const ig[] = {"inputs", "initial_states", "parameters"};
  return rill_grad_emit(ctx, "recurrent_grad", fwd, RILL_COUNTOF(fwd), og, RILL_COUNTOF(og),
                        ig, RILL_COUNTOF(ig));
}

const rill_op_schema rill_schema_recurrent = {
    .type = "recurrent",
    .doc = "Runs sub_block once per row of inputs[0] (T steps), each step in a new child "
           "scope of the op's scope: the block sees row t of every input under the input's "
           "name, the previous step's `states` (initial_states at the first step) under the "
           "`ex_states` names, and the enclosing blocks' variables where they are; after the "
           "step, its variables named by `outputs` fill row t of those outputs.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_SUBBLOCK | RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = recurrent_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
    .step_states_attr = "states",
};

static const rill_slot_schema grad_inputs[] = {
    {"inputs", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "the forward's inputs"},
    {"initial_states", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "the forward's initial states (shapes for zero gradients)"},
    {"parameters", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "the forward's parameters (shapes for zero gradients)"},
    {"outputs", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "the forward's outputs"},
    {"outputs@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "gradients of outputs: row t is handed to the gradient block of step t"},
    {"step_scopes", RILL_SLOT_NO_GRAD, "the forward's step scopes"},
    {"step_scopes@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "Paddle names the step scopes here too; unused"},
};
static const rill_slot_schema grad_outputs[] = {
    {"inputs@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "row t: the gradient block's `<input>@GRAD` at step t (zeros where it gives none)"},
    {"initial_states@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "the `<ex_state>@GRAD` of the first step"},
    {"parameters@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "`<parameter>@GRAD` summed over the steps"},
};

const rill_op_schema rill_schema_recurrent_grad = {
    .type = "recurrent_grad",
    .doc = "Runs sub_block (the gradient block) in each step scope the forward kept, last "
           "step first (first step first with reverse). Each step sees row t of "
           "outputs@GRAD under those names and, as `<state>@GRAD`, the `<ex_state>@GRAD` "
           "the step after it computed (zeros at the last step); it hands out row t of "
           "inputs@GRAD, adds its `<parameter>@GRAD` to parameters@GRAD, and the first step "
           "gives initial_states@GRAD.",
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

/* ---- rnn_memory_helper ---- */

static const rill_slot_schema mh_inputs[] = {{"X", RILL_SLOT_ANY_PLACE, "a dense tensor (Out shares its buffer)"}};
static const rill_slot_schema mh_outputs[] = {{"Out", 0, "X's values (shared)"}};
static const rill_attr_schema mh_attrs[] = {
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32), "X's dtype (informational)"},
};

const rill_op_schema rill_schema_rnn_memory_helper = {
    .type = "rnn_memory_helper",
    .doc = "Out = X (StaticRNN's link from a step's value to the op's outputs and states).",
    .inputs = mh_inputs,
    .ninputs = RILL_COUNTOF(mh_inputs),
    .outputs = mh_outputs,
    .noutputs = RILL_COUNTOF(mh_outputs),
    .attrs = mh_attrs,
    .nattrs = RILL_COUNTOF(mh_attrs),
    .flags = 0,
    .infer = rill_infer_like_input,
    .grad = rill_grad_default,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema mhg_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "the forward's X (shape and dtype of a zero gradient)"},
    {"Out", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "the forward's Out"},
    {"Out@GRAD", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE,
     "Out's gradient; absent or unset: zeros"},
};
static const rill_slot_schema mhg_outputs[] = {{"X@GRAD", 0, "Out@GRAD, or zeros like X"}};

const rill_op_schema rill_schema_rnn_memory_helper_grad = {
    .type = "rnn_memory_helper_grad",
    .doc = "X@GRAD = Out@GRAD, or zeros shaped like X when Out@GRAD is absent or holds no "
           "tensor (the last step's state, which no later step reads).",
    .inputs = mhg_inputs,
    .ninputs = RILL_COUNTOF(mhg_inputs),
    .outputs = mhg_outputs,
    .noutputs = RILL_COUNTOF(mhg_outputs),
    .attrs = mh_attrs,
    .nattrs = RILL_COUNTOF(mh_attrs),
    .flags = 0,
    .infer = rill_infer_like_input,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(recurrent);
