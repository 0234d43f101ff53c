/* Elementwise activations and their gradient ops, in Paddle's layout: relu6, leaky_relu,
 * sigmoid, tanh, hard_sigmoid, hard_swish, swish, silu, gelu, relu_grad (relu's forward
 * schema is in relu.c), and the math family: abs, ceil, floor, round, sign, cos, sin,
 * acos, asin, atan, reciprocal, rsqrt, softplus, softsign, logsigmoid, tanh_shrink,
 * softshrink, hard_shrink, thresholded_relu, elu, selu, brelu, soft_relu, stanh, erf,
 * mish, log1p, pow. Kernels: kernels/cpu/activation.c.
 *
 * Each gradient op reads the tensor Paddle's functor declares as its dependency: Out for
 * relu, relu6, sigmoid, tanh, hard_sigmoid, reciprocal, rsqrt, selu, soft_relu; nothing
 * but Out@GRAD for ceil, floor, round (their gradient is zero); X for the others. sign's
 * gradient is a scale op by 0, as Paddle's. Kernels read the attributes by name
 * (RILL_<OP>_ATTR_<NAME>). */
#include <stdio.h>
#include <string.h>

#include "operators/activation.h"
#include "operators/math_grad.h"
#include "operators/tensor_ops.h"

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

/* Gradient inference of the ops whose gradient reads Out@GRAD alone (Paddle's kNoDeps:
 * ceil, floor, round): X@GRAD := Out@GRAD. */
static rill_status *act_grad_infer_none(rill_infer_ctx *ctx) {
  const rill_tensor_meta *dout = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!dout) return rill_infer_error(ctx, "needs input %s", ctx->schema->inputs[0].name);
  if (!dx) return NULL;
  if (!dout->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_meta_set(dx, dout->dtype, &dout->dims, dout->lod_level, 0, 0);
  return NULL;
}

static rill_status *act_grad_from_none(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, NULL, 0, slot_out, 1, slot_x, 1);
}

static const rill_slot_schema grad_inputs_none[] = {{"Out@GRAD", 0, "gradient of Out"}};
#define GRAD_INFER_x rill_act_grad_infer
#define GRAD_INFER_out rill_act_grad_infer
#define GRAD_INFER_none act_grad_infer_none
#define GRAD_MAKER_x rill_act_grad_from_x
#define GRAD_MAKER_out rill_act_grad_from_out
#define GRAD_MAKER_none act_grad_from_none

/* Forward schema `rill_schema_<name>` with inputs INS (fwd_inputs unless the op has more),
 * attribute table ATTRS of NATTRS entries, gradient maker MAKER and FLAGS the forward
 * op's flags. */
#define ACT_FORWARD(NAME, DOC, INS, MAKER, FLAGS, ATTRS, NATTRS)                         \
  const rill_op_schema rill_schema_##NAME = {                                             \
      .type = #NAME,                                                                      \
      .doc = DOC,                                                                         \
      .inputs = INS,                                                                      \
      .ninputs = RILL_COUNTOF(INS),                                                       \
      .outputs = fwd_outputs,                                                             \
      .noutputs = RILL_COUNTOF(fwd_outputs),                                              \
      .attrs = ATTRS,                                                                     \
      .nattrs = NATTRS,                                                                   \
      .flags = FLAGS,                                                                     \
      .infer = rill_act_infer,                                                            \
      .grad = MAKER,                                                                      \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };
/* Gradient schema `rill_schema_<name>_grad` with inputs GINS, reading DEP, and DOUBLE
 * the maker of its own gradient (NULL: none). */
#define ACT_GRAD(NAME, DEP, GINS, ATTRS, NATTRS, DOUBLE)                                  \
  const rill_op_schema rill_schema_##NAME##_grad = {                                      \
      .type = #NAME "_grad",                                                              \
      .doc = "Gradient of " #NAME " (reads " #DEP ").",                                   \
      .inputs = GINS,                                                                     \
      .ninputs = RILL_COUNTOF(GINS),                                                      \
      .outputs = grad_outputs,                                                            \
      .noutputs = RILL_COUNTOF(grad_outputs),                                             \
      .attrs = ATTRS,                                                                     \
      .nattrs = NATTRS,                                                                   \
      .flags = 0,                                                                         \
      .infer = GRAD_INFER_##DEP,                                                          \
      .grad = DOUBLE,                                                                     \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };
