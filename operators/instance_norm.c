/* instance_norm: each (sample, channel) plane of X [N, C, ...] is normalised by its own
 * mean and biased variance, then scaled and shifted per channel. SavedMean and
 * SavedVariance ([N * C]) keep the mean and the inverse standard deviation
 * 1 / sqrt(var + epsilon), as Paddle's do; instance_norm_grad reads them with X. */
#include "operators/nn.h"

enum { IN_X, IN_SCALE, IN_BIAS };
enum { OUT_Y, OUT_MEAN, OUT_INVSTD };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "input [N, C, ...], rank 2 to 5"},
    [IN_SCALE] = {"Scale", RILL_SLOT_DISPENSABLE, "per-channel scale [C]; absent: 1"},
    [IN_BIAS] = {"Bias", RILL_SLOT_DISPENSABLE, "per-channel shift [C]; absent: 0"},
};
static const rill_slot_schema outputs[] = {
    [OUT_Y] = {"Y", 0, "normalised X"},
    [OUT_MEAN] = {"SavedMean", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                  "[N * C] plane means"},
    [OUT_INVSTD] = {"SavedVariance", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                    "[N * C] inverse standard deviations 1 / sqrt(var + epsilon)"},
};
static const rill_attr_schema attrs[] = {
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-5f), "added to the variance, in [0, 0.001]"},
};

/* Checks X (rank, dtype) and the [C] shape of the inputs Scale and Bias (slots ss, sb;
 * -1 when the op has none there); *ch gets C. */
static rill_status *in_check(rill_infer_ctx *ctx, const rill_tensor_meta *x, int ss, int sb,
                             int64_t *ch) {
  const char *xn = rill_infer_in_name(ctx, IN_X, 0);
  char xs[RILL_DIMS_STR_MAX];
  rill_dims_str(&x->dims, xs, sizeof xs);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n < 2 || x->dims.n > 5)
    return rill_infer_error(ctx, "input X (%s) has shape %s: rank must be 2 to 5", xn, xs);
  float eps = ctx->attrs[RILL_INSTANCE_NORM_ATTR_EPSILON].v.f;
  if (!(eps >= 0.0f && eps <= 0.001f))
    return rill_infer_error(ctx, "attribute epsilon is %g, must lie in [0, 0.001]", (double)eps);
  int64_t c = x->dims.d[1];
  int slots[2] = {ss, sb};
  for (int i = 0; i < 2; i++) {
    if (slots[i] < 0) continue;
    const rill_tensor_meta *m = rill_infer_in(ctx, (size_t)slots[i], 0);
    if (!m || !m->known) continue;
    int64_t n = 1;
    for (int k = 0; k < m->dims.n; k++) n = m->dims.d[k] < 0 || n < 0 ? -1 : n * m->dims.d[k];
    if (m->dtype != x->dtype || m->dims.n != 1 || (n >= 0 && c >= 0 && n != c)) {
      char b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input %s (%s) is %s %s, expected %s [%lld] (the channels "
                              "of X (%s) %s)", ctx->schema->inputs[slots[i]].name,
                              rill_infer_in_name(ctx, (size_t)slots[i], 0),
                              rill_dtype_name(m->dtype), rill_dims_str(&m->dims, b, sizeof b),
                              rill_dtype_name(x->dtype), (long long)c, xn, xs);
    }
  }
  *ch = c;
  return NULL;
}

static rill_status *instance_norm_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, OUT_Y, 0);
  rill_tensor_meta *m = rill_infer_out(ctx, OUT_MEAN, 0), *v = rill_infer_out(ctx, OUT_INVSTD, 0);
  if (!x || !y) return rill_infer_error(ctx, "needs input X and output Y");
  if (rill_nn_outputs_unknown(ctx, x)) return NULL;
  int64_t c;
  RILL_TRY(in_check(ctx, x, IN_SCALE, IN_BIAS, &c));
  rill_meta_set(y, x->dtype, &x->dims, x->lod_level, IN_X, 0);
  int64_t nc = x->dims.d[0] < 0 || c < 0 ? -1 : x->dims.d[0] * c;
  rill_dims sd = {.n = 1, .d = {nc}};
  if (m) rill_meta_set(m, x->dtype, &sd, 0, -1, -1);
  if (v) rill_meta_set(v, x->dtype, &sd, 0, -1, -1);
  return NULL;
}

static rill_status *instance_norm_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Scale", "SavedMean", "SavedVariance"};
  static const char *const gout[] = {"Y"};
  static const char *const gin[] = {"X", "Scale", "Bias"};
  return rill_grad_emit(ctx, "instance_norm_grad", fwd, RILL_COUNTOF(fwd), gout,
                        RILL_COUNTOF(gout), gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_instance_norm = {
    .type = "instance_norm",
    .doc = "Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias, statistics per sample and "
           "channel.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = instance_norm_infer,
    .grad = instance_norm_grad_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

enum { GIN_X, GIN_SCALE, GIN_MEAN, GIN_INVSTD, GIN_DY };
static const rill_slot_schema grad_inputs[] = {
    [GIN_X] = {"X", 0, "forward X"},
    [GIN_SCALE] = {"Scale", RILL_SLOT_DISPENSABLE, "forward Scale; absent: 1"},
    [GIN_MEAN] = {"SavedMean", 0, "forward SavedMean [N * C]"},
    [GIN_INVSTD] = {"SavedVariance", 0, "forward SavedVariance [N * C]"},
    [GIN_DY] = {"Y@GRAD", 0, "gradient of Y"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
    {"Scale@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Scale [C]"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Bias [C]"},
};

static rill_status *instance_norm_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, GIN_X, 0);
  if (!x || !rill_infer_in(ctx, GIN_MEAN, 0) || !rill_infer_in(ctx, GIN_INVSTD, 0) ||
      !rill_infer_in(ctx, GIN_DY, 0))
    return rill_infer_error(ctx, "needs inputs X, SavedMean, SavedVariance and Y@GRAD");
  rill_nn_same_meta(ctx, 0, GIN_X);
  int64_t c = -1;
  if (x->known) RILL_TRY(in_check(ctx, x, GIN_SCALE, -1, &c));
  rill_nn_channel_grads(ctx, 1, x, c);
  return NULL;
}

const rill_op_schema rill_schema_instance_norm_grad = {
    .type = "instance_norm_grad",
    .doc = "Gradients of instance_norm with respect to X, Scale and Bias.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = instance_norm_grad_infer,
    .kernel_dtype_slot = GIN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(instance_norm);
