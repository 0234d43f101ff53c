/* elementwise_add: Out = X + Y with Paddle's broadcasting (operators/elementwise.h). */
#include "operators/elementwise.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "first operand"},
    {"Y", 0, "second operand, broadcast against X"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "X + Y, of the broadcast shape"}};
static const rill_attr_schema attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(-1),
     "dim of the higher-rank operand where the other one starts; -1: trailing dims"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *elementwise_add_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !y || !out) return rill_infer_error(ctx, "needs inputs X, Y and output Out");
  if (!x->known || !y->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dtype != y->dtype)
    return rill_infer_error(ctx, "input X (%s) is %s but input Y (%s) is %s",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype),
                            rill_infer_in_name(ctx, 1, 0), rill_dtype_name(y->dtype));
  rill_dims xa, ya, od;
  char why[160];
  if (!rill_elementwise_broadcast(&x->dims, &y->dims, ctx->attrs[RILL_ELEMENTWISE_ADD_ATTR_AXIS].v.i, &xa, &ya, &od, why,
                                  sizeof why)) {
    char xs[RILL_DIMS_STR_MAX], ys[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input X (%s) of shape %s does not broadcast with input Y (%s) "
                            "of shape %s: %s",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, xs, sizeof xs),
                            rill_infer_in_name(ctx, 1, 0), rill_dims_str(&y->dims, ys, sizeof ys),
                            why);
  }
  rill_meta_set(out, x->dtype, &od, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_elementwise_add = {
    .type = "elementwise_add",
    .doc = "Out = X + Y; Y broadcasts against X starting at dim `axis` (numpy-style beyond).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = elementwise_add_infer,
    .grad = rill_grad_default, /* elementwise_add_grad: operators/elementwise_binary.c */
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(elementwise_add);
