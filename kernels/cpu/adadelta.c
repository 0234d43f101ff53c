/* adadelta CPU kernels (Paddle's adadelta op): no learning rate, dense gradients. When
 * AvgSquaredUpdateOut is AvgSquaredUpdate (as in every Fluid program), Paddle's kernel
 * computes the parameter's step from the already updated average (its update
 * expression is evaluated after that output is written); rill does the same, and uses
 * the old average when the output is a separate variable. */
#include <math.h>

#include "kernels/cpu/optimizer_rows.h"

#define ADADELTA(T, DT, SQRT, NAME)                                                         \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *p;                                                                         \
    rill_opt_grad g;                                                                        \
    void *po, *go, *uo;                                                                     \
    RILL_TRY(rill_kin_need(ctx, RILL_ADADELTA_IN_PARAM, 0, DT, &p));                        \
    RILL_TRY(rill_opt_dense_grad(ctx, RILL_ADADELTA_IN_GRAD, DT, p, &g));                   \
    rill_status *st = rill_opt_state(ctx, RILL_ADADELTA_IN_AVG_SQUARED_GRAD, RILL_ADADELTA_OUT_AVG_SQUARED_GRAD_OUT, DT, p, &go);        \
    if (!st) st = rill_opt_state(ctx, RILL_ADADELTA_IN_AVG_SQUARED_UPDATE, RILL_ADADELTA_OUT_AVG_SQUARED_UPDATE_OUT, DT, p, &uo);        \
    if (!st) st = rill_opt_state(ctx, RILL_ADADELTA_IN_PARAM, RILL_ADADELTA_OUT_PARAM_OUT, DT, NULL, &po);                               \
    if (st) {                                                                               \
      rill_opt_grad_free(&g);                                                               \
      return st;                                                                            \
    }                                                                                       \
    T *pp = po, *g2 = go, *u2 = uo;                                                         \
    bool aliased = rill_k_same_var(ctx, RILL_ADADELTA_IN_AVG_SQUARED_UPDATE, 0,               \
                                   RILL_ADADELTA_OUT_AVG_SQUARED_UPDATE_OUT, 0);              \
    const T *gd = g.dense;                                                                  \
    T rho = (T)ctx->attrs[RILL_ADADELTA_ATTR_RHO].v.f;                                      \
    T eps = (T)ctx->attrs[RILL_ADADELTA_ATTR_EPSILON].v.f;                                  \
    int64_t n = rill_tensor_numel(p);                                                       \
    for (int64_t i = 0; i < n; i++) {                                                       \
      g2[i] = rho * g2[i] + (1 - rho) * gd[i] * gd[i];                                      \
      T u = -SQRT((u2[i] + eps) / (g2[i] + eps)) * gd[i];                                   \
      u2[i] = rho * u2[i] + (1 - rho) * u * u;                                              \
      if (aliased) u = -SQRT((u2[i] + eps) / (g2[i] + eps)) * gd[i];                        \
      pp[i] += u;                                                                           \
    }                                                                                       \
    rill_opt_grad_free(&g);                                                                 \
    return NULL;                                                                            \
  }

ADADELTA(float, RILL_DTYPE_FP32, sqrtf, rill_cpu_adadelta_fp32)
ADADELTA(double, RILL_DTYPE_FP64, sqrt, rill_cpu_adadelta_fp64)
