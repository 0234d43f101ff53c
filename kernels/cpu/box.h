/* Box geometry shared by the detection kernels (multiclass_nms, generate_proposals,
 * rpn_target_assign, retinanet_target_assign, generate_proposal_labels): boxes are
 * [xmin, ymin, xmax, ymax]; `normalized` false means pixel boxes whose widths count both
 * ends (+1), as Paddle's JaccardOverlap and BBoxArea. Each helper exists for float and
 * double; the unsuffixed names pick one by the pointer type. */
#ifndef RILL_KERNELS_CPU_BOX_H
#define RILL_KERNELS_CPU_BOX_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define RILL_BOX_HELPERS(T, SUF)                                                               \
  /* Area; 0 for an inverted box. */                                                          \
  static inline T rill_box_area_##SUF(const T *b, bool normalized) {                          \
    if (b[2] < b[0] || b[3] < b[1]) return 0;                                                 \
    T w = b[2] - b[0], h = b[3] - b[1];                                                       \
    return normalized ? w * h : (w + 1) * (h + 1);                                            \
  }                                                                                           \
  /* Intersection over union; 0 for boxes that do not touch. */                               \
  static inline T rill_box_iou_##SUF(const T *a, const T *b, bool normalized) {               \
    if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return 0;                   \
    T x0 = a[0] > b[0] ? a[0] : b[0], y0 = a[1] > b[1] ? a[1] : b[1];                         \
    T x1 = a[2] < b[2] ? a[2] : b[2], y1 = a[3] < b[3] ? a[3] : b[3];                         \
    T norm = normalized ? (T)0 : (T)1;                                                        \
    T inter = (x1 - x0 + norm) * (y1 - y0 + norm);                                            \
    return inter / (rill_box_area_##SUF(a, normalized) + rill_box_area_##SUF(b, normalized) - \
                    inter);                                                                   \
  }                                                                                           \
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
  }                                                                                           \
  /* Greedy NMS over the boxes order[0..n) (already best first), box j at boxes + j *         \
   * stride: a box is kept when its IoU with every kept box is <= the threshold, which eta    \
   * < 1 lowers after each kept box while it is above 0.5. Writes the kept indices to kept   \
   * (which may be order itself) and returns their count. */                                  \
  static inline int64_t rill_box_nms_##SUF(const T *boxes, int64_t stride, const int32_t *order, \
                                           int64_t n, T thr, T eta, bool normalized,          \
                                           int32_t *kept) {                                   \
    int64_t nk = 0;                                                                           \
    for (int64_t k = 0; k < n; k++) {                                                         \
      int32_t j = order[k];                                                                   \
      const T *cur = boxes + j * stride;                                                      \
      bool keep = true;                                                                       \
      for (int64_t q = 0; q < nk && keep; q++)                                                \
        keep = rill_box_iou_##SUF(cur, boxes + kept[q] * stride, normalized) <= thr;          \
      if (!keep) continue;                                                                    \
      kept[nk++] = j;                                                                         \
      if (eta < 1 && thr > (T)0.5) thr *= eta;                                                \
    }                                                                                         \
    return nk;                                                                                \
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
#define rill_box_area(b, normalized) RILL_BOX_PICK(rill_box_area, b)(b, normalized)
#define rill_box_iou(a, b, normalized) RILL_BOX_PICK(rill_box_iou, a)(a, b, normalized)
#define rill_box_overlap_px(a, b) RILL_BOX_PICK(rill_box_overlap_px, a)(a, b)
#define rill_box_delta(ex, gt, weights, normalized, out) \
  RILL_BOX_PICK(rill_box_delta, ex)(ex, gt, weights, normalized, out)
#define rill_box_nms(boxes, stride, order, n, thr, eta, normalized, kept) \
  RILL_BOX_PICK(rill_box_nms, boxes)(boxes, stride, order, n, thr, eta, normalized, kept)

#endif
