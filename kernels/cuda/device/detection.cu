// yolo_box and box_coder (launch.h): a thread a box, each computed by the CPU kernels'
// own functions (kernels/cpu/box_decode.h).
#include "kernels/cpu/box_decode.h"
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

// The box functions of each element type: box_ops<T> calls box_decode.h's T functions.
template <typename T>
struct box_ops;
#define RILL_DEVICE_BOX_OPS(T, S)                                                                                  \
  template <>                                                                                                     \
  struct box_ops<T> {                                                                                             \
    __device__ static T sigmoid(T v) { return rill_yolo_sigmoid_##S(v); }                                         \
    __device__ static T conf(const T *e, const T *iou, const rill_yolo_geom *g) {                                 \
      return rill_yolo_conf_##S(e, iou, g);                                                                       \
    }                                                                                                             \
    __device__ static void box(const T *e, const rill_yolo_geom *g, int64_t k, int64_t l, int32_t aw, int32_t ah, \
                               int64_t ih, int64_t iw, T *out) {                                                  \
      rill_yolo_box_##S(e, g, k, l, aw, ah, ih, iw, out);                                                         \
    }                                                                                                             \
    __device__ static void code(bool encode, const T *p, const T *var, const T *t, T norm, T *o) {                \
      rill_box_code_##S(encode, p, var, t, norm, o);                                                              \
    }                                                                                                             \
  };
RILL_DEVICE_BOX_OPS(float, f32)
RILL_DEVICE_BOX_OPS(double, f64)

template <typename T, typename I>
__global__ void yolo_box_cells(const T *x, const I *img, const int32_t *anchors, T *boxes, T *scores,
                               rill_cuda_yolo_box p) {
  const rill_yolo_geom &g = p.g;
  int64_t stride = g.h * g.w, nb = p.an * stride, an_stride = (g.classes + 5) * stride;
  for (int64_t b = first_index(); b < p.n * nb; b += grid_stride()) {
    int64_t i = b / nb, r = b % nb, a = r / stride, cell = r % stride;
    // with iou_aware the an IoU channels come first in each sample
    const T *xi = x + i * (p.an * an_stride + (g.iou_aware ? nb : 0));
    const T *e = xi + (g.iou_aware ? nb : 0) + a * an_stride + cell;
    T conf = box_ops<T>::conf(e, xi + a * stride + cell, &g);
    T *box = boxes + b * 4, *sc = scores + b * g.classes;
    if (conf < g.conf_thresh) {
      for (int k = 0; k < 4; k++) box[k] = 0;
      for (int64_t c = 0; c < g.classes; c++) sc[c] = 0;
      continue;
    }
    box_ops<T>::box(e, &g, cell / g.w, cell % g.w, anchors[2 * a], anchors[2 * a + 1], (int64_t)img[2 * i],
             (int64_t)img[2 * i + 1], box);
    for (int64_t c = 0; c < g.classes; c++) sc[c] = conf * box_ops<T>::sigmoid(e[(5 + c) * stride]);
  }
}

template <typename T>
cudaError_t yolo_box_typed(const T *x, const void *img, bool img_i64, const int32_t *anchors, T *boxes, T *scores,
                           const rill_cuda_yolo_box *p, cudaStream_t s) {
  int64_t total = p->n * p->an * p->g.h * p->g.w;
  if (total == 0) return cudaSuccess;
  unsigned nb = blocks_for(total);
  if (img_i64)
    yolo_box_cells<T><<<nb, kThreads, 0, s>>>(x, (const int64_t *)img, anchors, boxes, scores, *p);
  else
    yolo_box_cells<T><<<nb, kThreads, 0, s>>>(x, (const int32_t *)img, anchors, boxes, scores, *p);
  return cudaGetLastError();
}

template <typename T>
__global__ void code_boxes(const T *prior, const T *pvar, const T *target, T *out, rill_cuda_box_coder p) {
  T attr_var[4] = {1, 1, 1, 1};  // ones without variances
  if (p.var_attr)
    for (int k = 0; k < 4; k++) attr_var[k] = (T)p.var[k];
  T norm = p.normalized ? (T)0 : (T)1;
  for (int64_t b = first_index(); b < p.rows * p.cols; b += grid_stride()) {
    int64_t i = b / p.cols, j = b % p.cols, pj = p.encode || p.axis == 0 ? j : i;
    const T *var = pvar ? pvar + pj * 4 : attr_var;
    const T *t = p.encode ? target + i * 4 : target + b * 4;
    box_ops<T>::code(p.encode, prior + pj * 4, var, t, norm, out + b * 4);
  }
}

template <typename T>
cudaError_t box_coder_typed(const void *prior, const void *pvar, const void *target, void *out,
                            const rill_cuda_box_coder *p, cudaStream_t s) {
  if (p->rows * p->cols == 0) return cudaSuccess;
  code_boxes<T><<<blocks_for(p->rows * p->cols), kThreads, 0, s>>>(
      (const T *)prior, (const T *)pvar, (const T *)target, (T *)out, *p);
  return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t rill_cuda_decode_yolo(int dtype, const void *x, const void *img_size, bool img_i64,
                                          const int32_t *anchors, void *boxes, void *scores,
                                          const rill_cuda_yolo_box *p, cudaStream_t s) {
  switch (dtype) {
  case kFp32:
    return yolo_box_typed<float>((const float *)x, img_size, img_i64, anchors, (float *)boxes,
                                          (float *)scores, p, s);
  case kFp64:
    return yolo_box_typed<double>((const double *)x, img_size, img_i64, anchors, (double *)boxes,
                                           (double *)scores, p, s);
  default: return cudaErrorInvalidValue;
  }
}

extern "C" cudaError_t rill_cuda_code_boxes(int dtype, const void *prior, const void *pvar, const void *target,
                                           void *out, const rill_cuda_box_coder *p, cudaStream_t s) {
  switch (dtype) {
  case kFp32: return box_coder_typed<float>(prior, pvar, target, out, p, s);
  case kFp64: return box_coder_typed<double>(prior, pvar, target, out, p, s);
  default: return cudaErrorInvalidValue;
  }
}
