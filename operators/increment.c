/* increment: Out = X + step, X holding one element (step counters). */
#include "framework/transform/opedit.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {{"X", RILL_SLOT_NO_GRAD, "one-element counter"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "X + step (often X itself)"}};
static const rill_attr_schema attrs[] = {
    {"step", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "added to X"},
};

static rill_status *increment_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int64_t n;
  if (rill_dims_numel(&x->dims, INT64_MAX, &n) && n != 1)
    return rill_infer_error(ctx, "input X (%s) must hold one element, has %lld",
                            rill_infer_in_name(ctx, 0, 0), (long long)n);
  rill_meta_set(out, x->dtype, &x->dims, 0, -1, -1);
  return NULL;
}

/* Paddle's IncrementGradOpMaker: no gradient, but the step undone (X := Out - step), so
 * that a loop's gradient block, run last step first, sees the counter each step saw. The
 * backward pass emits it for a counter of the enclosing block a sub-block steps in place
 * (backward.md, "Sub-blocks"); X is NO_GRAD, so it is never on a gradient path. */
static rill_status *increment_maker(rill_grad_ctx *ctx) {
  const rill_op_slot *x = rill_op_input(ctx->fwd, "X");
  const rill_op_slot *out = rill_op_output(ctx->fwd, "Out");
  if (!x || !out) return NULL;
  const rill_attr *step = rill_op_attr(ctx->fwd, "step");
  rill_attr_value v = {.type = RILL_ATTR_FLOAT,
                       .v.f = -(step && step->value.type == RILL_ATTR_FLOAT ? step->value.v.f
                                                                            : 1.0f)};
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "increment", &op));
  RILL_TRY(rill_opd_input(op, "X", (const char *const *)out->args, out->nargs));
  RILL_TRY(rill_opd_output(op, "Out", (const char *const *)x->args, x->nargs));
  return rill_grad_attr(op, "step", &v);
}

const rill_op_schema rill_schema_increment = {
    .type = "increment",
    .doc = "Out = X + step for a one-element X (int32, int64, float32, float64).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_PLACE_OF_INPUT,
    .infer = increment_infer,
    .grad = increment_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(increment);
