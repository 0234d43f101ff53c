/* group_norm CPU kernels. Statistics are accumulated in double (two passes: mean, then
 * squared deviations), so large groups lose no precision; the output pass is one
 * multiply-add per element with a per-channel factor and offset. */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/norm.h"


#define GROUP_NORM(T, DT, NAME)                                                              \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                  \
    rill_tensor *x = NULL, *y = NULL, *sc = NULL, *bi = NULL;                                \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                              \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                             \
    if (rill_kin(ctx, 1, 0)) RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &sc));                    \
    if (rill_kin(ctx, 2, 0)) RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &bi));                    \
    rill_tensor *mo = NULL, *vo = NULL;                                                      \
    if (rill_kout(ctx, 1, 0)) RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &mo));                  \
    if (rill_kout(ctx, 2, 0)) RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &vo));                  \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &x->dims));                                  \
    const char *layout = ctx->attrs[RILL_GROUP_NORM_ATTR_DATA_LAYOUT].v.s ? ctx->attrs[RILL_GROUP_NORM_ATTR_DATA_LAYOUT].v.s : "NCHW";       \
    bool nhwc = strcmp(layout, "NHWC") == 0 || strcmp(layout, "NDHWC") == 0;                 \
    const rill_dims *d = &x->dims;                                                           \
    int64_t G = ctx->attrs[RILL_GROUP_NORM_ATTR_GROUPS].v.i;                                 \
    if (d->n < 2 || G < 1)                                                                   \
      return rill_kernel_error(ctx, "input X (%s) must have rank >= 2 and groups >= 1",      \
                               rill_kin_name(ctx, 0, 0));                                    \
    int64_t N = d->d[0], C = nhwc ? d->d[d->n - 1] : d->d[1];                                \
    int64_t S = nhwc ? rill_dims_prod(d, 1, d->n - 1) : rill_dims_prod(d, 2, d->n);          \
    if (C % G || (sc && rill_tensor_numel(sc) != C) || (bi && rill_tensor_numel(bi) != C) || \
        (mo && rill_tensor_numel(mo) != N * G) || (vo && rill_tensor_numel(vo) != N * G))    \
      return rill_kernel_error(ctx, "input X (%s) with %lld channels does not fit groups %lld " \
                               "and the shapes of Scale, Bias, Mean and Variance",           \
                               rill_kin_name(ctx, 0, 0), (long long)C, (long long)G);        \
    int64_t cg = C / G;                                                                      \
    float eps = ctx->attrs[RILL_GROUP_NORM_ATTR_EPSILON].v.f;                                \
    const T *xp = rill_tensor_ptr(x);                                                        \
    T *yp = rill_tensor_ptr(y);                                                              \
    const T *sp = sc ? (const T *)rill_tensor_ptr(sc) : NULL;                                \
    const T *bp = bi ? (const T *)rill_tensor_ptr(bi) : NULL;                                \
    double *fa = rill_malloc((size_t)(cg > 0 ? cg : 1) * 2 * sizeof *fa);                    \
    if (!fa) return rill_oom();                                                              \
    double *fb = fa + (cg > 0 ? cg : 1);                                                     \
    for (int64_t n = 0; n < N; n++)                                                          \
      for (int64_t g = 0; g < G; g++) {                                                      \
        double sum = 0, sq = 0, cnt = (double)(cg * S);                                      \
        for (int64_t c = g * cg; c < (g + 1) * cg; c++)                                      \
          for (int64_t s = 0; s < S; s++)                                                    \
            sum += nhwc ? xp[(n * S + s) * C + c] : xp[(n * C + c) * S + s];                 \
        double mean = cnt > 0 ? sum / cnt : 0;                                               \
        for (int64_t c = g * cg; c < (g + 1) * cg; c++)                                      \
          for (int64_t s = 0; s < S; s++) {                                                  \
            double v = (nhwc ? xp[(n * S + s) * C + c] : xp[(n * C + c) * S + s]) - mean;    \
            sq += v * v;                                                                     \
          }                                                                                  \
        double var = cnt > 0 ? sq / cnt : 0, inv = 1.0 / sqrt(var + (double)eps);           \
        if (mo) ((T *)rill_tensor_ptr(mo))[n * G + g] = (T)mean;                             \
        if (vo) ((T *)rill_tensor_ptr(vo))[n * G + g] = (T)var;                              \
        for (int64_t k = 0; k < cg; k++) {                                                   \
          int64_t c = g * cg + k;                                                            \
          fa[k] = inv * (sp ? (double)sp[c] : 1.0);                                          \
          fb[k] = (bp ? (double)bp[c] : 0.0) - mean * fa[k];                                 \
        }                                                                                    \
        if (!nhwc) {                                                                         \
          for (int64_t k = 0; k < cg; k++) {                                                 \
            const T *xr = xp + (n * C + g * cg + k) * S;                                     \
            T *yr = yp + (n * C + g * cg + k) * S;                                           \
            T a = (T)fa[k], b = (T)fb[k];                                                    \
            for (int64_t s = 0; s < S; s++) yr[s] = xr[s] * a + b;                           \
          }                                                                                  \
        } else {                                                                             \
          for (int64_t s = 0; s < S; s++) {                                                  \
            const T *xr = xp + (n * S + s) * C + g * cg;                                     \
            T *yr = yp + (n * S + s) * C + g * cg;                                           \
            for (int64_t k = 0; k < cg; k++) yr[k] = (T)(xr[k] * fa[k] + fb[k]);             \
          }                                                                                  \
        }                                                                                    \
      }                                                                                      \
    rill_free(fa);                                                                           \
    return NULL;                                                                             \
  }

