/* py_func: Out = the host callback forward_callable_id applied to X (Paddle's op, whose
 * callbacks are Python functions: fluid.layers.py_func). The callback decides the
 * outputs' shapes, so the kernel sizes them. The gradient is another py_func calling
 * backward_callable_id, as Paddle builds it: inputs X minus backward_skip_vars, Out minus
 * backward_skip_vars, then every Out@GRAD; outputs X@GRAD (@EMPTY@ where unwanted). */
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE, "the callback's arguments, in order"},
};
static const rill_slot_schema outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE, "what the callback returns, in order"},
};
static const rill_attr_schema attrs[] = {
    {"forward_callable_id", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
     "id of the host callback this op calls (rill_host_callback_register)"},
    {"backward_callable_id", RILL_ATTR_INT, 0, RILL_DEF_INT(-1),
     "id of the callback the gradient op calls; -1: no gradient"},
    {"backward_skip_vars", RILL_ATTR_STRINGS, 0, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "forward inputs and outputs the gradient callback does not take"},
};

static bool skipped(const rill_attr *skip, const char *var) {
  if (!skip || skip->value.type != RILL_ATTR_STRINGS) return false;
  for (size_t i = 0; i < skip->value.n; i++)
    if (strcmp(skip->value.list.strings[i], var) == 0) return true;
  return false;
}

static char *suffixed(const char *var) {
  size_t n = strlen(var) + sizeof RILL_GRAD_SUFFIX;
  char *s = rill_malloc(n);
  if (s) snprintf(s, n, "%s%s", var, RILL_GRAD_SUFFIX);
  return s;
}

static rill_status *py_func_grad(rill_grad_ctx *ctx) {
  const rill_attr *bwd = rill_op_attr(ctx->fwd, "backward_callable_id");
  if (!bwd || bwd->value.type != RILL_ATTR_INT || bwd->value.v.i < 0) return NULL;
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  const rill_attr *skip = rill_op_attr(ctx->fwd, "backward_skip_vars");
  const rill_op_slot *x = rill_op_input(ctx->fwd, "X"), *out = rill_op_output(ctx->fwd, "Out");
  size_t nx = x ? x->nargs : 0, nout = out ? out->nargs : 0;
  const char **ins = rill_calloc(nx + 2 * nout + 1, sizeof *ins);
  char **owned = rill_calloc(nx + nout + 1, sizeof *owned); /* Out@GRAD, then X@GRAD */
  rill_status *st = NULL;
  size_t nin = 0;
  if (!ins || !owned) {
    st = rill_oom();
    goto done;
  }
  for (size_t i = 0; i < nx; i++)
    if (!skipped(skip, x->args[i])) ins[nin++] = x->args[i];
  for (size_t i = 0; i < nout; i++)
    if (!skipped(skip, out->args[i])) ins[nin++] = out->args[i];
  for (size_t i = 0; i < nout && !st; i++)
    if (!(owned[i] = suffixed(out->args[i]))) st = rill_oom();
    else ins[nin++] = owned[i];
  for (size_t i = 0; i < nx && !st; i++)
    if (!(owned[nout + i] = ctx->wants_grad(ctx->impl, x->args[i]) ? suffixed(x->args[i])
                                                                     : rill_strdup(RILL_EMPTY_VAR)))
      st = rill_oom();
  rill_op_desc *op;
  if (!st) st = rill_grad_begin(ctx, "py_func", &op);
  if (!st) st = rill_grad_slot(op, false, "X", ins, nin);
  if (!st) st = rill_grad_slot(op, true, "Out", (const char *const *)owned + nout, nx);
  rill_attr_value id = {.type = RILL_ATTR_INT, .v.i = bwd->value.v.i};
  rill_attr_value none = {.type = RILL_ATTR_INT, .v.i = -1};
  rill_attr_value no_skip = {.type = RILL_ATTR_STRINGS};
  if (!st) st = rill_grad_attr(op, "forward_callable_id", &id);
  if (!st) st = rill_grad_attr(op, "backward_callable_id", &none);
  if (!st) st = rill_grad_attr(op, "backward_skip_vars", &no_skip);
done:
  if (owned)
    for (size_t i = 0; i < nx + nout; i++) rill_free(owned[i]);
  rill_free(owned);
  rill_free(ins);
  return st;
}

const rill_op_schema rill_schema_py_func = {
    .type = "py_func",
    .doc = "Out = host callback forward_callable_id (X...): the callback returns the "
           "outputs' tensors, shapes and LoD included.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_SIDE_EFFECT | RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = py_func_grad,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(py_func);
