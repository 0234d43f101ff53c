/* mean: Out = the mean of all of X's elements, shape [1] (Fluid 1.x). */
#include "operators/math_grad.h"

static const rill_slot_schema inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "mean of all elements, shape [1]"}};
static const rill_attr_schema attrs[] = {
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *mean_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_dims d = {.n = 1, .d = {1}};
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

/* Paddle's MeanGradMaker: X and Out@GRAD in, X@GRAD out. */
static rill_status *mean_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "mean_grad", RILL_NAMES("X"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

const rill_op_schema rill_schema_mean = {
    .type = "mean",
    .doc = "Out = mean(X) over all elements; Out has shape [1].",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = mean_infer,
    .grad = mean_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "forward input (its shape: no gradient reaches X through it)"},
    {"Out@GRAD", 0, "gradient of Out, one element"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD / numel(X) everywhere, X's shape"},
};

/* mean_grad's own gradient, as Paddle's MeanDoubleGradMaker: mean of X@GRAD's gradient
 * into Out@GRAD's. */
static rill_status *mean_double_grad_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "Out@GRAD")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "mean", &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "X@GRAD", "X"));
  return rill_grad_of_input_as(ctx, op, "Out@GRAD", "Out");
}

static rill_status *mean_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *g = rill_infer_in(ctx, 1, 0);
  if (!x || !g) return rill_infer_error(ctx, "needs inputs X and Out@GRAD");
  if (x->known && g->known) {
    int64_t n;
    if (g->dtype != x->dtype)
      return rill_infer_error(ctx, "input Out@GRAD (%s) is %s but input X (%s) is %s",
                              rill_infer_in_name(ctx, 1, 0), rill_dtype_name(g->dtype),
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
    if (rill_dims_numel(&g->dims, INT64_MAX, &n) && n != 1)
      return rill_infer_error(ctx, "input Out@GRAD (%s) must hold one element, has %lld",
                              rill_infer_in_name(ctx, 1, 0), (long long)n);
  }
  rill_grad_infer_like(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_mean_grad = {
    .type = "mean_grad",
    .doc = "X@GRAD = Out@GRAD / numel(X) in every element.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = mean_grad_infer,
    .grad = mean_double_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(mean);
