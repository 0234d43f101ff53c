/* instance_norm CPU kernels: one (sample, channel) plane at a time, statistics in double
 * (mean, then squared deviations). The gradient is Paddle's, per plane of S elements with
 * xh = (X - mean) * invstd:
 * dX = Scale * invstd * (dY - sum(dY) / S - xh * sum(dY * xh) / S),
 * dScale = sum(dY * xh) and dBias = sum(dY) over samples and positions. */
#include <math.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/norm.h"

/* X's [N, C, S] split; an error naming X when it is not rank 2..5 or Scale / Bias / the
 * statistics (each may be NULL) do not fit. */
static rill_status *in_shape(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *sc,
                             const rill_tensor *bi, const rill_tensor *m, const rill_tensor *v,
                             int64_t *n, int64_t *c, int64_t *s) {
  const rill_dims *d = &x->dims;
  if (d->n < 2 || d->n > 5)
    return rill_kernel_error(ctx, "input X (%s) must have rank 2 to 5", rill_kin_name(ctx, 0, 0));
  *n = d->d[0];
  *c = d->d[1];
  *s = rill_dims_prod(d, 2, d->n);
  int64_t nc = *n * *c;
  if ((sc && rill_tensor_numel(sc) != *c) || (bi && rill_tensor_numel(bi) != *c) ||
      (m && rill_tensor_numel(m) != nc) || (v && rill_tensor_numel(v) != nc))
    return rill_kernel_error(ctx, "input X (%s) with %lld channels does not fit the shapes of "
                             "Scale, Bias, SavedMean and SavedVariance",
                             rill_kin_name(ctx, 0, 0), (long long)*c);
  return NULL;
}

#define INSTANCE_NORM(T, DT, NAME)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                   \
    rill_tensor *x = NULL, *y = NULL, *sc = NULL, *bi = NULL, *mo = NULL, *vo = NULL;         \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                              \
    if (rill_kin(ctx, 1, 0)) RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &sc));                     \
    if (rill_kin(ctx, 2, 0)) RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &bi));                     \
    if (rill_kout(ctx, 1, 0)) RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &mo));                   \
    if (rill_kout(ctx, 2, 0)) RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &vo));                   \
    int64_t N, C, S;                                                                          \
    RILL_TRY(in_shape(ctx, x, sc, bi, mo, vo, &N, &C, &S));                                   \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &x->dims));                                   \
    double eps = ctx->attrs[RILL_INSTANCE_NORM_ATTR_EPSILON].v.f;                             \
    const T *xp = rill_tensor_ptr(x);                                                         \
    T *yp = rill_tensor_ptr(y);                                                               \
    const T *sp = sc ? (const T *)rill_tensor_ptr(sc) : NULL;                                 \
    const T *bp = bi ? (const T *)rill_tensor_ptr(bi) : NULL;                                 \
    for (int64_t p = 0; p < N * C; p++) {                                                     \
      const T *xr = xp + p * S;                                                               \
      T *yr = yp + p * S;                                                                     \
      double sum = 0, sq = 0;                                                                 \
      for (int64_t k = 0; k < S; k++) sum += (double)xr[k];                                   \
      double mean = S > 0 ? sum / (double)S : 0;                                              \
      for (int64_t k = 0; k < S; k++) sq += ((double)xr[k] - mean) * ((double)xr[k] - mean);  \
      double inv = 1.0 / sqrt((S > 0 ? sq / (double)S : 0) + eps);                            \
      int64_t c = p % C;                                                                      \
      double a = inv * (sp ? (double)sp[c] : 1.0);                                            \
      double b = (bp ? (double)bp[c] : 0.0) - mean * a;                                       \
      for (int64_t k = 0; k < S; k++) yr[k] = (T)((double)xr[k] * a + b);                     \
      if (mo) ((T *)rill_tensor_ptr(mo))[p] = (T)mean;                                        \
      if (vo) ((T *)rill_tensor_ptr(vo))[p] = (T)inv;                                         \
    }                                                                                         \
    return NULL;                                                                              \
  }

