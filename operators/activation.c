/* Elementwise activations and their gradient ops, in Paddle's layout: relu6, leaky_relu,
 * sigmoid, tanh, hard_sigmoid, hard_swish, swish, silu, gelu, and relu_grad (relu's
 * forward schema is in relu.c). Kernels: kernels/cpu/activation.c.
 *
 * Each gradient op reads the tensor Paddle's functor declares as its dependency: Out for
 * relu, relu6, sigmoid, tanh, hard_sigmoid; X for leaky_relu, hard_swish, swish, silu,
 * gelu. The float parameters of an op come first in its attribute list (the kernels read
 * attributes 0..2 in order). */
#include <stdio.h>
#include <string.h>

#include "operators/activation.h"

/* ---- shared inference and makers ---- */

rill_status *rill_act_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out)
    return rill_infer_error(ctx, "needs input %s and output %s", ctx->schema->inputs[0].name,
                            ctx->schema->outputs[0].name);
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

rill_status *rill_act_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *dout = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  const char *xs = ctx->schema->inputs[0].name, *ds = ctx->schema->inputs[1].name;
  if (!x || !dout) return rill_infer_error(ctx, "needs inputs %s and %s", xs, ds);
  if (!dx) return NULL; /* no gradient wanted */
  if (!x->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  if (dout->known) {
    if (dout->dtype != x->dtype)
      return rill_infer_error(ctx, "input %s (%s) is %s but %s (%s) is %s", ds,
                              rill_infer_in_name(ctx, 1, 0), rill_dtype_name(dout->dtype), xs,
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
    bool same = dout->dims.n == x->dims.n;
    for (int i = 0; same && i < x->dims.n; i++)
      same = x->dims.d[i] < 0 || dout->dims.d[i] < 0 || x->dims.d[i] == dout->dims.d[i];
    if (!same) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input %s (%s) has shape %s but %s (%s) has shape %s", ds,
                              rill_infer_in_name(ctx, 1, 0), rill_dims_str(&dout->dims, a, sizeof a),
                              xs, rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, b, sizeof b));
    }
  }
  rill_meta_set(dx, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

rill_status *rill_act_check_axis(const rill_infer_ctx *ctx, int attr_axis, int r, size_t slot,
                                 int *axis) {
  if (r == 0 ? (attr_axis != 0 && attr_axis != -1) : (attr_axis < -r || attr_axis >= r))
    return rill_infer_error(ctx, "attribute axis %d is out of range for input %s (%s) of rank %d",
                            attr_axis, ctx->schema->inputs[slot].name,
                            rill_infer_in_name(ctx, slot, 0), r);
  *axis = attr_axis < 0 ? attr_axis + (r ? r : 1) : attr_axis;
  return NULL;
}

static const char *const slot_x[] = {"X"}, *const slot_out[] = {"Out"};

rill_status *rill_act_grad_from_x(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, slot_x, 1, slot_out, 1, slot_x, 1);
}

rill_status *rill_act_grad_from_out(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, slot_out, 1, slot_out, 1, slot_x, 1);
}

/* ---- schemas ---- */

