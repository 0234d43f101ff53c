/* conditional_block CPU kernel: decides, then runs the sub-block through the device's
 * run_block service in a child scope of the op's scope. */
#include "kernels/cpu/kernels.h"

static rill_status *scalar_condition(rill_kernel_ctx *ctx, bool *out) {
  rill_tensor *c = ctx->nin[RILL_CONDITIONAL_BLOCK_IN_COND]
                       ? rill_kin(ctx, RILL_CONDITIONAL_BLOCK_IN_COND, 0)
                       : NULL;
  if (!c || !rill_tensor_is_set(c))
    return rill_kernel_error(ctx,
                             "Cond holds no tensor (is_scalar_condition needs one bool element)");
  if (c->dtype != RILL_DTYPE_BOOL || rill_tensor_numel(c) != 1)
    return rill_kernel_error(ctx,
                             "Cond '%s' must be a bool tensor of one element, not %s with %lld",
                             rill_kin_name(ctx, RILL_CONDITIONAL_BLOCK_IN_COND, 0),
                             rill_dtype_name(c->dtype), (long long)rill_tensor_numel(c));
  *out = *(const bool *)rill_tensor_ptr(c);
  return NULL;
}

/* Without is_scalar_condition: the block runs when every Input tensor has elements. */
static rill_status *inputs_condition(rill_kernel_ctx *ctx, bool *out) {
  size_t slot = RILL_CONDITIONAL_BLOCK_IN_INPUT;
  *out = true;
  for (size_t i = 0; i < ctx->nin[slot]; i++) {
    rill_variable *v = ctx->in[slot][i];
    if (!v || v->kind != RILL_VARKIND_TENSOR)
      return rill_kernel_error(ctx, "Input '%s' is not a dense tensor",
                               rill_kin_name(ctx, slot, i));
    if (rill_tensor_numel(&v->u.tensor) == 0 || !v->u.tensor.buf) *out = false;
  }
  return NULL;
}

rill_status *rill_cpu_conditional_block(rill_kernel_ctx *ctx) {
  bool run = false;
  if (ctx->attrs[RILL_CONDITIONAL_BLOCK_ATTR_IS_SCALAR_CONDITION].v.b)
    RILL_TRY(scalar_condition(ctx, &run));
  else
    RILL_TRY(inputs_condition(ctx, &run));
  if (!run) return NULL;
  int32_t block = ctx->attrs[RILL_CONDITIONAL_BLOCK_ATTR_SUB_BLOCK].v.block;
  rill_scope *step = NULL;
  RILL_TRY(rill_scope_create(ctx->scope, &step));
  rill_status *st = rill_dev_run_block(ctx->dev, block, step);
  rill_scope_destroy(step);
  return st ? rill_status_wrap(st, "conditional_block: sub_block %d", (int)block) : NULL;
}
