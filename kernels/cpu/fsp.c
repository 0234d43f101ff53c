/* fsp CPU kernels: per sample, plain dot products over the H * W positions, in double. */
#include <string.h>

#include "kernels/cpu/kernels.h"

/* X [N, C1, H, W], Y [N, C2, H, W] of dtype dt: *n, *c1, *c2, *hw. */
static rill_status *fsp_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                               rill_tensor **y, int64_t *n, int64_t *c1, int64_t *c2,
                               int64_t *hw) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, y));
  const rill_dims *a = &(*x)->dims, *b = &(*y)->dims;
  if (a->n != 4 || b->n != 4 || a->d[0] != b->d[0] || a->d[2] != b->d[2] || a->d[3] != b->d[3])
    return rill_kernel_error(ctx, "inputs X (%s) and Y (%s) must be 4-D with the same batch, "
                             "height and width", rill_kin_name(ctx, 0, 0),
                             rill_kin_name(ctx, 1, 0));
  *n = a->d[0];
  *c1 = a->d[1];
  *c2 = b->d[1];
  *hw = a->d[2] * a->d[3];
  return NULL;
}

#define FSP(T, DT, SUF)                                                                   \
  rill_status *rill_cpu_fsp_##SUF(rill_kernel_ctx *ctx) {                                \
    rill_tensor *x, *y, *out;                                                             \
    int64_t n, c1, c2, hw;                                                                \
    RILL_TRY(fsp_inputs(ctx, DT, &x, &y, &n, &c1, &c2, &hw));                             \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    rill_dims od = {.n = 3, .d = {n, c1, c2}};                                            \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                  \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                           \
    T *op = rill_tensor_ptr(out);                                                         \
    for (int64_t s = 0; s < n; s++)                                                       \
      for (int64_t i = 0; i < c1; i++)                                                    \
        for (int64_t j = 0; j < c2; j++) {                                                \
          const T *a = xp + (s * c1 + i) * hw, *b = yp + (s * c2 + j) * hw;               \
          double acc = 0;                                                                 \
          for (int64_t p = 0; p < hw; p++) acc += (double)a[p] * (double)b[p];            \
          op[(s * c1 + i) * c2 + j] = (T)(hw ? acc / (double)hw : 0.0);                   \
        }                                                                                 \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_fsp_grad_##SUF(rill_kernel_ctx *ctx) {                           \
    rill_tensor *x, *y, *g, *dx = NULL, *dy = NULL;                                       \
    int64_t n, c1, c2, hw;                                                                \
    RILL_TRY(fsp_inputs(ctx, DT, &x, &y, &n, &c1, &c2, &hw));                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                           \
    rill_dims od = {.n = 3, .d = {n, c1, c2}};                                            \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &od));                                        \
    if (rill_kout(ctx, 0, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                            \
    }                                                                                     \
    if (rill_kout(ctx, 1, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &dy));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 1, 0, dy, &y->dims));                            \
    }                                                                                     \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(g); \
    double inv = hw ? 1.0 / (double)hw : 0.0;                                             \
    for (int64_t s = 0; s < n; s++)                                                       \
      for (int64_t p = 0; p < hw; p++) {                                                  \
        for (int64_t i = 0; dx && i < c1; i++) {                                          \
          double acc = 0;                                                                 \
          for (int64_t j = 0; j < c2; j++)                                                \
            acc += (double)gp[(s * c1 + i) * c2 + j] * (double)yp[(s * c2 + j) * hw + p]; \
          ((T *)rill_tensor_ptr(dx))[(s * c1 + i) * hw + p] = (T)(acc * inv);             \
        }                                                                                 \
        for (int64_t j = 0; dy && j < c2; j++) {                                          \
          double acc = 0;                                                                 \
          for (int64_t i = 0; i < c1; i++)                                                \
            acc += (double)gp[(s * c1 + i) * c2 + j] * (double)xp[(s * c1 + i) * hw + p]; \
          ((T *)rill_tensor_ptr(dy))[(s * c2 + j) * hw + p] = (T)(acc * inv);             \
        }                                                                                 \
      }                                                                                   \
    return NULL;                                                                          \
  }

FSP(float, RILL_DTYPE_FP32, fp32)
FSP(double, RILL_DTYPE_FP64, fp64)
