/* batch_norm (X of rank 2 to 5, channels at dim 1 with data_layout NCHW or AnyLayout,
 * at the last dim with NHWC, as Paddle's CPU kernel takes them) and batch_norm_grad. Training uses the batch's statistics (biased variance), writes the
 * moving averages MeanOut = Mean * momentum + batch_mean * (1 - momentum) (same for the
 * variance; Paddle programs bind MeanOut / VarianceOut to the Mean / Variance variables,
 * updating them in place) and keeps SavedMean and SavedVariance = 1 / sqrt(var + eps)
 * for the gradient. is_test (unless trainable_statistics) or use_global_stats normalise
 * with the moving statistics. MeanOut, VarianceOut, SavedMean and SavedVariance may be
 * absent (pruned inference programs); the kernel then skips them. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "[N, C, ...] (NCHW) or [N, ..., C] (NHWC)"},
    {"Scale", 0, "[C]"},
    {"Bias", 0, "[C]"},
    {"Mean", RILL_SLOT_NO_GRAD, "[C] moving mean"},
    {"Variance", RILL_SLOT_NO_GRAD, "[C] moving variance"},
    {"MomentumTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "[1] overrides momentum"},
};
static const rill_slot_schema outputs[] = {
    {"Y", 0, "normalised X, X's shape"},
    {"MeanOut", RILL_SLOT_DISPENSABLE, "[C] updated moving mean (usually the Mean variable)"},
    {"VarianceOut", RILL_SLOT_DISPENSABLE, "[C] updated moving variance (usually the Variance variable)"},
    {"SavedMean", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE, "[C] batch mean"},
    {"SavedVariance", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
     "[C] 1 / sqrt(batch variance + epsilon)"},
    {"ReserveSpace", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE, "cuDNN only: left empty"},
};

static const rill_attr_schema attrs[] = {
    {"momentum", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.9f), "moving-average momentum"},
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-5f), "added to the variance"},
    {"is_test", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "inference: moving statistics"},
    {"data_layout", RILL_ATTR_STRING, 0, RILL_DEF_STRING("NCHW"), "NCHW (or AnyLayout): channels at dim 1; NHWC: at the last dim"},
    {"use_global_stats", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "normalise with the moving statistics"},
    {"trainable_statistics", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "is_test still uses batch statistics"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"fuse_with_relu", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *check_channel_vec(rill_infer_ctx *ctx, size_t slot, const rill_tensor_meta *x,
                                      int64_t c) {
  const rill_tensor_meta *v = rill_infer_in(ctx, slot, 0);
  const char *sn = ctx->schema->inputs[slot].name;
  if (!v) return rill_infer_error(ctx, "needs input %s", sn);
  if (!v->known) return NULL;
  if (v->dtype != x->dtype)
    return rill_infer_error(ctx, "input %s (%s) is %s but X is %s", sn, rill_infer_in_name(ctx, slot, 0),
                            rill_dtype_name(v->dtype), rill_dtype_name(x->dtype));
  char vs[RILL_DIMS_STR_MAX];
  if (v->dims.n != 1 || (c >= 0 && v->dims.d[0] >= 0 && v->dims.d[0] != c))
    return rill_infer_error(ctx, "input %s (%s) has shape %s, expected [%lld] (the channels of X (%s))",
                            sn, rill_infer_in_name(ctx, slot, 0), rill_dims_str(&v->dims, vs, sizeof vs),
                            (long long)c, rill_infer_in_name(ctx, 0, 0));
  return NULL;
}

/* Shared checks of X and the [C] inputs; *c gets the channel count (-1 unknown). */
static rill_status *bn_check(rill_infer_ctx *ctx, const rill_tensor_meta *x, int64_t *c) {
  const rill_attr_value *lay = &ctx->attrs[RILL_BATCH_NORM_ATTR_DATA_LAYOUT];
  const char *ls = lay->type == RILL_ATTR_STRING && lay->v.s ? lay->v.s : "NCHW";
  if (strcmp(ls, "NCHW") != 0 && strcmp(ls, "AnyLayout") != 0 && strcmp(ls, "NHWC") != 0)
    return rill_infer_error(ctx, "attribute data_layout is '%s' (input X (%s)): expected NCHW, NHWC "
                            "or AnyLayout", ls, rill_infer_in_name(ctx, 0, 0));
  if (x->dims.n < 2 || x->dims.n > 5)
    return rill_infer_error(ctx, "input X (%s) must have rank 2 to 5, has rank %d",
                            rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, batch_norm takes float32 or float64",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  *c = strcmp(ls, "NHWC") == 0 ? x->dims.d[x->dims.n - 1] : x->dims.d[1];
  return NULL;
}

static rill_status *bn_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || !rill_infer_out(ctx, 0, 0)) return rill_infer_error(ctx, "needs input X and output Y");
  if (!x->known) {
    for (size_t i = 0; i < 5; i++)
      if (rill_infer_out(ctx, i, 0)) rill_meta_unknown(rill_infer_out(ctx, i, 0));
    return NULL;
  }
  int64_t c;
  RILL_TRY(bn_check(ctx, x, &c));
  for (size_t s = 1; s <= 4; s++) RILL_TRY(check_channel_vec(ctx, s, x, c));
  rill_meta_set(rill_infer_out(ctx, 0, 0), x->dtype, &x->dims, x->lod_level, 0, 0);
  rill_dims cd = {1, {c}};
  for (size_t i = 1; i < 5; i++)
    if (rill_infer_out(ctx, i, 0)) rill_meta_set(rill_infer_out(ctx, i, 0), x->dtype, &cd, 0, -1, -1);
  rill_tensor_meta *rs = rill_infer_out(ctx, 5, 0);
  if (rs) {
    rill_dims zd = {1, {0}};
    rill_meta_set(rs, x->dtype, &zd, 0, -1, -1);
  }
  return NULL;
}

