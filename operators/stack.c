/* stack: Y = the X tensors (one shape) joined along a new dim `axis`; unstack: the
 * reverse, Y[i] = X's slice i along `axis`. stack_grad unstacks Y@GRAD, unstack_grad
 * stacks the Y@GRAD tensors. */
#include "operators/tensor_ops.h"

#include <stdio.h>

static const rill_slot_schema stack_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE, "tensors of one shape and dtype"}};
static const rill_slot_schema stack_outputs[] = {{"Y", 0, "X stacked along a new dim axis"}};
static const rill_attr_schema stack_attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
     "position of the new dim in Y, in [-(rank + 1), rank + 1) of X's rank"},
};

/* Y's dims: x's with extent n inserted at axis (normalized into *a). */
static bool stacked_dims(const rill_dims *x, int64_t axis, int64_t n, rill_dims *y, int *a,
                         char *err, size_t errlen) {
  if (!rill_norm_axis(axis, x->n + 1, a)) {
    snprintf(err, errlen, "axis %lld is out of range [%d, %d]", (long long)axis, -(x->n + 1), x->n);
    return false;
  }
  if (x->n + 1 > RILL_MAX_DIMS) {
    snprintf(err, errlen, "stacking rank %d gives more than %d dims", x->n, RILL_MAX_DIMS);
    return false;
  }
  y->n = x->n + 1;
  for (int i = 0, j = 0; i < y->n; i++) y->d[i] = i == *a ? n : x->d[j++];
  return true;
}

static rill_status *stack_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0);
  size_t n = ctx->nin[0];
  if (!y || n == 0) return rill_infer_error(ctx, "needs inputs X and output Y");
  const rill_tensor_meta *x0 = &ctx->in[0][0];
  for (size_t i = 0; i < n; i++) {
    const rill_tensor_meta *xi = &ctx->in[0][i];
    if (!xi->known) {
      rill_meta_unknown(y);
      return NULL;
    }
    bool same = xi->dtype == x0->dtype && xi->dims.n == x0->dims.n;
    for (int k = 0; same && k < xi->dims.n; k++)
      same = xi->dims.d[k] < 0 || x0->dims.d[k] < 0 || xi->dims.d[k] == x0->dims.d[k];
    if (!same) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input X (%s) is %s %s but X (%s) is %s %s; stacked tensors "
                              "must agree", rill_infer_in_name(ctx, 0, i),
                              rill_dtype_name(xi->dtype), rill_dims_str(&xi->dims, a, sizeof a),
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x0->dtype),
                              rill_dims_str(&x0->dims, b, sizeof b));
    }
  }
  rill_dims d;
  int a;
  char err[128];
  if (!stacked_dims(&x0->dims, ctx->attrs[RILL_STACK_ATTR_AXIS].v.i, (int64_t)n, &d, &a, err, sizeof err))
    return rill_infer_error(ctx, "input X (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  rill_meta_set(y, x0->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *stack_maker(rill_grad_ctx *ctx) {
  static const char *const og[] = {"Y"}, *const ig[] = {"X"};
  return rill_grad_emit(ctx, NULL, NULL, 0, og, 1, ig, 1);
}

const rill_op_schema rill_schema_stack = {
    .type = "stack",
    .doc = "Y = the X tensors stacked along a new dim axis.",
    .inputs = stack_inputs,
    .ninputs = RILL_COUNTOF(stack_inputs),
    .outputs = stack_outputs,
    .noutputs = RILL_COUNTOF(stack_outputs),
    .attrs = stack_attrs,
    .nattrs = RILL_COUNTOF(stack_attrs),
    .flags = 0,
    .infer = stack_infer,
    .grad = stack_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* The parts of a tensor of dims y cut at `axis` into n slices: outs[i] gets y's dims
 * without axis, or nothing when absent. */
static rill_status *unstacked_infer(rill_infer_ctx *ctx, const rill_tensor_meta *y, size_t yslot,
                                    int64_t axis, size_t oslot) {
  size_t n = ctx->nout[oslot];
  if (!y->known) {
    for (size_t i = 0; i < n; i++) rill_meta_unknown(&ctx->out[oslot][i]);
    return NULL;
  }
  const char *slot_name = ctx->schema->inputs[yslot].name, *yn = rill_infer_in_name(ctx, yslot, 0);
  int a;
  if (!rill_norm_axis(axis, y->dims.n, &a))
    return rill_infer_error(ctx, "axis %lld is out of range for input %s (%s) of rank %d",
                            (long long)axis, slot_name, yn, (int)y->dims.n);
  if (y->dims.d[a] >= 0 && (size_t)y->dims.d[a] != n)
    return rill_infer_error(ctx, "input %s (%s) has extent %lld at axis %d but there are %zu "
                            "outputs %s", slot_name, yn, (long long)y->dims.d[a], a, n,
                            ctx->schema->outputs[oslot].name);
  rill_dims d = {.n = y->dims.n - 1};
  for (int i = 0, j = 0; i < y->dims.n; i++)
    if (i != a) d.d[j++] = y->dims.d[i];
  for (size_t i = 0; i < n; i++) rill_meta_set(&ctx->out[oslot][i], y->dtype, &d, 0, -1, -1);
  return NULL;
}

static const rill_slot_schema stack_grad_inputs[] = {{"Y@GRAD", 0, "gradient of Y"}};
static const rill_slot_schema stack_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE, "Y@GRAD's slices along axis"}};

