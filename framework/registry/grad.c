/* Helpers for gradient makers, and Paddle's default maker. */
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/registry/registry.h"

void rill_grad_ctx_clear(rill_grad_ctx *ctx) {
  for (size_t i = 0; i < ctx->nops; i++) rill_op_desc_clear(&ctx->ops[i]);
  rill_free(ctx->ops);
  ctx->ops = NULL;
  ctx->nops = ctx->capops = 0;
}

rill_status *rill_grad_begin(rill_grad_ctx *ctx, const char *type, rill_op_desc **op) {
  void *ops = ctx->ops;
  if (!rill_grow(&ops, &ctx->capops, ctx->nops + 1, sizeof(rill_op_desc))) return rill_oom();
  ctx->ops = ops;
  rill_op_desc *d = &ctx->ops[ctx->nops];
  memset(d, 0, sizeof *d);
  d->type = rill_strdup(type);
  if (!d->type) return rill_oom();
  if (ctx->fwd->nattrs) {
    d->attrs = rill_calloc(ctx->fwd->nattrs, sizeof *d->attrs);
    if (!d->attrs) {
      rill_op_desc_clear(d);
      return rill_oom();
    }
    for (size_t i = 0; i < ctx->fwd->nattrs; i++) {
      rill_attr *a = &d->attrs[i];
      a->name = rill_strdup(ctx->fwd->attrs[i].name);
      rill_status *st = a->name ? rill_attr_value_copy(&a->value, &ctx->fwd->attrs[i].value)
                                : rill_oom();
      if (st) {
        rill_free(a->name);
        a->name = NULL;
        d->nattrs = i;
        rill_op_desc_clear(d);
        return st;
      }
      d->nattrs = i + 1;
    }
  }
  ctx->nops++;
  *op = d;
  return NULL;
}

/* Appends slot `param` with `n` arguments, name i given by fn(ctx, src, i) (a fresh
 * string; src a forward slot, or a list of names). */
static rill_status *add_slot(rill_op_slot **slots, size_t *nslots, const char *param, size_t n,
                             char *(*fn)(rill_grad_ctx *, const void *, size_t),
                             rill_grad_ctx *ctx, const void *src) {
  rill_op_slot *grown = rill_realloc(*slots, (*nslots + 1) * sizeof **slots);
  if (!grown) return rill_oom();
  *slots = grown;
  rill_op_slot *s = &grown[*nslots];
  memset(s, 0, sizeof *s);
  s->param = rill_strdup(param);
  if (!s->param) return rill_oom();
  if (n) {
    s->args = rill_calloc(n, sizeof *s->args);
    if (!s->args) {
      rill_free(s->param);
      return rill_oom();
    }
  }
  for (size_t i = 0; i < n; i++) {
    s->args[i] = fn(ctx, src, i);
    if (!s->args[i]) {
      for (size_t j = 0; j < i; j++) rill_free(s->args[j]);
      rill_free(s->args);
      rill_free(s->param);
      return rill_oom();
    }
  }
  s->nargs = n;
  (*nslots)++;
  return NULL;
}

static char *same_name(rill_grad_ctx *ctx, const void *src, size_t i) {
  (void)ctx;
  return rill_strdup(((const rill_op_slot *)src)->args[i]);
}

static char *grad_name(const char *var) {
  size_t a = strlen(var), b = strlen(RILL_GRAD_SUFFIX);
  char *s = rill_malloc(a + b + 1);
  if (!s) return NULL;
  memcpy(s, var, a);
  memcpy(s + a, RILL_GRAD_SUFFIX, b + 1);
  return s;
}

/* The gradient of an absent output (RILL_EMPTY_VAR, a gradient op's unwanted output)
 * is absent too. */
static char *output_grad(rill_grad_ctx *ctx, const void *src, size_t i) {
  (void)ctx;
  const char *var = ((const rill_op_slot *)src)->args[i];
  return strcmp(var, RILL_EMPTY_VAR) == 0 ? rill_strdup(RILL_EMPTY_VAR) : grad_name(var);
}

