/* yolo_box CPU kernels: Paddle's arithmetic (sigmoids and exponentials in T, image sizes
 * as integers), one cell at a time by the functions the device code uses too
 * (kernels/cpu/box_decode.h). */
#include <string.h>

#include "kernels/cpu/box_decode.h"
#include "kernels/cpu/detection_check.h"

#define YOLO_BOX(T, DT, S, NAME)                                                               \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *img = NULL, *bo = NULL, *so = NULL;                                \
    rill_yolo_geom g;                                                                          \
    RILL_TRY(rill_kin_need(ctx, RILL_YOLO_BOX_IN_X, 0, DT, &x));                               \
    RILL_TRY(rill_kout_need(ctx, RILL_YOLO_BOX_OUT_BOXES, 0, DT, &bo));                        \
    RILL_TRY(rill_kout_need(ctx, RILL_YOLO_BOX_OUT_SCORES, 0, DT, &so));                       \
    RILL_TRY(rill_yolo_box_check(ctx, x, bo, so, &img, &g));                                   \
    const int32_t *anchors = ctx->attrs[RILL_YOLO_BOX_ATTR_ANCHORS].list.ints;                 \
    int64_t an = (int64_t)ctx->attrs[RILL_YOLO_BOX_ATTR_ANCHORS].n / 2, cls = g.classes;       \
    int64_t n = x->dims.d[0], stride = g.h * g.w, nb = an * stride;                            \
    int64_t an_stride = (cls + 5) * stride;                                                    \
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
      const T *xi = xp + i * (an * an_stride + (g.iou_aware ? nb : 0));                        \
      const T *xa0 = xi + (g.iou_aware ? nb : 0);                                              \
      for (int64_t a = 0; a < an; a++)                                                         \
        for (int64_t k = 0; k < g.h; k++)                                                      \
          for (int64_t l = 0; l < g.w; l++) {                                                  \
            const T *e = xa0 + a * an_stride + k * g.w + l; /* entry c at e[c * stride] */     \
            T conf = rill_yolo_conf_##S(e, xi + a * stride + k * g.w + l, &g);                 \
            if (conf < g.conf_thresh) continue;                                                \
            int64_t b = i * nb + a * stride + k * g.w + l;                                     \
            rill_yolo_box_##S(e, &g, k, l, anchors[2 * a], anchors[2 * a + 1], ih, iw, bp + b * 4); \
            T *sc = sp + b * cls;                                                              \
            for (int64_t c = 0; c < cls; c++) sc[c] = conf * rill_yolo_sigmoid_##S(e[(5 + c) * stride]); \
          }                                                                                    \
    }                                                                                          \
    return NULL;                                                                               \
  }

YOLO_BOX(float, RILL_DTYPE_FP32, f32, rill_cpu_yolo_box_fp32)
YOLO_BOX(double, RILL_DTYPE_FP64, f64, rill_cpu_yolo_box_fp64)
