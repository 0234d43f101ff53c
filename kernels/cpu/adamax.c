/* adamax CPU kernels (Paddle's adamax op): dense gradients; Beta1Pow is read only (the
 * optimizer advances it with a scale op after the update). */
#include <math.h>

#include "kernels/cpu/optimizer_rows.h"

#define ADAMAX(T, DT, FABS, NAME)                                                           \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *p;                                                                         \
    double lr, b1p;                                                                         \
    rill_opt_grad g;                                                                        \
    void *po, *mo, *uo;                                                                     \
    RILL_TRY(rill_kin_need(ctx, RILL_ADAMAX_IN_PARAM, 0, DT, &p));                          \
    RILL_TRY(rill_opt_scalar(ctx, RILL_ADAMAX_IN_LEARNING_RATE, &lr));                      \
    RILL_TRY(rill_opt_scalar(ctx, RILL_ADAMAX_IN_BETA1_POW, &b1p));                         \
    RILL_TRY(rill_opt_dense_grad(ctx, RILL_ADAMAX_IN_GRAD, DT, p, &g));                     \
    rill_status *st = rill_opt_state(ctx, RILL_ADAMAX_IN_MOMENT, RILL_ADAMAX_OUT_MOMENT_OUT, DT, p, &mo);               \
    if (!st) st = rill_opt_state(ctx, RILL_ADAMAX_IN_INF_NORM, RILL_ADAMAX_OUT_INF_NORM_OUT, DT, p, &uo);               \
    if (!st) st = rill_opt_state(ctx, RILL_ADAMAX_IN_PARAM, RILL_ADAMAX_OUT_PARAM_OUT, DT, NULL, &po);                  \
    if (st) {                                                                               \
      rill_opt_grad_free(&g);                                                               \
      return st;                                                                            \
    }                                                                                       \
    T *pp = po, *m = mo, *u = uo;                                                           \
    const T *gd = g.dense;                                                                  \
    T b1 = (T)ctx->attrs[RILL_ADAMAX_ATTR_BETA1].v.f;                                       \
    T b2 = (T)ctx->attrs[RILL_ADAMAX_ATTR_BETA2].v.f;                                       \
    T eps = (T)ctx->attrs[RILL_ADAMAX_ATTR_EPSILON].v.f;                                    \
    T lr_t = (T)lr / (1 - (T)b1p);                                                          \
    int64_t n = rill_tensor_numel(p);                                                       \
    for (int64_t i = 0; i < n; i++) {                                                       \
      m[i] = b1 * m[i] + (1 - b1) * gd[i];                                                  \
      T decayed = b2 * u[i] + eps, ag = FABS(gd[i]);                                        \
      u[i] = ag > decayed ? ag : decayed;                                                   \
      pp[i] -= lr_t * (m[i] / u[i]);                                                        \
    }                                                                                       \
    rill_opt_grad_free(&g);                                                                 \
    return NULL;                                                                            \
  }

ADAMAX(float, RILL_DTYPE_FP32, fabsf, rill_cpu_adamax_fp32)
ADAMAX(double, RILL_DTYPE_FP64, fabs, rill_cpu_adamax_fp64)
