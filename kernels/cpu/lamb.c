/* lamb CPU kernels (Paddle 1.8's lamb op: no bias correction, trust ratio 1 when a norm
 * is zero). A selected-rows gradient counts as zero in the rows it lacks; one with no
 * rows changes nothing, as in Paddle. Norms are summed in double. */
#include <math.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/optimizer_rows.h"

#define LAMB(T, DT, SQRT, NAME)                                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *p;                                                                         \
    double lr, unused;                                                                      \
    rill_opt_grad g;                                                                        \
    void *po, *m1o, *m2o;                                                                   \
    RILL_TRY(rill_kin_need(ctx, RILL_LAMB_IN_PARAM, 0, DT, &p));                            \
    RILL_TRY(rill_opt_scalar(ctx, RILL_LAMB_IN_LEARNING_RATE, &lr));                        \
    RILL_TRY(rill_opt_scalar(ctx, RILL_LAMB_IN_BETA1_POW, &unused));                        \
    RILL_TRY(rill_opt_scalar(ctx, RILL_LAMB_IN_BETA2_POW, &unused));                        \
    RILL_TRY(rill_opt_grad_get(ctx, RILL_LAMB_IN_GRAD, DT, p, &g));                         \
    rill_status *st = rill_opt_state(ctx, RILL_LAMB_IN_MOMENT1, RILL_LAMB_OUT_MOMENT1_OUT, DT, p, &m1o);                \
    if (!st) st = rill_opt_state(ctx, RILL_LAMB_IN_MOMENT2, RILL_LAMB_OUT_MOMENT2_OUT, DT, p, &m2o);                    \
    if (!st) st = rill_opt_state(ctx, RILL_LAMB_IN_PARAM, RILL_LAMB_OUT_PARAM_OUT, DT, NULL, &po);                      \
    if (st || (g.sparse && g.nrows == 0)) {                                                 \
      rill_opt_grad_free(&g);                                                               \
      return st;                                                                            \
    }                                                                                       \
    int64_t n = rill_tensor_numel(p);                                                       \
    T *r = rill_malloc((size_t)(n ? n : 1) * sizeof(T));                                    \
    if (!r) {                                                                               \
      rill_opt_grad_free(&g);                                                               \
      return rill_oom();                                                                    \
    }                                                                                       \
    T *pp = po, *m1 = m1o, *m2 = m2o;                                                       \
    T wd = (T)ctx->attrs[RILL_LAMB_ATTR_WEIGHT_DECAY].v.f;                                  \
    T b1 = (T)ctx->attrs[RILL_LAMB_ATTR_BETA1].v.f;                                         \
    T b2 = (T)ctx->attrs[RILL_LAMB_ATTR_BETA2].v.f;                                         \
    T eps = (T)ctx->attrs[RILL_LAMB_ATTR_EPSILON].v.f;                                      \
    int64_t rows = rill_opt_param_rows(p);                                                  \
    size_t k = 0;                                                                           \
    double ps = 0, rs = 0;                                                                  \
    for (int64_t row = 0; row < rows; row++) {                                              \
      const T *gr = rill_opt_grad_row(&g, row, &k, sizeof(T));                              \
      for (int64_t j = 0; j < g.width; j++) {                                               \
        int64_t i = row * g.width + j;                                                      \
        T gi = gr ? gr[j] : (T)0;                                                           \
        m1[i] = b1 * m1[i] + (1 - b1) * gi;                                                 \
        m2[i] = b2 * m2[i] + (1 - b2) * gi * gi;                                            \
        r[i] = m1[i] / (SQRT(m2[i]) + eps) + wd * pp[i];                                    \
        ps += (double)pp[i] * pp[i];                                                        \
        rs += (double)r[i] * r[i];                                                          \
      }                                                                                     \
    }                                                                                       \
    T pn = (T)sqrt(ps), rn = (T)sqrt(rs);                                                   \
    T step = (T)lr * (pn > 0 && rn > 0 ? pn / rn : (T)1);                                   \
    for (int64_t i = 0; i < n; i++) pp[i] -= step * r[i];                                   \
    rill_free(r);                                                                           \
    rill_opt_grad_free(&g);                                                                 \
    return NULL;                                                                            \
  }

LAMB(float, RILL_DTYPE_FP32, sqrtf, rill_cpu_lamb_fp32)
LAMB(double, RILL_DTYPE_FP64, sqrt, rill_cpu_lamb_fp64)
