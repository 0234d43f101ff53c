/* nce: noise-contrastive estimation. Each row i of Input [N, D] has num_true classes
 * (Label [N, num_true] int64) and gets num_neg_samples negative classes drawn from the
 * sampler (custom_neg_classes, when set, are used instead of drawing: the deterministic
 * path). SampleLabels [N, S] holds the true classes then the negatives (S = num_true +
 * num_neg_samples) and SampleLogits [N, S] o = sigmoid(Weight[t] . Input[i] + Bias[t]).
 * With b = P(t) * num_neg_samples, P the sampler's probability of class t,
 *   Cost[i] = SampleWeight[i] * (sum over true t of -log(o / (o + b))
 *                                + sum over negatives of -log(b / (o + b))).
 * Samplers (attribute sampler): 0 uniform over [0, num_total_classes) (P = 1 / K), 1
 * log-uniform (P(t) = log((t + 2) / (t + 1)) / log K), 2 custom: the alias tables
 * CustomDistProbs, CustomDistAlias, CustomDistAliasProbs that fluid.layers.nce builds.
 * A nonzero seed draws the same negatives on every run, as Paddle's; seed 0 draws from
 * the executor's generator. The draws are rill's own (not Paddle's bits). */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"Input", 0, "[N, D]"},
    {"Label", RILL_SLOT_NO_GRAD, "[N, num_true] int64"},
    {"Weight", 0, "[num_total_classes, D]"},
    {"Bias", RILL_SLOT_DISPENSABLE, "[num_total_classes, 1]"},
    {"SampleWeight", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "[N] or [N, 1] row weights"},
    {"CustomDistProbs", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "[num_total_classes] float32: the custom distribution"},
    {"CustomDistAlias", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "[num_total_classes] int32: alias of each class (-1: none)"},
    {"CustomDistAliasProbs", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "[num_total_classes] float32: probability of keeping the drawn class"},
};
static const rill_slot_schema outputs[] = {
    {"Cost", 0, "[N, 1]"},
    {"SampleLogits", RILL_SLOT_INTERMEDIATE, "[N, S]: sigmoid of each sample's logit"},
    {"SampleLabels", RILL_SLOT_INTERMEDIATE, "[N, S] int64: true classes, then negatives"},
};
static const rill_attr_schema attrs[] = {
    {"num_total_classes", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INT),
     "classes K (rows of Weight)"},
    {"num_neg_samples", RILL_ATTR_INT, 0, RILL_DEF_INT(10), "negatives per row"},
    {"sampler", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "0 uniform, 1 log-uniform, 2 custom"},
    {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "nonzero: the same negatives every run"},
    {"is_sparse", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "Weight@GRAD is selected rows (the distinct sampled classes)"},
    {"custom_neg_classes", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "negatives used for every row instead of drawing (num_neg_samples of them)"},
    {"remote_prefetch", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"trainer_id", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(0), "ignored"},
    {"height_sections", RILL_ATTR_LONGS, RILL_ATTR_EXTRA, RILL_DEF_EMPTY(RILL_ATTR_LONGS),
     "ignored"},
    {"epmap", RILL_ATTR_STRINGS, RILL_ATTR_EXTRA, RILL_DEF_EMPTY(RILL_ATTR_STRINGS), "ignored"},
    {"table_names", RILL_ATTR_STRINGS, RILL_ATTR_EXTRA, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "ignored"},
};

/* Input, Label, Weight and the optional inputs (slots as in `inputs`, also the gradient
 * op's first ones); *s = columns of the samples. */
