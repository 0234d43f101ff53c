/* scale: Out = scale * X + bias (or scale * (X + bias)). */
#include "framework/base/alloc.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "input"},
    {"ScaleTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA,
     "one-element tensor overriding attribute scale"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "scaled X, same shape"}};
static const rill_attr_schema attrs[] = {
    {"scale", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "multiplier"},
    {"bias", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "added before or after scaling"},
    {"bias_after_scale", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "true: scale * X + bias; false: scale * (X + bias)"},
};

static rill_status *scale_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  const rill_tensor_meta *s = rill_infer_in(ctx, 1, 0);
  if (s && s->known) {
    int64_t n;
    if (rill_dims_numel(&s->dims, INT64_MAX, &n) && n != 1)
      return rill_infer_error(ctx, "input ScaleTensor (%s) must hold one element, has %lld",
                              rill_infer_in_name(ctx, 1, 0), (long long)n);
  }
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

/* Paddle's ScaleGradMaker: the gradient is another scale op, X@GRAD = scale * Out@GRAD
 * (same scale or ScaleTensor, bias 0, bias_after_scale true). */
static rill_status *scale_grad_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "scale", &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "Out", "X"));
  RILL_TRY(rill_grad_forward(ctx, op, "ScaleTensor"));
  RILL_TRY(rill_grad_of_input_as(ctx, op, "X", "Out"));
  rill_attr_value bias = {.type = RILL_ATTR_FLOAT, .v.f = 0.0f};
  rill_attr_value after = {.type = RILL_ATTR_BOOLEAN, .v.b = true};
  RILL_TRY(rill_grad_attr(op, "bias", &bias));
  return rill_grad_attr(op, "bias_after_scale", &after);
}

const rill_op_schema rill_schema_scale = {
    .type = "scale",
    .doc = "Out = scale * X + bias if bias_after_scale, else scale * (X + bias).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INPLACE,
    .infer = scale_infer,
    .grad = scale_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(scale);
