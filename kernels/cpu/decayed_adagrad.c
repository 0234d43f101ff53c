/* decayed_adagrad CPU kernels (Paddle's decayed_adagrad op): dense gradients. */
#include <math.h>

#include "kernels/cpu/optimizer_rows.h"

#define DECAYED_ADAGRAD(T, DT, SQRT, NAME)                                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *p;                                                                         \
    double lr;                                                                              \
    rill_opt_grad g;                                                                        \
    void *po, *mo;                                                                          \
    RILL_TRY(rill_kin_need(ctx, RILL_DECAYED_ADAGRAD_IN_PARAM, 0, DT, &p));                 \
    RILL_TRY(rill_opt_scalar(ctx, RILL_DECAYED_ADAGRAD_IN_LEARNING_RATE, &lr));             \
    RILL_TRY(rill_opt_dense_grad(ctx, RILL_DECAYED_ADAGRAD_IN_GRAD, DT, p, &g));            \
    rill_status *st = rill_opt_state(ctx, RILL_DECAYED_ADAGRAD_IN_MOMENT, RILL_DECAYED_ADAGRAD_OUT_MOMENT_OUT, DT, p, &mo);  \
    if (!st) st = rill_opt_state(ctx, RILL_DECAYED_ADAGRAD_IN_PARAM, RILL_DECAYED_ADAGRAD_OUT_PARAM_OUT, DT, NULL, &po);     \
    if (st) {                                                                               \
      rill_opt_grad_free(&g);                                                               \
      return st;                                                                            \
    }                                                                                       \
    T *pp = po, *m = mo, l = (T)lr;                                                         \
    const T *gd = g.dense;                                                                  \
    T decay = (T)ctx->attrs[RILL_DECAYED_ADAGRAD_ATTR_DECAY].v.f;                           \
    T eps = (T)ctx->attrs[RILL_DECAYED_ADAGRAD_ATTR_EPSILON].v.f;                           \
    int64_t n = rill_tensor_numel(p);                                                       \
    for (int64_t i = 0; i < n; i++) {                                                       \
      m[i] = decay * m[i] + (1 - decay) * gd[i] * gd[i];                                    \
      pp[i] -= l * gd[i] / (SQRT(m[i]) + eps);                                              \
    }                                                                                       \
    rill_opt_grad_free(&g);                                                                 \
    return NULL;                                                                            \
  }

DECAYED_ADAGRAD(float, RILL_DTYPE_FP32, sqrtf, rill_cpu_decayed_adagrad_fp32)
DECAYED_ADAGRAD(double, RILL_DTYPE_FP64, sqrt, rill_cpu_decayed_adagrad_fp64)
