/* while CPU kernel: reads the condition, runs the sub-block in a fresh child scope of the
 * op's scope through the device's run_block service, and reads the condition again. */
#include "kernels/cpu/kernels.h"

/* The one bool element of Condition, read anew at every step: the sub-block writes the
 * variable in place (the same rill_variable, perhaps a new buffer). */
static rill_status *condition(rill_kernel_ctx *ctx, bool *out) {
  const char *name = rill_kin_name(ctx, RILL_WHILE_IN_CONDITION, 0);
  rill_variable *v = ctx->nin[RILL_WHILE_IN_CONDITION] ? ctx->in[RILL_WHILE_IN_CONDITION][0] : NULL;
  const rill_tensor *c = v && v->kind == RILL_VARKIND_TENSOR ? &v->u.tensor : NULL;
  if (!c || !rill_tensor_is_set(c))
    return rill_kernel_error(ctx, "Condition '%s' holds no tensor (needs one bool element)", name);
  if (c->dtype != RILL_DTYPE_BOOL || rill_tensor_numel(c) != 1)
    return rill_kernel_error(ctx, "Condition '%s' must be a bool tensor of one element, not %s "
                             "with %lld",
                             name, rill_dtype_name(c->dtype), (long long)rill_tensor_numel(c));
  *out = *(const bool *)rill_tensor_ptr(c);
  return NULL;
}

rill_status *rill_cpu_while(rill_kernel_ctx *ctx) {
  int32_t block = ctx->attrs[RILL_WHILE_ATTR_SUB_BLOCK].v.block;
  bool go = false;
  RILL_TRY(condition(ctx, &go));
  /* One scope per step, as Paddle's training mode makes them: what the block declares
   * starts afresh at each step. No bound on the steps: a block that never clears the
   * condition runs until the run is cancelled or passes its deadline, which run_block
   * checks before every step. */
  for (uint64_t step = 0; go; step++) {
    rill_scope *s = NULL;
    RILL_TRY(rill_scope_create(ctx->scope, &s));
    rill_status *st = rill_dev_run_block(ctx->dev, block, s);
    rill_scope_destroy(s);
    if (st)
      return rill_status_wrap(st, "while: sub_block %d, step %llu", (int)block,
                              (unsigned long long)step);
    RILL_TRY(condition(ctx, &go));
  }
  return NULL;
}