/* Both schemas of an activation whose gradient reads DEP (x, out or none), attributes in
 * `<name>_attrs`; ACT_SCHEMAS_NOATTR for the ops without attributes. */
#define ACT_SCHEMAS(NAME, DOC, DEP, FLAGS)                                                \
  ACT_FORWARD(NAME, DOC, fwd_inputs, GRAD_MAKER_##DEP, FLAGS, NAME##_attrs,               \
              RILL_COUNTOF(NAME##_attrs))                                                 \
  ACT_GRAD(NAME, DEP, grad_inputs_##DEP, NAME##_attrs, RILL_COUNTOF(NAME##_attrs), NULL)
#define ACT_SCHEMAS_NOATTR(NAME, DOC, DEP, FLAGS)                                         \
  ACT_FORWARD(NAME, DOC, fwd_inputs, GRAD_MAKER_##DEP, FLAGS, NULL, 0)                    \
  ACT_GRAD(NAME, DEP, grad_inputs_##DEP, NULL, 0, NULL)

static const rill_attr_schema relu6_attrs[] = {
    {"threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(6.0f), "upper clip"},
    MKLDNN_ATTR,
};
ACT_SCHEMAS(relu6, "Out = min(max(X, 0), threshold).", out, RILL_OP_INPLACE | RILL_OP_FUSABLE_ACT)

static const rill_attr_schema leaky_relu_attrs[] = {
    {"alpha", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.02f), "slope for X < 0"},
    MKLDNN_ATTR,
};
/* relu_grad and leaky_relu_grad's own gradient, as Paddle's ReluDoubleGradMaker and
 * LeakyReluDoubleGradMaker: DDOut = DDX where the forward input was positive, else
 * alpha * DDX (0 for relu). The gradient op reads X or Out, and so does this one. */
static rill_status *relu_double_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit_as(ctx, RILL_NAMES("X", "X", "Out", "Out"), RILL_NAMES("X@GRAD", "DDX"),
                           RILL_NAMES("Out@GRAD", "DDOut"));
}
ACT_FORWARD(leaky_relu, "Out = X for X >= 0, alpha * X otherwise.", fwd_inputs, GRAD_MAKER_x,
            RILL_OP_INPLACE, leaky_relu_attrs, RILL_COUNTOF(leaky_relu_attrs))
ACT_GRAD(leaky_relu, x, grad_inputs_x, leaky_relu_attrs, RILL_COUNTOF(leaky_relu_attrs),
         relu_double_grad_maker)

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

/* ---- the math family of Paddle's activation_op.cc ---- */

#define CUDNN_ATTR {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"}

static const rill_attr_schema abs_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(abs, "Out = |X|.", x, RILL_OP_INPLACE)
static const rill_attr_schema ceil_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(ceil, "Out = ceil(X); its gradient is zero.", none, RILL_OP_INPLACE)
static const rill_attr_schema floor_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(floor, "Out = floor(X); its gradient is zero.", none, RILL_OP_INPLACE)
static const rill_attr_schema round_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(round, "Out = X rounded to the nearest integer, halves to even; its "
                   "gradient is zero.", none, RILL_OP_INPLACE)

/* sign's gradient is Paddle's: a scale op with scale 0 (X@GRAD = 0 * Out@GRAD). */
static rill_status *sign_grad_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "scale", &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "Out", "X"));
  RILL_TRY(rill_grad_of_input_as(ctx, op, "X", "Out"));
  rill_attr_value zero = {.type = RILL_ATTR_FLOAT, .v.f = 0.0f};
  return rill_grad_attr(op, "scale", &zero);
}
ACT_FORWARD(sign, "Out = 1 for X > 0, -1 for X < 0, else 0 (NaN too).", fwd_inputs,
            sign_grad_maker, RILL_OP_INPLACE, NULL, 0)

static const rill_attr_schema cos_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(cos, "Out = cos(X).", x, RILL_OP_INPLACE)
static const rill_attr_schema sin_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(sin, "Out = sin(X).", x, RILL_OP_INPLACE)

ACT_SCHEMAS_NOATTR(acos, "Out = arccos(X).", x, RILL_OP_INPLACE)
ACT_SCHEMAS_NOATTR(asin, "Out = arcsin(X).", x, RILL_OP_INPLACE)
ACT_SCHEMAS_NOATTR(atan, "Out = arctan(X).", x, RILL_OP_INPLACE)
static const rill_attr_schema reciprocal_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(reciprocal, "Out = 1 / X.", out, RILL_OP_INPLACE)
static const rill_attr_schema rsqrt_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(rsqrt, "Out = 1 / sqrt(X).", out, RILL_OP_INPLACE)
static const rill_attr_schema softplus_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(softplus, "Out = log(1 + exp(X)), as m + log(exp(-m) + exp(X - m)), m = max(X, 0).",
            x, RILL_OP_INPLACE)
static const rill_attr_schema softsign_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(softsign, "Out = X / (1 + |X|).", x, RILL_OP_INPLACE)
static const rill_attr_schema logsigmoid_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(logsigmoid, "Out = log(1 / (1 + exp(-X))), as -m - log(exp(-m) + exp(-X - m)), "
                        "m = max(-X, 0).", x, RILL_OP_INPLACE)
static const rill_attr_schema tanh_shrink_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(tanh_shrink, "Out = X - tanh(X).", x, RILL_OP_INPLACE)
static const rill_attr_schema softshrink_attrs[] = {
    {"lambda", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f), "half width of the zero band"},
};
ACT_SCHEMAS(softshrink, "Out = X - lambda for X > lambda, X + lambda for X < -lambda, else 0.",
            x, RILL_OP_INPLACE)
