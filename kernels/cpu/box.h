/* What the anchor-labelling kernels (rpn_target_assign, retinanet_target_assign,
 * generate_proposal_labels) add to kernels/cpu/nms.h's box area, IoU and greedy NMS:
 * Paddle's BboxOverlaps pixel IoU and BoxToDelta regression target. Boxes are
 * [xmin, ymin, xmax, ymax]; each helper exists for float and double, the unsuffixed
 * names pick one by the pointer type. */
#ifndef RILL_KERNELS_CPU_BOX_H
#define RILL_KERNELS_CPU_BOX_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define RILL_BOX_HELPERS(T, SUF)                                                               \
  /* Pixel IoU as Paddle's BboxOverlaps (the anchor-labelling ops): areas and the            \
   * intersection count both ends, a negative intersection extent counts as 0. */            \
  static inline T rill_box_overlap_px_##SUF(const T *a, const T *b) {                         \
    T aa = (a[2] - a[0] + 1) * (a[3] - a[1] + 1), ab = (b[2] - b[0] + 1) * (b[3] - b[1] + 1); \
    T iw = (a[2] < b[2] ? a[2] : b[2]) - (a[0] > b[0] ? a[0] : b[0]) + 1;                     \
    T ih = (a[3] < b[3] ? a[3] : b[3]) - (a[1] > b[1] ? a[1] : b[1]) + 1;                     \
    T inter = (iw > 0 ? iw : 0) * (ih > 0 ? ih : 0);                                          \
    return inter == 0 ? 0 : inter / (aa + ab - inter);                                        \
  }                                                                                           \
  /* The regression target from box ex to box gt, as Paddle's BoxToDelta: centre offsets   \
   * over ex's size and log size ratios, each divided by weights[k] when weights is given;   \
   * pixel sizes (+1) unless normalized. */                                                  \
  static inline void rill_box_delta_##SUF(const T *ex, const T *gt, const float *weights,     \
                                          bool normalized, T *out) {                          \
    T one = normalized ? (T)0 : (T)1;                                                         \
    T ew = ex[2] - ex[0] + one, eh = ex[3] - ex[1] + one;                                     \
    T ex_x = (T)(ex[0] + 0.5 * ew), ex_y = (T)(ex[1] + 0.5 * eh);                             \
    T gw = gt[2] - gt[0] + one, gh = gt[3] - gt[1] + one;                                     \
    T gx = (T)(gt[0] + 0.5 * gw), gy = (T)(gt[1] + 0.5 * gh);                                 \
    out[0] = (gx - ex_x) / ew;                                                                \
    out[1] = (gy - ex_y) / eh;                                                                \
    out[2] = RILL_BOX_LOG_##SUF(gw / ew);                                                     \
    out[3] = RILL_BOX_LOG_##SUF(gh / eh);                                                     \
    if (weights)                                                                              \
      for (int k = 0; k < 4; k++) out[k] = out[k] / weights[k];                               \
  }

#define RILL_BOX_LOG_f32 logf
#define RILL_BOX_LOG_f64 log
RILL_BOX_HELPERS(float, f32)
RILL_BOX_HELPERS(double, f64)
#undef RILL_BOX_HELPERS
#undef RILL_BOX_LOG_f32
#undef RILL_BOX_LOG_f64

#define RILL_BOX_PICK(name, p) _Generic((p), float *: name##_f32, const float *: name##_f32, \
                                        double *: name##_f64, const double *: name##_f64)
#define rill_box_overlap_px(a, b) RILL_BOX_PICK(rill_box_overlap_px, a)(a, b)
#define rill_box_delta(ex, gt, weights, normalized, out) \
  RILL_BOX_PICK(rill_box_delta, ex)(ex, gt, weights, normalized, out)

#endif
