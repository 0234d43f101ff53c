/* What the NMS and proposal kernels (multiclass_nms, matrix_nms, locality_aware_nms,
 * retinanet_detection_output, the FPN ops, generate_proposals) share: Paddle's box area
 * and Jaccard overlap, greedy NMS, a candidate record whose sort is stable and the empty
 * result's marker. Boxes are [xmin, ymin, xmax, ymax]; the float and double versions are
 * picked by pointer type. */
#ifndef RILL_KERNELS_CPU_NMS_H
#define RILL_KERNELS_CPU_NMS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

/* Area of [xmin, ymin, xmax, ymax]; 0 for an inverted box; pixel boxes (not normalized)
 * count both ends, so their width is xmax - xmin + 1. */
#define RILL_NMS_AREA(T, SUFFIX)                                                       \
  static inline T rill_nms_area_##SUFFIX(const T *b, bool normalized) {                \
    if (b[2] < b[0] || b[3] < b[1]) return 0;                                          \
    T w = b[2] - b[0], h = b[3] - b[1];                                                \
    return normalized ? w * h : (w + 1) * (h + 1);                                     \
  }                                                                                    \
  static inline T rill_nms_iou_##SUFFIX(const T *a, const T *b, bool normalized) {     \
    if (b[0] > a[2] || b[2] < a[0] || b[1] > a[3] || b[3] < a[1]) return 0;            \
    T x0 = a[0] > b[0] ? a[0] : b[0], y0 = a[1] > b[1] ? a[1] : b[1];                  \
    T x1 = a[2] < b[2] ? a[2] : b[2], y1 = a[3] < b[3] ? a[3] : b[3];                  \
    T norm = normalized ? (T)0 : (T)1;                                                 \
    T inter = (x1 - x0 + norm) * (y1 - y0 + norm);                                     \
    return inter / (rill_nms_area_##SUFFIX(a, normalized) +                            \
                    rill_nms_area_##SUFFIX(b, normalized) - inter);                    \
  }
RILL_NMS_AREA(float, fp32)
RILL_NMS_AREA(double, fp64)
#undef RILL_NMS_AREA
/* rill_nms_iou(a, b, normalized) for float or double boxes. */
#define rill_nms_iou(a, b, normalized)                                                  \
  _Generic((a), float *: rill_nms_iou_fp32, const float *: rill_nms_iou_fp32,          \
           double *: rill_nms_iou_fp64, const double *: rill_nms_iou_fp64)(a, b, normalized)
#define rill_nms_area(b, normalized)                                                    \
  _Generic((b), float *: rill_nms_area_fp32, const float *: rill_nms_area_fp32,        \
           double *: rill_nms_area_fp64, const double *: rill_nms_area_fp64)(b, normalized)

/* Greedy NMS over the boxes order[0..n) (already best first), box j at boxes + j * stride:
 * a box is kept when its IoU with every kept box is <= thr, which eta < 1 lowers after each
 * kept box while it is above 0.5. Writes the kept indices to kept (which may be order
 * itself) and returns their count. */
#define RILL_NMS_GREEDY(T, SUFFIX)                                                     \
  static inline int64_t rill_nms_greedy_##SUFFIX(const T *boxes, int64_t stride,       \
                                                 const int32_t *order, int64_t n, T thr, \
                                                 T eta, bool normalized, int32_t *kept) { \
    int64_t nk = 0;                                                                    \
    for (int64_t k = 0; k < n; k++) {                                                  \
      int32_t j = order[k];                                                            \
      const T *cur = boxes + j * stride;                                               \
      bool keep = true;                                                                \
      for (int64_t q = 0; q < nk && keep; q++)                                         \
        keep = rill_nms_iou_##SUFFIX(cur, boxes + kept[q] * stride, normalized) <= thr; \
      if (!keep) continue;                                                             \
      kept[nk++] = j;                                                                  \
      if (eta < 1 && thr > (T)0.5) thr *= eta;                                         \
    }                                                                                  \
    return nk;                                                                         \
  }
RILL_NMS_GREEDY(float, fp32)
RILL_NMS_GREEDY(double, fp64)
#undef RILL_NMS_GREEDY
#define rill_nms_greedy(boxes, stride, order, n, thr, eta, normalized, kept)           \
  _Generic((boxes), float *: rill_nms_greedy_fp32, const float *: rill_nms_greedy_fp32, \
           double *: rill_nms_greedy_fp64, const double *: rill_nms_greedy_fp64)(     \
      boxes, stride, order, n, thr, eta, normalized, kept)

/* A candidate box: its score, class and box index, and its position before sorting. */
typedef struct rill_nms_cand {
  double score;
  int32_t label, idx;
  int64_t order; /* the tie-break that makes qsort stable */
} rill_nms_cand;

/* Score descending, then `order` ascending. */
static inline int rill_nms_cand_cmp(const void *pa, const void *pb) {
  const rill_nms_cand *a = pa, *b = pb;
  if (a->score > b->score) return -1;
  if (a->score < b->score) return 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

static inline int rill_nms_int_cmp(const void *pa, const void *pb) {
  int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
  return a < b ? -1 : a > b;
}

/* Paddle's "nothing detected" output of multiclass_nms and locality_aware_nms: out becomes
 * [1, 1] holding -1 and its LoD offsets starts {0, 1} (*nstarts = 2). */
static inline rill_status *rill_nms_empty_marker(rill_tensor *out, rill_dtype dt,
                                                 uint64_t *starts, size_t *nstarts) {
  rill_dims od = {.n = 2, .d = {1, 1}};
  RILL_TRY(rill_tensor_alloc(out, dt, &od));
  if (dt == RILL_DTYPE_FP64)
    *(double *)rill_tensor_ptr(out) = -1;
  else
    *(float *)rill_tensor_ptr(out) = -1;
  starts[0] = 0;
  starts[1] = 1;
  *nstarts = 2;
  return NULL;
}

#endif
