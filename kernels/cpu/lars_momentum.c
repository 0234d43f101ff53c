/* lars_momentum CPU kernels (Paddle's lars_momentum op): dense gradients; the norms are
 * summed in double. */
#include <math.h>

#include "kernels/cpu/optimizer_rows.h"

#define LARS(T, DT, NAME)                                                                   \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *p;                                                                         \
    double lr;                                                                              \
    rill_opt_grad g;                                                                        \
    void *po, *vo;                                                                          \
    RILL_TRY(rill_kin_need(ctx, RILL_LARS_MOMENTUM_IN_PARAM, 0, DT, &p));                   \
    RILL_TRY(rill_opt_scalar(ctx, RILL_LARS_MOMENTUM_IN_LEARNING_RATE, &lr));               \
    RILL_TRY(rill_opt_dense_grad(ctx, RILL_LARS_MOMENTUM_IN_GRAD, DT, p, &g));              \
    rill_status *st = rill_opt_state(ctx, RILL_LARS_MOMENTUM_IN_VELOCITY, RILL_LARS_MOMENTUM_OUT_VELOCITY_OUT, DT, p, &vo); \
    if (!st) st = rill_opt_state(ctx, RILL_LARS_MOMENTUM_IN_PARAM, RILL_LARS_MOMENTUM_OUT_PARAM_OUT, DT, NULL, &po);        \
    if (st) {                                                                               \
      rill_opt_grad_free(&g);                                                               \
      return st;                                                                            \
    }                                                                                       \
    T *pp = po, *v = vo;                                                                    \
    const T *gd = g.dense;                                                                  \
    T mu = (T)ctx->attrs[RILL_LARS_MOMENTUM_ATTR_MU].v.f;                                   \
    T coeff = (T)ctx->attrs[RILL_LARS_MOMENTUM_ATTR_LARS_COEFF].v.f;                        \
    T wd = (T)ctx->attrs[RILL_LARS_MOMENTUM_ATTR_LARS_WEIGHT_DECAY].v.f;                    \
    int64_t n = rill_tensor_numel(p);                                                       \
    double ps = 0, gs = 0;                                                                  \
    for (int64_t i = 0; i < n; i++) {                                                       \
      ps += (double)pp[i] * pp[i];                                                          \
      gs += (double)gd[i] * gd[i];                                                          \
    }                                                                                       \
    T pn = (T)sqrt(ps), gn = (T)sqrt(gs), local = (T)lr;                                    \
    if (pn > 0 && gn > 0) local = (T)lr * coeff * pn / (gn + wd * pn);                      \
    for (int64_t i = 0; i < n; i++) {                                                       \
      v[i] = v[i] * mu + local * (gd[i] + wd * pp[i]);                                      \
      pp[i] -= v[i];                                                                        \
    }                                                                                       \
    rill_opt_grad_free(&g);                                                                 \
    return NULL;                                                                            \
  }

LARS(float, RILL_DTYPE_FP32, rill_cpu_lars_momentum_fp32)
LARS(double, RILL_DTYPE_FP64, rill_cpu_lars_momentum_fp64)
