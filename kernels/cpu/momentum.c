/* momentum CPU kernels (Paddle's momentum op). A selected-rows gradient counts as zero
 * in the rows it lacks: every row's velocity decays, as in Paddle's sparse functor. */
#include <string.h>

#include "kernels/cpu/optimizer.h"


#define MOMENTUM(T, DT, NAME)                                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *p;                                                                       \
    double lr;                                                                            \
    rill_opt_grad g;                                                                      \
    void *po, *vo;                                                                        \
    RILL_TRY(rill_kin_need(ctx, RILL_MOMENTUM_IN_PARAM, 0, DT, &p));                      \
    RILL_TRY(rill_opt_scalar(ctx, RILL_MOMENTUM_IN_LEARNING_RATE, &lr));                  \
    RILL_TRY(rill_opt_grad_get(ctx, RILL_MOMENTUM_IN_GRAD, DT, p, &g));                   \
    rill_status *st = rill_opt_state(ctx, RILL_MOMENTUM_IN_VELOCITY, RILL_MOMENTUM_OUT_VELOCITY_OUT, DT, p, &vo);            \
    if (!st) st = rill_opt_state(ctx, RILL_MOMENTUM_IN_PARAM, RILL_MOMENTUM_OUT_PARAM_OUT, DT, NULL, &po);                   \
    if (st) {                                                                             \
      rill_opt_grad_free(&g);                                                             \
      return st;                                                                          \
    }                                                                                     \
    T *pp = po, *v = vo, l = (T)lr, mu = (T)ctx->attrs[RILL_MOMENTUM_ATTR_MU].v.f;        \
    T rescale = (T)ctx->attrs[RILL_MOMENTUM_ATTR_RESCALE_GRAD].v.f;                       \
    const char *reg = ctx->attrs[RILL_MOMENTUM_ATTR_REGULARIZATION_METHOD].v.s;           \
    T coeff = reg && strcmp(reg, "l2_decay") == 0 ? (T)ctx->attrs[RILL_MOMENTUM_ATTR_REGULARIZATION_COEFF].v.f : 0;   \
    bool nesterov = ctx->attrs[RILL_MOMENTUM_ATTR_USE_NESTEROV].v.b;                      \
    int64_t n = rill_tensor_numel(p);                                                     \
    size_t k = 0;                                                                         \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T gi;                                                                               \
      if (!g.sparse) {                                                                    \
        gi = ((const T *)g.dense)[i];                                                     \
      } else {                                                                            \
        int64_t row = i / g.width;                                                        \
        while (k < g.nrows && g.rows[k] < row) k++;                                       \
        gi = k < g.nrows && g.rows[k] == row ? ((const T *)g.vals)[(int64_t)k * g.width + \
                                                                   i % g.width]           \
                                             : 0;                                         \
      }                                                                                   \
      gi = gi * rescale + coeff * pp[i];                                                  \
      T vn = mu * v[i] + gi;                                                              \
      v[i] = vn;                                                                          \
      pp[i] = nesterov ? pp[i] - (gi + mu * vn) * l : pp[i] - l * vn;                     \
    }                                                                                     \
    rill_opt_grad_free(&g);                                                               \
    return NULL;                                                                          \
  }

MOMENTUM(float, RILL_DTYPE_FP32, rill_cpu_momentum_fp32)
MOMENTUM(double, RILL_DTYPE_FP64, rill_cpu_momentum_fp64)
