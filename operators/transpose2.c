/* transpose2: Out = X with its dims permuted by `axis`; XShape = [0] + X's shape. */
#include "operators/tensor_ops.h"

#include <stdio.h>

static const rill_slot_schema inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "X transposed: Out dim i is X dim axis[i]"},
    {"XShape", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
     "[0] + X's shape, no data: kept for the gradient"},
};
static const rill_attr_schema attrs[] = {
    {"axis", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "permutation of X's dims (negative from the end)"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"data_format", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("AnyLayout"), "ignored"},
    {"mkldnn_data_type", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("float32"), "ignored"},
};

static rill_status *transpose2_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0), *xs = rill_infer_out(ctx, 1, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    if (xs) rill_meta_unknown(xs);
    return NULL;
  }
  RILL_TRY(rill_xshape_infer(ctx, 1, x));
  int perm[RILL_MAX_DIMS];
  char err[256];
  if (!rill_transpose_perm(&ctx->attrs[RILL_TRANSPOSE2_ATTR_AXIS], x->dims.n, perm, err, sizeof err))
    return rill_infer_error(ctx, "input X (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  rill_dims d = {.n = x->dims.n};
  for (int i = 0; i < d.n; i++) d.d[i] = x->dims.d[perm[i]];
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_transpose2 = {
    .type = "transpose2",
    .doc = "Out = X with dims permuted: Out dim i is X dim axis[i].",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = transpose2_infer,
    .grad = rill_xshape_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static rill_status *transpose2_grad_infer(rill_infer_ctx *ctx) {
  RILL_TRY(rill_xshape_grad_infer(ctx));
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (dx && dx->known) {
    dx->lod_level = 0;
    dx->lod_from[0] = dx->lod_from[1] = -1;
  }
  return NULL;
}

/* The view ops' gradient slots, but Out@GRAD's elements are read (transposed). */
static const rill_slot_schema grad_inputs[] = {
    {"XShape", RILL_SLOT_ANY_PLACE, "[0] + the shape of the forward input X"},
    {"Out@GRAD", 0, "gradient of the forward output"},
};

const rill_op_schema rill_schema_transpose2_grad = {
    .type = "transpose2_grad",
    .doc = "X@GRAD = Out@GRAD transposed back (by the inverse of axis).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = rill_xshape_grad_outputs,
    .noutputs = 1,
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = transpose2_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(transpose2);
