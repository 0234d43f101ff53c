/* polygon_box_transform CPU kernels: one pass, 4 * column - v on even channels and
 * 4 * row - v on odd ones. */
#include "kernels/cpu/kernels.h"

#define POLYGON_BOX_TRANSFORM(T, DT, NAME)                                                     \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *in = NULL, *out = NULL;                                                       \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &in));                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                             \
    if (in->dims.n != 4 || in->dims.d[1] % 2)                                                  \
      return rill_kernel_error(ctx, "input Input (%s) must be [N, G, H, W] with G even",       \
                               rill_kin_name(ctx, 0, 0));                                      \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &in->dims));                                 \
    int64_t planes = in->dims.d[0] * in->dims.d[1], g = in->dims.d[1];                         \
    int64_t h = in->dims.d[2], w = in->dims.d[3];                                              \
    const T *ip = rill_tensor_ptr(in);                                                         \
    T *op = rill_tensor_ptr(out);                                                              \
    for (int64_t p = 0; p < planes; p++) {                                                     \
      bool odd = (p % g) % 2 == 1;                                                             \
      for (int64_t r = 0; r < h; r++)                                                          \
        for (int64_t c = 0; c < w; c++, ip++, op++)                                            \
          *op = (T)(4 * (odd ? r : c)) - *ip;                                                  \
    }                                                                                          \
    return NULL;                                                                               \
  }

POLYGON_BOX_TRANSFORM(float, RILL_DTYPE_FP32, rill_cpu_polygon_box_transform_fp32)
POLYGON_BOX_TRANSFORM(double, RILL_DTYPE_FP64, rill_cpu_polygon_box_transform_fp64)