static const rill_attr_schema hard_shrink_attrs[] = {
    {"threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f), "half width of the zero band"},
};
ACT_SCHEMAS(hard_shrink, "Out = X * ((X < -threshold) + (X > threshold)).", x, RILL_OP_INPLACE)
static const rill_attr_schema thresholded_relu_attrs[] = {
    {"threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "X passes above it"},
};
ACT_SCHEMAS(thresholded_relu, "Out = (X > threshold) * X.", x, RILL_OP_INPLACE)
static const rill_attr_schema elu_attrs[] = {
    {"alpha", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "scale of the negative part"},
};
ACT_FORWARD(elu, "Out = max(X, 0) + min(alpha * (exp(X) - 1), 0).", fwd_inputs, GRAD_MAKER_x,
            RILL_OP_INPLACE, elu_attrs, RILL_COUNTOF(elu_attrs))
ACT_GRAD(elu, x, grad_inputs_x, elu_attrs, RILL_COUNTOF(elu_attrs), rill_double_grad_from_x)
static const rill_slot_schema elu_gg_outputs[] = {
    {"DX", RILL_SLOT_DISPENSABLE, "gradient of X: DDX * DOut * alpha * exp(X) where X < 0"},
    {"DDOut", RILL_SLOT_DISPENSABLE, "gradient of DOut: DDX * elu's slope at X"},
};
RILL_GRAD_GRAD_SCHEMA(elu, "Double gradient of elu: DX = DDX * DOut * alpha * exp(X) where X < 0, "
                      "DDOut = DDX where X > 0, else DDX * alpha * exp(X).", rill_double_grad_x_inputs,
                      elu_gg_outputs, elu_attrs, rill_double_grad_infer, 0, 0);
static const rill_attr_schema selu_attrs[] = {
    {"scale", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0507009873554804934193349852946f), "scale"},
    {"alpha", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.6732632423543772848170429916717f), "alpha"},
};
ACT_SCHEMAS(selu, "Out = scale * X for X > 0, scale * (alpha * exp(X) - alpha) otherwise.", out,
            RILL_OP_INPLACE)
