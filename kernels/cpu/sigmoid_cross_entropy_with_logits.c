/* sigmoid_cross_entropy_with_logits CPU kernels, element by element in T. The ignored
 * test truncates the label to int; normalize counts the labels farther than 1e-6 from
 * ignore_index and divides by that integer (a count of 0 divides by 0, as Paddle). */
#include <math.h>

#include "kernels/cpu/kernels.h"

static rill_status *sce_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x, rill_tensor **l) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, l));
  if (rill_tensor_numel(*l) != rill_tensor_numel(*x)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input Label (%s) has shape %s, input X (%s) %s",
                             rill_kin_name(ctx, 1, 0), rill_dims_str(&(*l)->dims, a, sizeof a),
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&(*x)->dims, b, sizeof b));
  }
  return NULL;
}

#define SCE_COUNT(T, lp, n, ignore, norm)                                                 \
  int64_t norm = 0;                                                                       \
  for (int64_t i = 0; i < (n); i++) { \
    T diff_ = (lp)[i] - (T)(ignore);                                                      \
    if (diff_ < (T)-1e-6 || diff_ > (T)1e-6) norm++;                                      \
  }

#define SCE(T, DT, EXP, LOG, FABS, NAME)                                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) { \
    rill_tensor *x, *l, *out;                                                             \
    RILL_TRY(sce_inputs(ctx, DT, &x, &l));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                             \
    const T *xp = rill_tensor_ptr(x), *lp = rill_tensor_ptr(l);                           \
    T *op = rill_tensor_ptr(out);                                                         \
    int32_t ignore = ctx->attrs[RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_ATTR_IGNORE_INDEX].v.i; \
    int64_t n = rill_tensor_numel(x);                                                     \
    for (int64_t i = 0; i < n; i++) { \
      T v = xp[i];                                                                        \
      op[i] = (int32_t)lp[i] == ignore                                                    \
                  ? (T)0                                                                  \
                  : (v > 0 ? v : (T)0) - v * lp[i] + LOG((T)1 + EXP(-FABS(v)));           \
    }                                                                                     \
    if (ctx->attrs[RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_ATTR_NORMALIZE].v.b) { \
      SCE_COUNT(T, lp, n, ignore, norm)                                                   \
      for (int64_t i = 0; i < n; i++) op[i] /= (T)norm;                                   \
    }                                                                                     \
    return NULL;                                                                          \
  }

SCE(float, RILL_DTYPE_FP32, expf, logf, fabsf, rill_cpu_sigmoid_cross_entropy_with_logits_fp32)
SCE(double, RILL_DTYPE_FP64, exp, log, fabs, rill_cpu_sigmoid_cross_entropy_with_logits_fp64)

#define SCE_GRAD(T, DT, EXP, NAME)                                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) { \
    rill_tensor *x, *l, *dout, *dx;                                                       \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(sce_inputs(ctx, DT, &x, &l));                                                \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                        \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    int64_t n = rill_tensor_numel(x);                                                     \
    if (rill_tensor_numel(dout) != n)                                                     \
      return rill_kernel_error(ctx, "input Out@GRAD (%s) holds %lld elements, X (%s) %lld", \
                               rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(dout), \
                               rill_kin_name(ctx, 0, 0), (long long)n);                   \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    const T *xp = rill_tensor_ptr(x), *lp = rill_tensor_ptr(l), *gp = rill_tensor_ptr(dout); \
    T *dp = rill_tensor_ptr(dx);                                                          \
    int32_t ignore = ctx->attrs[RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_GRAD_ATTR_IGNORE_INDEX].v.i; \
    for (int64_t i = 0; i < n; i++)                                                       \
      dp[i] = (int32_t)lp[i] == ignore ? (T)0                                             \
                                       : gp[i] * ((T)1 / ((T)1 + EXP(-xp[i])) - lp[i]);   \
    if (ctx->attrs[RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_GRAD_ATTR_NORMALIZE].v.b) { \
      SCE_COUNT(T, lp, n, ignore, norm)                                                   \
      for (int64_t i = 0; i < n; i++) dp[i] /= (T)norm;                                   \
    }                                                                                     \
    return NULL;                                                                          \
  }

SCE_GRAD(float, RILL_DTYPE_FP32, expf, rill_cpu_sigmoid_cross_entropy_with_logits_grad_fp32)
SCE_GRAD(double, RILL_DTYPE_FP64, exp, rill_cpu_sigmoid_cross_entropy_with_logits_grad_fp64)
