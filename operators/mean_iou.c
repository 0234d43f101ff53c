/* mean_iou: per-class correct and wrong counts of integer predictions against labels
 * (a match counts for the class; a mismatch counts as wrong for both the label's and the
 * prediction's class), plus the counts and mean IOUs of earlier batches given as
 * InCorrects / InWrongs / InMeanIou; OutMeanIou adds the mean over the classes that
 * occur of correct / (correct + wrong). No gradient. */
#include "operators/op_util.h"

enum { MIOU_IN_PRED, MIOU_IN_LABEL, MIOU_IN_WRONGS, MIOU_IN_CORRECTS, MIOU_IN_MEAN };

static const rill_slot_schema inputs[] = {
    [MIOU_IN_PRED] = {"Predictions", RILL_SLOT_NO_GRAD, "int32 / int64 class ids, any shape"},
    [MIOU_IN_LABEL] = {"Labels", RILL_SLOT_NO_GRAD, "int32 / int64 class ids, Predictions' size"},
    [MIOU_IN_WRONGS] = {"InWrongs", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                        "int32 [num_classes] wrong counts to add"},
    [MIOU_IN_CORRECTS] = {"InCorrects",
                          RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                          "int32 [num_classes] correct counts to add"},
    [MIOU_IN_MEAN] = {"InMeanIou", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                      "float32 [1] mean IOUs to add"},
};
static const rill_slot_schema outputs[] = {
    {"OutMeanIou", 0, "float32 [1]"},
    {"OutWrong", 0, "int32 [num_classes]"},
    {"OutCorrect", 0, "int32 [num_classes]"},
};
static const rill_attr_schema attrs[] = {
    {"num_classes", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INT),
     "number of classes (ids in [0, num_classes))"},
};

static rill_status *mean_iou_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *p = rill_infer_in(ctx, MIOU_IN_PRED, 0), *l = rill_infer_in(ctx, MIOU_IN_LABEL, 0);
  if (!p || !l) return rill_infer_error(ctx, "needs inputs Predictions and Labels");
  int32_t k = ctx->attrs[0].v.i;
  if (k < 1) return rill_infer_error(ctx, "attribute num_classes is %d, must be positive", (int)k);
  for (int s = 0; s < 2; s++) {
    const rill_tensor_meta *m = s ? l : p;
    if (m->known && m->dtype != RILL_DTYPE_INT32 && m->dtype != RILL_DTYPE_INT64)
      return rill_infer_error(ctx, "input %s (%s) is %s, expected int32 or int64",
                              s ? "Labels" : "Predictions", rill_infer_in_name(ctx, (size_t)s, 0),
                              rill_dtype_name(m->dtype));
  }
  rill_dims one = {1, {1}}, kd = {1, {k}};
  rill_tensor_meta *o;
  if ((o = rill_infer_out(ctx, 0, 0))) rill_meta_set(o, RILL_DTYPE_FP32, &one, 0, -1, -1);
  if ((o = rill_infer_out(ctx, 1, 0))) rill_meta_set(o, RILL_DTYPE_INT32, &kd, 0, -1, -1);
  if ((o = rill_infer_out(ctx, 2, 0))) rill_meta_set(o, RILL_DTYPE_INT32, &kd, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_mean_iou = {
    .type = "mean_iou",
    .doc = "Mean intersection-over-union of class ids, with running counts.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = mean_iou_infer,
    .kernel_dtype_slot = MIOU_IN_PRED,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(mean_iou);