static rill_status *bn_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Scale", "Bias", "Mean", "Variance", "SavedMean",
                                    "SavedVariance"};
  static const char *const gout[] = {"Y"};
  static const char *const gin[] = {"X", "Scale", "Bias"};
  return rill_grad_emit(ctx, "batch_norm_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_batch_norm = {
    .type = "batch_norm",
    .doc = "Batch normalisation over N and the spatial dims, per channel (dim 1, or the last dim with NHWC).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = bn_infer,
    .grad = bn_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Scale", 0, "forward Scale"},
    {"Bias", RILL_SLOT_DISPENSABLE, "forward Bias (not read)"},
    {"Mean", RILL_SLOT_DISPENSABLE, "moving mean (read with global statistics)"},
    {"Variance", RILL_SLOT_DISPENSABLE, "moving variance (read with global statistics)"},
    {"SavedMean", 0, "batch mean"},
    {"SavedVariance", 0, "1 / sqrt(batch variance + epsilon)"},
    {"ReserveSpace", RILL_SLOT_DISPENSABLE, "cuDNN only: ignored"},
    {"Y", RILL_SLOT_DISPENSABLE, "forward Y (not read)"},
    {"Y@GRAD", 0, "gradient of Y"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
    {"Scale@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Scale"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Bias"},
};

static rill_status *bn_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *dy = rill_infer_in(ctx, 9, 0);
  if (!x || !dy || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 5, 0) || !rill_infer_in(ctx, 6, 0))
    return rill_infer_error(ctx, "needs inputs X, Scale, SavedMean, SavedVariance and Y@GRAD");
  if (x->known) {
    int64_t c;
    RILL_TRY(bn_check(ctx, x, &c));
    RILL_TRY(check_channel_vec(ctx, 1, x, c));
    if (dy->known && !rill_dims_equal(&dy->dims, &x->dims) && rill_dims_known(&dy->dims) &&
        rill_dims_known(&x->dims))
      return rill_infer_error(ctx, "input Y@GRAD (%s) does not have the shape of X (%s)",
                              rill_infer_in_name(ctx, 9, 0), rill_infer_in_name(ctx, 0, 0));
  }
  rill_nn_same_meta(ctx, 0, 0);
  rill_nn_same_meta(ctx, 1, 1);
  rill_nn_same_meta(ctx, 2, 1);
  return NULL;
}

const rill_op_schema rill_schema_batch_norm_grad = {
    .type = "batch_norm_grad",
    .doc = "Gradients of batch_norm with respect to X, Scale and Bias.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = bn_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(batch_norm);
