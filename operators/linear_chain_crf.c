/* linear_chain_crf: the negative log-likelihood of each label sequence under a linear-chain
 * CRF with Emission scores [T, D] (sequences from Label's LoD, else Emission's) or
 * [N, S, D] (rows cut at Length), and Transition [D + 2, D]: row 0 the start scores, row 1
 * the end scores, rows 2.. the score of tag i followed by tag j. Alpha holds the forward
 * vectors (each row scaled to sum 1), EmissionExps exp(Emission - its row maximum),
 * TransitionExps exp(Transition); the gradient op reads all three. */
#include "operators/crf.h"
#include "operators/math_grad.h"
#include "operators/op_util.h"

#include "framework/data/tensor.h"

enum { IN_EMISSION, IN_TRANSITION, IN_LABEL, IN_LENGTH };
static const rill_slot_schema inputs[] = {
    [IN_EMISSION] = {"Emission", 0, "float [T, D] with sequences as LoD, or [N, S, D] with Length"},
    [IN_TRANSITION] = {"Transition", 0, "[D + 2, D]: start scores, end scores, then tag to tag"},
    [IN_LABEL] = {"Label", RILL_SLOT_NO_GRAD, "int64 tags: LoD [T, 1], or [N, S, 1] / [N, S]"},
    [IN_LENGTH] = {"Length", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                   "int64 [N]: the length of each padded row"},
};
enum { OUT_ALPHA, OUT_EMISSION_EXPS, OUT_TRANSITION_EXPS, OUT_LOG_LIKELIHOOD };
static const rill_slot_schema outputs[] = {
    [OUT_ALPHA] = {"Alpha", RILL_SLOT_INTERMEDIATE,
                   "Emission's shape: the forward vectors, each row summing to 1 (0 on padding)"},
    [OUT_EMISSION_EXPS] = {"EmissionExps", RILL_SLOT_INTERMEDIATE,
                           "Emission's shape: exp(Emission - the row's maximum)"},
    [OUT_TRANSITION_EXPS] = {"TransitionExps", RILL_SLOT_INTERMEDIATE, "exp(Transition)"},
    [OUT_LOG_LIKELIHOOD] = {"LogLikelihood", 0,
                            "[sequences, 1]: log Z - score of the labels (0 for an empty one)"},
};

rill_status *rill_crf_check_inputs(rill_infer_ctx *ctx, size_t e_slot, size_t t_slot, bool padded,
                                   int64_t *d) {
  const rill_tensor_meta *e = rill_infer_in(ctx, e_slot, 0), *t = rill_infer_in(ctx, t_slot, 0);
  char s[RILL_DIMS_STR_MAX];
  *d = -1;
  if (e->known) {
    if (e->dtype != RILL_DTYPE_FP32 && e->dtype != RILL_DTYPE_FP64)
      return rill_infer_error(ctx, "input Emission (%s) is %s, expected float32 or float64",
                              rill_infer_in_name(ctx, e_slot, 0), rill_dtype_name(e->dtype));
    if (e->dims.n != (padded ? 3 : 2))
      return rill_infer_error(ctx, "input Emission (%s) has shape %s, expected %s",
                              rill_infer_in_name(ctx, e_slot, 0), rill_dims_str(&e->dims, s, sizeof s),
                              padded ? "[N, S, D] (it has Length)" : "[T, D] (without Length)");
    *d = e->dims.d[e->dims.n - 1];
  }
  if (t->known) {
    if (e->known && t->dtype != e->dtype)
      return rill_infer_error(ctx, "input Transition (%s) is %s but Emission is %s",
                              rill_infer_in_name(ctx, t_slot, 0), rill_dtype_name(t->dtype),
                              rill_dtype_name(e->dtype));
    bool ok = t->dims.n == 2;
    if (ok && *d >= 0 && t->dims.d[1] >= 0) ok = t->dims.d[1] == *d;
    if (ok && t->dims.d[0] >= 0 && t->dims.d[1] >= 0) ok = t->dims.d[0] == t->dims.d[1] + 2;
    if (!ok)
      return rill_infer_error(ctx, "input Transition (%s) has shape %s, expected [D + 2, D] with "
                              "D = %lld tags", rill_infer_in_name(ctx, t_slot, 0),
                              rill_dims_str(&t->dims, s, sizeof s), (long long)*d);
    if (*d < 0) *d = t->dims.d[1];
  }
  return NULL;
}

