/* data_norm: normalisation of X [N, C] by summary statistics kept as parameters
 * (BatchSize, BatchSum, BatchSquareSum, each [C]) rather than by the batch's own:
 *   Means = BatchSum / BatchSize,  Scales = sqrt(BatchSize / BatchSquareSum),
 *   Y = (X - Means) * Scales  (then * scale_w + bias with enable_scale_and_shift).
 * With slot_dim > 0 the C columns are slots of slot_dim values whose first value is the
 * slot's show count: a row's slot with a show of (nearly) zero gives zeros.
 * The statistics are updated through their gradients, as in Paddle: data_norm_grad
 * writes the batch's own count, sum and centred square sum (+ N * epsilon) as
 * BatchSize@GRAD, BatchSum@GRAD and BatchSquareSum@GRAD (per-slot averages of the shown
 * rows with slot_dim), which the optimizer applies to the parameters. */
#include "operators/nn.h"

#include <string.h>

static const rill_slot_schema inputs[] = {
    {"X", 0, "[N, C]"},
    {"BatchSize", 0, "[C] summary count"},
    {"BatchSum", 0, "[C] summary sum"},
    {"BatchSquareSum", 0, "[C] summary centred square sum"},
    {"scale_w", RILL_SLOT_DISPENSABLE, "[C], with enable_scale_and_shift"},
    {"bias", RILL_SLOT_DISPENSABLE, "[C], with enable_scale_and_shift"},
};
static const rill_slot_schema outputs[] = {
    {"Y", 0, "X's shape"},
    {"Means", RILL_SLOT_INTERMEDIATE, "[C] BatchSum / BatchSize"},
    {"Scales", RILL_SLOT_INTERMEDIATE, "[C] sqrt(BatchSize / BatchSquareSum)"},
};
static const rill_attr_schema attrs[] = {
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-4f),
     "added per row to BatchSquareSum@GRAD, in [0, 0.001]"},
    {"slot_dim", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "values per slot; <= 0: no slots"},
    {"summary_decay_rate", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.9999999f),
     "used by multi-device summary updates only; ignored on CPU, as in Paddle"},
    {"enable_scale_and_shift", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "apply scale_w and bias after normalising"},
    {"data_layout", RILL_ATTR_STRING, 0, RILL_DEF_STRING("NCHW"), "NCHW or NHWC (same for 2-D)"},
    {"sync_stats", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "multi-GPU only; ignored"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

/* X float [N, C]; each statistic (and scale_w, bias when used) X's dtype and [C]. */
static rill_status *dn_check(rill_infer_ctx *ctx, const rill_tensor_meta *x, bool grad) {
  char a[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2)
    return rill_infer_error(ctx, "input X (%s) has shape %s: data_norm takes [N, C]", xn,
                            rill_dims_str(&x->dims, a, sizeof a));
  float eps = ctx->attrs[RILL_DATA_NORM_ATTR_EPSILON].v.f;
  if (!(eps >= 0.0f && eps <= 0.001f))
    return rill_infer_error(ctx, "attribute epsilon is %g, must be in [0, 0.001]", (double)eps);
  const char *f = ctx->attrs[RILL_DATA_NORM_ATTR_DATA_LAYOUT].v.s;
  if (f && strcmp(f, "NCHW") && strcmp(f, "NHWC") && strcmp(f, "AnyLayout"))
    return rill_infer_error(ctx, "attribute data_layout \"%s\" is not NCHW or NHWC", f);
  int64_t c = x->dims.d[1];
  int sd = ctx->attrs[RILL_DATA_NORM_ATTR_SLOT_DIM].v.i;
  if (sd > 0 && c >= 0 && c % sd != 0)
    return rill_infer_error(ctx, "input X (%s) has %lld columns, not a multiple of slot_dim %d",
                            xn, (long long)c, sd);
  if (grad) return NULL;
  bool ss = ctx->attrs[RILL_DATA_NORM_ATTR_ENABLE_SCALE_AND_SHIFT].v.b;
  for (size_t s = 1; s < ctx->schema->ninputs; s++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, s, 0);
    if (s >= 4 && !ss) continue;
    if (!m)
      return rill_infer_error(ctx, "needs input %s%s", ctx->schema->inputs[s].name,
                              s >= 4 ? " with enable_scale_and_shift" : "");
    if (!m->known) continue;
    if (m->dtype != x->dtype || m->dims.n != 1 || (m->dims.d[0] >= 0 && c >= 0 && m->dims.d[0] != c))
      return rill_infer_error(ctx, "input %s (%s) is %s %s; it needs %s [C] with X (%s)'s C = "
                              "%lld", ctx->schema->inputs[s].name, rill_infer_in_name(ctx, s, 0),
                              rill_dtype_name(m->dtype), rill_dims_str(&m->dims, a, sizeof a),
                              rill_dtype_name(x->dtype), xn, (long long)c);
  }
  return NULL;
}

