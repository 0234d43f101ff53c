/* square, sqrt, exp, log and clip, with their gradient ops. */
#include <stdio.h>

#include "operators/math_grad.h"

static const rill_slot_schema inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "result, X's shape"}};
static const rill_attr_schema attrs[] = {
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *unary_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s; this op takes float32 or float64",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

/* Gradient makers: Paddle's activation gradients read X (square, log) or Out (sqrt,
 * exp) besides Out@GRAD. */
static rill_status *grad_from_x(rill_grad_ctx *ctx) {
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ctx->schema->type);
  return rill_grad_emit(ctx, type, RILL_NAMES("X"), RILL_NAMES("Out"), RILL_NAMES("X"));
}
static rill_status *grad_from_out(rill_grad_ctx *ctx) {
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ctx->schema->type);
  return rill_grad_emit(ctx, type, RILL_NAMES("Out"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

#define UNARY(NAME, DOC, MAKER, FLAGS)                                                    \
  const rill_op_schema rill_schema_##NAME = {                                             \
      .type = #NAME,                                                                      \
      .doc = DOC,                                                                         \
      .inputs = inputs,                                                                   \
      .ninputs = RILL_COUNTOF(inputs),                                                    \
      .outputs = outputs,                                                                 \
      .noutputs = RILL_COUNTOF(outputs),                                                  \
      .attrs = attrs,                                                                     \
      .nattrs = RILL_COUNTOF(attrs),                                                      \
      .flags = FLAGS,                                                                     \
      .infer = unary_infer,                                                               \
      .grad = MAKER,                                                                      \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };

UNARY(square, "Out = X * X.", grad_from_x, RILL_OP_INPLACE)
UNARY(sqrt, "Out = sqrt(X).", grad_from_out, RILL_OP_INPLACE)
UNARY(exp, "Out = e^X.", grad_from_out, RILL_OP_INPLACE)
UNARY(log, "Out = ln(X).", grad_from_x, 0)

static const rill_slot_schema grad_inputs[] = {
    {"X", RILL_SLOT_DISPENSABLE, "forward input (square, log)"},
    {"Out", RILL_SLOT_DISPENSABLE, "forward output (sqrt, exp)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X, X's shape"},
};

static rill_status *unary_grad_infer(rill_infer_ctx *ctx) {
  if (!rill_infer_in(ctx, 2, 0)) return rill_infer_error(ctx, "needs input Out@GRAD");
  if (rill_infer_in(ctx, 0, 0)) RILL_TRY(rill_grad_infer_same(ctx, 2, 0));
  if (rill_infer_in(ctx, 1, 0)) RILL_TRY(rill_grad_infer_same(ctx, 2, 1));
  rill_grad_infer_like(ctx, 0, 2);
  return NULL;
}

#define UNARY_GRAD(NAME, DOC, MAKER)                                                      \
  const rill_op_schema rill_schema_##NAME##_grad = {                                      \
      .type = #NAME "_grad",                                                              \
      .doc = DOC,                                                                         \
      .inputs = grad_inputs,                                                              \
      .ninputs = RILL_COUNTOF(grad_inputs),                                               \
      .outputs = grad_outputs,                                                            \
      .noutputs = RILL_COUNTOF(grad_outputs),                                             \
      .attrs = attrs,                                                                     \
      .nattrs = RILL_COUNTOF(attrs),                                                      \
      .flags = 0,                                                                         \
      .infer = unary_grad_infer,                                                          \
      .grad = MAKER,                                                                      \
      .kernel_dtype_slot = 2,                                                             \
      .dtype_attr = -1,                                                                   \
  };

/* Double gradients, as Paddle's SquareDoubleGradMaker and SqrtDoubleGradMaker: the
 * gradient op's own inputs and X@GRAD's gradient DDX in, its inputs' gradients out. */
static rill_status *sqrt_double_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit_as(ctx, RILL_NAMES("Out", "Out", "X@GRAD", "DX"), RILL_NAMES("X@GRAD", "DDX"),
                           RILL_NAMES("Out", "DOut", "Out@GRAD", "DDOut"));
}

UNARY_GRAD(square, "X@GRAD = 2 * X * dOut (reads X).", rill_double_grad_from_x)
UNARY_GRAD(sqrt, "X@GRAD = dOut / (2 * Out) (reads Out).", sqrt_double_grad_maker)
UNARY_GRAD(exp, "X@GRAD = dOut * Out (reads Out).", NULL)
UNARY_GRAD(log, "X@GRAD = dOut / X (reads X).", NULL)

