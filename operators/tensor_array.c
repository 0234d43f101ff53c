/* Tensor arrays (Paddle's LOD_TENSOR_ARRAY variables): write_to_array, read_from_array
 * and lod_array_length. An array variable holds a list of LoD tensors; it starts empty
 * and grows when an item past its end is written. */
#include <stdio.h>

#include "framework/transform/opedit.h"
#include "operators/op_util.h"

static const rill_slot_schema write_inputs[] = {
    {"X", 0, "the tensor to store (copied; its LoD too)"},
    {"I", RILL_SLOT_NO_GRAD, "int64 tensor of one element: the index to write"},
};
static const rill_slot_schema write_outputs[] = {
    {"Out", 0, "the array; grown to I + 1 items when shorter"},
};

/* `<name of the forward op's slot>@GRAD` into buf. */
static rill_status *grad_of(rill_grad_ctx *ctx, bool input, const char *slot, char *buf,
                            size_t size) {
  const rill_op_slot *a = input ? rill_op_input(ctx->fwd, slot) : rill_op_output(ctx->fwd, slot);
  if (!a || a->nargs != 1)
    return rill_error(RILL_INVALID_ARGUMENT, "%s: needs one %s %s", ctx->fwd->type,
                      input ? "input" : "output", slot);
  if ((size_t)snprintf(buf, size, "%s" RILL_GRAD_SUFFIX, a->args[0]) >= size)
    return rill_error(RILL_INVALID_ARGUMENT, "%s: name '%s' is too long", ctx->fwd->type,
                      a->args[0]);
  return NULL;
}

/* The gradient op of the array ops: `type` with I, X := gradient of the forward's Out,
 * Out := gradient of the forward's X, and X_W := the forward's X when given. */
static rill_status *array_grad(rill_grad_ctx *ctx, const char *type, bool with_xw) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  char og[512], xg[512];
  RILL_TRY(grad_of(ctx, false, "Out", og, sizeof og));
  RILL_TRY(grad_of(ctx, true, "X", xg, sizeof xg));
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, type, &op));
  const char *ogp = og, *xgp = xg;
  RILL_TRY(rill_grad_forward(ctx, op, "I"));
  RILL_TRY(rill_opd_input(op, "X", &ogp, 1));
  if (with_xw) {
    const rill_op_slot *x = rill_op_input(ctx->fwd, "X");
    RILL_TRY(rill_opd_input(op, "X_W", (const char *const *)x->args, x->nargs));
  }
  return rill_opd_output(op, "Out", &xgp, 1);
}

/* Paddle's WriteToArrayGradMaker: X@GRAD = Out@GRAD[I], read by read_from_array with the
 * forward X in X_W (zeros shaped like it when no gradient reached that item). */
static rill_status *write_maker(rill_grad_ctx *ctx) {
  return array_grad(ctx, "read_from_array", true);
}

/* Paddle's ReadFromArrayGradMaker: X@GRAD[I] = Out@GRAD, by write_to_array into the
 * array's gradient. */
static rill_status *read_maker(rill_grad_ctx *ctx) {
  return array_grad(ctx, "write_to_array", false);
}

const rill_op_schema rill_schema_write_to_array = {
    .type = "write_to_array",
    .doc = "Out[I] = a copy of X, Out a tensor array grown to I + 1 items when shorter (the "
           "items between stay empty). I is an int64 (or int32) tensor of one element.",
    .inputs = write_inputs,
    .ninputs = RILL_COUNTOF(write_inputs),
    .outputs = write_outputs,
    .noutputs = RILL_COUNTOF(write_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = write_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};


static const rill_slot_schema read_inputs[] = {
    {"X", 0, "the tensor array"},
    {"I", RILL_SLOT_NO_GRAD, "int64 tensor of one element: the index to read"},
    {"X_W", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "as write_to_array's gradient: the forward's written tensor, whose shape the zeros "
     "take when X has no item I"},
};
static const rill_slot_schema read_outputs[] = {
    {"Out", 0, "a copy of X[I] (its LoD too)"},
};

const rill_op_schema rill_schema_read_from_array = {
    .type = "read_from_array",
    .doc = "Out = a copy of X[I], X a tensor array, I an int64 (or int32) tensor of one "
           "element; an index past the array's end, or an item never written, is an error "
           "naming the array, unless X_W is given (write_to_array's gradient): Out is then "
           "zeros shaped like X_W.",
    .inputs = read_inputs,
    .ninputs = RILL_COUNTOF(read_inputs),
    .outputs = read_outputs,
    .noutputs = RILL_COUNTOF(read_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = read_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};


static const rill_slot_schema length_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "the tensor array"},
};
static const rill_slot_schema length_outputs[] = {
    {"Out", 0, "int64 tensor of shape [1]: the number of items"},
};

static rill_status *length_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  rill_dims d = {.n = 1, .d = {1}};
  rill_meta_set(out, RILL_DTYPE_INT64, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_lod_array_length = {
    .type = "lod_array_length",
    .doc = "Out (int64, [1]) = the number of items of the tensor array X (layers.array_length).",
    .inputs = length_inputs,
    .ninputs = RILL_COUNTOF(length_inputs),
    .outputs = length_outputs,
    .noutputs = RILL_COUNTOF(length_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = length_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(tensor_array);
