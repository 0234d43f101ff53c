/* rmsprop CPU kernels (Paddle's rmsprop op). A selected-rows gradient counts as zero in
 * the rows it lacks: every element's running means and moment advance, as in Paddle's
 * sparse functor. */
#include <math.h>

#include "kernels/cpu/optimizer_rows.h"

#define RMSPROP(T, DT, SQRT, NAME)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *p;                                                                         \
    double lr;                                                                              \
    rill_opt_grad g;                                                                        \
    void *po, *mo, *so, *go = NULL;                                                         \
    bool centered = ctx->attrs[RILL_RMSPROP_ATTR_CENTERED].v.b;                             \
    RILL_TRY(rill_kin_need(ctx, RILL_RMSPROP_IN_PARAM, 0, DT, &p));                         \
    RILL_TRY(rill_opt_scalar(ctx, RILL_RMSPROP_IN_LEARNING_RATE, &lr));                     \
    RILL_TRY(rill_opt_grad_get(ctx, RILL_RMSPROP_IN_GRAD, DT, p, &g));                      \
    rill_status *st = rill_opt_state(ctx, RILL_RMSPROP_IN_MOMENT, RILL_RMSPROP_OUT_MOMENT_OUT, DT, p, &mo);             \
    if (!st) st = rill_opt_state(ctx, RILL_RMSPROP_IN_MEAN_SQUARE, RILL_RMSPROP_OUT_MEAN_SQUARE_OUT, DT, p, &so);       \
    if (!st && centered)                                                                    \
      st = rill_opt_state(ctx, RILL_RMSPROP_IN_MEAN_GRAD, RILL_RMSPROP_OUT_MEAN_GRAD_OUT, DT, p, &go);                  \
    if (!st) st = rill_opt_state(ctx, RILL_RMSPROP_IN_PARAM, RILL_RMSPROP_OUT_PARAM_OUT, DT, NULL, &po);                \
    if (st) {                                                                               \
      rill_opt_grad_free(&g);                                                               \
      return st;                                                                            \
    }                                                                                       \
    T *pp = po, *mom = mo, *ms = so, *mg = go, l = (T)lr;                                   \
    T eps = (T)ctx->attrs[RILL_RMSPROP_ATTR_EPSILON].v.f;                                   \
    T rho = (T)ctx->attrs[RILL_RMSPROP_ATTR_DECAY].v.f;                                     \
    T mu = (T)ctx->attrs[RILL_RMSPROP_ATTR_MOMENTUM].v.f;                                   \
    int64_t rows = rill_opt_param_rows(p);                                                  \
    size_t k = 0;                                                                           \
    for (int64_t r = 0; r < rows; r++) {                                                    \
      const T *gr = rill_opt_grad_row(&g, r, &k, sizeof(T));                                \
      for (int64_t j = 0; j < g.width; j++) {                                               \
        int64_t i = r * g.width + j;                                                        \
        T gi = gr ? gr[j] : (T)0;                                                           \
        ms[i] = rho * ms[i] + (1 - rho) * gi * gi;                                          \
        if (centered) {                                                                     \
          mg[i] = rho * mg[i] + (1 - rho) * gi;                                             \
          mom[i] = mu * mom[i] + l * gi / SQRT(ms[i] - mg[i] * mg[i] + eps);                \
        } else {                                                                            \
          mom[i] = mu * mom[i] + l * gi / SQRT(ms[i] + eps);                                \
        }                                                                                   \
        pp[i] -= mom[i];                                                                    \
      }                                                                                     \
    }                                                                                       \
    rill_opt_grad_free(&g);                                                                 \
    return NULL;                                                                            \
  }

RMSPROP(float, RILL_DTYPE_FP32, sqrtf, rill_cpu_rmsprop_fp32)
RMSPROP(double, RILL_DTYPE_FP64, sqrt, rill_cpu_rmsprop_fp64)
