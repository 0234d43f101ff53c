/* lod_reset: Out = X's data under a new LoD: Y's LoD when Y has one, else one level of
 * offsets from Y's int32 values or from the attribute target_lod; with append, that
 * level is added below X's levels instead of replacing them (Fluid's lod_append).
 * lod_reset_grad hands Out@GRAD back with X's LoD. Out shares X's buffer. */
#include "operators/op_util.h"

enum { IN_X, IN_Y };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "the data"},
    [IN_Y] = {"Y", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
              "its LoD, or (without one) int32 offsets of the new level"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "X's data with the new LoD"}};
static const rill_attr_schema attrs[] = {
    {"target_lod", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "offsets of the new level (0 first, X's rows last) when Y is absent"},
    {"append", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "keep X's levels above the new one"},
};

static rill_status *lod_reset_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *y = rill_infer_in(ctx, IN_Y, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!y && ctx->attrs[RILL_LOD_RESET_ATTR_TARGET_LOD].n == 0)
    return rill_infer_error(ctx, "needs input Y or attribute target_lod");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int32_t level = 1;
  if (y && y->known && y->lod_level > 1) level = y->lod_level;
  else if (!y && ctx->attrs[RILL_LOD_RESET_ATTR_APPEND].v.b) level = x->lod_level + 1;
  rill_meta_set(out, x->dtype, &x->dims, level, -1, -1);
  return NULL;
}

static rill_status *lod_reset_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "lod_reset_grad", &op));
  RILL_TRY(rill_grad_forward(ctx, op, "X"));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_of_input(ctx, op, "X"));
  return NULL;
}

const rill_op_schema rill_schema_lod_reset = {
    .type = "lod_reset",
    .doc = "Out = X with Y's LoD, or one level of offsets from Y's values or target_lod "
           "(replacing X's levels, or added below them with append).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = lod_reset_infer,
    .grad = lod_reset_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "the forward's X (its LoD)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD's data with X's LoD"}};

static rill_status *lod_reset_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *dout = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x || !dout) return rill_infer_error(ctx, "needs inputs X and Out@GRAD");
  if (!dx) return NULL;
  if (!dout->known || !x->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_meta_set(dx, dout->dtype, &dout->dims, x->lod_level, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_lod_reset_grad = {
    .type = "lod_reset_grad",
    .doc = "X@GRAD = Out@GRAD's data with X's LoD.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = lod_reset_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(lod_reset);
