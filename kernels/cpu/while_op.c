/* while CPU kernels. The forward reads the condition, runs the sub-block in a fresh child
 * scope of the op's scope through the device's run_block service (keeping the scope in
 * StepScopes for the gradient), and reads the condition again. while_grad runs the
 * gradient block in those scopes, last step first, summing the steps' gradients. */
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/step_grad.h"

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
  /* Wherever it lies: the block's comparison may have run on a device. */
  unsigned char b = 0;
  RILL_TRY(rill_status_wrap(rill_tensor_read_host(c, &b, 1), "while: Condition '%s'", name));
  *out = b != 0;
  return NULL;
}

/* The StepScopes output, emptied of an earlier run's scopes; NULL when the op keeps none
 * (no StepScopes, or is_test). */
static rill_status *kept_scopes(rill_kernel_ctx *ctx, rill_step_scopes **out) {
  *out = NULL;
  size_t so = RILL_WHILE_OUT_STEP_SCOPES;
  if (ctx->attrs[RILL_WHILE_ATTR_IS_TEST].v.b || !ctx->nout[so] || !ctx->out[so][0]) return NULL;
  rill_variable *v = ctx->out[so][0];
  if (v->kind == RILL_VARKIND_STEP_SCOPES) rill_variable_clear(v);
  *out = rill_variable_step_scopes(v);
  if (!*out)
    return rill_kernel_error(ctx, "StepScopes '%s' holds a %s, not step scopes",
                             rill_kout_name(ctx, so, 0), rill_var_kind_name(v->kind));
  return NULL;
}

/* Before a step in the loop's one scope, as Paddle's is_test loop does: the block's own
 * tensors lose the LoD of the last step and its own arrays their items; the values stay
 * (every op writes its outputs whole). */
static void restart_step(const char *name, rill_variable *v, void *unused) {
  (void)name;
  (void)unused;
  if (v->kind == RILL_VARKIND_TENSOR)
    rill_lod_clear(&v->u.tensor.lod);
  else if (v->kind == RILL_VARKIND_TENSOR_ARRAY) {
    rill_variable_clear(v);
    (void)rill_variable_array(v); /* an empty array again: allocates nothing */
  }
}

rill_status *rill_cpu_while(rill_kernel_ctx *ctx) {
  int32_t block = ctx->attrs[RILL_WHILE_ATTR_SUB_BLOCK].v.block;
  rill_step_scopes *kept = NULL;
  RILL_TRY(kept_scopes(ctx, &kept));
  bool go = false;
  RILL_TRY(condition(ctx, &go));
  /* One scope per step, as Paddle's training mode makes them: what the block declares
   * starts afresh at each step, and StepScopes keeps the scopes for while_grad (freed
   * when the run ends). No bound on the steps: a block that never clears the
   * condition runs until the run is cancelled or passes its deadline, which run_block
   * checks before every step. */
  if (!kept) {
    /* Nothing keeps the steps' scopes (is_test, or no StepScopes): as Paddle does then,
     * every step runs in one child scope, so the block's variables and their buffers are
     * made once, not once per step (restart_step resets what Paddle resets). */
    rill_scope *s = NULL;
    rill_status *st = NULL;
    if (go) RILL_TRY(rill_scope_create(ctx->scope, &s));
    for (uint64_t step = 0; go && !st; step++) {
      if (step) rill_scope_each(s, restart_step, NULL);
      st = rill_dev_run_block(ctx->dev, block, s);
      if (st)
        st = rill_status_wrap(st, "while: sub_block %d, step %llu", (int)block,
                              (unsigned long long)step);
      else
        st = condition(ctx, &go);
    }
    rill_scope_destroy(s);
    return st;
  }
  for (uint64_t step = 0; go; step++) {
    rill_scope *s = NULL;
    RILL_TRY(rill_scope_create(ctx->scope, &s));
    rill_status *st = rill_dev_run_block(ctx->dev, block, s);
    if (!st) st = rill_step_scopes_push(kept, s);
    if (st) {
      rill_scope_destroy(s);
      return rill_status_wrap(st, "while: sub_block %d, step %llu", (int)block,
                              (unsigned long long)step);
    }
    RILL_TRY(condition(ctx, &go));
  }
  return NULL;
}

/* ------------------------------------------------------------------ while_grad --- */

