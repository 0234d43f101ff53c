/* CPU kernels of norm, norm_grad and clip_by_norm (operators/normalize.c), in T with
 * Paddle's formulas. */
#include <math.h>

#include "kernels/cpu/kernels.h"

/* X's extents before, along and after `axis` (negative: from the end). */
static rill_status *split_axis(rill_kernel_ctx *ctx, const rill_tensor *x, int64_t *pre,
                               int64_t *n, int64_t *post) {
  int axis = ctx->attrs[0].v.i;
  if (axis < 0) axis += x->dims.n;
  if (axis < 0 || axis >= x->dims.n)
    return rill_kernel_error(ctx, "attribute axis %d is out of range for input X (%s) of rank %d",
                             ctx->attrs[0].v.i, rill_kin_name(ctx, 0, 0), x->dims.n);
  *pre = rill_dims_prod(&x->dims, 0, axis);
  *n = x->dims.d[axis];
  *post = rill_dims_prod(&x->dims, axis + 1, x->dims.n);
  return NULL;
}

#define NORM_KERNELS(T, DT, SUF, SQRT)                                                    \
  rill_status *rill_cpu_norm_##SUF(rill_kernel_ctx *ctx) {                                \
    rill_tensor *x, *out, *nm;                                                            \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &nm));                                         \
    int64_t pre, n, post;                                                                 \
    RILL_TRY(split_axis(ctx, x, &pre, &n, &post));                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                             \
    if (rill_tensor_numel(nm) != pre * post)                                              \
      return rill_kernel_error(ctx, "output Norm (%s) holds %lld values, expected %lld",  \
                               rill_kout_name(ctx, 1, 0), (long long)rill_tensor_numel(nm), \
                               (long long)(pre * post));                                  \
    T eps = (T)ctx->attrs[RILL_NORM_ATTR_EPSILON].v.f;                                    \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out), *np = rill_tensor_ptr(nm);                              \
    for (int64_t p = 0; p < pre; p++)                                                     \
      for (int64_t q = 0; q < post; q++) {                                                \
        const T *xr = xp + p * n * post + q;                                              \
        T s = 0;                                                                          \
        for (int64_t k = 0; k < n; k++) s += xr[k * post] * xr[k * post];                 \
        T d = SQRT(s + eps);                                                              \
        np[p * post + q] = d;                                                             \
        for (int64_t k = 0; k < n; k++) op[p * n * post + q + k * post] = xr[k * post] / d; \
      }                                                                                   \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_norm_grad_##SUF(rill_kernel_ctx *ctx) {                           \
    rill_tensor *x, *nm, *g, *dx;                                                         \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &nm));                                          \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &g));                                           \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &x->dims));                                   \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    int64_t pre, n, post;                                                                 \
    RILL_TRY(split_axis(ctx, x, &pre, &n, &post));                                        \
    if (rill_tensor_numel(nm) != pre * post)                                              \
      return rill_kernel_error(ctx, "input Norm (%s) holds %lld values, expected %lld",   \
                               rill_kin_name(ctx, 1, 0), (long long)rill_tensor_numel(nm), \
                               (long long)(pre * post));                                  \
    const T *xp = rill_tensor_ptr(x), *np = rill_tensor_ptr(nm), *gp = rill_tensor_ptr(g); \
    T *dp = rill_tensor_ptr(dx);                                                          \
    for (int64_t p = 0; p < pre; p++)                                                     \
      for (int64_t q = 0; q < post; q++) {                                                \
        int64_t base = p * n * post + q;                                                  \
        T s = 0, d = np[p * post + q];                                                    \
        for (int64_t k = 0; k < n; k++) s += xp[base + k * post] * gp[base + k * post];   \
        for (int64_t k = 0; k < n; k++) {                                                 \
          int64_t i = base + k * post;                                                    \
          dp[i] = (gp[i] - xp[i] * s / (d * d)) / d;                                      \
        }                                                                                 \
      }                                                                                   \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_clip_by_norm_##SUF(rill_kernel_ctx *ctx) {                        \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                             \
    T maxn = (T)ctx->attrs[RILL_CLIP_BY_NORM_ATTR_MAX_NORM].v.f, s = 0;                   \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t n = rill_tensor_numel(x);                                                     \
    for (int64_t i = 0; i < n; i++) s += xp[i] * xp[i];                                   \
    T norm = SQRT(s), k = norm > maxn ? maxn / norm : (T)1;                               \
    for (int64_t i = 0; i < n; i++) op[i] = xp[i] * k;                                    \
    return NULL;                                                                          \
  }

NORM_KERNELS(float, RILL_DTYPE_FP32, fp32, sqrtf)
NORM_KERNELS(double, RILL_DTYPE_FP64, fp64, sqrt)