static char *input_grad(rill_grad_ctx *ctx, const void *src, size_t i) {
  const char *var = ((const rill_op_slot *)src)->args[i];
  if (!ctx->wants_grad || !ctx->wants_grad(ctx->impl, var)) return rill_strdup(RILL_EMPTY_VAR);
  return grad_name(var);
}

rill_status *rill_grad_forward_as(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot,
                                  const char *param) {
  const rill_op_slot *src = rill_op_input(ctx->fwd, slot);
  if (!src) src = rill_op_output(ctx->fwd, slot);
  if (!src) return NULL; /* absent dispensable slot: absent in the gradient op too */
  return add_slot(&op->inputs, &op->ninputs, param, src->nargs, same_name, ctx, src);
}

rill_status *rill_grad_of_output_as(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot,
                                    const char *param) {
  const rill_op_slot *src = rill_op_output(ctx->fwd, slot);
  if (!src) return NULL;
  return add_slot(&op->inputs, &op->ninputs, param, src->nargs, output_grad, ctx, src);
}

rill_status *rill_grad_of_input_as(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot,
                                   const char *param) {
  const rill_op_slot *src = rill_op_input(ctx->fwd, slot);
  if (!src) return NULL;
  return add_slot(&op->outputs, &op->noutputs, param, src->nargs, input_grad, ctx, src);
}

rill_status *rill_grad_forward(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot) {
  return rill_grad_forward_as(ctx, op, slot, slot);
}

/* `<slot>@GRAD`, as a gradient op names the slot that carries slot's gradient. */
static rill_status *with_grad_slot(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot,
                                   rill_status *(*fn)(rill_grad_ctx *, rill_op_desc *,
                                                      const char *, const char *)) {
  char *param = grad_name(slot);
  if (!param) return rill_oom();
  rill_status *st = fn(ctx, op, slot, param);
  rill_free(param);
  return st;
}

rill_status *rill_grad_of_output(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot) {
  return with_grad_slot(ctx, op, slot, rill_grad_of_output_as);
}

rill_status *rill_grad_of_input(rill_grad_ctx *ctx, rill_op_desc *op, const char *slot) {
  return with_grad_slot(ctx, op, slot, rill_grad_of_input_as);
}

bool rill_grad_none_wanted(rill_grad_ctx *ctx, const char *slot) {
  const rill_op_slot *src = rill_op_input(ctx->fwd, slot);
  if (!src || !ctx->wants_grad) return true;
  for (size_t i = 0; i < src->nargs; i++)
    if (ctx->wants_grad(ctx->impl, src->args[i])) return false;
  return true;
}

static char *given_name(rill_grad_ctx *ctx, const void *names, size_t i) {
  (void)ctx;
  return rill_strdup(((const char *const *)names)[i]);
}

rill_status *rill_grad_slot(rill_op_desc *op, bool output, const char *param,
                            const char *const *names, size_t n) {
  return output ? add_slot(&op->outputs, &op->noutputs, param, n, given_name, NULL, names)
                : add_slot(&op->inputs, &op->ninputs, param, n, given_name, NULL, names);
}

rill_status *rill_grad_attr(rill_op_desc *op, const char *name, const rill_attr_value *v) {
  for (size_t i = 0; i < op->nattrs; i++)
    if (strcmp(op->attrs[i].name, name) == 0) {
      rill_attr_value copy;
      RILL_TRY(rill_attr_value_copy(&copy, v));
      rill_attr_value_clear(&op->attrs[i].value);
      op->attrs[i].value = copy;
      return NULL;
    }
  rill_attr *grown = rill_realloc(op->attrs, (op->nattrs + 1) * sizeof *grown);
  if (!grown) return rill_oom();
  op->attrs = grown;
  rill_attr *a = &grown[op->nattrs];
  memset(a, 0, sizeof *a);
  a->name = rill_strdup(name);
  if (!a->name) return rill_oom();
  rill_status *st = rill_attr_value_copy(&a->value, v);
  if (st) {
    rill_free(a->name);
    return st;
  }
  op->nattrs++;
  return NULL;
}