#define INSTANCE_NORM_GRAD(T, DT, NAME)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                   \
    rill_tensor *x = NULL, *sc = NULL, *mi = NULL, *vi = NULL, *dy = NULL;                    \
    rill_tensor *dx = NULL, *ds = NULL, *db = NULL;                                           \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                               \
    if (rill_kin(ctx, 1, 0)) RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &sc));                     \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &mi));                                              \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &vi));                                              \
    RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &dy));                                              \
    if (rill_kout(ctx, 0, 0)) RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                   \
    if (rill_kout(ctx, 1, 0)) RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &ds));                   \
    if (rill_kout(ctx, 2, 0)) RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &db));                   \
    int64_t N, C, S;                                                                          \
    RILL_TRY(in_shape(ctx, x, sc, NULL, mi, vi, &N, &C, &S));                                 \
    if (rill_tensor_numel(dy) != rill_tensor_numel(x))                                        \
      return rill_kernel_error(ctx, "input Y@GRAD (%s) does not have the size of X (%s)",     \
                               rill_kin_name(ctx, 4, 0), rill_kin_name(ctx, 0, 0));           \
    if (dx) RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                          \
    rill_dims cd = {.n = 1, .d = {C}};                                                        \
    if (ds) RILL_TRY(rill_kout_check_dims(ctx, 1, 0, ds, &cd));                               \
    if (db) RILL_TRY(rill_kout_check_dims(ctx, 2, 0, db, &cd));                               \
    const T *xp = rill_tensor_ptr(x), *gp = rill_tensor_ptr(dy);                              \
    const T *mp = rill_tensor_ptr(mi), *vp = rill_tensor_ptr(vi);                             \
    const T *sp = sc ? (const T *)rill_tensor_ptr(sc) : NULL;                                 \
    double *acc = rill_calloc((size_t)(C > 0 ? C : 1) * 2, sizeof *acc);                      \
    if (!acc) return rill_oom();                                                              \
    double *dsa = acc, *dba = acc + (C > 0 ? C : 1);                                          \
    for (int64_t p = 0; p < N * C; p++) {                                                     \
      const T *xr = xp + p * S, *gr = gp + p * S;                                             \
      int64_t c = p % C;                                                                      \
      double mean = (double)mp[p], inv = (double)vp[p], sg = 0, sgx = 0;                      \
      for (int64_t k = 0; k < S; k++) {                                                       \
        double xh = ((double)xr[k] - mean) * inv;                                             \
        sg += (double)gr[k];                                                                  \
        sgx += (double)gr[k] * xh;                                                            \
      }                                                                                       \
      dsa[c] += sgx;                                                                          \
      dba[c] += sg;                                                                           \
      if (!dx || S == 0) continue;                                                            \
      T *xq = (T *)rill_tensor_ptr(dx) + p * S;                                               \
      double f = (sp ? (double)sp[c] : 1.0) * inv;                                            \
      for (int64_t k = 0; k < S; k++) {                                                       \
        double xh = ((double)xr[k] - mean) * inv;                                             \
        xq[k] = (T)(f * ((double)gr[k] - sg / (double)S - xh * sgx / (double)S));             \
      }                                                                                       \
    }                                                                                         \
    rill_cpu_norm_store_sums(ds, dsa, C);                                                     \
    rill_cpu_norm_store_sums(db, dba, C);                                                     \
    rill_free(acc);                                                                           \
    return NULL;                                                                              \
  }

INSTANCE_NORM(float, RILL_DTYPE_FP32, rill_cpu_instance_norm_fp32)
INSTANCE_NORM(double, RILL_DTYPE_FP64, rill_cpu_instance_norm_fp64)
INSTANCE_NORM_GRAD(float, RILL_DTYPE_FP32, rill_cpu_instance_norm_grad_fp32)
INSTANCE_NORM_GRAD(double, RILL_DTYPE_FP64, rill_cpu_instance_norm_grad_fp64)
