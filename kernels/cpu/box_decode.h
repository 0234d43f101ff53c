/* The per-box arithmetic of yolo_box and box_coder, shared by their CPU kernels
 * (kernels/cpu/yolo_box.c, kernels/cpu/box_coder.c) and their device code
 * (kernels/cuda/device/detection.cu), so that both compute every box the same way:
 * Paddle's formulas, in the tensor's own type T. RILL_BOX_DECODE(T, S, EXP, LOG, POW)
 * defines the functions for T with suffix S; this header defines them for float (_f32)
 * and double (_f64). */
#ifndef RILL_KERNELS_CPU_BOX_DECODE_H
#define RILL_KERNELS_CPU_BOX_DECODE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __CUDACC__
#define RILL_BOX_FN __host__ __device__ static inline
#else
#define RILL_BOX_FN static inline
#endif

/* yolo_box's attributes and the feature map's geometry, the same for every cell. */
typedef struct rill_yolo_geom {
  int64_t h, w;       /* the feature map */
  int64_t in_h, in_w; /* the network input: downsample_ratio * (h, w) */
  int64_t classes;
  float conf_thresh, scale, bias; /* bias = -0.5 (scale - 1) */
  float iou_factor;               /* iou_aware_factor */
  bool iou_aware, clip;
} rill_yolo_geom;

#define RILL_BOX_DECODE(T, S, EXP, LOG, POW)                                                                  \
  RILL_BOX_FN T rill_yolo_sigmoid_##S(T v) { return (T)1 / ((T)1 + EXP(-v)); }                                \
                                                                                                             \
  /* The confidence of cell (k, l) of an anchor: e is the anchor's entry at the cell (channel c at           \
   * e[c * h * w]), iou its IoU logit there (read only with iou_aware). */                                   \
  RILL_BOX_FN T rill_yolo_conf_##S(const T *e, const T *iou, const rill_yolo_geom *g) {                      \
    T conf = rill_yolo_sigmoid_##S(e[4 * g->h * g->w]);                                                      \
    if (g->iou_aware)                                                                                         \
      conf = POW(conf, (T)(1. - g->iou_factor)) * POW(rill_yolo_sigmoid_##S(*iou), (T)g->iou_factor);        \
    return conf;                                                                                              \
  }                                                                                                           \
                                                                                                             \
  /* The box of cell (k, l) for anchor (aw, ah) on an image of ih x iw pixels: xmin, ymin, xmax, ymax,       \
   * clipped to the image with clip_bbox. */                                                                 \
  RILL_BOX_FN void rill_yolo_box_##S(const T *e, const rill_yolo_geom *g, int64_t k, int64_t l, int32_t aw,  \
                                     int32_t ah, int64_t ih, int64_t iw, T *box) {                           \
    int64_t stride = g->h * g->w;                                                                            \
    T cx = ((T)l + rill_yolo_sigmoid_##S(e[0]) * g->scale + g->bias) * (T)iw / (T)g->w;                      \
    T cy = ((T)k + rill_yolo_sigmoid_##S(e[stride]) * g->scale + g->bias) * (T)ih / (T)g->h;                 \
    T bw = EXP(e[2 * stride]) * (T)aw * (T)iw / (T)g->in_w;                                                  \
    T bh = EXP(e[3 * stride]) * (T)ah * (T)ih / (T)g->in_h;                                                  \
    box[0] = cx - bw / 2;                                                                                    \
    box[1] = cy - bh / 2;                                                                                    \
    box[2] = cx + bw / 2;                                                                                    \
    box[3] = cy + bh / 2;                                                                                    \
    if (g->clip) {                                                                                           \
      if (!(box[0] > 0)) box[0] = 0;                                                                         \
      if (!(box[1] > 0)) box[1] = 0;                                                                         \
      if (!(box[2] < (T)(iw - 1))) box[2] = (T)(iw - 1);                                                     \
      if (!(box[3] < (T)(ih - 1))) box[3] = (T)(ih - 1);                                                     \
    }                                                                                                         \
  }                                                                                                           \
                                                                                                             \
  /* box_coder on one box: prior p (xmin, ymin, xmax, ymax) with variances var (ones when the op has         \
   * none) and target t, into o. norm is 0 for normalised boxes, else 1 (widths and heights count both       \
   * end pixels). encode_center_size gives the target's offsets from the prior; decode_center_size the       \
   * box that offsets t describe. */                                                                         \
  RILL_BOX_FN void rill_box_code_##S(bool encode, const T *p, const T *var, const T *t, T norm, T *o) {      \
    T pw = p[2] - p[0] + norm, ph = p[3] - p[1] + norm;                                                      \
    T pcx = p[0] + pw / 2, pcy = p[1] + ph / 2;                                                              \
    if (encode) {                                                                                            \
      T tcx = (t[2] + t[0]) / 2, tcy = (t[3] + t[1]) / 2;                                                    \
      T tw = t[2] - t[0] + norm, th = t[3] - t[1] + norm;                                                    \
      o[0] = (tcx - pcx) / pw / var[0];                                                                      \
      o[1] = (tcy - pcy) / ph / var[1];                                                                      \
      o[2] = LOG(tw / pw < 0 ? -(tw / pw) : tw / pw) / var[2];                                               \
      o[3] = LOG(th / ph < 0 ? -(th / ph) : th / ph) / var[3];                                               \
    } else {                                                                                                 \
      T tcx = var[0] * t[0] * pw + pcx, tcy = var[1] * t[1] * ph + pcy;                                      \
      T tw = EXP(var[2] * t[2]) * pw, th = EXP(var[3] * t[3]) * ph;                                          \
      o[0] = tcx - tw / 2;                                                                                   \
      o[1] = tcy - th / 2;                                                                                   \
      o[2] = tcx + tw / 2 - norm;                                                                            \
      o[3] = tcy + th / 2 - norm;                                                                            \
    }                                                                                                         \
  }

RILL_BOX_DECODE(float, f32, expf, logf, powf)
RILL_BOX_DECODE(double, f64, exp, log, pow)

#endif