rill_status *rill_grad_default(rill_grad_ctx *ctx) {
  const rill_op_schema *s = ctx->schema;
  bool any = false;
  for (size_t i = 0; i < s->ninputs && !any; i++)
    if (!(s->inputs[i].flags & RILL_SLOT_NO_GRAD)) any = !rill_grad_none_wanted(ctx, s->inputs[i].name);
  if (!any) return NULL;
  char type[256];
  if ((size_t)snprintf(type, sizeof type, "%s_grad", s->type) >= sizeof type)
    return rill_error(RILL_INVALID_ARGUMENT, "op type '%s' is too long", s->type);
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, type, &op));
  for (size_t i = 0; i < s->ninputs; i++) RILL_TRY(rill_grad_forward(ctx, op, s->inputs[i].name));
  for (size_t i = 0; i < s->noutputs; i++) {
    RILL_TRY(rill_grad_forward(ctx, op, s->outputs[i].name));
    RILL_TRY(rill_grad_of_output(ctx, op, s->outputs[i].name));
  }
  for (size_t i = 0; i < s->ninputs; i++)
    if (!(s->inputs[i].flags & RILL_SLOT_NO_GRAD))
      RILL_TRY(rill_grad_of_input(ctx, op, s->inputs[i].name));
  return NULL;
}

rill_status *rill_grad_emit(rill_grad_ctx *ctx, const char *type, const char *const *fwd,
                            size_t nfwd, const char *const *out_grads, size_t nout_grads,
                            const char *const *in_grads, size_t nin_grads) {
  bool any = false;
  for (size_t i = 0; i < nin_grads && !any; i++) any = !rill_grad_none_wanted(ctx, in_grads[i]);
  if (!any) return NULL;
  char derived[256];
  if (!type) {
    if ((size_t)snprintf(derived, sizeof derived, "%s_grad", ctx->schema->type) >= sizeof derived)
      return rill_error(RILL_INVALID_ARGUMENT, "op type '%s' is too long", ctx->schema->type);
    type = derived;
  }
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, type, &op));
  for (size_t i = 0; i < nfwd; i++) RILL_TRY(rill_grad_forward(ctx, op, fwd[i]));
  for (size_t i = 0; i < nout_grads; i++) RILL_TRY(rill_grad_of_output(ctx, op, out_grads[i]));
  for (size_t i = 0; i < nin_grads; i++) RILL_TRY(rill_grad_of_input(ctx, op, in_grads[i]));
  return NULL;
}

rill_status *rill_grad_emit_as(rill_grad_ctx *ctx, const char *const *fwd, size_t nfwd,
                               const char *const *out_grads, size_t nout_grads,
                               const char *const *in_grads, size_t nin_grads) {
  if (nfwd % 2 || nout_grads % 2 || nin_grads % 2)
    return rill_error(RILL_INTERNAL, "rill_grad_emit_as (op '%s'): slot lists must be pairs",
                      ctx->schema->type);
  bool any = false;
  for (size_t i = 0; i < nin_grads && !any; i += 2) any = !rill_grad_none_wanted(ctx, in_grads[i]);
  if (!any) return NULL;
  char type[256];
  if ((size_t)snprintf(type, sizeof type, "%s_grad", ctx->schema->type) >= sizeof type)
    return rill_error(RILL_INVALID_ARGUMENT, "op type '%s' is too long", ctx->schema->type);
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, type, &op));
  for (size_t i = 0; i < nfwd; i += 2) RILL_TRY(rill_grad_forward_as(ctx, op, fwd[i], fwd[i + 1]));
  for (size_t i = 0; i < nout_grads; i += 2)
    RILL_TRY(rill_grad_of_output_as(ctx, op, out_grads[i], out_grads[i + 1]));
  for (size_t i = 0; i < nin_grads; i += 2)
    RILL_TRY(rill_grad_of_input_as(ctx, op, in_grads[i], in_grads[i + 1]));
  return NULL;
}