/* A step's gradient (a local of the step scope, tensor or array) summed into X@GRAD[i]:
 * the first step to give one copies it, the others add. Array items add item by item. */
static rill_status *accumulate(rill_kernel_ctx *ctx, size_t i, rill_variable *step_grad,
                               bool *started, const char *inner) {
  size_t go = RILL_WHILE_GRAD_OUT_X_GRAD;
  rill_variable *dst = ctx->out[go][i];
  const char *name = rill_kout_name(ctx, go, i);
  if (step_grad->kind == RILL_VARKIND_TENSOR) {
    const rill_tensor *g = &step_grad->u.tensor;
    if (!rill_tensor_is_set(g)) return NULL;
    rill_tensor *t = rill_variable_tensor(dst);
    if (!t)
      return rill_kernel_error(ctx, "X@GRAD '%s' holds a %s, not a dense tensor (the step "
                               "gradient '%s' is one)", name, rill_var_kind_name(dst->kind), inner);
    if (!*started) {
      *started = true;
      return rill_status_wrap(rill_cpu_step_grad_start(t, g, inner), "while_grad");
    }
    return rill_cpu_step_grad_add(ctx, t, g, inner);
  }
  if (step_grad->kind == RILL_VARKIND_TENSOR_ARRAY) {
    rill_tensor_array *a = rill_variable_array(dst);
    if (!a)
      return rill_kernel_error(ctx, "X@GRAD '%s' holds a %s, not a tensor array (the step "
                               "gradient '%s' is one)", name, rill_var_kind_name(dst->kind), inner);
    if (!*started) {
      *started = true;
      rill_variable_clear(dst);
      a = rill_variable_array(dst);
    }
    const rill_tensor_array *src = &step_grad->u.array;
    if (src->n > a->n) RILL_TRY(rill_tensor_array_resize(a, src->n));
    for (size_t k = 0; k < src->n; k++) {
      if (!src->items[k].buf || rill_tensor_numel(&src->items[k]) == 0) continue;
      if (!a->items[k].buf)
        RILL_TRY(rill_status_wrap(rill_cpu_step_grad_start(&a->items[k], &src->items[k], inner),
                                  "while_grad: item %zu", k));
      else
        RILL_TRY(rill_cpu_step_grad_add(ctx, &a->items[k], &src->items[k], inner));
    }
    return NULL;
  }
  if (step_grad->kind == RILL_VARKIND_EMPTY) return NULL;
  return rill_kernel_error(ctx, "step gradient '%s' holds a %s, not a tensor or an array",
                           inner, rill_var_kind_name(step_grad->kind));
}

/* X@GRAD[i] when no step gave a gradient: zeros shaped like X[i] (an empty array for an
 * array X). */
static rill_status *zero_grad(rill_kernel_ctx *ctx, size_t i) {
  rill_variable *dst = ctx->out[RILL_WHILE_GRAD_OUT_X_GRAD][i];
  rill_variable *x = ctx->in[RILL_WHILE_GRAD_IN_X][i];
  if (x && x->kind == RILL_VARKIND_TENSOR_ARRAY) {
    rill_variable_clear(dst);
    return rill_variable_array(dst) ? NULL
                                    : rill_kernel_error(ctx, "X@GRAD '%s' cannot hold an array",
                                                        rill_kout_name(ctx, RILL_WHILE_GRAD_OUT_X_GRAD, i));
  }
  const rill_tensor *xt = x && x->kind == RILL_VARKIND_TENSOR ? &x->u.tensor : NULL;
  rill_tensor *g = rill_variable_tensor(dst);
  if (!xt || !rill_tensor_is_set(xt) || !g)
    return rill_kernel_error(ctx, "X '%s' holds no tensor to shape the zero gradient '%s'",
                             rill_kin_name(ctx, RILL_WHILE_GRAD_IN_X, i),
                             rill_kout_name(ctx, RILL_WHILE_GRAD_OUT_X_GRAD, i));
  RILL_TRY(rill_tensor_alloc(g, xt->dtype, &xt->dims));
  memset(rill_tensor_ptr(g), 0, rill_tensor_nbytes(g));
  return NULL;
}

/* X@GRAD[i] is also an Out@GRAD (a loop-carried gradient): the gradient block reads and
 * writes it in the enclosing block, step after step; nothing is summed. */
