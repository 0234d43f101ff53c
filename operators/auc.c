/* auc: the area under the ROC curve from bucketed counts of the predicted probability,
 * kept across runs in StatPos/StatNeg (Fluid 1.x's layers.auc). */
#include "operators/op_util.h"

enum { AUC_PREDICT, AUC_LABEL, AUC_STAT_POS, AUC_STAT_NEG };
static const rill_slot_schema inputs[] = {
    [AUC_PREDICT] = {"Predict", RILL_SLOT_NO_GRAD,
                     "float [N, W]: column W - 1 is the probability of class 1"},
    [AUC_LABEL] = {"Label", RILL_SLOT_NO_GRAD, "int64 or int32 [N, 1]: nonzero is positive"},
    [AUC_STAT_POS] = {"StatPos", RILL_SLOT_NO_GRAD, "int64 bucket counts of the positives"},
    [AUC_STAT_NEG] = {"StatNeg", RILL_SLOT_NO_GRAD, "int64 bucket counts of the negatives"},
};
static const rill_slot_schema outputs[] = {
    {"AUC", 0, "float64 [1]: the area under the curve of the counts"},
    {"StatPosOut", 0, "StatPos with the batch counted (often StatPos itself)"},
    {"StatNegOut", 0, "StatNeg with the batch counted (often StatNeg itself)"},
};
static const rill_attr_schema attrs[] = {
    {"curve", RILL_ATTR_STRING, 0, RILL_DEF_STRING("ROC"),
     "ROC or PR: both give the ROC area, as in Paddle 1.8"},
    {"num_thresholds", RILL_ATTR_INT, 0, RILL_DEF_INT((2 << 12) - 1),
     "buckets - 1: a probability p falls in bucket (int)(p * num_thresholds)"},
    {"slide_steps", RILL_ATTR_INT, 0, RILL_DEF_INT(1),
     "0: the counts accumulate forever, stats [num_thresholds + 1]; k > 0: over the last k "
     "runs, stats [(k + 1) * (num_thresholds + 1) + 1] (k windows, their sum, a run count)"},
};

static rill_status *auc_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *p = rill_infer_in(ctx, AUC_PREDICT, 0), *l = rill_infer_in(ctx, AUC_LABEL, 0),
                         *sp = rill_infer_in(ctx, AUC_STAT_POS, 0), *sn = rill_infer_in(ctx, AUC_STAT_NEG, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0), *spo = rill_infer_out(ctx, 1, 0),
                   *sno = rill_infer_out(ctx, 2, 0);
  if (!p || !l || !sp || !sn) return rill_infer_error(ctx, "needs inputs Predict, Label, StatPos and StatNeg");
  if (!out || !spo || !sno) return rill_infer_error(ctx, "needs outputs AUC, StatPosOut and StatNegOut");
  rill_dims one = {.n = 1, .d = {1}};
  rill_meta_set(out, RILL_DTYPE_FP64, &one, 0, -1, -1);
  if (sp->known) rill_meta_set(spo, sp->dtype, &sp->dims, 0, -1, -1);
  else rill_meta_unknown(spo);
  if (sn->known) rill_meta_set(sno, sn->dtype, &sn->dims, 0, -1, -1);
  else rill_meta_unknown(sno);
  if (p->known && p->dtype != RILL_DTYPE_FP32 && p->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Predict (%s) is %s; it must be float32 or float64",
                            rill_infer_in_name(ctx, AUC_PREDICT, 0), rill_dtype_name(p->dtype));
  if (l->known && l->dtype != RILL_DTYPE_INT64 && l->dtype != RILL_DTYPE_INT32)
    return rill_infer_error(ctx, "input Label (%s) is %s; it must be int64 or int32",
                            rill_infer_in_name(ctx, AUC_LABEL, 0), rill_dtype_name(l->dtype));
  return NULL;
}

const rill_op_schema rill_schema_auc = {
    .type = "auc",
    .doc = "AUC = the area under the ROC curve of the bucket counts StatPos/StatNeg, after "
           "adding this batch's Predict/Label to them (over the last slide_steps runs, or all).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = auc_infer,
    .grad = NULL,
    .kernel_dtype_slot = AUC_PREDICT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(auc);
