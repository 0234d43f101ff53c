/* sample_logits: the sampled-softmax gather of fluid.layers.sampled_softmax_with_cross_entropy.
 * Samples [N, T + S] holds each row's T true labels (Labels [N, T] int64) then S =
 * num_samples negatives, and Probabilities their probabilities Q. Drawn (default): the
 * negatives are S distinct classes from the log-uniform distribution over the K classes
 * of Logits [N, K] (P(c) = log((c + 2) / (c + 1)) / log(K + 1)), the same for every row,
 * and after `tries` draws each Q is adjusted for the distinct draws: S * P when no draw
 * repeated, else 1 - (1 - P)^tries, as Paddle's. use_customized_samples: Samples and
 * Probabilities are CustomizedSamples and CustomizedProbabilities (the same variables in
 * Fluid's programs). Then
 *   SampledLogits = Logits[row, Samples] - log Q  (a negative equal to one of the row's
 *   true labels first lowered by 1e20 with remove_accidental_hits; +-inf become +-1e20),
 *   SampledLabels [N, T] = 0 .. T - 1 (the true columns).
 * LogitsDim and LabelsDim ([N, K, 0], [N, T, 0], no data) carry the shapes to the
 * gradient, which scatters SampledLogits@GRAD back into Logits@GRAD (adding repeats).
 * A nonzero seed draws the same negatives every run; seed 0 draws from the executor's
 * generator. The draws are rill's own (not Paddle's bits). */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"Logits", 0, "[N, K]"},
    {"Labels", RILL_SLOT_NO_GRAD, "[N, T] int64 true classes"},
    {"CustomizedSamples", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "[N, T + num_samples] int64, with use_customized_samples"},
    {"CustomizedProbabilities", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "[N, T + num_samples], with use_customized_samples"},
};
static const rill_slot_schema outputs[] = {
    {"Samples", RILL_SLOT_INTERMEDIATE, "[N, T + num_samples] int64"},
    {"Probabilities", RILL_SLOT_INTERMEDIATE, "[N, T + num_samples]"},
    {"LogitsDim", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE, "[N, K, 0]: Logits' shape"},
    {"LabelsDim", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE, "[N, T, 0]: Labels' shape"},
    {"SampledLogits", RILL_SLOT_INTERMEDIATE, "[N, T + num_samples]"},
    {"SampledLabels", 0, "[N, T] int64: 0 .. T - 1"},
};
static const rill_attr_schema attrs[] = {
    {"use_customized_samples", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "take the samples and probabilities from the Customized inputs"},
    {"uniq", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "distinct negatives (the only mode Paddle's CPU kernel has)"},
    {"remove_accidental_hits", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "lower a negative that equals a true label of its row by 1e20"},
    {"num_samples", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INT),
     "negatives per row, at most K"},
    {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "nonzero: the same negatives every run"},
};

static rill_status *sl_check(rill_infer_ctx *ctx, int64_t *cols) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *l = rill_infer_in(ctx, 1, 0);
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Logits (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2)
    return rill_infer_error(ctx, "input Logits (%s) has shape %s, expected [N, K]", xn,
                            rill_dims_str(&x->dims, a, sizeof a));
  if (l->dtype != RILL_DTYPE_INT64 || l->dims.n != 2 ||
      (l->dims.d[0] >= 0 && x->dims.d[0] >= 0 && l->dims.d[0] != x->dims.d[0]))
    return rill_infer_error(ctx, "input Labels (%s) is %s %s; it needs int64 [N, T] with "
                            "Logits (%s)'s rows of %s", rill_infer_in_name(ctx, 1, 0),
                            rill_dtype_name(l->dtype), rill_dims_str(&l->dims, a, sizeof a), xn,
                            rill_dims_str(&x->dims, b, sizeof b));
  int s = ctx->attrs[RILL_SAMPLE_LOGITS_ATTR_NUM_SAMPLES].v.i;
  if (s < 0 || (x->dims.d[1] >= 0 && s > x->dims.d[1]))
    return rill_infer_error(ctx, "attribute num_samples is %d: it needs 0 to Logits (%s)'s %lld "
                            "classes", s, xn, (long long)x->dims.d[1]);
  *cols = l->dims.d[1] < 0 ? -1 : l->dims.d[1] + s;
  if (ctx->attrs[RILL_SAMPLE_LOGITS_ATTR_USE_CUSTOMIZED_SAMPLES].v.b) {
    const rill_tensor_meta *cs = rill_infer_in(ctx, 2, 0), *cp = rill_infer_in(ctx, 3, 0);
    if (!cs || !cp)
      return rill_infer_error(ctx, "use_customized_samples needs inputs CustomizedSamples and "
                              "CustomizedProbabilities");
    rill_dims want = {.n = 2, .d = {x->dims.d[0], *cols}};
    for (size_t k = 2; k <= 3; k++) {
      const rill_tensor_meta *m = rill_infer_in(ctx, k, 0);
      rill_dtype dt = k == 2 ? RILL_DTYPE_INT64 : x->dtype;
      bool ok = m->dtype == dt && m->dims.n == 2;
      for (int d = 0; ok && d < 2; d++)
        ok = m->dims.d[d] < 0 || want.d[d] < 0 || m->dims.d[d] == want.d[d];
      if (m->known && !ok)
        return rill_infer_error(ctx, "input %s (%s) is %s %s; it needs %s %s",
                                ctx->schema->inputs[k].name, rill_infer_in_name(ctx, k, 0),
                                rill_dtype_name(m->dtype), rill_dims_str(&m->dims, a, sizeof a),
                                rill_dtype_name(dt), rill_dims_str(&want, b, sizeof b));
    }
  }
  return NULL;
}