static rill_status *nce_check(rill_infer_ctx *ctx, int64_t *s) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *l = rill_infer_in(ctx, 1, 0);
  const rill_tensor_meta *w = rill_infer_in(ctx, 2, 0);
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2)
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [N, D]", xn,
                            rill_dims_str(&x->dims, a, sizeof a));
  int k = ctx->attrs[RILL_NCE_ATTR_NUM_TOTAL_CLASSES].v.i;
  int neg = ctx->attrs[RILL_NCE_ATTR_NUM_NEG_SAMPLES].v.i;
  int sampler = ctx->attrs[RILL_NCE_ATTR_SAMPLER].v.i;
  if (k < 2 || neg < 0 || sampler < 0 || sampler > 2)
    return rill_infer_error(ctx, "attributes num_total_classes %d (>= 2), num_neg_samples %d "
                            "(>= 0) and sampler %d (0, 1 or 2) are out of range", k, neg,
                            sampler);
  const rill_attr_value *cn = &ctx->attrs[RILL_NCE_ATTR_CUSTOM_NEG_CLASSES];
  if (cn->n && cn->n != (size_t)neg)
    return rill_infer_error(ctx, "attribute custom_neg_classes holds %zu classes, "
                            "num_neg_samples is %d", cn->n, neg);
  for (size_t i = 0; i < cn->n; i++)
    if (cn->list.ints[i] < 0 || cn->list.ints[i] >= k)
      return rill_infer_error(ctx, "attribute custom_neg_classes holds class %d, outside "
                              "[0, num_total_classes = %d)", (int)cn->list.ints[i], k);
  if (l->dtype != RILL_DTYPE_INT64 || l->dims.n < 1 || l->dims.n > 2 ||
      (l->dims.d[0] >= 0 && x->dims.d[0] >= 0 && l->dims.d[0] != x->dims.d[0]))
    return rill_infer_error(ctx, "input Label (%s) is %s %s; it needs int64 [N, num_true] "
                            "with Input (%s)'s rows of %s", rill_infer_in_name(ctx, 1, 0),
                            rill_dtype_name(l->dtype), rill_dims_str(&l->dims, a, sizeof a), xn,
                            rill_dims_str(&x->dims, b, sizeof b));
  int64_t num_true = l->dims.n == 2 ? l->dims.d[1] : 1;
  *s = num_true < 0 ? -1 : num_true + neg;
  if (w->dtype != x->dtype || w->dims.n != 2 || (w->dims.d[0] >= 0 && w->dims.d[0] != k) ||
      (w->dims.d[1] >= 0 && x->dims.d[1] >= 0 && w->dims.d[1] != x->dims.d[1]))
    return rill_infer_error(ctx, "input Weight (%s) is %s %s; it needs %s [num_total_classes "
                            "= %d, D] with Input (%s)'s D", rill_infer_in_name(ctx, 2, 0),
                            rill_dtype_name(w->dtype), rill_dims_str(&w->dims, a, sizeof a),
                            rill_dtype_name(x->dtype), k, xn);
  if (sampler == 2)
    for (size_t slot = 5; slot <= 7; slot++) {
      const rill_tensor_meta *m = rill_infer_in(ctx, slot, 0);
      rill_dtype want = slot == 6 ? RILL_DTYPE_INT32 : RILL_DTYPE_FP32;
      if (!m)
        return rill_infer_error(ctx, "sampler 2 (custom) needs input %s",
                                ctx->schema->inputs[slot].name);
      if (m->known && (m->dtype != want || (rill_dims_known(&m->dims) &&
                                            rill_dims_prod(&m->dims, 0, m->dims.n) != k)))
        return rill_infer_error(ctx, "input %s (%s) is %s %s; it needs %d %s values",
                                ctx->schema->inputs[slot].name,
                                rill_infer_in_name(ctx, slot, 0), rill_dtype_name(m->dtype),
                                rill_dims_str(&m->dims, a, sizeof a), k, rill_dtype_name(want));
    }
  return NULL;
}

static bool nce_known(rill_infer_ctx *ctx) {
  for (size_t s = 0; s < 3; s++)
    if (!rill_infer_in(ctx, s, 0)->known) return false;
  return true;
}

