/* group_norm: the channels of each sample are split into `groups` groups; each group
 * (its channels times every spatial position) is normalised to zero mean and unit
 * variance, then scaled and shifted per channel. Mean and Variance ([N, groups]) are the
 * statistics used (Variance is the biased variance, not its inverse).
 * group_norm_grad reads, as Paddle's does, the forward output Y and Variance (not X or
 * Mean): the normalised input is recovered as (Y - Bias) / Scale, taken as 0 in channels
 * whose Scale is 0. */
#include "operators/nn.h"

#include <string.h>

enum { IN_X, IN_SCALE, IN_BIAS };
enum { OUT_Y, OUT_MEAN, OUT_VAR };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "input [N, C, ...] (or [N, ..., C] with NHWC)"},
    [IN_SCALE] = {"Scale", RILL_SLOT_DISPENSABLE, "per-channel scale [C]; absent: 1"},
    [IN_BIAS] = {"Bias", RILL_SLOT_DISPENSABLE, "per-channel shift [C]; absent: 0"},
};
static const rill_slot_schema outputs[] = {
    [OUT_Y] = {"Y", 0, "normalised X"},
    [OUT_MEAN] = {"Mean", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE, "[N, groups]"},
    [OUT_VAR] = {"Variance", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE, "[N, groups]"},
};
static const rill_attr_schema attrs[] = {
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-5f), "added to the variance"},
    {"groups", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "number of channel groups"},
    {"data_layout", RILL_ATTR_STRING, 0, RILL_DEF_STRING("NCHW"),
                  "NCHW (channels second) or NHWC (channels last)"},
};

/* Checks X (slot xslot: X forward, Y for the gradient) against the attributes and the
 * Scale and Bias inputs (slots ss and ss + 1); *ch gets the channel count. */
static rill_status *gn_check(rill_infer_ctx *ctx, const rill_tensor_meta *x, size_t xslot,
                             size_t ss, int64_t *ch) {
  const char *xn = rill_infer_in_name(ctx, xslot, 0), *xl = ctx->schema->inputs[xslot].name;
  char xs[RILL_DIMS_STR_MAX];
  rill_dims_str(&x->dims, xs, sizeof xs);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input %s (%s) is %s, expected float32 or float64", xl, xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n < 2)
    return rill_infer_error(ctx, "input %s (%s) has shape %s: rank must be at least 2", xl, xn,
                            xs);
  const char *layout = ctx->attrs[RILL_GROUP_NORM_ATTR_DATA_LAYOUT].v.s ? ctx->attrs[RILL_GROUP_NORM_ATTR_DATA_LAYOUT].v.s : "NCHW";
  bool nhwc = strcmp(layout, "NHWC") == 0 || strcmp(layout, "NDHWC") == 0;
  if (!nhwc && strcmp(layout, "NCHW") && strcmp(layout, "NCDHW") && strcmp(layout, "AnyLayout"))
    return rill_infer_error(ctx, "attribute data_layout \"%s\" is not NCHW or NHWC", layout);
  int64_t c = nhwc ? x->dims.d[x->dims.n - 1] : x->dims.d[1];
  int32_t g = ctx->attrs[RILL_GROUP_NORM_ATTR_GROUPS].v.i;
  if (g < 1) return rill_infer_error(ctx, "attribute groups is %d, must be at least 1", (int)g);
  if (c >= 0 && (c < g || c % g))
    return rill_infer_error(ctx, "input %s (%s) has shape %s: its %lld channels do not split into "
                            "groups = %d", xl, xn, xs, (long long)c, (int)g);
  for (size_t s = ss; s <= ss + 1; s++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, s, 0);
    if (!m || !m->known) continue;
    int64_t n = 1;
    for (int i = 0; i < m->dims.n; i++) n = m->dims.d[i] < 0 || n < 0 ? -1 : n * m->dims.d[i];
    if (m->dtype != x->dtype || (n >= 0 && c >= 0 && n != c)) {
      char b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input %s (%s) is %s %s, expected %s with %lld elements "
                              "(the channels of %s (%s))", ctx->schema->inputs[s].name,
                              rill_infer_in_name(ctx, s, 0), rill_dtype_name(m->dtype),
                              rill_dims_str(&m->dims, b, sizeof b), rill_dtype_name(x->dtype),
                              (long long)c, ctx->schema->inputs[xslot].name, xn);
    }
  }
  *ch = c;
  return NULL;
}

static rill_status *group_norm_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, OUT_Y, 0);
  rill_tensor_meta *mean = rill_infer_out(ctx, OUT_MEAN, 0), *var = rill_infer_out(ctx, OUT_VAR, 0);
  if (!x || !y) return rill_infer_error(ctx, "needs input X and output Y");
  if (rill_nn_outputs_unknown(ctx, x)) return NULL;
  int64_t c;
  RILL_TRY(gn_check(ctx, x, IN_X, IN_SCALE, &c));
  (void)c;
  int32_t g = ctx->attrs[RILL_GROUP_NORM_ATTR_GROUPS].v.i;
  rill_meta_set(y, x->dtype, &x->dims, x->lod_level, IN_X, 0);
  rill_dims sd = {.n = 2, .d = {x->dims.d[0], g}};
  if (mean) rill_meta_set(mean, x->dtype, &sd, 0, -1, -1);
  if (var) rill_meta_set(var, x->dtype, &sd, 0, -1, -1);
  return NULL;
}

static rill_status *group_norm_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Y", "Scale", "Bias", "Variance"};
  static const char *const gout[] = {"Y"};
  static const char *const gin[] = {"X", "Scale", "Bias"};
  return rill_grad_emit(ctx, "group_norm_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout),
                        gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_group_norm = {
    .type = "group_norm",
    .doc = "Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias, statistics per sample and "
           "channel group.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = group_norm_infer,
    .grad = group_norm_grad_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

enum { GIN_Y, GIN_SCALE, GIN_BIAS, GIN_VAR, GIN_DY };
static const rill_slot_schema grad_inputs[] = {
    [GIN_Y] = {"Y", 0, "forward output"},
    [GIN_SCALE] = {"Scale", RILL_SLOT_DISPENSABLE, "forward Scale; absent: 1"},
    [GIN_BIAS] = {"Bias", RILL_SLOT_DISPENSABLE, "forward Bias; absent: 0"},
    [GIN_VAR] = {"Variance", 0, "forward Variance [N, groups]"},
    [GIN_DY] = {"Y@GRAD", 0, "gradient of Y"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
    {"Scale@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Scale [C]"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Bias [C]"},
};

static rill_status *group_norm_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *y = rill_infer_in(ctx, GIN_Y, 0);
  if (!y || !rill_infer_in(ctx, GIN_VAR, 0) || !rill_infer_in(ctx, GIN_DY, 0))
    return rill_infer_error(ctx, "needs inputs Y, Variance and Y@GRAD (the forward group_norm "
                            "must keep its Variance output)");
  rill_nn_same_meta(ctx, 0, GIN_Y);
  int64_t c = -1;
  if (y->known) RILL_TRY(gn_check(ctx, y, GIN_Y, GIN_SCALE, &c));
  rill_nn_channel_grads(ctx, 1, y, c);
  return NULL;
}

const rill_op_schema rill_schema_group_norm_grad = {
    .type = "group_norm_grad",
    .doc = "Gradients of group_norm with respect to X, Scale and Bias, from Y and Variance.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = group_norm_grad_infer,
    .kernel_dtype_slot = GIN_Y,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(group_norm);