static bool in_place(const rill_kernel_ctx *ctx, size_t i) {
  size_t gi = RILL_WHILE_GRAD_IN_OUT_GRAD;
  for (size_t k = 0; k < ctx->nin[gi]; k++)
    if (rill_k_same_var(ctx, gi, k, RILL_WHILE_GRAD_OUT_X_GRAD, i)) return true;
  return false;
}

rill_status *rill_cpu_while_grad(rill_kernel_ctx *ctx) {
  if (ctx->attrs[RILL_WHILE_GRAD_ATTR_IS_TEST].v.b)
    return rill_kernel_error(ctx, "is_test is set: an is_test while keeps no step scopes to "
                             "differentiate");
  size_t si = RILL_WHILE_GRAD_IN_STEP_SCOPES;
  const char *sname = ctx->nin[si] ? rill_kin_name(ctx, si, 0) : "(none)";
  rill_variable *sv = ctx->nin[si] ? ctx->in[si][0] : NULL;
  if (!sv || (sv->kind != RILL_VARKIND_STEP_SCOPES && sv->kind != RILL_VARKIND_EMPTY))
    return rill_kernel_error(ctx, "StepScopes '%s' holds %s, not the step scopes of the forward "
                             "while", sname, sv ? rill_var_kind_name(sv->kind) : "nothing");
  /* The gradient block reads Out@GRAD by the names original_output_grad lists, through
   * the scope chain: they must be the same names. */
  const rill_attr_value *og = &ctx->attrs[RILL_WHILE_GRAD_ATTR_ORIGINAL_OUTPUT_GRAD];
  size_t gi = RILL_WHILE_GRAD_IN_OUT_GRAD;
  if (og->n && og->n != ctx->nin[gi])
    return rill_kernel_error(ctx, "original_output_grad lists %zu names for %zu Out@GRAD",
                             og->n, ctx->nin[gi]);
  for (size_t k = 0; k < og->n; k++)
    if (strcmp(og->list.strings[k], rill_kin_name(ctx, gi, k)) != 0)
      return rill_kernel_error(ctx, "Out@GRAD '%s' is read by the gradient block as '%s'; "
                               "renamed output gradients are not supported",
                               rill_kin_name(ctx, gi, k), og->list.strings[k]);
  size_t nsteps = sv->kind == RILL_VARKIND_STEP_SCOPES ? sv->u.scopes.n : 0;
  size_t xi = RILL_WHILE_GRAD_IN_X, go = RILL_WHILE_GRAD_OUT_X_GRAD;
  if (ctx->nout[go] > ctx->nin[xi])
    return rill_kernel_error(ctx, "has %zu X@GRAD for %zu X", ctx->nout[go], ctx->nin[xi]);
  size_t nx = ctx->nout[go];
  bool *started = rill_calloc(nx ? nx : 1, sizeof *started);
  if (!started) return rill_oom();
  int32_t block = ctx->attrs[RILL_WHILE_GRAD_ATTR_SUB_BLOCK].v.block;
  char inner[1024];
  rill_status *st = NULL;
  for (size_t step = nsteps; step-- > 0 && !st;) {
    rill_scope *scope = sv->u.scopes.items[step];
    st = rill_status_wrap(rill_dev_run_block(ctx->dev, block, scope),
                          "while_grad: sub_block %d, step %zu", (int)block, step);
    for (size_t i = 0; i < nx && !st; i++) {
      if (!ctx->out[go][i] || in_place(ctx, i)) continue;
      const char *x = rill_kin_name(ctx, xi, i);
      if ((size_t)snprintf(inner, sizeof inner, "%s" RILL_GRAD_SUFFIX, x) >= sizeof inner) {
        st = rill_kernel_error(ctx, "input name '%s' is too long", x);
        break;
      }
      /* only a gradient the block declares is the step's own; one found further up the
       * chain is the enclosing block's, written there in place */
      rill_variable *g = rill_scope_find_local(scope, inner);
      if (g) st = accumulate(ctx, i, g, &started[i], inner);
    }
  }
  for (size_t i = 0; i < nx && !st; i++)
    if (ctx->out[go][i] && !in_place(ctx, i) && !started[i]) st = zero_grad(ctx, i);
  rill_free(started);
  return st;
}
