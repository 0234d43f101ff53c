/* detection_map: mean average precision of detections against ground-truth boxes
 * (Fluid 1.x's layers.detection_map and the DetectionMAP metric/evaluator). Each
 * detection is marked a true or a false positive per class; AccumPosCount,
 * AccumTruePos and AccumFalsePos carry the ground-truth counts and the marked scores so
 * that, fed back through PosCount/TruePos/FalsePos with HasState = 1, MAP covers every
 * batch seen. The row counts of the accumulated states depend on the data: the kernel
 * sizes them. */
#include "operators/op_util.h"

enum { IN_DETECT, IN_LABEL, IN_HAS_STATE, IN_POS_COUNT, IN_TRUE_POS, IN_FALSE_POS };
enum { OUT_POS_COUNT, OUT_TRUE_POS, OUT_FALSE_POS, OUT_MAP };

static const rill_slot_schema inputs[] = {
    [IN_DETECT] = {"DetectRes", RILL_SLOT_NO_GRAD,
                   "[M, 6] with a one-level LoD per image: label, score, xmin, ymin, xmax, ymax"},
    [IN_LABEL] = {"Label", RILL_SLOT_NO_GRAD,
                  "[N, 6] (label, difficult, xmin, ymin, xmax, ymax) or [N, 5] (no difficult "
                  "flag), with a one-level LoD per image"},
    [IN_HAS_STATE] = {"HasState", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                      "int32 [1]: nonzero adds the batch to PosCount/TruePos/FalsePos"},
    [IN_POS_COUNT] = {"PosCount", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                      "int32 [class_num, 1]: ground-truth boxes counted so far per class"},
    [IN_TRUE_POS] = {"TruePos", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                     "[K, 2] (score, flag) rows, LoD by class: true positives so far"},
    [IN_FALSE_POS] = {"FalsePos", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                      "[K, 2] (score, flag) rows, LoD by class: false positives so far"},
};
static const rill_slot_schema outputs[] = {
    [OUT_POS_COUNT] = {"AccumPosCount", 0, "int32 [class_num, 1]: PosCount with the batch"},
    [OUT_TRUE_POS] = {"AccumTruePos", 0, "TruePos with the batch, LoD of class_num + 1"},
    [OUT_FALSE_POS] = {"AccumFalsePos", 0, "FalsePos with the batch, LoD of class_num + 1"},
    [OUT_MAP] = {"MAP", 0, "[1]: the mean over classes of the average precision"},
};
static const rill_attr_schema attrs[] = {
    {"class_num", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
     "classes, background included"},
    {"background_label", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
     "as in Paddle 1.8, a class whose ground-truth count equals it is left out of the mean"},
    {"overlap_threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f),
     "a detection matches a ground-truth box when their IoU is above it"},
    {"evaluate_difficult", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "false: difficult boxes neither count as positives nor make a detection false"},
    {"ap_type", RILL_ATTR_STRING, 0, RILL_DEF_STRING("integral"),
     "integral (area under precision-recall) or 11point (VOC2007)"},
};

static rill_status *detection_map_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *det = rill_infer_in(ctx, IN_DETECT, 0), *lab = rill_infer_in(ctx, IN_LABEL, 0);
  rill_tensor_meta *pc = rill_infer_out(ctx, OUT_POS_COUNT, 0), *tp = rill_infer_out(ctx, OUT_TRUE_POS, 0),
                   *fp = rill_infer_out(ctx, OUT_FALSE_POS, 0), *map = rill_infer_out(ctx, OUT_MAP, 0);
  if (!det || !lab)
    return rill_infer_error(ctx, "needs inputs DetectRes and Label");
  if (!pc || !tp || !fp || !map)
    return rill_infer_error(ctx, "needs outputs AccumPosCount, AccumTruePos, AccumFalsePos and MAP");
  char s[RILL_DIMS_STR_MAX];
  if (det->known && (det->dims.n != 2 || (det->dims.d[1] >= 0 && det->dims.d[1] != 6)))
    return rill_infer_error(ctx, "input DetectRes (%s) has shape %s, expected [M, 6]",
                            rill_infer_in_name(ctx, IN_DETECT, 0), rill_dims_str(&det->dims, s, sizeof s));
  if (lab->known && (lab->dims.n != 2 || (lab->dims.d[1] >= 0 && lab->dims.d[1] != 6 && lab->dims.d[1] != 5)))
    return rill_infer_error(ctx, "input Label (%s) has shape %s, expected [N, 6] or [N, 5]",
                            rill_infer_in_name(ctx, IN_LABEL, 0), rill_dims_str(&lab->dims, s, sizeof s));
  if (det->known && det->dtype != RILL_DTYPE_FP32 && det->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input DetectRes (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, IN_DETECT, 0), rill_dtype_name(det->dtype));
  int64_t classes = ctx->attrs[RILL_DETECTION_MAP_ATTR_CLASS_NUM].v.i;
  rill_dims cd = {.n = 2, .d = {classes, 1}}, sd = {.n = 2, .d = {-1, 2}}, one = {.n = 1, .d = {1}};
  rill_meta_set(pc, RILL_DTYPE_INT32, &cd, 0, -1, -1);
  if (!det->known) {
    rill_meta_unknown(tp);
    rill_meta_unknown(fp);
    rill_meta_unknown(map);
    return NULL;
  }
  rill_meta_set(tp, det->dtype, &sd, 1, -1, -1);
  rill_meta_set(fp, det->dtype, &sd, 1, -1, -1);
  rill_meta_set(map, det->dtype, &one, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_detection_map = {
    .type = "detection_map",
    .doc = "MAP = mean average precision of DetectRes against Label (integral or 11-point), "
           "over this batch or, with HasState, every batch accumulated in the states.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = detection_map_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_DETECT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(detection_map);
