/* iou_similarity CPU kernels: Paddle's arithmetic, intersection extents clamped at 0,
 * a zero union giving 0 / 0 as Paddle's does. */
#include "kernels/cpu/kernels.h"

#define IOU_SIMILARITY(T, DT, NAME)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *y = NULL, *out = NULL;                                             \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                             \
    if (x->dims.n != 2 || x->dims.d[1] != 4 || y->dims.n != 2 || y->dims.d[1] != 4)            \
      return rill_kernel_error(ctx, "inputs X (%s) and Y (%s) must be [N, 4] boxes",           \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));            \
    int64_t n = x->dims.d[0], m = y->dims.d[0];                                                \
    rill_dims want = {.n = 2, .d = {n, m}};                                                    \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &want));                                    \
    T norm = ctx->attrs[RILL_IOU_SIMILARITY_ATTR_BOX_NORMALIZED].v.b ? (T)0 : (T)1;            \
    const T *a = rill_tensor_ptr(x), *b = rill_tensor_ptr(y);                                  \
    T *o = rill_tensor_ptr(out);                                                               \
    for (int64_t i = 0; i < n; i++) {                                                          \
      const T *p = a + i * 4;                                                                  \
      T area1 = (p[2] - p[0] + norm) * (p[3] - p[1] + norm);                                   \
      for (int64_t j = 0; j < m; j++) {                                                        \
        const T *q = b + j * 4;                                                                \
        T area2 = (q[2] - q[0] + norm) * (q[3] - q[1] + norm);                                 \
        T x0 = p[0] > q[0] ? p[0] : q[0], y0 = p[1] > q[1] ? p[1] : q[1];                      \
        T x1 = p[2] < q[2] ? p[2] : q[2], y1 = p[3] < q[3] ? p[3] : q[3];                      \
        T iw = x1 - x0 + norm, ih = y1 - y0 + norm;                                            \
        if (iw < 0) iw = 0;                                                                    \
        if (ih < 0) ih = 0;                                                                    \
        T inter = iw * ih;                                                                     \
        o[i * m + j] = inter / (area1 + area2 - inter);                                        \
      }                                                                                        \
    }                                                                                          \
    return NULL;                                                                               \
  }

IOU_SIMILARITY(float, RILL_DTYPE_FP32, rill_cpu_iou_similarity_fp32)
IOU_SIMILARITY(double, RILL_DTYPE_FP64, rill_cpu_iou_similarity_fp64)
