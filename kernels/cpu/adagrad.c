/* adagrad CPU kernels; a selected-rows gradient updates only its rows (Paddle). */
#include <math.h>

#include "kernels/cpu/optimizer.h"


#define ADAGRAD(T, DT, SQRT, NAME)                                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *p;                                                                       \
    double lr;                                                                            \
    rill_opt_grad g;                                                                      \
    void *po, *mo;                                                                        \
    RILL_TRY(rill_kin_need(ctx, RILL_ADAGRAD_IN_PARAM, 0, DT, &p));                       \
    RILL_TRY(rill_opt_scalar(ctx, RILL_ADAGRAD_IN_LEARNING_RATE, &lr));                   \
    RILL_TRY(rill_opt_grad_get(ctx, RILL_ADAGRAD_IN_GRAD, DT, p, &g));                    \
    rill_status *st = rill_opt_state(ctx, RILL_ADAGRAD_IN_MOMENT, RILL_ADAGRAD_OUT_MOMENT_OUT, DT, p, &mo);                \
    if (!st) st = rill_opt_state(ctx, RILL_ADAGRAD_IN_PARAM, RILL_ADAGRAD_OUT_PARAM_OUT, DT, NULL, &po);                   \
    if (st) {                                                                             \
      rill_opt_grad_free(&g);                                                             \
      return st;                                                                          \
    }                                                                                     \
    T *pp = po, *m = mo, l = (T)lr, eps = (T)ctx->attrs[RILL_ADAGRAD_ATTR_EPSILON].v.f;   \
    if (!g.sparse) {                                                                      \
      const T *gd = g.dense;                                                              \
      int64_t n = rill_tensor_numel(p);                                                   \
      for (int64_t i = 0; i < n; i++) {                                                   \
        m[i] += gd[i] * gd[i];                                                            \
        pp[i] -= l * gd[i] / (SQRT(m[i]) + eps);                                          \
      }                                                                                   \
    } else {                                                                              \
      for (size_t k = 0; k < g.nrows; k++) {                                              \
        int64_t base = g.rows[k] * g.width;                                               \
        const T *gv = (const T *)g.vals + (int64_t)k * g.width;                           \
        for (int64_t j = 0; j < g.width; j++) {                                           \
          m[base + j] += gv[j] * gv[j];                                                   \
          pp[base + j] -= l * gv[j] / (SQRT(m[base + j]) + eps);                          \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
    rill_opt_grad_free(&g);                                                               \
    return NULL;                                                                          \
  }

ADAGRAD(float, RILL_DTYPE_FP32, sqrtf, rill_cpu_adagrad_fp32)
ADAGRAD(double, RILL_DTYPE_FP64, sqrt, rill_cpu_adagrad_fp64)
