/* ftrl CPU kernels (Paddle's ftrl op): dense gradients; l1 and l2 each get 1e-10 added,
 * and lr_power -0.5 takes square roots, as Paddle's kernel does. */
#include <math.h>

#include "kernels/cpu/optimizer_rows.h"

#define FTRL(T, DT, SQRT, POW, FABS, NAME)                                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *p;                                                                         \
    double lr;                                                                              \
    rill_opt_grad g;                                                                        \
    void *po, *so, *zo;                                                                     \
    RILL_TRY(rill_kin_need(ctx, RILL_FTRL_IN_PARAM, 0, DT, &p));                            \
    RILL_TRY(rill_opt_scalar(ctx, RILL_FTRL_IN_LEARNING_RATE, &lr));                        \
    RILL_TRY(rill_opt_dense_grad(ctx, RILL_FTRL_IN_GRAD, DT, p, &g));                       \
    rill_status *st = rill_opt_state(ctx, RILL_FTRL_IN_SQUARED_ACCUMULATOR, RILL_FTRL_OUT_SQUARED_ACCUM_OUT, DT, p, &so); \
    if (!st) st = rill_opt_state(ctx, RILL_FTRL_IN_LINEAR_ACCUMULATOR, RILL_FTRL_OUT_LINEAR_ACCUM_OUT, DT, p, &zo);      \
    if (!st) st = rill_opt_state(ctx, RILL_FTRL_IN_PARAM, RILL_FTRL_OUT_PARAM_OUT, DT, NULL, &po);                       \
    if (st) {                                                                               \
      rill_opt_grad_free(&g);                                                               \
      return st;                                                                            \
    }                                                                                       \
    T *pp = po, *n2 = so, *z = zo, l = (T)lr;                                               \
    const T *gd = g.dense;                                                                  \
    T l1 = (T)ctx->attrs[RILL_FTRL_ATTR_L1].v.f + (T)1e-10;                                 \
    T l2 = (T)ctx->attrs[RILL_FTRL_ATTR_L2].v.f + (T)1e-10;                                 \
    T lp = (T)ctx->attrs[RILL_FTRL_ATTR_LR_POWER].v.f;                                      \
    bool root = lp == (T)-0.5;                                                              \
    int64_t n = rill_tensor_numel(p);                                                       \
    for (int64_t i = 0; i < n; i++) {                                                       \
      T acc = n2[i] + gd[i] * gd[i];                                                        \
      T now = root ? SQRT(acc) : POW(acc, -lp), before = root ? SQRT(n2[i]) : POW(n2[i], -lp); \
      z[i] = z[i] + gd[i] - (now - before) / l * pp[i];                                     \
      T sign = (T)((z[i] > 0) - (z[i] < 0));                                                \
      T x = l1 * sign - z[i], y = now / l + 2 * l2;                                         \
      pp[i] = FABS(z[i]) > l1 ? x / y : (T)0;                                               \
      n2[i] = acc;                                                                          \
    }                                                                                       \
    rill_opt_grad_free(&g);                                                                 \
    return NULL;                                                                            \
  }

FTRL(float, RILL_DTYPE_FP32, sqrtf, powf, fabsf, rill_cpu_ftrl_fp32)
FTRL(double, RILL_DTYPE_FP64, sqrt, pow, fabs, rill_cpu_ftrl_fp64)
