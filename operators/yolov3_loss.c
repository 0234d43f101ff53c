/* yolov3_loss: YOLOv3's training loss of one head X [N, mask_num * (5 + class_num), H, H]
 * against GTBox [N, B, 4] (centre x, y, width, height, normalised), GTLabel int32 [N, B]
 * and optional GTScore [N, B] (mixup weights, default 1). Per image:
 *   - each predicted box whose best IoU with a valid ground truth (width and height
 *     >= 1e-6) exceeds ignore_thresh has its objectness ignored (mask -1);
 *   - each valid ground truth picks the anchor (of all `anchors`) whose shape fits it
 *     best; when that anchor is in anchor_mask, the cell holding the box centre pays a
 *     location loss (sigmoid cross entropy on x, y, L1 on log w, h, weighted
 *     (2 - w * h) * score), a class loss (sigmoid cross entropy; use_label_smooth moves
 *     min(1 / class_num, 1 / 40) of each target) and is a positive (mask = score);
 *   - every cell pays the objectness loss: positives against 1 weighted by their score,
 *     the others not ignored against 0.
 * Loss is [N]; ObjectnessMask [N, mask_num, H, H] and GTMatchMask int32 [N, B] (the mask
 * index of each ground truth's anchor, -1 none) feed yolov3_loss_grad. */
#include "operators/op_util.h"

enum { IN_X, IN_GTBOX, IN_GTLABEL, IN_GTSCORE };
enum { OUT_LOSS, OUT_OBJ, OUT_MATCH };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "head output [N, mask_num * (5 + class_num), H, H]"},
    [IN_GTBOX] = {"GTBox", RILL_SLOT_NO_GRAD, "[N, B, 4] centre x, y, width, height in [0, 1]"},
    [IN_GTLABEL] = {"GTLabel", RILL_SLOT_NO_GRAD, "int32 [N, B] class of each box"},
    [IN_GTSCORE] = {"GTScore", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                    "[N, B] weight of each box (default 1)"},
};
static const rill_slot_schema outputs[] = {
    [OUT_LOSS] = {"Loss", 0, "[N] loss per image"},
    [OUT_OBJ] = {"ObjectnessMask", RILL_SLOT_INTERMEDIATE,
                 "[N, mask_num, H, H]: score of positives, -1 ignored, 0 negatives"},
    [OUT_MATCH] = {"GTMatchMask", RILL_SLOT_INTERMEDIATE,
                   "int32 [N, B]: anchor_mask index of each box's anchor, -1 none"},
};
static const rill_attr_schema attrs[] = {
    {"anchors", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "anchor (width, height) pairs in input pixels"},
    {"anchor_mask", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "the anchors this head predicts"},
    {"class_num", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(1), "number of classes"},
    {"ignore_thresh", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.7f),
     "predictions overlapping a ground truth more are not negatives"},
    {"downsample_ratio", RILL_ATTR_INT, 0, RILL_DEF_INT(32), "input size / H"},
    {"use_label_smooth", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "class targets 1 - s and s, s = min(1 / class_num, 1 / 40)"},
    {"scale_x_y", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f),
     "scales the predicted centre's sigmoid around the cell centre (for the IoU test)"},
};

static rill_status *yolov3_check(rill_infer_ctx *ctx, const rill_tensor_meta *x) {
  const rill_attr_value *an = &ctx->attrs[RILL_YOLOV3_LOSS_ATTR_ANCHORS];
  const rill_attr_value *mask = &ctx->attrs[RILL_YOLOV3_LOSS_ATTR_ANCHOR_MASK];
  int32_t cls = ctx->attrs[RILL_YOLOV3_LOSS_ATTR_CLASS_NUM].v.i;
  if (an->n == 0 || an->n % 2)
    return rill_infer_error(ctx, "attribute anchors has %zu values, expected (width, height) "
                            "pairs", an->n);
  if (mask->n == 0) return rill_infer_error(ctx, "attribute anchor_mask is empty");
  for (size_t i = 0; i < mask->n; i++)
    if (mask->list.ints[i] < 0 || (size_t)mask->list.ints[i] >= an->n / 2)
      return rill_infer_error(ctx, "attribute anchor_mask[%zu] is %d, outside the %zu anchors",
                              i, (int)mask->list.ints[i], an->n / 2);
  if (cls <= 0) return rill_infer_error(ctx, "attribute class_num is %d, must be positive", (int)cls);
  if (ctx->attrs[RILL_YOLOV3_LOSS_ATTR_DOWNSAMPLE_RATIO].v.i <= 0)
    return rill_infer_error(ctx, "attribute downsample_ratio must be positive");
  if (!x) return NULL;
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_X, 0);
  int64_t c = (int64_t)mask->n * (5 + cls);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 4 || (x->dims.d[1] >= 0 && x->dims.d[1] != c) ||
      (x->dims.d[2] >= 0 && x->dims.d[3] >= 0 && x->dims.d[2] != x->dims.d[3]))
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, %lld, H, H] for %zu "
                            "masked anchors and %d classes", xn, rill_dims_str(&x->dims, s, sizeof s),
                            (long long)c, mask->n, (int)cls);
  return NULL;
}

