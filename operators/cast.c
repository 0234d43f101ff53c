/* cast: Out = X converted to out_dtype (every numeric dtype, complex included).
 * assign: Out = a copy of X (dense tensor, selected rows or tensor array).
 * shape: Out = X's dims as an int32 vector.
 * The gradients of cast and assign are a cast back and an assign, as Paddle's makers. */
#include "operators/tensor_ops.h"


static const rill_slot_schema cast_inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema cast_outputs[] = {{"Out", 0, "X converted to out_dtype"}};
static const rill_attr_schema cast_attrs[] = {
    {"in_dtype", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(RILL_DTYPE_FP32),
                    "X's dtype as the program says (the kernel reads X's own dtype)"},
    {"out_dtype", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(RILL_DTYPE_FP32),
                     "dtype of Out"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static bool valid_dtype(int32_t dt) {
  return dt >= 0 && dt < RILL_DTYPE_COUNT && rill_dtype_size((rill_dtype)dt) != 0;
}

static rill_status *cast_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  int32_t odt = ctx->attrs[RILL_CAST_ATTR_OUT_DTYPE].v.i;
  if (!valid_dtype(odt))
    return rill_infer_error(ctx, "attribute out_dtype %d is not a tensor element type (output "
                            "Out (%s))", (int)odt, rill_infer_out_name(ctx, 0, 0));
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_meta_set(out, (rill_dtype)odt, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

/* cast's gradient: cast(Out@GRAD) -> X@GRAD with the dtypes swapped (Paddle). */
static rill_status *cast_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "cast", &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "Out", "X"));
  RILL_TRY(rill_grad_of_input_as(ctx, op, "X", "Out"));
  const rill_attr *in = rill_op_attr(ctx->fwd, "in_dtype"), *out = rill_op_attr(ctx->fwd, "out_dtype");
  if (!in || !out)
    return rill_error(RILL_INVALID_ARGUMENT, "cast: the gradient needs attributes in_dtype and "
                      "out_dtype");
  rill_attr_value a = in->value, b = out->value;
  RILL_TRY(rill_grad_attr(op, "in_dtype", &b));
  RILL_TRY(rill_grad_attr(op, "out_dtype", &a));
  return NULL;
}

const rill_op_schema rill_schema_cast = {
    .type = "cast",
    .doc = "Out = X converted to out_dtype (float to integer truncates, saturating).",
    .inputs = cast_inputs,
    .ninputs = RILL_COUNTOF(cast_inputs),
    .outputs = cast_outputs,
    .noutputs = RILL_COUNTOF(cast_outputs),
    .attrs = cast_attrs,
    .nattrs = RILL_COUNTOF(cast_attrs),
    .flags = 0,
    .infer = cast_infer,
    .grad = cast_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- assign ---- */

static const rill_slot_schema assign_inputs[] = {
    {"X", RILL_SLOT_DISPENSABLE, "a dense tensor, selected rows or tensor array"}};
static const rill_slot_schema assign_outputs[] = {{"Out", 0, "a copy of X"}};

/* assign's gradient: assign(Out@GRAD) -> X@GRAD (Paddle). */
static rill_status *assign_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "assign", &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "Out", "X"));
  RILL_TRY(rill_grad_of_input_as(ctx, op, "X", "Out"));
  return NULL;
}

const rill_op_schema rill_schema_assign = {
    .type = "assign",
    .doc = "Out = a copy of X (dense tensors keep their LoD; selected rows and arrays too).",
    .inputs = assign_inputs,
    .ninputs = RILL_COUNTOF(assign_inputs),
    .outputs = assign_outputs,
    .noutputs = RILL_COUNTOF(assign_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = rill_infer_like_input,
    .grad = assign_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- shape ---- */

static const rill_slot_schema shape_inputs[] = {
    {"Input", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "a dense tensor or selected rows (only the shape is read)"}};
static const rill_slot_schema shape_outputs[] = {{"Out", 0, "int32 [rank]: Input's dims"}};

static rill_status *shape_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input Input and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_dims d = {.n = 1, .d = {x->dims.n}};
  rill_meta_set(out, RILL_DTYPE_INT32, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_shape = {
    .type = "shape",
    .doc = "Out = the dims of Input as an int32 vector.",
    .inputs = shape_inputs,
    .ninputs = RILL_COUNTOF(shape_inputs),
    .outputs = shape_outputs,
    .noutputs = RILL_COUNTOF(shape_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = shape_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(cast);