static rill_status *nce_infer(rill_infer_ctx *ctx) {
  if (!rill_infer_in(ctx, 0, 0) || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0) ||
      !rill_infer_out(ctx, 0, 0))
    return rill_infer_error(ctx, "needs inputs Input, Label and Weight and output Cost");
  if (!nce_known(ctx)) {
    for (size_t o = 0; o < 3; o++)
      if (rill_infer_out(ctx, o, 0)) rill_meta_unknown(rill_infer_out(ctx, o, 0));
    return NULL;
  }
  int64_t s;
  RILL_TRY(nce_check(ctx, &s));
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_dims cd = {.n = 2, .d = {x->dims.d[0], 1}}, sd = {.n = 2, .d = {x->dims.d[0], s}};
  rill_meta_set(rill_infer_out(ctx, 0, 0), x->dtype, &cd, 0, 0, 0);
  if (rill_infer_out(ctx, 1, 0)) rill_meta_set(rill_infer_out(ctx, 1, 0), x->dtype, &sd, 0, 0, 0);
  if (rill_infer_out(ctx, 2, 0))
    rill_meta_set(rill_infer_out(ctx, 2, 0), RILL_DTYPE_INT64, &sd, 0, 0, 0);
  return NULL;
}

static rill_status *nce_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Input", "Label", "Weight", "SampleWeight",
                                    "CustomDistProbs", "CustomDistAlias",
                                    "CustomDistAliasProbs", "SampleLogits", "SampleLabels"};
  static const char *const gout[] = {"Cost"};
  static const char *const gin[] = {"Input", "Weight", "Bias"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_nce = {
    .type = "nce",
    .doc = "Noise-contrastive estimation loss over sampled negative classes.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = nce_infer,
    .grad = nce_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
    .flags = RILL_OP_RANDOM,
};

static const rill_slot_schema grad_inputs[] = {
    {"Input", 0, "forward Input"},
    {"Label", 0, "forward Label"},
    {"Weight", 0, "forward Weight"},
    {"Bias", RILL_SLOT_DISPENSABLE, "forward Bias (unused; Paddle does not pass it)"},
    {"SampleWeight", RILL_SLOT_DISPENSABLE, "forward SampleWeight"},
    {"CustomDistProbs", RILL_SLOT_DISPENSABLE, "forward CustomDistProbs"},
    {"CustomDistAlias", RILL_SLOT_DISPENSABLE, "forward CustomDistAlias"},
    {"CustomDistAliasProbs", RILL_SLOT_DISPENSABLE, "forward CustomDistAliasProbs"},
    {"SampleLogits", 0, "forward SampleLogits"},
    {"SampleLabels", 0, "forward SampleLabels"},
    {"Cost@GRAD", 0, "gradient of Cost [N, 1]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "Input's shape"},
    {"Weight@GRAD", RILL_SLOT_DISPENSABLE, "Weight's shape, or with is_sparse selected rows"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "[num_total_classes, 1]"},
};

static rill_status *nce_grad_infer(rill_infer_ctx *ctx) {
  RILL_TRY(rill_nn_need_inputs(ctx));
  if (nce_known(ctx)) {
    int64_t s;
    RILL_TRY(nce_check(ctx, &s));
  }
  rill_nn_same_meta(ctx, 0, 0);
  rill_nn_table_grad_meta(ctx, 1, 2, ctx->attrs[RILL_NCE_ATTR_IS_SPARSE].v.b);
  rill_tensor_meta *db = rill_infer_out(ctx, 2, 0);
  const rill_tensor_meta *w = rill_infer_in(ctx, 2, 0);
  if (db && w->known) {
    rill_dims bd = {.n = 2, .d = {w->dims.d[0], 1}};
    rill_meta_set(db, w->dtype, &bd, 0, -1, -1);
  } else if (db) {
    rill_meta_unknown(db);
  }
  return NULL;
}

const rill_op_schema rill_schema_nce_grad = {
    .type = "nce_grad",
    .doc = "Gradients of nce with respect to Input, Weight and Bias.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = nce_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(nce);