static rill_status *dn_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || !rill_infer_out(ctx, 0, 0) || !rill_infer_out(ctx, 1, 0) || !rill_infer_out(ctx, 2, 0))
    return rill_infer_error(ctx, "needs input X and outputs Y, Means and Scales");
  if (!x->known) {
    for (size_t s = 0; s < 3; s++) rill_meta_unknown(rill_infer_out(ctx, s, 0));
    return NULL;
  }
  RILL_TRY(dn_check(ctx, x, false));
  rill_nn_same_meta(ctx, 0, 0);
  rill_dims cd = {.n = 1, .d = {x->dims.d[1]}};
  rill_meta_set(rill_infer_out(ctx, 1, 0), x->dtype, &cd, 0, 0, 0);
  rill_meta_set(rill_infer_out(ctx, 2, 0), x->dtype, &cd, 0, 0, 0);
  return NULL;
}

static rill_status *dn_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Means", "Scales", "scale_w", "bias"};
  static const char *const gout[] = {"Y"};
  static const char *const gin[] = {"X", "BatchSize", "BatchSum", "BatchSquareSum", "scale_w",
                                    "bias"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_data_norm = {
    .type = "data_norm",
    .doc = "Y = (X - BatchSum / BatchSize) * sqrt(BatchSize / BatchSquareSum).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = dn_infer,
    .grad = dn_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Means", 0, "forward Means"},
    {"Scales", 0, "forward Scales"},
    {"scale_w", RILL_SLOT_DISPENSABLE, "forward scale_w"},
    {"bias", RILL_SLOT_DISPENSABLE, "forward bias"},
    {"Y@GRAD", 0, "gradient of Y"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape: Y@GRAD * Scales (* scale_w)"},
    {"BatchSize@GRAD", RILL_SLOT_DISPENSABLE, "[C] the batch's count"},
    {"BatchSum@GRAD", RILL_SLOT_DISPENSABLE, "[C] the batch's sum"},
    {"BatchSquareSum@GRAD", RILL_SLOT_DISPENSABLE,
     "[C] the batch's square sum about Means, + count * epsilon"},
    {"scale_w@GRAD", RILL_SLOT_DISPENSABLE, "[C]"},
    {"bias@GRAD", RILL_SLOT_DISPENSABLE, "[C]"},
    {"BatchSize", RILL_SLOT_DISPENSABLE, "named by Paddle's programs; not written on CPU"},
    {"BatchSum", RILL_SLOT_DISPENSABLE, "named by Paddle's programs; not written on CPU"},
    {"BatchSquareSum", RILL_SLOT_DISPENSABLE, "named by Paddle's programs; not written on CPU"},
};

static rill_status *dn_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0) || !rill_infer_in(ctx, 5, 0))
    return rill_infer_error(ctx, "needs inputs X, Means, Scales and Y@GRAD");
  if (x->known) RILL_TRY(dn_check(ctx, x, true));
  rill_nn_same_meta(ctx, 0, 0);
  for (size_t s = 1; s <= 5; s++) rill_nn_same_meta(ctx, s, 1);
  return NULL;
}

const rill_op_schema rill_schema_data_norm_grad = {
    .type = "data_norm_grad",
    .doc = "Gradients of data_norm: X's, scale_w's and bias's, and the batch statistics.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = dn_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(data_norm);
