/* cumsum: running sums along one axis (exclusive: each sum leaves out its own element;
 * reverse: from the end). Its gradient is cumsum of Out@GRAD with reverse flipped, as in
 * Paddle. tril_triu: the lower (or upper) triangle of the last two dims, the rest zero;
 * tril_triu_grad masks Out@GRAD the same way. */
#include "operators/tensor_ops.h"

#include <stdio.h>

static const rill_slot_schema x_inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema out_outputs[] = {{"Out", 0, "same shape as X"}};

static const rill_attr_schema cumsum_attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "dim summed along (negative from the end)"},
    {"exclusive", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "leave out each element's own value"},
    {"reverse", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "sum from the end of the axis"},
    {"flatten", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "sum X flattened (Out is 1-D)"},
};

static rill_status *cumsum_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (ctx->attrs[RILL_CUMSUM_ATTR_FLATTEN].v.b) {
    rill_dims d = {.n = 1, .d = {rill_span_prod(&x->dims, 0, x->dims.n)}};
    rill_meta_set(out, x->dtype, &d, 0, -1, -1);
    return NULL;
  }
  int a;
  if (!rill_norm_axis(ctx->attrs[RILL_CUMSUM_ATTR_AXIS].v.i, x->dims.n, &a))
    return rill_infer_error(ctx, "axis %d is out of range for input X (%s) of rank %d",
                            (int)ctx->attrs[RILL_CUMSUM_ATTR_AXIS].v.i,
                            rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

/* cumsum(X = Out@GRAD) -> Out = X@GRAD with reverse flipped. */
static rill_status *cumsum_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "cumsum", &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "Out", "X"));
  RILL_TRY(rill_grad_of_input_as(ctx, op, "X", "Out"));
  const rill_attr *rev = rill_op_attr(ctx->fwd, "reverse");
  bool r = rev && rev->value.type == RILL_ATTR_BOOLEAN && rev->value.v.b;
  rill_attr_value v = {.type = RILL_ATTR_BOOLEAN, .v.b = !r};
  return rill_grad_attr(op, "reverse", &v);
}

const rill_op_schema rill_schema_cumsum = {
    .type = "cumsum",
    .doc = "Out = running sums of X along axis (exclusive, reverse as the attributes say).",
    .inputs = x_inputs,
    .ninputs = RILL_COUNTOF(x_inputs),
    .outputs = out_outputs,
    .noutputs = RILL_COUNTOF(out_outputs),
    .attrs = cumsum_attrs,
    .nattrs = RILL_COUNTOF(cumsum_attrs),
    .flags = 0,
    .infer = cumsum_infer,
    .grad = cumsum_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_attr_schema tril_attrs[] = {
    {"diagonal", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
     "the diagonal bounding the triangle: 0 the main one, > 0 above it, < 0 below"},
    {"lower", RILL_ATTR_BOOLEAN, RILL_ATTR_REQUIRED, RILL_DEF_BOOL(true),
     "keep the lower triangle (tril) or the upper (triu)"},
};

static rill_status *tril_triu_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input %s and output %s",
                                          ctx->schema->inputs[0].name, ctx->schema->outputs[0].name);
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dims.n < 2)
    return rill_infer_error(ctx, "input %s (%s) has rank %d; it needs rank >= 2",
                            ctx->schema->inputs[0].name, rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *tril_triu_maker(rill_grad_ctx *ctx) {
  static const char *const og[] = {"Out"}, *const ig[] = {"X"};
  return rill_grad_emit(ctx, NULL, NULL, 0, og, 1, ig, 1);
}

const rill_op_schema rill_schema_tril_triu = {
    .type = "tril_triu",
    .doc = "Out = X with the elements off the triangle of its last two dims zeroed: lower keeps "
           "j - i <= diagonal, upper keeps j - i >= diagonal.",
    .inputs = x_inputs,
    .ninputs = RILL_COUNTOF(x_inputs),
    .outputs = out_outputs,
    .noutputs = RILL_COUNTOF(out_outputs),
    .attrs = tril_attrs,
    .nattrs = RILL_COUNTOF(tril_attrs),
    .flags = 0,
    .infer = tril_triu_infer,
    .grad = tril_triu_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema tril_grad_inputs[] = {{"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema tril_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD off the triangle zeroed"}};

const rill_op_schema rill_schema_tril_triu_grad = {
    .type = "tril_triu_grad",
    .doc = "X@GRAD = Out@GRAD with the elements off the triangle zeroed.",
    .inputs = tril_grad_inputs,
    .ninputs = RILL_COUNTOF(tril_grad_inputs),
    .outputs = tril_grad_outputs,
    .noutputs = RILL_COUNTOF(tril_grad_outputs),
    .attrs = tril_attrs,
    .nattrs = RILL_COUNTOF(tril_attrs),
    .flags = 0,
    .infer = tril_triu_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(cumsum);
