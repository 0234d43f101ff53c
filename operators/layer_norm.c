/* layer_norm: X flattened to [left, right] at begin_norm_axis; each row normalised by
 * its mean and (biased) variance, then scaled and shifted by the optional Scale and Bias
 * of [right] elements. Mean and Variance ([left]) are kept for layer_norm_grad. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "input"},
    {"Scale", RILL_SLOT_DISPENSABLE, "[prod(X dims[begin_norm_axis:])]"},
    {"Bias", RILL_SLOT_DISPENSABLE, "[prod(X dims[begin_norm_axis:])]"},
};
static const rill_slot_schema outputs[] = {
    {"Y", 0, "X's shape"},
    {"Mean", RILL_SLOT_INTERMEDIATE, "[prod(X dims[:begin_norm_axis])]"},
    {"Variance", RILL_SLOT_INTERMEDIATE, "[prod(X dims[:begin_norm_axis])]"},
};
static const rill_attr_schema attrs[] = {
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-5f), "added to the variance"},
    {"begin_norm_axis", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "first normalised dim, in [1, rank)"},
    {"is_test", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

/* Product of dims [b, e): -1 when unknown. */
static int64_t span(const rill_dims *d, int b, int e) {
  int64_t p = 1;
  for (int i = b; i < e; i++) {
    if (d->d[i] < 0) return -1;
    p *= d->d[i];
  }
  return p;
}

static rill_status *ln_check(rill_infer_ctx *ctx, const rill_tensor_meta *x, int64_t *left,
                             int64_t *right) {
  int axis = ctx->attrs[RILL_LAYER_NORM_ATTR_BEGIN_NORM_AXIS].v.i;
  if (axis < 1 || axis >= x->dims.n)
    return rill_infer_error(ctx, "begin_norm_axis %d must lie in [1, rank) for input X (%s) of rank %d",
                            axis, rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, layer_norm takes float32 or float64",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  *left = span(&x->dims, 0, axis);
  *right = span(&x->dims, axis, x->dims.n);
  for (size_t s = 1; s <= 2; s++) {
    const rill_tensor_meta *v = rill_infer_in(ctx, s, 0);
    if (!v || !v->known) continue;
    const char *sn = ctx->schema->inputs[s].name;
    if (v->dtype != x->dtype)
      return rill_infer_error(ctx, "input %s (%s) is %s but X is %s", sn, rill_infer_in_name(ctx, s, 0),
                              rill_dtype_name(v->dtype), rill_dtype_name(x->dtype));
    int64_t n = span(&v->dims, 0, v->dims.n);
    if (v->dims.n != 1 || (n >= 0 && *right >= 0 && n != *right)) {
      char vs[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input %s (%s) has shape %s, expected [%lld] (X (%s) from "
                              "begin_norm_axis %d)", sn, rill_infer_in_name(ctx, s, 0),
                              rill_dims_str(&v->dims, vs, sizeof vs), (long long)*right,
                              rill_infer_in_name(ctx, 0, 0), axis);
    }
  }
  return NULL;
}

static rill_status *ln_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0);
  if (!x || !y) return rill_infer_error(ctx, "needs input X and output Y");
  rill_tensor_meta *m = rill_infer_out(ctx, 1, 0), *v = rill_infer_out(ctx, 2, 0);
  if (!x->known) {
    rill_meta_unknown(y);
    if (m) rill_meta_unknown(m);
    if (v) rill_meta_unknown(v);
    return NULL;
  }
  int64_t left, right;
  RILL_TRY(ln_check(ctx, x, &left, &right));
  rill_meta_set(y, x->dtype, &x->dims, x->lod_level, 0, 0);
  rill_dims ld = {1, {left}};
  if (m) rill_meta_set(m, x->dtype, &ld, 0, -1, -1);
  if (v) rill_meta_set(v, x->dtype, &ld, 0, -1, -1);
  return NULL;
}

static rill_status *ln_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Scale", "Bias", "Mean", "Variance"};
  static const char *const gout[] = {"Y"};
  static const char *const gin[] = {"X", "Scale", "Bias"};
  return rill_grad_emit(ctx, "layer_norm_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_layer_norm = {
    .type = "layer_norm",
    .doc = "Layer normalisation over the dims from begin_norm_axis on.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = ln_infer,
    .grad = ln_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Scale", RILL_SLOT_DISPENSABLE, "forward Scale"},
    {"Bias", RILL_SLOT_DISPENSABLE, "forward Bias (not read)"},
    {"Mean", 0, "row means"},
    {"Variance", 0, "row variances"},
    {"Y@GRAD", 0, "gradient of Y"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
    {"Scale@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Scale"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Bias"},
};

static rill_status *ln_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || !rill_infer_in(ctx, 3, 0) || !rill_infer_in(ctx, 4, 0) || !rill_infer_in(ctx, 5, 0))
    return rill_infer_error(ctx, "needs inputs X, Mean, Variance and Y@GRAD");
  if (x->known) {
    int64_t left, right;
    RILL_TRY(ln_check(ctx, x, &left, &right));
  }
  rill_nn_same_meta(ctx, 0, 0);
  rill_nn_same_meta(ctx, 1, 1);
  rill_tensor_meta *db = rill_infer_out(ctx, 2, 0);
  if (db) {
    /* Bias@GRAD has Bias's meta (Scale's when Bias is not passed on) */
    if (rill_infer_in(ctx, 2, 0))
      rill_nn_same_meta(ctx, 2, 2);
    else
      rill_nn_same_meta(ctx, 2, 1);
  }
  return NULL;
}

const rill_op_schema rill_schema_layer_norm_grad = {
    .type = "layer_norm_grad",
    .doc = "Gradients of layer_norm with respect to X, Scale and Bias.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = ln_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(layer_norm);
