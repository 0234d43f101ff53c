/* lrn CPU kernels. Channels are walked with a running window sum of squares per pixel
 * (one add and one subtract per channel); NHWC reads the same positions with channel
 * stride 1. With o = MidOut and y = Out, the gradient is
 * dX[c] = dOut[c] * o[c]^-beta - 2 * alpha * beta * X[c] * sum over the windows holding c
 * of dOut[c'] * y[c'] / o[c']. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernels.h"

typedef struct lrn_geom {
  int64_t N, C, P, cs, ps; /* samples, channels, pixels, channel and pixel strides */
  int64_t before, after;   /* window channels before and after the centre */
} lrn_geom;

static rill_status *lrn_geometry(rill_kernel_ctx *ctx, const rill_tensor *x, lrn_geom *g) {
  const rill_dims *d = &x->dims;
  int n = ctx->attrs[RILL_LRN_ATTR_N].v.i;
  if (d->n != 4 || n <= 0 || n % 2 == 0)
    return rill_kernel_error(ctx, "input X (%s) must be 4-D and n (%d) odd and positive",
                             rill_kin_name(ctx, 0, 0), n);
  const char *f = ctx->attrs[RILL_LRN_ATTR_DATA_FORMAT].v.s;
  bool nhwc = f && strcmp(f, "NHWC") == 0;
  g->N = d->d[0];
  g->C = nhwc ? d->d[3] : d->d[1];
  g->P = nhwc ? d->d[1] * d->d[2] : d->d[2] * d->d[3];
  g->cs = nhwc ? 1 : g->P;
  g->ps = nhwc ? g->C : 1;
  g->before = (n - 1) / 2;
  g->after = n - 1 - g->before;
  return NULL;
}

#define LRN(T, DT, NAME)                                                                      \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                   \
    rill_tensor *x = NULL, *y = NULL, *mo = NULL;                                             \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                              \
    if (rill_kout(ctx, 1, 0)) RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &mo));                   \
    lrn_geom g;                                                                               \
    RILL_TRY(lrn_geometry(ctx, x, &g));                                                       \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &x->dims));                                   \
    if (mo) RILL_TRY(rill_kout_check_dims(ctx, 1, 0, mo, &x->dims));                          \
    double k = ctx->attrs[RILL_LRN_ATTR_K].v.f, alpha = ctx->attrs[RILL_LRN_ATTR_ALPHA].v.f;  \
    double beta = ctx->attrs[RILL_LRN_ATTR_BETA].v.f;                                         \
    const T *xp = rill_tensor_ptr(x);                                                         \
    T *yp = rill_tensor_ptr(y), *mp = mo ? (T *)rill_tensor_ptr(mo) : NULL;                   \
    for (int64_t s = 0; s < g.N; s++)                                                         \
      for (int64_t p = 0; p < g.P; p++) {                                                     \
        int64_t base = s * g.C * g.P + p * g.ps;                                              \
        double win = 0;                                                                       \
        for (int64_t c = 0; c < g.after && c < g.C; c++) {                                    \
          double v = (double)xp[base + c * g.cs];                                             \
          win += v * v;                                                                       \
        }                                                                                     \
        for (int64_t c = 0; c < g.C; c++) {                                                   \
          int64_t in = c + g.after, outc = c - g.before - 1;                                  \
          if (in < g.C) win += (double)xp[base + in * g.cs] * (double)xp[base + in * g.cs];   \
          if (outc >= 0) win -= (double)xp[base + outc * g.cs] * (double)xp[base + outc * g.cs]; \
          double mid = k + alpha * win;                                                       \
          int64_t i = base + c * g.cs;                                                        \
          if (mp) mp[i] = (T)mid;                                                             \
          yp[i] = (T)((double)xp[i] * pow(mid, -beta));                                       \
        }                                                                                     \
      }                                                                                       \
    return NULL;                                                                              \
  }

#define LRN_GRAD(T, DT, NAME)                                                                 \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                   \
    rill_tensor *x = NULL, *y = NULL, *mo = NULL, *dy = NULL, *dx = NULL;                     \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                               \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                               \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &mo));                                              \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &dy));                                              \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                                   \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                             \
    lrn_geom g;                                                                               \
    RILL_TRY(lrn_geometry(ctx, x, &g));                                                       \
    int64_t nx = rill_tensor_numel(x);                                                        \
    if (rill_tensor_numel(y) != nx || rill_tensor_numel(mo) != nx || rill_tensor_numel(dy) != nx) \
      return rill_kernel_error(ctx, "inputs Out (%s), MidOut (%s) and Out@GRAD (%s) must have " \
                               "the size of X (%s)", rill_kin_name(ctx, 1, 0),               \
                               rill_kin_name(ctx, 2, 0), rill_kin_name(ctx, 3, 0),            \
                               rill_kin_name(ctx, 0, 0));                                     \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                                  \
    double alpha = ctx->attrs[RILL_LRN_ATTR_ALPHA].v.f;                                       \
    double beta = ctx->attrs[RILL_LRN_ATTR_BETA].v.f, ratio = -2.0 * alpha * beta;            \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *mp = rill_tensor_ptr(mo);    \
    const T *gp = rill_tensor_ptr(dy);                                                        \
    T *xq = rill_tensor_ptr(dx);                                                              \
    for (int64_t s = 0; s < g.N; s++)                                                         \
      for (int64_t p = 0; p < g.P; p++) {                                                     \
        int64_t base = s * g.C * g.P + p * g.ps;                                              \
        double win = 0;                                                                       \
        /* channel c' has c in its window when c' is in [c - after, c + before] */            \
        for (int64_t c = 0; c < g.before && c < g.C; c++) {                                   \
          int64_t i = base + c * g.cs;                                                        \
          win += (double)gp[i] * (double)yp[i] / (double)mp[i];                               \
        }                                                                                     \
        for (int64_t c = 0; c < g.C; c++) {                                                   \
          int64_t in = c + g.before, outc = c - g.after - 1;                                  \
          if (in < g.C) {                                                                     \
            int64_t i = base + in * g.cs;                                                     \
            win += (double)gp[i] * (double)yp[i] / (double)mp[i];                             \
          }                                                                                   \
          if (outc >= 0) {                                                                    \
            int64_t i = base + outc * g.cs;                                                   \
            win -= (double)gp[i] * (double)yp[i] / (double)mp[i];                             \
          }                                                                                   \
          int64_t i = base + c * g.cs;                                                        \
          xq[i] = (T)((double)gp[i] * pow((double)mp[i], -beta) +                             \
                      ratio * (double)xp[i] * win);                                           \
        }                                                                                     \
      }                                                                                       \
    return NULL;                                                                              \
  }

LRN(float, RILL_DTYPE_FP32, rill_cpu_lrn_fp32)
LRN(double, RILL_DTYPE_FP64, rill_cpu_lrn_fp64)
LRN_GRAD(float, RILL_DTYPE_FP32, rill_cpu_lrn_grad_fp32)
LRN_GRAD(double, RILL_DTYPE_FP64, rill_cpu_lrn_grad_fp64)
