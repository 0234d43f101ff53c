/* stack: Y = the X tensors (all one shape) stacked along a new dim `axis`; its gradient
 * stack_grad cuts Y@GRAD back into one piece per X. unstack is the reverse (X cut into
 * `num` slices at axis), its gradient unstack_grad a stack. As Paddle 1.8. */
#include "operators/tensor_ops.h"

static const rill_slot_schema stack_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE, "tensors of one shape and dtype"}};
static const rill_slot_schema stack_outputs[] = {
    {"Y", 0, "X's shape with the number of X inserted at axis"}};
static const rill_attr_schema stack_attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
     "where the new dim goes, in [-(rank + 1), rank] (negative from the end)"},
};

static rill_status *stack_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0);
  size_t n = ctx->nin[0];
  if (!y || n == 0) return rill_infer_error(ctx, "needs inputs X and output Y");
  for (size_t i = 0; i < n; i++)
    if (!ctx->in[0][i].known) {
      rill_meta_unknown(y);
      return NULL;
    }
  const rill_tensor_meta *x0 = &ctx->in[0][0];
  int r = x0->dims.n, axis;
  if (r + 1 > RILL_MAX_DIMS)
    return rill_infer_error(ctx, "input X (%s) has rank %d; Y would exceed %d dims",
                            rill_infer_in_name(ctx, 0, 0), r, RILL_MAX_DIMS);
  if (!rill_norm_axis(ctx->attrs[RILL_STACK_ATTR_AXIS].v.i, r + 1, &axis))
    return rill_infer_error(ctx, "axis %d is out of range for inputs X of rank %d",
                            ctx->attrs[RILL_STACK_ATTR_AXIS].v.i, r);
  for (size_t i = 1; i < n; i++) {
    const rill_tensor_meta *xi = &ctx->in[0][i];
    bool same = xi->dtype == x0->dtype && xi->dims.n == r;
    for (int k = 0; k < r && same; k++)
      same = xi->dims.d[k] == x0->dims.d[k] || xi->dims.d[k] < 0 || x0->dims.d[k] < 0;
    if (!same) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input X (%s), %s %s, differs from X (%s), %s %s",
                              rill_infer_in_name(ctx, 0, i), rill_dtype_name(xi->dtype),
                              rill_dims_str(&xi->dims, a, sizeof a), rill_infer_in_name(ctx, 0, 0),
                              rill_dtype_name(x0->dtype), rill_dims_str(&x0->dims, b, sizeof b));
    }
  }
  rill_dims d = {.n = r + 1};
  for (int k = 0, j = 0; k <= r; k++) d.d[k] = k == axis ? (int64_t)n : x0->dims.d[j++];
  rill_meta_set(y, x0->dtype, &d, 0, -1, 0);
  return NULL;
}

/* stack's gradient: stack_grad(Y@GRAD) -> X@GRAD, as Paddle. */
static rill_status *stack_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "stack_grad", &op));
  RILL_TRY(rill_grad_of_output(ctx, op, "Y"));
  RILL_TRY(rill_grad_of_input(ctx, op, "X"));
  return NULL;
}

const rill_op_schema rill_schema_stack = {
    .type = "stack",
    .doc = "Y = the X tensors stacked along a new dim at axis.",
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

static const rill_slot_schema stack_grad_inputs[] = {{"Y@GRAD", 0, "gradient of Y"}};
static const rill_slot_schema stack_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "gradients of X: the slices of Y@GRAD at axis (@EMPTY@ where not wanted)"}};

static rill_status *stack_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *dy = rill_infer_in(ctx, 0, 0);
  if (!dy) return rill_infer_error(ctx, "needs input Y@GRAD");
  size_t n = ctx->nout[0];
  if (!dy->known) {
    for (size_t i = 0; i < n; i++) rill_meta_unknown(&ctx->out[0][i]);
    return NULL;
  }
  int r = dy->dims.n, axis;
  if (r < 1 || !rill_norm_axis(ctx->attrs[RILL_STACK_GRAD_ATTR_AXIS].v.i, r, &axis))
    return rill_infer_error(ctx, "axis %d is out of range for input Y@GRAD (%s) of rank %d",
                            ctx->attrs[RILL_STACK_GRAD_ATTR_AXIS].v.i,
                            rill_infer_in_name(ctx, 0, 0), r);
  if (dy->dims.d[axis] >= 0 && dy->dims.d[axis] != (int64_t)n)
    return rill_infer_error(ctx, "input Y@GRAD (%s) has %lld at axis %d but there are %zu "
                            "outputs X@GRAD", rill_infer_in_name(ctx, 0, 0),
                            (long long)dy->dims.d[axis], axis, n);
  rill_dims d = {.n = r - 1};
  for (int k = 0, j = 0; k < r; k++)
    if (k != axis) d.d[j++] = dy->dims.d[k];
  for (size_t i = 0; i < n; i++) rill_meta_set(&ctx->out[0][i], dy->dtype, &d, 0, -1, 0);
  return NULL;
}

