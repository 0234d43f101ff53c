/* conditional_block CPU kernels. The forward decides, then runs the sub-block through
 * the device's run_block service in a child scope of the op's scope, which its Scope
 * output keeps until the run ends; the gradient runs the gradient block in that scope. */
#include <stdio.h>

#include "kernels/cpu/kernels.h"

/* The forward and the gradient op share the Cond and Input slot positions. */
_Static_assert((int)RILL_CONDITIONAL_BLOCK_IN_COND == (int)RILL_CONDITIONAL_BLOCK_GRAD_IN_COND &&
                   (int)RILL_CONDITIONAL_BLOCK_IN_INPUT == (int)RILL_CONDITIONAL_BLOCK_GRAD_IN_INPUT &&
                   (int)RILL_CONDITIONAL_BLOCK_ATTR_IS_SCALAR_CONDITION ==
                       (int)RILL_CONDITIONAL_BLOCK_GRAD_ATTR_IS_SCALAR_CONDITION &&
                   (int)RILL_CONDITIONAL_BLOCK_ATTR_SUB_BLOCK ==
                       (int)RILL_CONDITIONAL_BLOCK_GRAD_ATTR_SUB_BLOCK,
               "conditional_block and its gradient read Cond and Input alike");

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
  /* Wherever it lies: the comparison that made it may have run on a device. */
  unsigned char b = 0;
  RILL_TRY(rill_status_wrap(rill_tensor_read_host(c, &b, 1), "conditional_block: Cond '%s'",
                            rill_kin_name(ctx, RILL_CONDITIONAL_BLOCK_IN_COND, 0)));
  *out = b != 0;
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

static rill_status *decide(rill_kernel_ctx *ctx, bool *run) {
  *run = false;
  if (ctx->attrs[RILL_CONDITIONAL_BLOCK_ATTR_IS_SCALAR_CONDITION].v.b)
    return scalar_condition(ctx, run);
  return inputs_condition(ctx, run);
}

/* The Scope variable (slot `slot` of `dir` inputs or outputs), emptied of any scopes an
 * earlier run of the op kept; NULL when the op has none. */
static rill_status *scope_var(rill_kernel_ctx *ctx, rill_variable *v, const char *name,
                              rill_step_scopes **out) {
  *out = NULL;
  if (!v) return NULL;
  rill_step_scopes *s = rill_variable_step_scopes(v);
  if (!s)
    return rill_kernel_error(ctx, "Scope '%s' holds a %s, not step scopes", name,
                             rill_var_kind_name(v->kind));
  *out = s;
  return NULL;
}

rill_status *rill_cpu_conditional_block(rill_kernel_ctx *ctx) {
  size_t so = RILL_CONDITIONAL_BLOCK_OUT_SCOPE;
  rill_step_scopes *kept = NULL;
  if (ctx->nout[so] && ctx->out[so][0]) {
    rill_variable *v = ctx->out[so][0];
    if (v->kind == RILL_VARKIND_STEP_SCOPES) rill_variable_clear(v); /* an earlier run's */
    RILL_TRY(scope_var(ctx, v, rill_kout_name(ctx, so, 0), &kept));
  }
  bool run = false;
  RILL_TRY(decide(ctx, &run));
  if (!run) return NULL;
  int32_t block = ctx->attrs[RILL_CONDITIONAL_BLOCK_ATTR_SUB_BLOCK].v.block;
  rill_scope *step = NULL;
  RILL_TRY(rill_scope_create(ctx->scope, &step));
  rill_status *st = rill_dev_run_block(ctx->dev, block, step);
  if (!st && kept) st = rill_step_scopes_push(kept, step);
  if (st || !kept) rill_scope_destroy(step);
  return st ? rill_status_wrap(st, "conditional_block: sub_block %d", (int)block) : NULL;
}

/* Input@GRAD[i] := zeros shaped like Input[i], on its place. */
static rill_status *zero_grad(rill_kernel_ctx *ctx, size_t i, rill_tensor *g) {
  rill_tensor *x = rill_kin(ctx, RILL_CONDITIONAL_BLOCK_GRAD_IN_INPUT, i);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input '%s' holds no tensor to shape the zero gradient '%s'",
                             rill_kin_name(ctx, RILL_CONDITIONAL_BLOCK_GRAD_IN_INPUT, i),
                             rill_kout_name(ctx, RILL_CONDITIONAL_BLOCK_GRAD_OUT_INPUT_GRAD, i));
  return rill_tensor_zeros_at(g, x->dtype, &x->dims, rill_tensor_place(x));
}

rill_status *rill_cpu_conditional_block_grad(rill_kernel_ctx *ctx) {
  bool ran = false;
  RILL_TRY(decide(ctx, &ran));
  rill_scope *step = NULL;
  if (ran) {
    size_t si = RILL_CONDITIONAL_BLOCK_GRAD_IN_SCOPE;
    const char *name = ctx->nin[si] ? rill_kin_name(ctx, si, 0) : "(none)";
    rill_variable *v = ctx->nin[si] ? ctx->in[si][0] : NULL;
    if (!v || v->kind != RILL_VARKIND_STEP_SCOPES || v->u.scopes.n != 1)
      return rill_kernel_error(ctx, "the condition held but Scope '%s' holds %s, not the one "
                               "step scope of the forward conditional_block",
                               name, v ? rill_var_kind_name(v->kind) : "nothing");
    step = v->u.scopes.items[0];
    int32_t block = ctx->attrs[RILL_CONDITIONAL_BLOCK_GRAD_ATTR_SUB_BLOCK].v.block;
    RILL_TRY(rill_status_wrap(rill_dev_run_block(ctx->dev, block, step),
                              "conditional_block_grad: sub_block %d", (int)block));
  }
  size_t go = RILL_CONDITIONAL_BLOCK_GRAD_OUT_INPUT_GRAD;
  char inner[1024];
  for (size_t i = 0; i < ctx->nout[go]; i++) {
    if (!ctx->out[go][i]) continue; /* not wanted */
    rill_tensor *g = rill_kout(ctx, go, i);
    if (!g)
      return rill_kernel_error(ctx, "Input@GRAD '%s' holds a %s, not a dense tensor",
                               rill_kout_name(ctx, go, i), rill_var_kind_name(ctx->out[go][i]->kind));
    const char *x = rill_kin_name(ctx, RILL_CONDITIONAL_BLOCK_GRAD_IN_INPUT, i);
    if ((size_t)snprintf(inner, sizeof inner, "%s" RILL_GRAD_SUFFIX, x) >= sizeof inner)
      return rill_kernel_error(ctx, "input name '%s' is too long", x);
    rill_variable *iv = step ? rill_scope_find_local(step, inner) : NULL;
    if (iv && iv->kind == RILL_VARKIND_TENSOR && rill_tensor_is_set(&iv->u.tensor)) {
      /* On the place where the gradient block left it. */
      RILL_TRY(rill_status_wrap(rill_tensor_copy_at(g, &iv->u.tensor, rill_tensor_place(&iv->u.tensor)),
                                "conditional_block_grad: gradient '%s'", inner));
    } else {
      RILL_TRY(zero_grad(ctx, i, g));
    }
  }
  return NULL;
}
