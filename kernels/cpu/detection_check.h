/* The checks of yolo_box's and box_coder's inputs that their kernels make on every place
 * (the CPU's, kernels/cpu/yolo_box.c and box_coder.c, and the device's,
 * kernels/cuda/detection.c), repeated from the inference where memory safety depends on
 * them. Only dims, dtypes and attributes are read: never an element, which may be in
 * device memory. */
#ifndef RILL_KERNELS_CPU_DETECTION_CHECK_H
#define RILL_KERNELS_CPU_DETECTION_CHECK_H

#include <string.h>

#include "kernels/cpu/box_decode.h"
#include "kernels/cpu/kernels.h"

/* yolo_box: X [N, an * (5 + class_num) (+ an with iou_aware), H, W], ImgSize int32 or
 * int64 [N, 2], Boxes [N, an * H * W, 4], Scores [N, an * H * W, class_num]; the
 * image sizes ImgSize holds and the attributes as g. Sets *img to ImgSize. */
static inline rill_status *rill_yolo_box_check(rill_kernel_ctx *ctx, const rill_tensor *x, rill_tensor *boxes,
                                               rill_tensor *scores, rill_tensor **img, rill_yolo_geom *g) {
  *img = rill_kin(ctx, RILL_YOLO_BOX_IN_IMG_SIZE, 0);
  const rill_tensor *is = *img;
  int64_t an = (int64_t)ctx->attrs[RILL_YOLO_BOX_ATTR_ANCHORS].n / 2, cls = ctx->attrs[RILL_YOLO_BOX_ATTR_CLASS_NUM].v.i;
  bool iou_aware = ctx->attrs[RILL_YOLO_BOX_ATTR_IOU_AWARE].v.b;
  if (x->dims.n != 4 || !is || !rill_tensor_is_set(is) || (is->dtype != RILL_DTYPE_INT32 && is->dtype != RILL_DTYPE_INT64) ||
      rill_tensor_numel(is) != 2 * x->dims.d[0] || an < 1 || cls < 1 || x->dims.d[1] != an * (5 + cls + (iou_aware ? 1 : 0)))
    return rill_kernel_error(ctx, "inputs X (%s) and ImgSize (%s) do not fit %lld anchors, %lld classes and "
                             "iou_aware %d", rill_kin_name(ctx, RILL_YOLO_BOX_IN_X, 0),
                             rill_kin_name(ctx, RILL_YOLO_BOX_IN_IMG_SIZE, 0), (long long)an, (long long)cls,
                             (int)iou_aware);
  int64_t n = x->dims.d[0], h = x->dims.d[2], w = x->dims.d[3];
  rill_dims bd = {.n = 3, .d = {n, an * h * w, 4}}, sd = {.n = 3, .d = {n, an * h * w, cls}};
  RILL_TRY(rill_kout_check_dims(ctx, RILL_YOLO_BOX_OUT_BOXES, 0, boxes, &bd));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_YOLO_BOX_OUT_SCORES, 0, scores, &sd));
  int64_t down = ctx->attrs[RILL_YOLO_BOX_ATTR_DOWNSAMPLE_RATIO].v.i;
  float scale = ctx->attrs[RILL_YOLO_BOX_ATTR_SCALE_X_Y].v.f;
  *g = (rill_yolo_geom){.h = h,
                        .w = w,
                        .in_h = down * h,
                        .in_w = down * w,
                        .classes = cls,
                        .conf_thresh = ctx->attrs[RILL_YOLO_BOX_ATTR_CONF_THRESH].v.f,
                        .scale = scale,
                        .bias = -0.5f * (scale - 1.f),
                        .iou_factor = ctx->attrs[RILL_YOLO_BOX_ATTR_IOU_AWARE_FACTOR].v.f,
                        .iou_aware = iou_aware,
                        .clip = ctx->attrs[RILL_YOLO_BOX_ATTR_CLIP_BBOX].v.b};
  return NULL;
}

/* box_coder's geometry: OutputBox [rows, cols, 4], PriorBox [m, 4]. */
typedef struct rill_box_coder_geom {
  bool encode;
  int axis;      /* decode: 0, prior j of column j; 1, prior i of row i */
  int64_t m, rows, cols;
  bool var_attr; /* no PriorBoxVar and `variance` holds 4 values */
} rill_box_coder_geom;

/* box_coder: PriorBox [M, 4], PriorBoxVar absent or PriorBox's shape, TargetBox [N, 4]
 * (encode: OutputBox [N, M, 4]) or [N, M, 4] / [M, N, 4] by axis (decode: OutputBox
 * TargetBox's shape), at most one LoD level. */
static inline rill_status *rill_box_coder_check(rill_kernel_ctx *ctx, const rill_tensor *prior,
                                                const rill_tensor *pvar, const rill_tensor *target,
                                                rill_tensor *out, rill_box_coder_geom *g) {
  const char *code = ctx->attrs[RILL_BOX_CODER_ATTR_CODE_TYPE].v.s;
  *g = (rill_box_coder_geom){0};
  g->encode = strcmp(code ? code : "", "encode_center_size") == 0;
  g->axis = ctx->attrs[RILL_BOX_CODER_ATTR_AXIS].v.i;
  g->var_attr = !pvar && ctx->attrs[RILL_BOX_CODER_ATTR_VARIANCE].n == 4;
  if (target->lod.nlevels > 1)
    return rill_kernel_error(ctx, "input TargetBox (%s) has %zu LoD levels, at most 1 is supported",
                             rill_kin_name(ctx, RILL_BOX_CODER_IN_TARGET_BOX, 0), target->lod.nlevels);
  bool ok = prior->dims.n == 2 && prior->dims.d[1] == 4 && (!pvar || rill_dims_equal(&pvar->dims, &prior->dims));
  g->m = ok ? prior->dims.d[0] : 0;
  if (ok)
    ok = g->encode ? target->dims.n == 2 && target->dims.d[1] == 4
                   : target->dims.n == 3 && target->dims.d[2] == 4 && target->dims.d[g->axis == 0 ? 1 : 0] == g->m;
  if (!ok)
    return rill_kernel_error(ctx, "inputs PriorBox (%s), PriorBoxVar and TargetBox (%s) have shapes that do not "
                             "fit %s with axis %d", rill_kin_name(ctx, RILL_BOX_CODER_IN_PRIOR_BOX, 0),
                             rill_kin_name(ctx, RILL_BOX_CODER_IN_TARGET_BOX, 0),
                             g->encode ? "encode_center_size" : "decode_center_size", g->axis);
  g->rows = target->dims.d[0];
  g->cols = g->encode ? g->m : target->dims.d[1];
  rill_dims want = {.n = 3, .d = {g->rows, g->cols, 4}};
  return rill_kout_check_dims(ctx, RILL_BOX_CODER_OUT_OUTPUT_BOX, 0, out, &want);
}

#endif