static const rill_attr_schema brelu_attrs[] = {
    {"t_min", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "lower clip"},
    {"t_max", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(24.0f), "upper clip"},
};
ACT_SCHEMAS(brelu, "Out = min(max(X, t_min), t_max).", x, RILL_OP_INPLACE)
static const rill_attr_schema soft_relu_attrs[] = {
    {"threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(40.0f), "X is clipped to +-threshold"},
};
ACT_SCHEMAS(soft_relu, "Out = log(1 + exp(min(max(X, -threshold), threshold))).", out,
            RILL_OP_INPLACE)
static const rill_attr_schema stanh_attrs[] = {
    {"scale_a", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.67f), "scale of X"},
    {"scale_b", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.7159f), "scale of the tanh"},
};
ACT_SCHEMAS(stanh, "Out = scale_b * tanh(scale_a * X).", x, RILL_OP_INPLACE)
ACT_SCHEMAS_NOATTR(erf, "Out = erf(X).", x, RILL_OP_INPLACE)
static const rill_attr_schema mish_attrs[] = {
    {"threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(20.0f),
     "softplus(X) is taken as X above it and exp(X) below its negative"},
};
ACT_SCHEMAS(mish, "Out = X * tanh(softplus(X)).", x, RILL_OP_INPLACE)
static const rill_attr_schema log1p_attrs[] = {MKLDNN_ATTR, CUDNN_ATTR};
ACT_SCHEMAS(log1p, "Out = log(1 + X), with 1 + X rounded first as Paddle's is.", x,
            RILL_OP_INPLACE)

/* pow: the exponent is FactorTensor's one element when given, else attribute factor. The
 * gradient op reads X and FactorTensor. */
static const rill_slot_schema pow_inputs[] = {
    {"X", 0, "input"},
    {"FactorTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA,
     "one-element float32 tensor overriding attribute factor"},
};
static const rill_slot_schema pow_grad_inputs[] = {
    {"X", 0, "the forward input"},
    {"Out@GRAD", 0, "gradient of Out"},
    {"FactorTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_HOST_DATA, "the forward FactorTensor"},
};
static const rill_attr_schema pow_attrs[] = {
    {"factor", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "exponent"},
};
static const char *const slot_pow_fwd[] = {"X", "FactorTensor"};
static rill_status *pow_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, slot_pow_fwd, 2, slot_out, 1, slot_x, 1);
}
ACT_FORWARD(pow, "Out = X ^ factor (factor: FactorTensor when given).", pow_inputs,
            pow_grad_maker, 0, pow_attrs, RILL_COUNTOF(pow_attrs))
ACT_GRAD(pow, x, pow_grad_inputs, pow_attrs, RILL_COUNTOF(pow_attrs), NULL)

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
    .grad = relu_double_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* relu_grad_grad and leaky_relu_grad_grad: Paddle's programs give them Out, rill's the
 * gradient op's X or Out; the sign of either picks the slope. */
static const rill_slot_schema relu_gg_inputs[] = {
    {"X", RILL_SLOT_DISPENSABLE, "forward input (this or Out)"},
    {"Out", RILL_SLOT_DISPENSABLE, "forward output (this or X)"},
    {"DDX", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's X@GRAD (absent: zero)"},
};
static const rill_slot_schema relu_gg_outputs[] = {
    {"DDOut", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's Out@GRAD"},
};

static rill_status *relu_gg_infer(rill_infer_ctx *ctx) {
  size_t src = rill_infer_in(ctx, 0, 0) ? 0 : 1;
  if (!rill_infer_in(ctx, src, 0)) return rill_infer_error(ctx, "needs input X or Out");
  if (rill_infer_in(ctx, 2, 0)) RILL_TRY(rill_grad_infer_same(ctx, 2, src));
  rill_grad_infer_like(ctx, 0, src);
  return NULL;
}

RILL_GRAD_GRAD_SCHEMA(relu, "Double gradient of relu: DDOut = DDX where X > 0, else 0.",
                      relu_gg_inputs, relu_gg_outputs, relu_grad_attrs, relu_gg_infer, 0, 2);
RILL_GRAD_GRAD_SCHEMA(leaky_relu, "Double gradient of leaky_relu: DDOut = DDX where X >= 0, else "
                      "alpha * DDX.", relu_gg_inputs, relu_gg_outputs, leaky_relu_attrs,
                      relu_gg_infer, 0, 2);

RILL_OP_TABLE_CHECKS(activation);