static rill_status *stack_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *dy = rill_infer_in(ctx, 0, 0);
  if (!dy) return rill_infer_error(ctx, "needs input Y@GRAD");
  return unstacked_infer(ctx, dy, 0, ctx->attrs[RILL_STACK_GRAD_ATTR_AXIS].v.i, 0);
}

const rill_op_schema rill_schema_stack_grad = {
    .type = "stack_grad",
    .doc = "X@GRAD[i] = Y@GRAD's slice i along axis.",
    .inputs = stack_grad_inputs,
    .ninputs = RILL_COUNTOF(stack_grad_inputs),
    .outputs = stack_grad_outputs,
    .noutputs = RILL_COUNTOF(stack_grad_outputs),
    .attrs = stack_attrs,
    .nattrs = RILL_COUNTOF(stack_attrs),
    .flags = 0,
    .infer = stack_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema unstack_inputs[] = {{"X", 0, "the tensor cut"}};
static const rill_slot_schema unstack_outputs[] = {
    {"Y", RILL_SLOT_DUPLICABLE, "X's slices along axis (num of them)"}};
static const rill_attr_schema unstack_attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "dim cut (negative from the end)"},
    {"num", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "number of slices: X's extent at axis"},
};

static rill_status *unstack_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || ctx->nout[0] == 0) return rill_infer_error(ctx, "needs input X and outputs Y");
  return unstacked_infer(ctx, x, 0, ctx->attrs[RILL_UNSTACK_ATTR_AXIS].v.i, 0);
}

static rill_status *unstack_maker(rill_grad_ctx *ctx) {
  static const char *const og[] = {"Y"}, *const ig[] = {"X"};
  return rill_grad_emit(ctx, NULL, NULL, 0, og, 1, ig, 1);
}

const rill_op_schema rill_schema_unstack = {
    .type = "unstack",
    .doc = "Y[i] = X's slice i along axis (the dim removed).",
    .inputs = unstack_inputs,
    .ninputs = RILL_COUNTOF(unstack_inputs),
    .outputs = unstack_outputs,
    .noutputs = RILL_COUNTOF(unstack_outputs),
    .attrs = unstack_attrs,
    .nattrs = RILL_COUNTOF(unstack_attrs),
    .flags = 0,
    .infer = unstack_infer,
    .grad = unstack_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema unstack_grad_inputs[] = {
    {"Y@GRAD", RILL_SLOT_DUPLICABLE, "gradients of the slices"}};
static const rill_slot_schema unstack_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "the Y@GRAD tensors stacked along axis"}};

static rill_status *unstack_grad_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  size_t n = ctx->nin[0];
  if (n == 0) return rill_infer_error(ctx, "needs inputs Y@GRAD");
  if (!dx) return NULL;
  const rill_tensor_meta *d0 = &ctx->in[0][0];
  if (!d0->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_dims d;
  int a;
  char err[128];
  if (!stacked_dims(&d0->dims, ctx->attrs[RILL_UNSTACK_GRAD_ATTR_AXIS].v.i, (int64_t)n, &d, &a,
                    err, sizeof err))
    return rill_infer_error(ctx, "input Y@GRAD (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  rill_meta_set(dx, d0->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_unstack_grad = {
    .type = "unstack_grad",
    .doc = "X@GRAD = the Y@GRAD tensors stacked along axis.",
    .inputs = unstack_grad_inputs,
    .ninputs = RILL_COUNTOF(unstack_grad_inputs),
    .outputs = unstack_grad_outputs,
    .noutputs = RILL_COUNTOF(unstack_grad_outputs),
    .attrs = unstack_attrs,
    .nattrs = RILL_COUNTOF(unstack_attrs),
    .flags = 0,
    .infer = unstack_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(stack);