GROUP_NORM(float, RILL_DTYPE_FP32, rill_cpu_group_norm_fp32)
GROUP_NORM(double, RILL_DTYPE_FP64, rill_cpu_group_norm_fp64)

/* group_norm_grad, from Y and Variance as Paddle computes it: per sample and group, with
 * xh = (Y - Bias) / Scale (0 where Scale is 0) and M elements,
 * dX = (dY * Scale - (sum dY * Scale * xh) * xh / M - (sum dY * Scale) / M) / sqrt(var + eps). */
#define GROUP_NORM_GRAD(T, DT, NAME)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                   \
    rill_tensor *y = NULL, *sc = NULL, *bi = NULL, *va = NULL, *dy = NULL;                    \
    rill_tensor *dx = NULL, *ds = NULL, *db = NULL;                                           \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &y));                                               \
    if (rill_kin(ctx, 1, 0)) RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &sc));                     \
    if (rill_kin(ctx, 2, 0)) RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &bi));                     \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &va));                                              \
    RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &dy));                                              \
    if (rill_kout(ctx, 0, 0)) RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                   \
    if (rill_kout(ctx, 1, 0)) RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &ds));                   \
    if (rill_kout(ctx, 2, 0)) RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &db));                   \
    const char *layout = ctx->attrs[RILL_GROUP_NORM_ATTR_DATA_LAYOUT].v.s                     \
                             ? ctx->attrs[RILL_GROUP_NORM_ATTR_DATA_LAYOUT].v.s : "NCHW";     \
    bool nhwc = strcmp(layout, "NHWC") == 0 || strcmp(layout, "NDHWC") == 0;                  \
    const rill_dims *d = &y->dims;                                                            \
    int64_t G = ctx->attrs[RILL_GROUP_NORM_ATTR_GROUPS].v.i;                                  \
    if (d->n < 2 || G < 1)                                                                    \
      return rill_kernel_error(ctx, "input Y (%s) must have rank >= 2 and groups >= 1",       \
                               rill_kin_name(ctx, 0, 0));                                     \
    int64_t N = d->d[0], C = nhwc ? d->d[d->n - 1] : d->d[1];                                 \
    int64_t S = nhwc ? rill_dims_prod(d, 1, d->n - 1) : rill_dims_prod(d, 2, d->n);           \
    if (C % G || (sc && rill_tensor_numel(sc) != C) || (bi && rill_tensor_numel(bi) != C) ||  \
        rill_tensor_numel(va) != N * G || rill_tensor_numel(dy) != rill_tensor_numel(y))      \
      return rill_kernel_error(ctx, "input Y (%s) with %lld channels does not fit groups %lld " \
                               "and the shapes of Scale, Bias, Variance and Y@GRAD",          \
                               rill_kin_name(ctx, 0, 0), (long long)C, (long long)G);         \
    if (dx) RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &y->dims));                          \
    rill_dims cd = {.n = 1, .d = {C}};                                                        \
    if (ds) RILL_TRY(rill_kout_check_dims(ctx, 1, 0, ds, &cd));                               \
    if (db) RILL_TRY(rill_kout_check_dims(ctx, 2, 0, db, &cd));                               \
    int64_t cg = C / G;                                                                       \
    double eps = ctx->attrs[RILL_GROUP_NORM_ATTR_EPSILON].v.f;                                \
    const T *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(dy), *vp = rill_tensor_ptr(va);   \
    const T *sp = sc ? (const T *)rill_tensor_ptr(sc) : NULL;                                 \
    const T *bp = bi ? (const T *)rill_tensor_ptr(bi) : NULL;                                 \
    double *acc = rill_calloc((size_t)(C > 0 ? C : 1) * 2, sizeof *acc);                      \
    if (!acc) return rill_oom();                                                              \
    double *dsa = acc, *dba = acc + (C > 0 ? C : 1);                                          \
    double M = (double)(cg * S);                                                              \
    for (int64_t n = 0; n < N; n++)                                                           \
      for (int64_t g = 0; g < G; g++) {                                                       \
        double inv = 1.0 / sqrt((double)vp[n * G + g] + eps), dps = 0, dpb = 0;               \
        for (int64_t c = g * cg; c < (g + 1) * cg; c++) {                                     \
          double s = sp ? (double)sp[c] : 1.0, b = bp ? (double)bp[c] : 0.0;                  \
          for (int64_t p = 0; p < S; p++) {                                                   \
            int64_t k = nhwc ? (n * S + p) * C + c : (n * C + c) * S + p;                     \
            double v = (double)yp[k] - b, gv = (double)gp[k];                                 \
            double xh = s != 0 ? v / s : 0.0;                                                 \
            dps += v * gv;                                                                    \
            dpb += gv * s;                                                                    \
            dba[c] += gv;                                                                     \
            dsa[c] += xh * gv;                                                                \
          }                                                                                   \
        }                                                                                     \
        if (!dx) continue;                                                                    \
        T *xq = rill_tensor_ptr(dx);                                                          \
        for (int64_t c = g * cg; c < (g + 1) * cg; c++) {                                     \
          double s = sp ? (double)sp[c] : 1.0, b = bp ? (double)bp[c] : 0.0;                  \
          for (int64_t p = 0; p < S; p++) {                                                   \
            int64_t k = nhwc ? (n * S + p) * C + c : (n * C + c) * S + p;                     \
            double xh = s != 0 ? ((double)yp[k] - b) / s : 0.0;                               \
            xq[k] = (T)(((double)gp[k] * s - dps * xh / M - dpb / M) * inv);                  \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
    rill_cpu_norm_store_sums(ds, dsa, C);                                                     \
    rill_cpu_norm_store_sums(db, dba, C);                                                     \
    rill_free(acc);                                                                           \
    return NULL;                                                                              \
  }

GROUP_NORM_GRAD(float, RILL_DTYPE_FP32, rill_cpu_group_norm_grad_fp32)
GROUP_NORM_GRAD(double, RILL_DTYPE_FP64, rill_cpu_group_norm_grad_fp64)