static rill_status *linear_chain_crf_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *e = rill_infer_in(ctx, IN_EMISSION, 0);
  const rill_tensor_meta *t = rill_infer_in(ctx, IN_TRANSITION, 0);
  if (!e || !t || !rill_infer_in(ctx, IN_LABEL, 0))
    return rill_infer_error(ctx, "needs inputs Emission, Transition and Label");
  bool padded = rill_infer_in(ctx, IN_LENGTH, 0) != NULL;
  int64_t d;
  RILL_TRY(rill_crf_check_inputs(ctx, IN_EMISSION, IN_TRANSITION, padded, &d));
  rill_tensor_meta *alpha = rill_infer_out(ctx, OUT_ALPHA, 0);
  rill_tensor_meta *eexp = rill_infer_out(ctx, OUT_EMISSION_EXPS, 0);
  rill_tensor_meta *texp = rill_infer_out(ctx, OUT_TRANSITION_EXPS, 0);
  rill_tensor_meta *ll = rill_infer_out(ctx, OUT_LOG_LIKELIHOOD, 0);
  if (!ll) return rill_infer_error(ctx, "needs output LogLikelihood");
  for (size_t k = 0; k < 2; k++) {
    rill_tensor_meta *m = k ? eexp : alpha;
    if (!m) continue;
    if (e->known)
      rill_meta_set(m, e->dtype, &e->dims, 0, -1, -1);
    else
      rill_meta_unknown(m);
  }
  if (texp) {
    if (t->known)
      rill_meta_set(texp, t->dtype, &t->dims, 0, -1, -1);
    else
      rill_meta_unknown(texp);
  }
  if (!e->known) {
    rill_meta_unknown(ll);
    return NULL;
  }
  rill_dims od = {.n = 2, .d = {-1, 1}};
  if (padded) {
    od.d[0] = e->dims.d[0];
  } else {
    const rill_tensor *lt = rill_infer_tensor(ctx, IN_LABEL, 0);
    const rill_tensor *et = rill_infer_tensor(ctx, IN_EMISSION, 0);
    const rill_tensor *seq = lt && lt->lod.nlevels ? lt : et && et->lod.nlevels ? et : NULL;
    if (seq) od.d[0] = (int64_t)seq->lod.levels[0].n - 1;
    else if (lt || et)
      return rill_infer_error(ctx, "input Label (%s) has no LoD and there is no Length: the "
                              "sequences are unknown", rill_infer_in_name(ctx, IN_LABEL, 0));
  }
  rill_meta_set(ll, e->dtype, &od, 0, -1, -1);
  return NULL;
}

/* Paddle's maker: linear_chain_crf_grad(Emission, Transition, Label, Length?, Alpha,
 * EmissionExps, TransitionExps, LogLikelihood@GRAD) -> Emission@GRAD, Transition@GRAD. */
static rill_status *linear_chain_crf_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "linear_chain_crf_grad",
                        RILL_NAMES("Emission", "Transition", "Label", "Length", "Alpha",
                                   "EmissionExps", "TransitionExps"),
                        RILL_NAMES("LogLikelihood"), RILL_NAMES("Emission", "Transition"));
}

const rill_op_schema rill_schema_linear_chain_crf = {
    .type = "linear_chain_crf",
    .doc = "LogLikelihood[i] = log Z_i - score of Label's tags in sequence i under a linear-chain "
           "CRF (Emission scores plus start, end and tag-to-tag Transition scores): the "
           "negative log-likelihood, Paddle 1.x's training cost.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_INFER_READS_LOD,
    .infer = linear_chain_crf_infer,
    .grad = linear_chain_crf_maker,
    .kernel_dtype_slot = IN_EMISSION,
    .dtype_attr = -1,
};

enum { G_EMISSION, G_TRANSITION, G_LABEL, G_LENGTH, G_ALPHA, G_EMISSION_EXPS,
       G_TRANSITION_EXPS, G_DLL };
static const rill_slot_schema grad_inputs[] = {
    [G_EMISSION] = {"Emission", 0, "forward Emission (its shape and LoD)"},
    [G_TRANSITION] = {"Transition", 0, "forward Transition"},
    [G_LABEL] = {"Label", 0, "forward Label"},
    [G_LENGTH] = {"Length", RILL_SLOT_DISPENSABLE, "forward Length"},
    [G_ALPHA] = {"Alpha", 0, "forward Alpha"},
    [G_EMISSION_EXPS] = {"EmissionExps", 0, "forward EmissionExps"},
    [G_TRANSITION_EXPS] = {"TransitionExps", 0, "forward TransitionExps"},
    [G_DLL] = {"LogLikelihood@GRAD", 0, "gradient of LogLikelihood [sequences, 1]"},
};
enum { GO_EMISSION, GO_TRANSITION };
static const rill_slot_schema grad_outputs[] = {
    [GO_EMISSION] = {"Emission@GRAD", RILL_SLOT_DISPENSABLE,
                     "Emission's shape: (tag marginals - the label's one-hot) * the sequence's "
                     "gradient, 0 on padding"},
    [GO_TRANSITION] = {"Transition@GRAD", RILL_SLOT_DISPENSABLE,
                       "expected minus observed start, end and transition counts, weighted"},
};

static rill_status *linear_chain_crf_grad_infer(rill_infer_ctx *ctx) {
  static const size_t need[] = {G_EMISSION, G_TRANSITION, G_LABEL, G_ALPHA, G_EMISSION_EXPS,
                                G_TRANSITION_EXPS, G_DLL};
  for (size_t i = 0; i < RILL_COUNTOF(need); i++)
    if (!rill_infer_in(ctx, need[i], 0))
      return rill_infer_error(ctx, "needs input %s", grad_inputs[need[i]].name);
  int64_t d;
  RILL_TRY(rill_crf_check_inputs(ctx, G_EMISSION, G_TRANSITION, rill_infer_in(ctx, G_LENGTH, 0) != NULL, &d));
  rill_grad_infer_like(ctx, GO_EMISSION, G_EMISSION);
  rill_grad_infer_like(ctx, GO_TRANSITION, G_TRANSITION);
  return NULL;
}

const rill_op_schema rill_schema_linear_chain_crf_grad = {
    .type = "linear_chain_crf_grad",
    .doc = "Emission@GRAD and Transition@GRAD of linear_chain_crf's LogLikelihood, from the "
           "forward Alpha and exponentials and backward vectors it computes.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = linear_chain_crf_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_EMISSION,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(linear_chain_crf);
