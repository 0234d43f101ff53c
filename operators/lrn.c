/* lrn: local response normalisation across channels of a 4-D X.
 * MidOut = k + alpha * (sum of X^2 over the n channels centred on each one, zero beyond
 * the edges) and Out = X * MidOut^-beta (alpha is not divided by n, as in Paddle).
 * lrn_grad reads X, Out and MidOut. */
#include "operators/nn.h"

#include <string.h>

static const rill_slot_schema inputs[] = {
    {"X", 0, "input [N, C, H, W] (or [N, H, W, C] with NHWC)"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "X's shape"},
    {"MidOut", RILL_SLOT_INTERMEDIATE, "X's shape: k + alpha * windowed sum of squares"},
};
static const rill_attr_schema attrs[] = {
    {"n", RILL_ATTR_INT, 0, RILL_DEF_INT(5), "channels in the window, odd and positive"},
    {"k", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(2.0f), "offset, >= 0"},
    {"alpha", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-4f), "scale of the sum of squares, >= 0"},
    {"beta", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.75f), "exponent, >= 0"},
    {"data_format", RILL_ATTR_STRING, 0, RILL_DEF_STRING("AnyLayout"),
     "NCHW (or AnyLayout) or NHWC"},
    {"is_test", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *lrn_check(rill_infer_ctx *ctx, const rill_tensor_meta *x) {
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  char xs[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 4)
    return rill_infer_error(ctx, "input X (%s) has shape %s: lrn takes 4-D input", xn,
                            rill_dims_str(&x->dims, xs, sizeof xs));
  int n = ctx->attrs[RILL_LRN_ATTR_N].v.i;
  if (n <= 0 || n % 2 == 0)
    return rill_infer_error(ctx, "attribute n is %d, must be positive and odd", n);
  float a = ctx->attrs[RILL_LRN_ATTR_ALPHA].v.f, b = ctx->attrs[RILL_LRN_ATTR_BETA].v.f;
  if (!(a >= 0.0f) || !(b >= 0.0f))
    return rill_infer_error(ctx, "attributes alpha (%g) and beta (%g) must be >= 0", (double)a,
                            (double)b);
  const char *f = ctx->attrs[RILL_LRN_ATTR_DATA_FORMAT].v.s;
  if (!f) f = "AnyLayout";
  if (strcmp(f, "NCHW") && strcmp(f, "NHWC") && strcmp(f, "AnyLayout"))
    return rill_infer_error(ctx, "attribute data_format \"%s\" is not NCHW or NHWC", f);
  return NULL;
}

static rill_status *lrn_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || !rill_infer_out(ctx, 0, 0))
    return rill_infer_error(ctx, "needs input X and output Out");
  if (x->known) RILL_TRY(lrn_check(ctx, x));
  rill_nn_same_meta(ctx, 0, 0);
  rill_nn_same_meta(ctx, 1, 0);
  return NULL;
}

static rill_status *lrn_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Out", "MidOut"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "lrn_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_lrn = {
    .type = "lrn",
    .doc = "Out = X * (k + alpha * sum of X^2 over n neighbouring channels)^-beta.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = lrn_infer,
    .grad = lrn_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Out", 0, "forward Out"},
    {"MidOut", 0, "forward MidOut"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
};

static rill_status *lrn_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0) || !rill_infer_in(ctx, 3, 0))
    return rill_infer_error(ctx, "needs inputs X, Out, MidOut and Out@GRAD");
  if (x->known) RILL_TRY(lrn_check(ctx, x));
  rill_nn_same_meta(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_lrn_grad = {
    .type = "lrn_grad",
    .doc = "Gradient of lrn with respect to X.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = lrn_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(lrn);
