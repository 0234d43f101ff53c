/* affine_grid CPU kernels. The grid's base coordinates follow Paddle 1.8's linspace:
 * -1 + i * (2 / (n - 1)), computed in the tensor's type. */
#include "kernels/cpu/kernels.h"

#define AFFINE_GRID(T, DT, SUF)                                                           \
  static T ag_base_##SUF(int64_t i, int64_t n) {                                          \
    T step = (T)2 / (T)(n - 1);                                                           \
    return (T)-1 + step * (T)i;                                                           \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_affine_grid_##SUF(rill_kernel_ctx *ctx) {                        \
    rill_tensor *th, *out;                                                                \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &th));                                          \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    int64_t n = th->dims.d[0], h = out->dims.d[1], w = out->dims.d[2];                    \
    rill_dims td = {.n = 3, .d = {n, 2, 3}}, od = {.n = 4, .d = {n, h, w, 2}};            \
    RILL_TRY(rill_kin_check_dims(ctx, 0, th, &td));                                       \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                  \
    const T *tp = rill_tensor_ptr(th);                                                    \
    T *op = rill_tensor_ptr(out);                                                         \
    for (int64_t s = 0; s < n; s++)                                                       \
      for (int64_t i = 0; i < h; i++)                                                     \
        for (int64_t j = 0; j < w; j++) {                                                 \
          T x = ag_base_##SUF(j, w), y = ag_base_##SUF(i, h);                             \
          const T *t = tp + s * 6;                                                        \
          T *o = op + ((s * h + i) * w + j) * 2;                                          \
          o[0] = x * t[0] + y * t[1] + t[2];                                              \
          o[1] = x * t[3] + y * t[4] + t[5];                                              \
        }                                                                                 \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_affine_grid_grad_##SUF(rill_kernel_ctx *ctx) {                   \
    rill_tensor *g, *dt;                                                                  \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &g));                                           \
    if (g->dims.n != 4 || g->dims.d[3] != 2)                                              \
      return rill_kernel_error(ctx, "input Output@GRAD (%s) must be [N, H, W, 2]",         \
                               rill_kin_name(ctx, 1, 0));                                 \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dt));                                         \
    int64_t n = g->dims.d[0], h = g->dims.d[1], w = g->dims.d[2];                         \
    rill_dims td = {.n = 3, .d = {n, 2, 3}};                                              \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dt, &td));                                   \
    const T *gp = rill_tensor_ptr(g);                                                     \
    T *o = rill_tensor_ptr(dt);                                                           \
    for (int64_t s = 0; s < n; s++) {                                                     \
      double acc[6] = {0};                                                                \
      for (int64_t i = 0; i < h; i++)                                                     \
        for (int64_t j = 0; j < w; j++) {                                                 \
          double x = (double)ag_base_##SUF(j, w), y = (double)ag_base_##SUF(i, h);        \
          const T *gg = gp + ((s * h + i) * w + j) * 2;                                   \
          for (int r = 0; r < 2; r++) {                                                   \
            acc[r * 3] += (double)gg[r] * x;                                              \
            acc[r * 3 + 1] += (double)gg[r] * y;                                          \
            acc[r * 3 + 2] += (double)gg[r];                                              \
          }                                                                               \
        }                                                                                 \
      for (int k = 0; k < 6; k++) o[s * 6 + k] = (T)acc[k];                               \
    }                                                                                     \
    return NULL;                                                                          \
  }

AFFINE_GRID(float, RILL_DTYPE_FP32, fp32)
AFFINE_GRID(double, RILL_DTYPE_FP64, fp64)