static rill_status *sl_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *l = rill_infer_in(ctx, 1, 0);
  static const size_t need[] = {0, 1, 4, 5};
  for (size_t k = 0; k < RILL_COUNTOF(need); k++)
    if (!rill_infer_out(ctx, need[k], 0))
      return rill_infer_error(ctx, "needs output %s", outputs[need[k]].name);
  if (!x || !l) return rill_infer_error(ctx, "needs inputs Logits and Labels");
  if (!x->known || !l->known) {
    for (size_t o = 0; o < RILL_COUNTOF(outputs); o++)
      if (rill_infer_out(ctx, o, 0)) rill_meta_unknown(rill_infer_out(ctx, o, 0));
    return NULL;
  }
  int64_t cols;
  RILL_TRY(sl_check(ctx, &cols));
  int64_t n = x->dims.d[0];
  rill_dims sd = {.n = 2, .d = {n, cols}};
  rill_dims xd = {.n = 3, .d = {n, x->dims.d[1], 0}}, ld = {.n = 3, .d = {n, l->dims.d[1], 0}};
  rill_meta_set(rill_infer_out(ctx, 0, 0), RILL_DTYPE_INT64, &sd, 0, -1, -1);
  rill_meta_set(rill_infer_out(ctx, 1, 0), x->dtype, &sd, 0, -1, -1);
  if (rill_infer_out(ctx, 2, 0)) rill_meta_set(rill_infer_out(ctx, 2, 0), x->dtype, &xd, 0, -1, -1);
  if (rill_infer_out(ctx, 3, 0))
    rill_meta_set(rill_infer_out(ctx, 3, 0), RILL_DTYPE_INT64, &ld, 0, -1, -1);
  rill_meta_set(rill_infer_out(ctx, 4, 0), x->dtype, &sd, 0, -1, -1);
  rill_meta_set(rill_infer_out(ctx, 5, 0), RILL_DTYPE_INT64, &l->dims, 0, -1, -1);
  return NULL;
}

static rill_status *sl_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"LogitsDim", "LabelsDim", "Samples"};
  static const char *const gout[] = {"SampledLogits"};
  static const char *const gin[] = {"Logits"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_sample_logits = {
    .type = "sample_logits",
    .doc = "Gathers the logits of the true and sampled classes, less log Q.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = sl_infer,
    .grad = sl_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
    .flags = RILL_OP_RANDOM,
};

static const rill_slot_schema grad_inputs[] = {
    {"LogitsDim", RILL_SLOT_DECL_ONLY, "[N, K, 0]: Logits' shape"},
    {"LabelsDim", RILL_SLOT_DISPENSABLE | RILL_SLOT_DECL_ONLY, "[N, T, 0]"},
    {"Samples", 0, "forward Samples"},
    {"SampledLogits@GRAD", 0, "gradient of SampledLogits"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Logits@GRAD", RILL_SLOT_DISPENSABLE, "[N, K]"},
};

static rill_status *sl_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *xd = rill_infer_in(ctx, 0, 0), *s = rill_infer_in(ctx, 2, 0);
  const rill_tensor_meta *g = rill_infer_in(ctx, 3, 0);
  if (!xd || !s || !g)
    return rill_infer_error(ctx, "needs inputs LogitsDim, Samples and SampledLogits@GRAD");
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!dx) return NULL;
  if (!xd->known || !g->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  char a[RILL_DIMS_STR_MAX];
  if (xd->dims.n != 3)
    return rill_infer_error(ctx, "input LogitsDim (%s) has shape %s, expected [N, K, 0]",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&xd->dims, a, sizeof a));
  rill_dims d = {.n = 2, .d = {xd->dims.d[0], xd->dims.d[1]}};
  rill_meta_set(dx, g->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_sample_logits_grad = {
    .type = "sample_logits_grad",
    .doc = "Logits@GRAD of sample_logits: SampledLogits@GRAD added at the samples.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = sl_grad_infer,
    .kernel_dtype_slot = 3,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sample_logits);
