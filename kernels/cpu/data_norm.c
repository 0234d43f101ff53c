/* data_norm CPU kernels. A slot (slot_dim > 0) counts as shown when the magnitude of its
 * first value is at least 1e-7, Paddle's threshold. */
#include <math.h>
#include <stdlib.h>

#include "kernels/cpu/kernels.h"

#define DN_SHOWN(v) (!((v) > -1e-7 && (v) < 1e-7))

/* X [N, C] and the slot width (C when there are no slots). */
static rill_status *dn_geometry(rill_kernel_ctx *ctx, const rill_tensor *x, int64_t *n,
                                int64_t *c, int64_t *sd) {
  if (x->dims.n != 2)
    return rill_kernel_error(ctx, "input X (%s) must be [N, C]", rill_kin_name(ctx, 0, 0));
  *n = x->dims.d[0];
  *c = x->dims.d[1];
  int s = ctx->attrs[RILL_DATA_NORM_ATTR_SLOT_DIM].v.i;
  *sd = s > 0 ? s : 0;
  if (*sd && *c % *sd)
    return rill_kernel_error(ctx, "input X (%s) has %lld columns, not a multiple of slot_dim %d",
                             rill_kin_name(ctx, 0, 0), (long long)*c, s);
  return NULL;
}

/* Input `slot` as a [c] vector of dtype dt. */
static rill_status *dn_vec(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt, int64_t c,
                           rill_tensor **t) {
  RILL_TRY(rill_kin_need(ctx, slot, 0, dt, t));
  rill_dims d = {.n = 1, .d = {c}};
  return rill_kin_check_dims(ctx, slot, *t, &d);
}