static const rill_slot_schema fwd_inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema fwd_outputs[] = {{"Out", 0, "activation of X, same shape as X"}};
static const rill_slot_schema grad_inputs_x[] = {
    {"X", 0, "the forward input"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_inputs_out[] = {
    {"Out", 0, "the forward output"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X, same shape as X"},
};

#define MKLDNN_ATTR {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"}

/* Forward schema `rill_schema_<name>` and gradient schema `rill_schema_<name>_grad`;
 * DEP is x or out (the gradient's dependency); attrs in `<name>_attrs`; FLAGS the
 * forward op's flags. */
#define ACT_SCHEMAS(NAME, DOC, DEP, FLAGS)                                                \
  const rill_op_schema rill_schema_##NAME = {                                             \
      .type = #NAME,                                                                      \
      .doc = DOC,                                                                         \
      .inputs = fwd_inputs,                                                               \
      .ninputs = RILL_COUNTOF(fwd_inputs),                                                \
      .outputs = fwd_outputs,                                                             \
      .noutputs = RILL_COUNTOF(fwd_outputs),                                              \
      .attrs = NAME##_attrs,                                                              \
      .nattrs = RILL_COUNTOF(NAME##_attrs),                                               \
      .flags = FLAGS,                                                                     \
      .infer = rill_act_infer,                                                            \
      .grad = rill_act_grad_from_##DEP,                                                   \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };                                                                                      \
  const rill_op_schema rill_schema_##NAME##_grad = {                                      \
      .type = #NAME "_grad",                                                              \
      .doc = "Gradient of " #NAME " (reads " #DEP ").",                                   \
      .inputs = grad_inputs_##DEP,                                                        \
      .ninputs = RILL_COUNTOF(grad_inputs_##DEP),                                         \
      .outputs = grad_outputs,                                                            \
      .noutputs = RILL_COUNTOF(grad_outputs),                                             \
      .attrs = NAME##_attrs,                                                              \
      .nattrs = RILL_COUNTOF(NAME##_attrs),                                               \
      .flags = 0,                                                                         \
      .infer = rill_act_grad_infer,                                                       \
      .grad = NULL,                                                                       \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };

static const rill_attr_schema relu6_attrs[] = {
    {"threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(6.0f), "upper clip"},
    MKLDNN_ATTR,
};
ACT_SCHEMAS(relu6, "Out = min(max(X, 0), threshold).", out, RILL_OP_INPLACE | RILL_OP_FUSABLE_ACT)

static const rill_attr_schema leaky_relu_attrs[] = {
    {"alpha", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.02f), "slope for X < 0"},
    MKLDNN_ATTR,
};
ACT_SCHEMAS(leaky_relu, "Out = X for X >= 0, alpha * X otherwise.", x, RILL_OP_INPLACE)

static const rill_attr_schema sigmoid_attrs[] = {MKLDNN_ATTR};
ACT_SCHEMAS(sigmoid, "Out = 1 / (1 + exp(-X)).", out, RILL_OP_INPLACE | RILL_OP_FUSABLE_ACT)

static const rill_attr_schema tanh_attrs[] = {MKLDNN_ATTR};
ACT_SCHEMAS(tanh, "Out = tanh(X).", out, RILL_OP_INPLACE | RILL_OP_FUSABLE_ACT)

static const rill_attr_schema hard_sigmoid_attrs[] = {
    {"slope", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.2f), "slope"},
    {"offset", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f), "offset"},
    MKLDNN_ATTR,
};
ACT_SCHEMAS(hard_sigmoid, "Out = min(max(slope * X + offset, 0), 1).", out, RILL_OP_INPLACE)

static const rill_attr_schema hard_swish_attrs[] = {
    {"threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(6.0f), "upper clip of X + offset"},
    {"scale", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(6.0f), "divisor"},
    {"offset", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(3.0f), "added to X before clipping"},
    MKLDNN_ATTR,
};
ACT_SCHEMAS(hard_swish, "Out = X * min(max(X + offset, 0), threshold) / scale.", x, RILL_OP_INPLACE)

static const rill_attr_schema swish_attrs[] = {
    {"beta", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "sigmoid's slope"},
    MKLDNN_ATTR,
};
ACT_SCHEMAS(swish, "Out = X / (1 + exp(-beta * X)).", x, RILL_OP_INPLACE)

static const rill_attr_schema silu_attrs[] = {MKLDNN_ATTR};
ACT_SCHEMAS(silu, "Out = X / (1 + exp(-X)).", x, RILL_OP_INPLACE)

static const rill_attr_schema gelu_attrs[] = {
    {"approximate", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "true: tanh approximation; false: exact, with erf"},
    MKLDNN_ATTR,
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};
ACT_SCHEMAS(gelu, "Out = X * Phi(X) (Phi: the normal CDF; tanh approximation if approximate).", x, 0)

/* relu's forward schema lives in relu.c; its gradient reads Out. */
static const rill_attr_schema relu_grad_attrs[] = {MKLDNN_ATTR};
const rill_op_schema rill_schema_relu_grad = {
    .type = "relu_grad",
    .doc = "Gradient of relu: X@GRAD = Out@GRAD where Out > 0, else 0.",
    .inputs = grad_inputs_out,
    .ninputs = RILL_COUNTOF(grad_inputs_out),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = relu_grad_attrs,
    .nattrs = RILL_COUNTOF(relu_grad_attrs),
    .flags = 0,
    .infer = rill_act_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(activation);
