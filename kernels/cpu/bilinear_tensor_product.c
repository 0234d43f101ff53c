/* bilinear_tensor_product and its gradient (float32, float64), plain loops accumulating
 * in double. */
#include <string.h>

#include "kernels/cpu/kernels.h"

/* Checks X [B, M], Y [B, N], Weight [S, M, N]. */
static rill_status *btp_dims(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *y,
                             const rill_tensor *w, int64_t *B, int64_t *M, int64_t *N,
                             int64_t *S) {
  const rill_dims *xd = &x->dims, *yd = &y->dims, *wd = &w->dims;
  if (xd->n != 2 || yd->n != 2 || wd->n != 3 || xd->d[0] != yd->d[0] || xd->d[1] != wd->d[1] ||
      yd->d[1] != wd->d[2])
    return rill_kernel_error(ctx, "inputs X (%s), Y (%s) and Weight (%s) must be [B, M], "
                             "[B, N] and [size, M, N]", rill_kin_name(ctx, 0, 0),
                             rill_kin_name(ctx, 1, 0), rill_kin_name(ctx, 2, 0));
  *B = xd->d[0];
  *M = xd->d[1];
  *N = yd->d[1];
  *S = wd->d[0];
  return NULL;
}

#define BTP(T, DT, NAME, GRAD)                                                               \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *y, *w, *bias = NULL, *out;                                             \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &w));                                             \
    int64_t B, M, N, S;                                                                     \
    RILL_TRY(btp_dims(ctx, x, y, w, &B, &M, &N, &S));                                       \
    if (rill_kin(ctx, 3, 0)) {                                                              \
      RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &bias));                                        \
      if (rill_tensor_numel(bias) != S)                                                     \
        return rill_kernel_error(ctx, "input Bias (%s) must hold %lld values",              \
                                 rill_kin_name(ctx, 3, 0), (long long)S);                   \
    }                                                                                       \
    rill_dims od = {.n = 2, .d = {B, S}};                                                   \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                    \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *wp = rill_tensor_ptr(w);   \
    const T *bp = bias ? (const T *)rill_tensor_ptr(bias) : NULL;                           \
    T *op = rill_tensor_ptr(out);                                                           \
    for (int64_t b = 0; b < B; b++)                                                         \
      for (int64_t i = 0; i < S; i++) {                                                     \
        double s = bp ? (double)bp[i] : 0;                                                  \
        for (int64_t m = 0; m < M; m++) {                                                   \
          double row = 0;                                                                   \
          for (int64_t n = 0; n < N; n++)                                                   \
            row += (double)wp[(i * M + m) * N + n] * (double)yp[b * N + n];                 \
          s += (double)xp[b * M + m] * row;                                                 \
        }                                                                                   \
        op[b * S + i] = (T)s;                                                               \
      }                                                                                     \
    return NULL;                                                                            \
  }                                                                                         \
  rill_status *GRAD(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *y, *w, *g, *o[4];                                                      \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &w));                                             \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &g));                                             \
    int64_t B, M, N, S;                                                                     \
    RILL_TRY(btp_dims(ctx, x, y, w, &B, &M, &N, &S));                                       \
    rill_dims gd = {.n = 2, .d = {B, S}}, bd = {.n = 2, .d = {1, S}};                       \
    RILL_TRY(rill_kin_check_dims(ctx, 3, g, &gd));                                          \
    const rill_dims *like[4] = {&x->dims, &y->dims, &w->dims, &bd};                         \
    for (size_t k = 0; k < 4; k++) {                                                        \
      o[k] = rill_kout(ctx, k, 0);                                                          \
      if (!o[k]) continue;                                                                  \
      RILL_TRY(rill_kout_need(ctx, k, 0, DT, &o[k]));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, k, 0, o[k], like[k]));                             \
      memset(rill_tensor_ptr(o[k]), 0, rill_tensor_nbytes(o[k]));                           \
    }                                                                                       \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *wp = rill_tensor_ptr(w);   \
    const T *gp = rill_tensor_ptr(g);                                                       \
    T *dx = o[0] ? (T *)rill_tensor_ptr(o[0]) : NULL, *dy = o[1] ? (T *)rill_tensor_ptr(o[1]) : NULL; \
    T *dw = o[2] ? (T *)rill_tensor_ptr(o[2]) : NULL, *db = o[3] ? (T *)rill_tensor_ptr(o[3]) : NULL; \
    for (int64_t b = 0; b < B; b++)                                                         \
      for (int64_t i = 0; i < S; i++) {                                                     \
        T gi = gp[b * S + i];                                                               \
        if (db) db[i] += gi;                                                                \
        for (int64_t m = 0; m < M; m++)                                                     \
          for (int64_t n = 0; n < N; n++) {                                                 \
            T wv = wp[(i * M + m) * N + n];                                                 \
            if (dx) dx[b * M + m] += gi * wv * yp[b * N + n];                               \
            if (dy) dy[b * N + n] += gi * xp[b * M + m] * wv;                               \
            if (dw) dw[(i * M + m) * N + n] += gi * xp[b * M + m] * yp[b * N + n];          \
          }                                                                                 \
      }                                                                                     \
    return NULL;                                                                            \
  }

BTP(float, RILL_DTYPE_FP32, rill_cpu_bilinear_tensor_product_fp32,
    rill_cpu_bilinear_tensor_product_grad_fp32)
BTP(double, RILL_DTYPE_FP64, rill_cpu_bilinear_tensor_product_fp64,
    rill_cpu_bilinear_tensor_product_grad_fp64)
