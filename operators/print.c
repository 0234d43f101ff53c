/* print: Out = In, and In written to stderr in Paddle's layout (a timestamp, the
 * message, then the tensor's name, shape, dtype, LoD and first `summarize` values) when
 * the phase matches. Its gradient is another print op (is_forward false) passing
 * Out@GRAD through to In@GRAD, printed in the backward phase, as Paddle's. */
#include "operators/tensor_ops.h"

#include <string.h>

static const rill_slot_schema inputs[] = {{"In", 0, "the tensor to print"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "In, unchanged (LoD kept)"}};
static const rill_attr_schema attrs[] = {
    {"first_n", RILL_ATTR_INT, 0, RILL_DEF_INT(-1),
     "Paddle's count of printing runs; rill keeps no count across runs and prints each time"},
    {"message", RILL_ATTR_STRING, 0, RILL_DEF_STRING(""), "text printed before the tensor"},
    {"summarize", RILL_ATTR_INT, 0, RILL_DEF_INT(20), "values printed (-1: all)"},
    {"print_tensor_name", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true), "print the name"},
    {"print_tensor_type", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true), "print the dtype"},
    {"print_tensor_shape", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true), "print the shape"},
    {"print_tensor_lod", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true), "print the LoD"},
    {"print_phase", RILL_ATTR_STRING, 0, RILL_DEF_STRING("BOTH"),
     "FORWARD, BACKWARD or BOTH: which of the op and its gradient print"},
    {"is_forward", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true), "false in the gradient op"},
};

static rill_status *print_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *in = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!in || !out) return rill_infer_error(ctx, "needs input In and output Out");
  const char *phase = ctx->attrs[RILL_PRINT_ATTR_PRINT_PHASE].v.s;
  if (!phase || (strcmp(phase, "FORWARD") && strcmp(phase, "BACKWARD") && strcmp(phase, "BOTH")))
    return rill_infer_error(ctx, "attribute print_phase '%s' is not FORWARD, BACKWARD or BOTH",
                            phase ? phase : "");
  if (!in->known) rill_meta_unknown(out);
  else rill_meta_set(out, in->dtype, &in->dims, in->lod_level, 0, 0);
  return NULL;
}

/* The gradient: print(In = Out@GRAD) -> Out = In@GRAD, with is_forward false. */
static rill_status *print_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "In")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "print", &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "Out", "In"));
  RILL_TRY(rill_grad_of_input_as(ctx, op, "In", "Out"));
  rill_attr_value f = {.type = RILL_ATTR_BOOLEAN, .v.b = false};
  return rill_grad_attr(op, "is_forward", &f);
}

const rill_op_schema rill_schema_print = {
    .type = "print",
    .doc = "Out = In; In printed to stderr (name, shape, dtype, LoD, values) as Paddle's.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = print_infer,
    .grad = print_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(print);