static rill_status *yolov3_loss_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *gb = rill_infer_in(ctx, IN_GTBOX, 0);
  const rill_tensor_meta *gl = rill_infer_in(ctx, IN_GTLABEL, 0), *gs = rill_infer_in(ctx, IN_GTSCORE, 0);
  rill_tensor_meta *loss = rill_infer_out(ctx, OUT_LOSS, 0), *obj = rill_infer_out(ctx, OUT_OBJ, 0);
  rill_tensor_meta *match = rill_infer_out(ctx, OUT_MATCH, 0);
  if (!x || !gb || !gl || !loss)
    return rill_infer_error(ctx, "needs inputs X, GTBox and GTLabel and output Loss");
  bool known = x->known && gb->known && gl->known && (!gs || gs->known);
  RILL_TRY(yolov3_check(ctx, known ? x : NULL));
  if (!known) {
    rill_meta_unknown(loss);
    if (obj) rill_meta_unknown(obj);
    if (match) rill_meta_unknown(match);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  if (gb->dtype != x->dtype || gb->dims.n != 3 || (gb->dims.d[2] >= 0 && gb->dims.d[2] != 4))
    return rill_infer_error(ctx, "input GTBox (%s) is %s %s, expected %s [N, B, 4]",
                            rill_infer_in_name(ctx, IN_GTBOX, 0), rill_dtype_name(gb->dtype),
                            rill_dims_str(&gb->dims, s, sizeof s), rill_dtype_name(x->dtype));
  if (gl->dtype != RILL_DTYPE_INT32 || gl->dims.n != 2)
    return rill_infer_error(ctx, "input GTLabel (%s) is %s %s, expected int32 [N, B]",
                            rill_infer_in_name(ctx, IN_GTLABEL, 0), rill_dtype_name(gl->dtype),
                            rill_dims_str(&gl->dims, s, sizeof s));
  if (gs && (gs->dtype != x->dtype || gs->dims.n != 2))
    return rill_infer_error(ctx, "input GTScore (%s) is %s %s, expected %s [N, B]",
                            rill_infer_in_name(ctx, IN_GTSCORE, 0), rill_dtype_name(gs->dtype),
                            rill_dims_str(&gs->dims, s, sizeof s), rill_dtype_name(x->dtype));
  int64_t n = x->dims.d[0], b = gb->dims.d[1];
  rill_dims ld = {.n = 1, .d = {n}};
  rill_meta_set(loss, x->dtype, &ld, 0, -1, -1);
  if (obj) {
    rill_dims od = {.n = 4, .d = {n, (int64_t)ctx->attrs[RILL_YOLOV3_LOSS_ATTR_ANCHOR_MASK].n,
                                  x->dims.d[2], x->dims.d[3]}};
    rill_meta_set(obj, x->dtype, &od, 0, -1, -1);
  }
  if (match) {
    rill_dims md = {.n = 2, .d = {n, b}};
    rill_meta_set(match, RILL_DTYPE_INT32, &md, 0, -1, -1);
  }
  return NULL;
}

static rill_status *yolov3_loss_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "GTBox", "GTLabel", "GTScore", "ObjectnessMask",
                                    "GTMatchMask"};
  static const char *const gout[] = {"Loss"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "yolov3_loss_grad", fwd, RILL_COUNTOF(fwd), gout,
                        RILL_COUNTOF(gout), gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_yolov3_loss = {
    .type = "yolov3_loss",
    .doc = "YOLOv3's location, class and objectness loss of one detection head.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = yolov3_loss_infer,
    .grad = yolov3_loss_grad_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"GTBox", 0, "forward GTBox"},
    {"GTLabel", 0, "forward GTLabel"},
    {"GTScore", RILL_SLOT_DISPENSABLE, "forward GTScore"},
    {"ObjectnessMask", 0, "forward ObjectnessMask"},
    {"GTMatchMask", 0, "forward GTMatchMask"},
    {"Loss@GRAD", 0, "gradient of Loss [N]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
};

static rill_status *yolov3_loss_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x) return rill_infer_error(ctx, "needs input X");
  RILL_TRY(yolov3_check(ctx, x->known ? x : NULL));
  if (!dx) return NULL;
  if (!x->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_meta_set(dx, x->dtype, &x->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_yolov3_loss_grad = {
    .type = "yolov3_loss_grad",
    .doc = "Gradient of yolov3_loss with respect to X.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = yolov3_loss_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(yolov3_loss);