#define DATA_NORM(T, DT, SUF)                                                             \
  rill_status *rill_cpu_data_norm_##SUF(rill_kernel_ctx *ctx) {                          \
    rill_tensor *x, *bs, *bsum, *bsq, *w = NULL, *b = NULL, *y, *mt, *st;                 \
    int64_t n, c, sd;                                                                     \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(dn_geometry(ctx, x, &n, &c, &sd));                                           \
    RILL_TRY(dn_vec(ctx, 1, DT, c, &bs));                                                 \
    RILL_TRY(dn_vec(ctx, 2, DT, c, &bsum));                                               \
    RILL_TRY(dn_vec(ctx, 3, DT, c, &bsq));                                                \
    bool ss = ctx->attrs[RILL_DATA_NORM_ATTR_ENABLE_SCALE_AND_SHIFT].v.b;                 \
    if (ss) {                                                                             \
      RILL_TRY(dn_vec(ctx, 4, DT, c, &w));                                                \
      RILL_TRY(dn_vec(ctx, 5, DT, c, &b));                                                \
    }                                                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                          \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &mt));                                         \
    RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &st));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &x->dims));                               \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, mt, &bs->dims));                             \
    RILL_TRY(rill_kout_check_dims(ctx, 2, 0, st, &bs->dims));                             \
    const T *xp = rill_tensor_ptr(x), *sz = rill_tensor_ptr(bs);                          \
    const T *sm = rill_tensor_ptr(bsum), *sq = rill_tensor_ptr(bsq);                      \
    const T *wp = w ? (const T *)rill_tensor_ptr(w) : NULL;                               \
    const T *bp = b ? (const T *)rill_tensor_ptr(b) : NULL;                               \
    T *yp = rill_tensor_ptr(y), *mp = rill_tensor_ptr(mt), *sp = rill_tensor_ptr(st);     \
    for (int64_t j = 0; j < c; j++) {                                                     \
      mp[j] = sm[j] / sz[j];                                                              \
      sp[j] = (T)sqrt((double)(sz[j] / sq[j]));                                           \
    }                                                                                     \
    int64_t width = sd ? sd : c;                                                          \
    for (int64_t i = 0; i < n; i++)                                                       \
      for (int64_t s0 = 0; s0 < c; s0 += width) {                                         \
        const T *xr = xp + i * c;                                                         \
        T *yr = yp + i * c;                                                               \
        bool shown = !sd || DN_SHOWN(xr[s0]);                                             \
        for (int64_t j = s0; j < s0 + width; j++) {                                       \
          T v = shown ? (xr[j] - mp[j]) * sp[j] : (T)0;                                   \
          yr[j] = shown && wp ? v * wp[j] + bp[j] : v;                                    \
        }                                                                                 \
      }                                                                                   \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_data_norm_grad_##SUF(rill_kernel_ctx *ctx) {                     \
    rill_tensor *x, *mt, *st, *w = NULL, *dy;                                             \
    int64_t n, c, sd;                                                                     \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(dn_geometry(ctx, x, &n, &c, &sd));                                           \
    RILL_TRY(dn_vec(ctx, 1, DT, c, &mt));                                                 \
    RILL_TRY(dn_vec(ctx, 2, DT, c, &st));                                                 \
    RILL_TRY(rill_kin_need(ctx, 5, 0, DT, &dy));                                          \
    RILL_TRY(rill_kin_check_dims(ctx, 5, dy, &x->dims));                                  \
    bool ss = ctx->attrs[RILL_DATA_NORM_ATTR_ENABLE_SCALE_AND_SHIFT].v.b;                 \
    if (ss) RILL_TRY(dn_vec(ctx, 3, DT, c, &w));                                          \
    rill_tensor *out[6] = {0};                                                            \
    for (size_t s = 0; s < 6; s++) {                                                      \
      if (!rill_kout(ctx, s, 0) || (s >= 4 && !ss)) continue;                             \
      RILL_TRY(rill_kout_need(ctx, s, 0, DT, &out[s]));                                   \
      RILL_TRY(rill_kout_check_dims(ctx, s, 0, out[s], s ? &mt->dims : &x->dims));         \
    }                                                                                     \
    const T *xp = rill_tensor_ptr(x), *mp = rill_tensor_ptr(mt), *sp = rill_tensor_ptr(st); \
    const T *gp = rill_tensor_ptr(dy), *wp = w ? (const T *)rill_tensor_ptr(w) : NULL;    \
    double *acc = calloc((size_t)(5 * c) + 1, sizeof *acc);                               \
    if (!acc) return rill_kernel_error(ctx, "out of memory for %lld columns", (long long)c); \
    double *cnt = acc, *sum = acc + c, *sq = acc + 2 * c, *dw = acc + 3 * c, *db = acc + 4 * c; \
    T *dx = out[0] ? (T *)rill_tensor_ptr(out[0]) : NULL;                                 \
    int64_t width = sd ? sd : c;                                                          \
    for (int64_t i = 0; i < n; i++)                                                       \
      for (int64_t s0 = 0; s0 < c; s0 += width) {                                         \
        const T *xr = xp + i * c, *gr = gp + i * c;                                       \
        bool shown = !sd || DN_SHOWN(xr[s0]);                                             \
        for (int64_t j = s0; j < s0 + width; j++) {                                       \
          /* without scale_w every value passes Scales back, shown or not (Paddle) */     \
          if (dx) dx[i * c + j] = wp ? (shown ? gr[j] * sp[j] * wp[j] : (T)0) : gr[j] * sp[j]; \
          if (!shown) continue;                                                           \
          double d = (double)xr[j] - (double)mp[j];                                       \
          cnt[j] += 1;                                                                    \
          sum[j] += (double)xr[j];                                                        \
          sq[j] += d * d;                                                                 \
          db[j] += (double)gr[j];                                                         \
          dw[j] += d * (double)sp[j] * (double)gr[j];                                     \
        }                                                                                 \
      }                                                                                   \
    double eps = ctx->attrs[RILL_DATA_NORM_ATTR_EPSILON].v.f;                             \
    for (int64_t j = 0; j < c; j++) {                                                     \
      if (sd && cnt[j] >= 1) {                                                            \
        sum[j] /= cnt[j];                                                                 \
        sq[j] = sq[j] / cnt[j] + cnt[j] * eps;                                            \
        cnt[j] = 1;                                                                       \
      } else if (!sd) {                                                                   \
        cnt[j] = (double)n;                                                               \
        sq[j] += (double)n * eps;                                                         \
      }                                                                                   \
      const double *src[5] = {cnt, sum, sq, dw, db};                                      \
      for (size_t s = 1; s < 6; s++)                                                      \
        if (out[s]) ((T *)rill_tensor_ptr(out[s]))[j] = (T)src[s - 1][j];                 \
    }                                                                                     \
    free(acc);                                                                            \
    return NULL;                                                                          \
  }

DATA_NORM(float, RILL_DTYPE_FP32, fp32)
DATA_NORM(double, RILL_DTYPE_FP64, fp64)
