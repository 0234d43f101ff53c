/* norm (fluid.layers.l2_normalize): Out = X / sqrt(sum over `axis` of X^2 + epsilon),
 * Norm the kept-dim denominator; norm_grad(X, Norm, Out@GRAD) -> X@GRAD in Paddle's
 * layout. clip_by_norm: Out = X * max_norm / |X| when the L2 norm of all of X exceeds
 * max_norm, else X (no gradient, as in Paddle). Kernels: kernels/cpu/normalize.c. */
#include "operators/math_grad.h"
#include "operators/op_util.h"

static const rill_slot_schema norm_in[] = {{"X", 0, "any rank"}};
static const rill_slot_schema norm_out[] = {
    {"Out", 0, "X's shape"},
    {"Norm", RILL_SLOT_INTERMEDIATE, "X's shape with dim `axis` 1"},
};
static const rill_attr_schema norm_attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "the dim normalised (negative: from the end)"},
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-10f), "added to the sum of squares"},
    {"is_test", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *float_input(rill_infer_ctx *ctx, const rill_tensor_meta *x) {
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  return NULL;
}

static rill_status *norm_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0), *nm = rill_infer_out(ctx, 1, 0);
  if (!x || !out || !nm) return rill_infer_error(ctx, "needs input X and outputs Out and Norm");
  if (!x->known) {
    rill_meta_unknown(out);
    rill_meta_unknown(nm);
    return NULL;
  }
  RILL_TRY(float_input(ctx, x));
  int32_t axis = ctx->attrs[0].v.i;
  if (axis < -x->dims.n || axis >= x->dims.n)
    return rill_infer_error(ctx, "attribute axis %d is out of range for input X (%s) of rank %d",
                            (int)axis, rill_infer_in_name(ctx, 0, 0), x->dims.n);
  rill_dims nd = x->dims;
  nd.d[axis < 0 ? axis + x->dims.n : axis] = 1;
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  rill_meta_set(nm, x->dtype, &nd, 0, -1, -1);
  return NULL;
}

static rill_status *norm_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "Norm"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

const rill_op_schema rill_schema_norm = {
    .type = "norm",
    .doc = "Out = X / sqrt(sum_axis X^2 + epsilon); Norm = the denominator.",
    .inputs = norm_in,
    .ninputs = RILL_COUNTOF(norm_in),
    .outputs = norm_out,
    .noutputs = RILL_COUNTOF(norm_out),
    .attrs = norm_attrs,
    .nattrs = RILL_COUNTOF(norm_attrs),
    .infer = norm_infer,
    .grad = norm_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema norm_grad_in[] = {
    {"X", 0, "forward X"},
    {"Norm", 0, "forward Norm"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema norm_grad_out[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "(dOut - X sum_axis(X dOut) / Norm^2) / Norm"},
};

static rill_status *norm_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x) return rill_infer_error(ctx, "needs input X");
  RILL_TRY(rill_grad_infer_same(ctx, 2, 0));
  rill_grad_infer_like(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_norm_grad = {
    .type = "norm_grad",
    .doc = "X@GRAD of norm.",
    .inputs = norm_grad_in,
    .ninputs = RILL_COUNTOF(norm_grad_in),
    .outputs = norm_grad_out,
    .noutputs = RILL_COUNTOF(norm_grad_out),
    .attrs = norm_attrs,
    .nattrs = RILL_COUNTOF(norm_attrs),
    .infer = norm_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema cbn_in[] = {{"X", 0, "any shape"}};
static const rill_slot_schema cbn_out[] = {{"Out", 0, "X's shape"}};
static const rill_attr_schema cbn_attrs[] = {
    {"max_norm", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "the largest L2 norm kept"},
};

static rill_status *cbn_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (x && x->known) RILL_TRY(float_input(ctx, x));
  return rill_infer_like_input(ctx);
}

const rill_op_schema rill_schema_clip_by_norm = {
    .type = "clip_by_norm",
    .flags = RILL_OP_NO_GRADIENT,
    .doc = "Out = X * max_norm / |X| when |X| (L2 over all elements) > max_norm, else X.",
    .inputs = cbn_in,
    .ninputs = RILL_COUNTOF(cbn_in),
    .outputs = cbn_out,
    .noutputs = RILL_COUNTOF(cbn_out),
    .attrs = cbn_attrs,
    .nattrs = RILL_COUNTOF(cbn_attrs),
    .infer = cbn_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(normalize);