const rill_op_schema rill_schema_stack_grad = {
    .type = "stack_grad",
    .doc = "X@GRAD i = the slice i of Y@GRAD at axis.",
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

/* ---- unstack ---- */

static const rill_slot_schema unstack_inputs[] = {{"X", 0, "tensor to cut at axis"}};
static const rill_slot_schema unstack_outputs[] = {
    {"Y", RILL_SLOT_DUPLICABLE, "the num slices of X at axis (that dim removed)"}};
static const rill_attr_schema unstack_attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "dim to cut, in [-rank, rank)"},
    {"num", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "X's extent at axis: the number of Y"},
};

static rill_status *unstack_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x) return rill_infer_error(ctx, "needs input X");
  size_t n = ctx->nout[0];
  if ((int64_t)n != ctx->attrs[RILL_UNSTACK_ATTR_NUM].v.i)
    return rill_infer_error(ctx, "num is %d but there are %zu outputs Y",
                            ctx->attrs[RILL_UNSTACK_ATTR_NUM].v.i, n);
  if (!x->known) {
    for (size_t i = 0; i < n; i++) rill_meta_unknown(&ctx->out[0][i]);
    return NULL;
  }
  int r = x->dims.n, axis;
  if (r < 1 || !rill_norm_axis(ctx->attrs[RILL_UNSTACK_ATTR_AXIS].v.i, r, &axis))
    return rill_infer_error(ctx, "axis %d is out of range for input X (%s) of rank %d",
                            ctx->attrs[RILL_UNSTACK_ATTR_AXIS].v.i, rill_infer_in_name(ctx, 0, 0),
                            r);
  if (x->dims.d[axis] >= 0 && x->dims.d[axis] != (int64_t)n)
    return rill_infer_error(ctx, "input X (%s) has %lld at axis %d but num is %zu",
                            rill_infer_in_name(ctx, 0, 0), (long long)x->dims.d[axis], axis, n);
  rill_dims d = {.n = r - 1};
  for (int k = 0, j = 0; k < r; k++)
    if (k != axis) d.d[j++] = x->dims.d[k];
  for (size_t i = 0; i < n; i++) rill_meta_set(&ctx->out[0][i], x->dtype, &d, 0, -1, 0);
  return NULL;
}

/* unstack's gradient: unstack_grad(Y@GRAD) -> X@GRAD, as Paddle. */
static rill_status *unstack_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "unstack_grad", &op));
  RILL_TRY(rill_grad_of_output(ctx, op, "Y"));
  RILL_TRY(rill_grad_of_input(ctx, op, "X"));
  return NULL;
}

const rill_op_schema rill_schema_unstack = {
    .type = "unstack",
    .doc = "Y i = the slice i of X at axis, for i < num.",
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
    {"Y@GRAD", RILL_SLOT_DUPLICABLE, "gradients of Y"}};
static const rill_slot_schema unstack_grad_outputs[] = {
    {"X@GRAD", 0, "the Y@GRAD stacked at axis"}};

static rill_status *unstack_grad_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  size_t n = ctx->nin[0];
  if (!dx || n == 0) return rill_infer_error(ctx, "needs inputs Y@GRAD and output X@GRAD");
  const rill_tensor_meta *d0 = &ctx->in[0][0];
  int axis;
  if (!d0->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  if (d0->dims.n + 1 > RILL_MAX_DIMS ||
      !rill_norm_axis(ctx->attrs[RILL_UNSTACK_GRAD_ATTR_AXIS].v.i, d0->dims.n + 1, &axis))
    return rill_infer_error(ctx, "axis %d is out of range for inputs Y@GRAD of rank %d",
                            ctx->attrs[RILL_UNSTACK_GRAD_ATTR_AXIS].v.i, d0->dims.n);
  rill_dims d = {.n = d0->dims.n + 1};
  for (int k = 0, j = 0; k < d.n; k++) d.d[k] = k == axis ? (int64_t)n : d0->dims.d[j++];
  rill_meta_set(dx, d0->dtype, &d, 0, -1, 0);
  return NULL;
}

const rill_op_schema rill_schema_unstack_grad = {
    .type = "unstack_grad",
    .doc = "X@GRAD = the Y@GRAD stacked along axis.",
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
