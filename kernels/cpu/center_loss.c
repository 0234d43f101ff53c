/* center_loss CPU kernels. The centre update accumulates each class's diffs in double
 * scratch before writing CentersOut, so CentersOut may be Centers itself. */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/kernels.h"

#define CENTER_LOSS(T, DT, SUF)                                                           \
  rill_status *rill_cpu_center_loss_##SUF(rill_kernel_ctx *ctx) {                        \
    rill_tensor *x, *l, *c, *r, *co, *diff, *loss;                                        \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT64, &l));                             \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &c));                                           \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &r));                                           \
    int64_t k = ctx->attrs[RILL_CENTER_LOSS_ATTR_CLUSTER_NUM].v.i;                        \
    if (x->dims.n != 2)                                                                   \
      return rill_kernel_error(ctx, "input X (%s) must be [N, D]", rill_kin_name(ctx, 0, 0)); \
    int64_t n = x->dims.d[0], d = x->dims.d[1];                                           \
    rill_dims cd = {.n = 2, .d = {k, d}};                                                 \
    RILL_TRY(rill_kin_check_dims(ctx, 2, c, &cd));                                        \
    if (rill_tensor_numel(l) != n || rill_tensor_numel(r) < 1)                            \
      return rill_kernel_error(ctx, "input Label (%s) must hold X (%s)'s %lld rows and "  \
                               "CenterUpdateRate (%s) one value", rill_kin_name(ctx, 1, 0), \
                               rill_kin_name(ctx, 0, 0), (long long)n,                    \
                               rill_kin_name(ctx, 3, 0));                                 \
    const int64_t *lp = rill_tensor_ptr(l);                                               \
    for (int64_t i = 0; i < n; i++)                                                       \
      if (lp[i] < 0 || lp[i] >= k)                                                        \
        return rill_kernel_error(ctx, "input Label (%s) holds class %lld in row %lld, "   \
                                 "outside [0, cluster_num = %lld)", rill_kin_name(ctx, 1, 0), \
                                 (long long)lp[i], (long long)i, (long long)k);           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &co));                                         \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &diff));                                       \
    RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &loss));                                       \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, co, &cd));                                   \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, diff, &x->dims));                            \
    rill_dims ld = {.n = 2, .d = {n, 1}};                                                 \
    RILL_TRY(rill_kout_check_dims(ctx, 2, 0, loss, &ld));                                 \
    bool update = ctx->attrs[RILL_CENTER_LOSS_ATTR_NEED_UPDATE].v.b;                      \
    double *acc = NULL;                                                                   \
    int64_t *cnt = NULL;                                                                  \
    if (update) {                                                                         \
      acc = calloc((size_t)(k * d) + 1, sizeof *acc);                                     \
      cnt = calloc((size_t)k, sizeof *cnt);                                               \
      if (!acc || !cnt) {                                                                 \
        free(acc);                                                                        \
        free(cnt);                                                                        \
        return rill_kernel_error(ctx, "out of memory for %lld centres", (long long)k);    \
      }                                                                                   \
    }                                                                                     \
    const T *xp = rill_tensor_ptr(x), *cp = rill_tensor_ptr(c);                           \
    T *dp = rill_tensor_ptr(diff), *lo = rill_tensor_ptr(loss), *op = rill_tensor_ptr(co); \
    for (int64_t i = 0; i < n; i++) {                                                     \
      const T *ci = cp + lp[i] * d;                                                       \
      T s = 0;                                                                            \
      for (int64_t j = 0; j < d; j++) {                                                   \
        T v = xp[i * d + j] - ci[j];                                                      \
        dp[i * d + j] = v;                                                                \
        s += v * v;                                                                       \
        if (acc) acc[lp[i] * d + j] += (double)v;                                         \
      }                                                                                   \
      lo[i] = s / (T)2;                                                                   \
      if (cnt) cnt[lp[i]]++;                                                              \
    }                                                                                     \
    if (op != cp) memcpy(op, cp, (size_t)(k * d) * sizeof(T));                            \
    if (update) {                                                                         \
      T rate = ((const T *)rill_tensor_ptr(r))[0];                                        \
      for (int64_t q = 0; q < k; q++) {                                                   \
        T scale = rate / (T)(cnt[q] + 1);                                                 \
        for (int64_t j = 0; j < d; j++) op[q * d + j] += (T)acc[q * d + j] * scale;       \
      }                                                                                   \
    }                                                                                     \
    free(acc);                                                                            \
    free(cnt);                                                                            \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_center_loss_grad_##SUF(rill_kernel_ctx *ctx) {                   \
    rill_tensor *diff, *g, *dx;                                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &diff));                                        \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                           \
    if (diff->dims.n != 2)                                                                \
      return rill_kernel_error(ctx, "input SampleCenterDiff (%s) must be [N, D]",         \
                               rill_kin_name(ctx, 1, 0));                                 \
    int64_t n = diff->dims.d[0], d = diff->dims.d[1];                                     \
    rill_dims gd = {.n = 2, .d = {n, 1}};                                                 \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &gd));                                        \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    if (rill_tensor_numel(dx) != n * d)                                                   \
      return rill_kernel_error(ctx, "output X@GRAD (%s) must hold %lld values",           \
                               rill_kout_name(ctx, 0, 0), (long long)(n * d));            \
    const T *dp = rill_tensor_ptr(diff), *gp = rill_tensor_ptr(g);                        \
    T *o = rill_tensor_ptr(dx);                                                           \
    for (int64_t i = 0; i < n; i++)                                                       \
      for (int64_t j = 0; j < d; j++) o[i * d + j] = gp[i] * dp[i * d + j];               \
    return NULL;                                                                          \
  }

CENTER_LOSS(float, RILL_DTYPE_FP32, fp32)
CENTER_LOSS(double, RILL_DTYPE_FP64, fp64)
