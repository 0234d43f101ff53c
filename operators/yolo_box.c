/* yolo_box: decodes one YOLOv3 head X [N, an_num * (5 + class_num), H, W] into boxes in
 * image pixels and per-class scores. Each anchor a and cell (k, l) gives one box
 * (index a * H * W + k * W + l); boxes whose confidence is below conf_thresh are left
 * all zero, boxes and scores alike. */
#include "operators/op_util.h"

enum { IN_X, IN_IMG };
enum { OUT_BOXES, OUT_SCORES };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "head output [N, C, H, W], C = an_num * (5 + class_num) (+ an_num with "
                      "iou_aware)"},
    [IN_IMG] = {"ImgSize", RILL_SLOT_NO_GRAD, "int32 [N, 2]: each image's height and width"},
};
static const rill_slot_schema outputs[] = {
    [OUT_BOXES] = {"Boxes", 0, "[N, an_num * H * W, 4]: xmin, ymin, xmax, ymax in pixels"},
    [OUT_SCORES] = {"Scores", 0, "[N, an_num * H * W, class_num]: confidence * class prob"},
};
static const rill_attr_schema attrs[] = {
    {"anchors", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                   "anchor (width, height) pairs in input pixels"},
    {"class_num", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(1),
                   "number of classes"},
    {"conf_thresh", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.01f),
                "boxes with a lower confidence are zero"},
    {"downsample_ratio", RILL_ATTR_INT, 0, RILL_DEF_INT(32),
                "input size / feature size"},
    {"clip_bbox", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
                "clamp boxes to [0, width - 1] x [0, height - 1]"},
    {"scale_x_y", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f),
                 "scales the centre sigmoid around the cell centre"},
    {"iou_aware", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
               "X starts with an_num IoU channels that temper the confidence"},
    {"iou_aware_factor", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f),
                 "confidence = conf^(1 - f) * iou^f with iou_aware"},
};

static rill_status *yolo_box_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *img = rill_infer_in(ctx, IN_IMG, 0);
  rill_tensor_meta *boxes = rill_infer_out(ctx, OUT_BOXES, 0), *scores = rill_infer_out(ctx, OUT_SCORES, 0);
  if (!x || !img || !boxes || !scores)
    return rill_infer_error(ctx, "needs inputs X and ImgSize and outputs Boxes and Scores");
  size_t na = ctx->attrs[RILL_YOLO_BOX_ATTR_ANCHORS].n;
  int32_t cls = ctx->attrs[RILL_YOLO_BOX_ATTR_CLASS_NUM].v.i;
  if (na == 0 || na % 2)
    return rill_infer_error(ctx, "attribute anchors has %zu values, expected (width, height) "
                            "pairs", na);
  if (cls <= 0) return rill_infer_error(ctx, "attribute class_num is %d, must be positive", (int)cls);
  if (ctx->attrs[RILL_YOLO_BOX_ATTR_DOWNSAMPLE_RATIO].v.i <= 0)
    return rill_infer_error(ctx, "attribute downsample_ratio is %d, must be positive",
                            (int)ctx->attrs[RILL_YOLO_BOX_ATTR_DOWNSAMPLE_RATIO].v.i);
  if (!x->known || !img->known) {
    rill_meta_unknown(boxes);
    rill_meta_unknown(scores);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_X, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  int64_t an = (int64_t)na / 2, per = 5 + (int64_t)cls + (ctx->attrs[RILL_YOLO_BOX_ATTR_IOU_AWARE].v.b ? 1 : 0);
  if (x->dims.n != 4 || (x->dims.d[1] >= 0 && x->dims.d[1] != an * per))
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, %lld, H, W] (%lld "
                            "anchors times %lld values)", xn, rill_dims_str(&x->dims, s, sizeof s),
                            (long long)(an * per), (long long)an, (long long)per);
  if ((img->dtype != RILL_DTYPE_INT32 && img->dtype != RILL_DTYPE_INT64) || img->dims.n != 2 ||
      (img->dims.d[1] >= 0 && img->dims.d[1] != 2))
    return rill_infer_error(ctx, "input ImgSize (%s) is %s %s, expected int32 [N, 2]",
                            rill_infer_in_name(ctx, IN_IMG, 0), rill_dtype_name(img->dtype),
                            rill_dims_str(&img->dims, s, sizeof s));
  int64_t h = x->dims.d[2], w = x->dims.d[3];
  int64_t nb = h < 0 || w < 0 ? -1 : h * w * an;
  rill_dims bd = {.n = 3, .d = {x->dims.d[0], nb, 4}}, sd = {.n = 3, .d = {x->dims.d[0], nb, cls}};
  rill_meta_set(boxes, x->dtype, &bd, 0, -1, -1);
  rill_meta_set(scores, x->dtype, &sd, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_yolo_box = {
    .type = "yolo_box",
    .doc = "Decodes a YOLOv3 head into boxes in image pixels and per-class scores.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_NO_GRADIENT,
    .infer = yolo_box_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(yolo_box);
