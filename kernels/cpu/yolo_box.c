/* yolo_box CPU kernels, following Paddle's arithmetic (sigmoids and exponentials in T,
 * image sizes as integers). */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernels.h"


#define YOLO_BOX(T, DT, EXP, POW, NAME)                                                        \
  static inline T NAME##_sig(T v) { return (T)1 / ((T)1 + EXP(-v)); }                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *img = rill_kin(ctx, 1, 0), *bo = NULL, *so = NULL;                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &bo));                                              \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &so));                                              \
    const int32_t *anchors = ctx->attrs[RILL_YOLO_BOX_ATTR_ANCHORS].list.ints;                 \
    int64_t an = (int64_t)ctx->attrs[RILL_YOLO_BOX_ATTR_ANCHORS].n / 2, cls = ctx->attrs[RILL_YOLO_BOX_ATTR_CLASS_NUM].v.i;        \
    bool iou_aware = ctx->attrs[RILL_YOLO_BOX_ATTR_IOU_AWARE].v.b;                             \
    if (x->dims.n != 4 || !img || !rill_tensor_is_set(img) ||                                  \
        (img->dtype != RILL_DTYPE_INT32 && img->dtype != RILL_DTYPE_INT64) ||                  \
        rill_tensor_numel(img) != 2 * x->dims.d[0] || an < 1 || cls < 1 ||                     \
        x->dims.d[1] != an * (5 + cls + (iou_aware ? 1 : 0)))                                  \
      return rill_kernel_error(ctx, "inputs X (%s) and ImgSize (%s) do not fit %lld anchors, " \
                               "%lld classes and iou_aware %d", rill_kin_name(ctx, 0, 0),      \
                               rill_kin_name(ctx, 1, 0), (long long)an, (long long)cls,        \
                               (int)iou_aware);                                                \
    int64_t n = x->dims.d[0], h = x->dims.d[2], w = x->dims.d[3], stride = h * w;              \
    int64_t nb = an * stride, an_stride = (cls + 5) * stride;                                  \
    rill_dims bd = {.n = 3, .d = {n, nb, 4}}, sd = {.n = 3, .d = {n, nb, cls}};                \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, bo, &bd));                                       \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, so, &sd));                                       \
    int64_t down = ctx->attrs[RILL_YOLO_BOX_ATTR_DOWNSAMPLE_RATIO].v.i, in_h = down * h, in_w = down * w;                   \
    float conf_thresh = ctx->attrs[RILL_YOLO_BOX_ATTR_CONF_THRESH].v.f, scale = ctx->attrs[RILL_YOLO_BOX_ATTR_SCALE_X_Y].v.f;               \
    float bias = -0.5f * (scale - 1.f), f = ctx->attrs[RILL_YOLO_BOX_ATTR_IOU_AWARE_FACTOR].v.f;                           \
    bool clip = ctx->attrs[RILL_YOLO_BOX_ATTR_CLIP_BBOX].v.b;                                  \
    const T *xp = rill_tensor_ptr(x);                                                          \
    T *bp = rill_tensor_ptr(bo), *sp = rill_tensor_ptr(so);                                    \
    memset(bp, 0, (size_t)(n * nb * 4) * sizeof(T));                                           \
    memset(sp, 0, (size_t)(n * nb * cls) * sizeof(T));                                         \
    for (int64_t i = 0; i < n; i++) {                                                          \
      int64_t ih, iw;                                                                          \
      if (img->dtype == RILL_DTYPE_INT32) {                                                    \
        ih = ((const int32_t *)rill_tensor_ptr(img))[2 * i];                                   \
        iw = ((const int32_t *)rill_tensor_ptr(img))[2 * i + 1];                               \
      } else {                                                                                 \
        ih = ((const int64_t *)rill_tensor_ptr(img))[2 * i];                                   \
        iw = ((const int64_t *)rill_tensor_ptr(img))[2 * i + 1];                               \
      }                                                                                        \
      /* with iou_aware the an_num IoU channels come first in each sample */                   \
      const T *xi = xp + i * (an * an_stride + (iou_aware ? nb : 0));                          \
      const T *xa0 = xi + (iou_aware ? nb : 0);                                                \
      for (int64_t a = 0; a < an; a++)                                                         \
        for (int64_t k = 0; k < h; k++)                                                        \
          for (int64_t l = 0; l < w; l++) {                                                    \
            const T *e = xa0 + a * an_stride + k * w + l; /* entry c at e[c * stride] */       \
            T conf = NAME##_sig(e[4 * stride]);                                                \
            if (iou_aware) {                                                                   \
              T iou = NAME##_sig(xi[a * stride + k * w + l]);                                  \
              conf = POW(conf, (T)(1. - f)) * POW(iou, (T)f);                                  \
            }                                                                                  \
            if (conf < conf_thresh) continue;                                                  \
            T cx = ((T)l + NAME##_sig(e[0]) * scale + bias) * (T)iw / (T)w;                    \
            T cy = ((T)k + NAME##_sig(e[stride]) * scale + bias) * (T)ih / (T)h;               \
            T bw = EXP(e[2 * stride]) * (T)anchors[2 * a] * (T)iw / (T)in_w;                   \
            T bh = EXP(e[3 * stride]) * (T)anchors[2 * a + 1] * (T)ih / (T)in_h;               \
            int64_t b = i * nb + a * stride + k * w + l;                                       \
            T *box = bp + b * 4;                                                               \
            box[0] = cx - bw / 2;                                                              \
            box[1] = cy - bh / 2;                                                              \
            box[2] = cx + bw / 2;                                                              \
            box[3] = cy + bh / 2;                                                              \
            if (clip) {                                                                        \
              if (!(box[0] > 0)) box[0] = 0;                                                   \
              if (!(box[1] > 0)) box[1] = 0;                                                   \
              if (!(box[2] < (T)(iw - 1))) box[2] = (T)(iw - 1);                               \
              if (!(box[3] < (T)(ih - 1))) box[3] = (T)(ih - 1);                               \
            }                                                                                  \
            T *sc = sp + b * cls;                                                              \
            for (int64_t c = 0; c < cls; c++) sc[c] = conf * NAME##_sig(e[(5 + c) * stride]);  \
          }                                                                                    \
    }                                                                                          \
    return NULL;                                                                               \
  }

YOLO_BOX(float, RILL_DTYPE_FP32, expf, powf, rill_cpu_yolo_box_fp32)
YOLO_BOX(double, RILL_DTYPE_FP64, exp, pow, rill_cpu_yolo_box_fp64)