const rill_slot_schema rill_double_grad_x_inputs[3] = {
    {"X", 0, "forward input"},
    {"DOut", 0, "the gradient op's Out@GRAD"},
    {"DDX", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's X@GRAD (absent: zero)"},
};
static const rill_slot_schema square_gg_outputs[] = {
    {"DX", RILL_SLOT_DISPENSABLE, "gradient of X: 2 * DDX * DOut"},
    {"DDOut", RILL_SLOT_DISPENSABLE, "gradient of DOut: 2 * X * DDX"},
};
static const rill_slot_schema sqrt_gg_inputs[] = {
    {"Out", 0, "forward output"},
    {"DX", 0, "the gradient op's X@GRAD"},
    {"DDX", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's X@GRAD (absent: zero)"},
};
static const rill_slot_schema sqrt_gg_outputs[] = {
    {"DOut", RILL_SLOT_DISPENSABLE, "gradient of Out: -DDX * DX / Out"},
    {"DDOut", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's Out@GRAD: DDX / (2 * Out)"},
};


RILL_GRAD_GRAD_SCHEMA(square, "Double gradient of square: DX = 2 * DDX * DOut, DDOut = 2 * X * DDX.",
                      rill_double_grad_x_inputs, square_gg_outputs, attrs, rill_double_grad_infer, 0, 0);
RILL_GRAD_GRAD_SCHEMA(sqrt, "Double gradient of sqrt: DOut = -DDX * DX / Out, DDOut = DDX / (2 * Out).",
                      sqrt_gg_inputs, sqrt_gg_outputs, attrs, rill_double_grad_infer, 0, 0);

/* ---- clip ---- */

static const rill_slot_schema clip_inputs[] = {
    {"X", 0, "input"},
    {"Min", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA, "one-element tensor overriding attr min"},
    {"Max", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA, "one-element tensor overriding attr max"},
};
static const rill_attr_schema clip_attrs[] = {
    {"min", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0), "lower bound"},
    {"max", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0), "upper bound"},
};

static rill_status *clip_bound_check(rill_infer_ctx *ctx, size_t slot, const rill_tensor_meta *x) {
  const rill_tensor_meta *b = rill_infer_in(ctx, slot, 0);
  if (!b || !b->known) return NULL;
  int64_t n;
  if (rill_dims_numel(&b->dims, INT64_MAX, &n) && n != 1)
    return rill_infer_error(ctx, "input %s (%s) must hold one element, has %lld",
                            ctx->schema->inputs[slot].name, rill_infer_in_name(ctx, slot, 0),
                            (long long)n);
  if (x && x->known && b->dtype != x->dtype)
    return rill_infer_error(ctx, "input %s (%s) is %s but input X (%s) is %s",
                            ctx->schema->inputs[slot].name, rill_infer_in_name(ctx, slot, 0),
                            rill_dtype_name(b->dtype), rill_infer_in_name(ctx, 0, 0),
                            rill_dtype_name(x->dtype));
  return NULL;
}

static rill_status *clip_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  RILL_TRY(clip_bound_check(ctx, 1, x));
  RILL_TRY(clip_bound_check(ctx, 2, x));
  if (!rill_infer_in(ctx, 1, 0) && !rill_infer_in(ctx, 2, 0) &&
      ctx->attrs[RILL_CLIP_ATTR_MIN].v.f > ctx->attrs[RILL_CLIP_ATTR_MAX].v.f)
    return rill_infer_error(ctx, "attribute min (%g) exceeds max (%g)", (double)ctx->attrs[RILL_CLIP_ATTR_MIN].v.f,
                            (double)ctx->attrs[RILL_CLIP_ATTR_MAX].v.f);
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s; clip takes float32 or float64",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *clip_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "clip_grad", RILL_NAMES("X", "Min", "Max"), RILL_NAMES("Out"),
                            RILL_NAMES("X"));
}

const rill_op_schema rill_schema_clip = {
    .type = "clip",
    .doc = "Out = min(max(X, min), max); Min / Max tensors, when given, override the attrs.",
    .inputs = clip_inputs,
    .ninputs = RILL_COUNTOF(clip_inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = clip_attrs,
    .nattrs = RILL_COUNTOF(clip_attrs),
    .flags = 0,
    .infer = clip_infer,
    .grad = clip_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema clip_grad_inputs[] = {
    {"X", 0, "forward input"},
    {"Min", RILL_SLOT_DISPENSABLE | RILL_SLOT_HOST_DATA, "forward Min"},
    {"Max", RILL_SLOT_DISPENSABLE | RILL_SLOT_HOST_DATA, "forward Max"},
    {"Out@GRAD", 0, "gradient of Out"},
};

static rill_status *clip_grad_infer(rill_infer_ctx *ctx) {
  if (!rill_infer_in(ctx, 0, 0) || !rill_infer_in(ctx, 3, 0))
    return rill_infer_error(ctx, "needs inputs X and Out@GRAD");
  RILL_TRY(rill_grad_infer_same(ctx, 3, 0));
  rill_grad_infer_like(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_clip_grad = {
    .type = "clip_grad",
    .doc = "X@GRAD = dOut where min < X < max, else 0.",
    .inputs = clip_grad_inputs,
    .ninputs = RILL_COUNTOF(clip_grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = clip_attrs,
    .nattrs = RILL_COUNTOF(clip_attrs),
    .flags = 0,
    .infer = clip_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(unary_math);
