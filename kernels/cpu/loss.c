/* CPU kernels of the losses in operators/loss.c, element by element in T with Paddle
 * 1.8's formulas. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "operators/loss.h"

/* Input `slot` of dtype dt with the dims of `like` (any dims when like is NULL); absent
 * and optional: *t = NULL. */
static rill_status *in_like(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt,
                            const rill_tensor *like, bool optional, rill_tensor **t) {
  *t = NULL;
  if (optional && !rill_kin(ctx, slot, 0)) return NULL;
  RILL_TRY(rill_kin_need(ctx, slot, 0, dt, t));
  return like ? rill_kin_check_dims(ctx, slot, *t, &like->dims) : NULL;
}

/* Output `slot` of dtype dt and dims; absent and optional: *t = NULL. */
static rill_status *out_dims(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt,
                             const rill_dims *dims, bool optional, rill_tensor **t) {
  *t = NULL;
  if (optional && !rill_kout(ctx, slot, 0)) return NULL;
  RILL_TRY(rill_kout_need(ctx, slot, 0, dt, t));
  return rill_kout_check_dims(ctx, slot, 0, *t, dims);
}

/* X [N, C] and Label [N, 1] int64 with every class in [0, C). */
static rill_status *bpr_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                               rill_tensor **l, int64_t *n, int64_t *c) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT64, l));
  if ((*x)->dims.n != 2)
    return rill_kernel_error(ctx, "input X (%s) must be [N, C]", rill_kin_name(ctx, 0, 0));
  *n = (*x)->dims.d[0];
  *c = (*x)->dims.d[1];
  rill_dims ld = {.n = 2, .d = {*n, 1}};
  RILL_TRY(rill_kin_check_dims(ctx, 1, *l, &ld));
  const int64_t *lp = rill_tensor_ptr(*l);
  for (int64_t i = 0; i < *n; i++)
    if (lp[i] < 0 || lp[i] >= *c)
      return rill_kernel_error(ctx, "input Label (%s) holds class %lld in row %lld, outside "
                               "[0, %lld)", rill_kin_name(ctx, 1, 0), (long long)lp[i],
                               (long long)i, (long long)*c);
  return NULL;
}

/* sigmoid_focal_loss's X [N, D], Label [N, 1] int32 and FgNum (at least 1 used). */
static rill_status *sf_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                              rill_tensor **l, int64_t *fg) {
  rill_tensor *f;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT32, l));
  RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_INT32, &f));
  if ((*x)->dims.n != 2 || rill_tensor_numel(f) < 1)
    return rill_kernel_error(ctx, "input X (%s) must be [N, D] and FgNum (%s) hold a value",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 2, 0));
  rill_dims ld = {.n = 2, .d = {(*x)->dims.d[0], 1}};
  RILL_TRY(rill_kin_check_dims(ctx, 1, *l, &ld));
  int32_t v = ((const int32_t *)rill_tensor_ptr(f))[0];
  *fg = v > 1 ? v : 1;
  return NULL;
}

#define P(t) ((T *)rill_tensor_ptr(t))

/* sigmoid_focal_loss (grad false) or its gradient, in T. */
#define FOCAL(T, DT, SUF, EXP, LOG, POW)                                                  \
  static rill_status *focal_##SUF(rill_kernel_ctx *ctx, bool grad) {                      \
    rill_tensor *x, *l, *out, *g = NULL;                                                  \
    int64_t fg;                                                                           \
    RILL_TRY(sf_inputs(ctx, DT, &x, &l, &fg));                                            \
    if (grad) {                                                                           \
      RILL_TRY(in_like(ctx, 3, DT, x, false, &g));                                        \
      RILL_TRY(out_dims(ctx, 0, DT, &x->dims, true, &out));                               \
      if (!out) return NULL;                                                              \
    } else {                                                                              \
      RILL_TRY(out_dims(ctx, 0, DT, &x->dims, false, &out));                              \
    }                                                                                     \
    T gamma = (T)ctx->attrs[RILL_SIGMOID_FOCAL_LOSS_ATTR_GAMMA].v.f;                      \
    T alpha = (T)ctx->attrs[RILL_SIGMOID_FOCAL_LOSS_ATTR_ALPHA].v.f;                      \
    T s_pos = alpha / (T)fg, s_neg = ((T)1 - alpha) / (T)fg;                              \
    const T *xp = rill_tensor_ptr(x);                                                     \
    const int32_t *lp = rill_tensor_ptr(l);                                               \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t d = x->dims.d[1], n = rill_tensor_numel(x);                                   \
    for (int64_t i = 0; i < n; i++) {                                                     \
      int32_t lab = lp[i / d];                                                            \
      int64_t cls = i % d + 1;                                                            \
      T c_pos = lab == cls, c_neg = lab != -1 && lab != cls;                              \
      T v = xp[i], p = (T)1 / ((T)1 + EXP(-v));                                           \
      T logp = LOG(p > (T)FLT_MIN ? p : (T)FLT_MIN);                                      \
      T pos = v >= 0 ? v : (T)0;                                                          \
      T log1mp = -pos - LOG((T)1 + EXP(v - (T)2 * pos));                                  \
      T tp, tn;                                                                           \
      if (!grad) {                                                                        \
        tp = POW((T)1 - p, gamma) * logp;                                                 \
        tn = POW(p, gamma) * log1mp;                                                      \
      } else {                                                                            \
        tp = POW((T)1 - p, gamma) * ((T)1 - p - p * gamma * logp);                        \
        tn = POW(p, gamma) * (log1mp * ((T)1 - p) * gamma - p);                           \
      }                                                                                   \
      T r = -c_pos * tp * s_pos - c_neg * tn * s_neg;                                     \
      op[i] = grad ? r * P(g)[i] : r;                                                     \
    }                                                                                     \
    return NULL;                                                                          \
  }

#define T float
FOCAL(float, RILL_DTYPE_FP32, fp32, expf, logf, powf)
#undef T
#define T double
FOCAL(double, RILL_DTYPE_FP64, fp64, exp, log, pow)
#undef T

#define LOSS_KERNELS(T, DT, SUF, EXP, LOG, FABS)                                          \
  rill_status *rill_cpu_log_loss_##SUF(rill_kernel_ctx *ctx) {                            \
    rill_tensor *p, *l, *out;                                                             \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &p));                                       \
    RILL_TRY(in_like(ctx, 1, DT, p, false, &l));                                          \
    RILL_TRY(out_dims(ctx, 0, DT, &p->dims, false, &out));                                \
    T eps = (T)ctx->attrs[RILL_LOG_LOSS_ATTR_EPSILON].v.f;                                \
    const T *pp = P(p), *lp = P(l);                                                       \
    T *op = P(out);                                                                       \
    for (int64_t i = 0, n = rill_tensor_numel(p); i < n; i++)                             \
      op[i] = -lp[i] * LOG(pp[i] + eps) - ((T)1 - lp[i]) * LOG((T)1 - pp[i] + eps);       \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_log_loss_grad_##SUF(rill_kernel_ctx *ctx) {                       \
    rill_tensor *p, *l, *g, *dp;                                                          \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &p));                                       \
    RILL_TRY(in_like(ctx, 1, DT, p, false, &l));                                          \
    RILL_TRY(in_like(ctx, 2, DT, p, false, &g));                                          \
    RILL_TRY(out_dims(ctx, 0, DT, &p->dims, true, &dp));                                  \
    if (!dp) return NULL;                                                                 \
    T eps = (T)ctx->attrs[RILL_LOG_LOSS_GRAD_ATTR_EPSILON].v.f;                           \
    const T *pp = P(p), *lp = P(l), *gp = P(g);                                           \
    T *o = P(dp);                                                                         \
    for (int64_t i = 0, n = rill_tensor_numel(p); i < n; i++)                             \
      o[i] = gp[i] * (-lp[i] / (pp[i] + eps) + ((T)1 - lp[i]) / ((T)1 - pp[i] + eps));    \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_huber_loss_##SUF(rill_kernel_ctx *ctx) {                          \
    rill_tensor *x, *y, *out, *res;                                                       \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &x));                                       \
    RILL_TRY(in_like(ctx, 1, DT, x, false, &y));                                          \
    RILL_TRY(out_dims(ctx, 0, DT, &x->dims, false, &out));                                \
    RILL_TRY(out_dims(ctx, 1, DT, &x->dims, false, &res));                                \
    T delta = (T)ctx->attrs[RILL_HUBER_LOSS_ATTR_DELTA].v.f;                              \
    const T *xp = P(x), *yp = P(y);                                                       \
    T *op = P(out), *rp = P(res);                                                         \
    for (int64_t i = 0, n = rill_tensor_numel(x); i < n; i++) {                           \
      T r = yp[i] - xp[i], a = FABS(r);                                                   \
      rp[i] = r;                                                                          \
      op[i] = a <= delta ? (T)0.5 * r * r : delta * (a - (T)0.5 * delta);                 \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_huber_loss_grad_##SUF(rill_kernel_ctx *ctx) {                     \
    rill_tensor *r, *g, *dx, *dy;                                                         \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &r));                                       \
    RILL_TRY(in_like(ctx, 1, DT, r, false, &g));                                          \
    RILL_TRY(out_dims(ctx, 0, DT, &r->dims, true, &dx));                                  \
    RILL_TRY(out_dims(ctx, 1, DT, &r->dims, true, &dy));                                  \
    T delta = (T)ctx->attrs[RILL_HUBER_LOSS_GRAD_ATTR_DELTA].v.f;                         \
    const T *rp = P(r), *gp = P(g);                                                       \
    for (int64_t i = 0, n = rill_tensor_numel(r); i < n; i++) {                           \
      T v = rp[i], d = v > delta ? delta : (v < -delta ? -delta : v);                     \
      if (dx) P(dx)[i] = -gp[i] * d;                                                      \
      if (dy) P(dy)[i] = gp[i] * d;                                                       \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_smooth_l1_loss_##SUF(rill_kernel_ctx *ctx) {                      \
    rill_tensor *x, *y, *iw, *ow, *diff, *out;                                            \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &x));                                       \
    RILL_TRY(in_like(ctx, 1, DT, x, false, &y));                                          \
    RILL_TRY(in_like(ctx, 2, DT, x, true, &iw));                                          \
    RILL_TRY(in_like(ctx, 3, DT, x, true, &ow));                                          \
    int64_t rows = x->dims.n ? x->dims.d[0] : 1, numel = rill_tensor_numel(x);            \
    int64_t cols = rows ? numel / rows : 0;                                               \
    rill_dims od = {.n = 2, .d = {rows, 1}};                                              \
    RILL_TRY(out_dims(ctx, 0, DT, &x->dims, false, &diff));                               \
    RILL_TRY(out_dims(ctx, 1, DT, &od, false, &out));                                     \
    T s2 = (T)ctx->attrs[RILL_SMOOTH_L1_LOSS_ATTR_SIGMA].v.f;                             \
    s2 *= s2;                                                                             \
    const T *xp = P(x), *yp = P(y);                                                       \
    T *dp = P(diff), *op = P(out);                                                        \
    for (int64_t i = 0; i < rows; i++) {                                                  \
      T sum = 0;                                                                          \
      for (int64_t j = i * cols; j < (i + 1) * cols; j++) {                               \
        T d = xp[j] - yp[j];                                                              \
        if (iw) d *= P(iw)[j];                                                            \
        dp[j] = d;                                                                        \
        T a = FABS(d), e = a < (T)1 / s2 ? (T)0.5 * d * d * s2 : a - (T)0.5 / s2;         \
        sum += ow ? e * P(ow)[j] : e;                                                     \
      }                                                                                   \
      op[i] = sum;                                                                        \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_smooth_l1_loss_grad_##SUF(rill_kernel_ctx *ctx) {                 \
    rill_tensor *iw, *ow, *diff, *g, *dx, *dy;                                            \
    RILL_TRY(in_like(ctx, 2, DT, NULL, false, &diff));                                    \
    RILL_TRY(in_like(ctx, 0, DT, diff, true, &iw));                                       \
    RILL_TRY(in_like(ctx, 1, DT, diff, true, &ow));                                       \
    int64_t rows = diff->dims.n ? diff->dims.d[0] : 1, numel = rill_tensor_numel(diff);   \
    int64_t cols = rows ? numel / rows : 0;                                               \
    rill_dims gd = {.n = 2, .d = {rows, 1}};                                              \
    RILL_TRY(in_like(ctx, 3, DT, NULL, false, &g));                                       \
    RILL_TRY(rill_kin_check_dims(ctx, 3, g, &gd));                                        \
    RILL_TRY(out_dims(ctx, 0, DT, &diff->dims, true, &dx));                               \
    RILL_TRY(out_dims(ctx, 1, DT, &diff->dims, true, &dy));                               \
    T s2 = (T)ctx->attrs[RILL_SMOOTH_L1_LOSS_GRAD_ATTR_SIGMA].v.f;                        \
    s2 *= s2;                                                                             \
    const T *dp = P(diff), *gp = P(g);                                                    \
    for (int64_t i = 0; i < rows; i++)                                                    \
      for (int64_t j = i * cols; j < (i + 1) * cols; j++) {                               \
        T d = dp[j], s = FABS(d) < (T)1 / s2 ? s2 * d : (T)((d > 0) - (d < 0));           \
        if (iw) s *= P(iw)[j];                                                            \
        if (ow) s *= P(ow)[j];                                                            \
        if (dx) P(dx)[j] = gp[i] * s;                                                     \
        if (dy) P(dy)[j] = -gp[i] * s;                                                    \
      }                                                                                   \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_kldiv_loss_##SUF(rill_kernel_ctx *ctx) {                          \
    rill_tensor *x, *t, *out;                                                             \
    int red = rill_kldiv_reduction(ctx->attrs[RILL_KLDIV_LOSS_ATTR_REDUCTION].v.s);       \
    if (red < 0) return rill_kernel_error(ctx, "attribute reduction is not one of 'none', " \
                                          "'batchmean', 'mean', 'sum'");                  \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &x));                                       \
    RILL_TRY(in_like(ctx, 1, DT, x, false, &t));                                          \
    rill_dims one = {.n = 1, .d = {1}};                                                   \
    RILL_TRY(out_dims(ctx, 0, DT, red == KLDIV_NONE ? &x->dims : &one, false, &out));     \
    const T *xp = P(x), *tp = P(t);                                                       \
    T *op = P(out), sum = 0;                                                              \
    int64_t n = rill_tensor_numel(x);                                                     \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T v = tp[i] > 0 ? tp[i] * (LOG(tp[i]) - xp[i]) : (T)0;                              \
      if (red == KLDIV_NONE)                                                              \
        op[i] = v;                                                                        \
      else                                                                                \
        sum += v;                                                                         \
    }                                                                                     \
    if (red == KLDIV_SUM) op[0] = sum;                                                    \
    if (red == KLDIV_MEAN) op[0] = sum / (T)n;                                            \
    if (red == KLDIV_BATCHMEAN) op[0] = sum / (T)(x->dims.n ? x->dims.d[0] : 1);          \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_kldiv_loss_grad_##SUF(rill_kernel_ctx *ctx) {                     \
    rill_tensor *x, *t, *g, *dx;                                                          \
    int red = rill_kldiv_reduction(ctx->attrs[RILL_KLDIV_LOSS_GRAD_ATTR_REDUCTION].v.s);  \
    if (red < 0) return rill_kernel_error(ctx, "attribute reduction is not one of 'none', " \
                                          "'batchmean', 'mean', 'sum'");                  \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &x));                                       \
    RILL_TRY(in_like(ctx, 1, DT, x, false, &t));                                          \
    rill_dims one = {.n = 1, .d = {1}};                                                   \
    RILL_TRY(in_like(ctx, 2, DT, NULL, false, &g));                                       \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, red == KLDIV_NONE ? &x->dims : &one));        \
    RILL_TRY(out_dims(ctx, 0, DT, &x->dims, true, &dx));                                  \
    if (!dx) return NULL;                                                                 \
    int64_t n = rill_tensor_numel(x);                                                     \
    T scale = red == KLDIV_MEAN        ? (T)1 / (T)n                                      \
              : red == KLDIV_BATCHMEAN ? (T)1 / (T)(x->dims.n ? x->dims.d[0] : 1)         \
                                       : (T)1;                                            \
    const T *tp = P(t), *gp = P(g);                                                       \
    T *o = P(dx);                                                                         \
    for (int64_t i = 0; i < n; i++)                                                       \
      o[i] = tp[i] > 0 ? -tp[i] * gp[red == KLDIV_NONE ? i : 0] * scale : (T)0;           \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_rank_loss_##SUF(rill_kernel_ctx *ctx) {                           \
    rill_tensor *l, *a, *b, *out;                                                         \
    RILL_TRY(in_like(ctx, 1, DT, NULL, false, &a));                                       \
    RILL_TRY(in_like(ctx, 0, DT, a, false, &l));                                          \
    RILL_TRY(in_like(ctx, 2, DT, a, false, &b));                                          \
    RILL_TRY(out_dims(ctx, 0, DT, &a->dims, false, &out));                                \
    const T *lp = P(l), *ap = P(a), *bp = P(b);                                           \
    T *op = P(out);                                                                       \
    for (int64_t i = 0, n = rill_tensor_numel(a); i < n; i++) {                           \
      T o = ap[i] - bp[i];                                                                \
      op[i] = LOG((T)1 + EXP(o)) - lp[i] * o;                                             \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_rank_loss_grad_##SUF(rill_kernel_ctx *ctx) {                      \
    rill_tensor *l, *a, *b, *g, *da, *db;                                                 \
    RILL_TRY(in_like(ctx, 1, DT, NULL, false, &a));                                       \
    RILL_TRY(in_like(ctx, 0, DT, a, false, &l));                                          \
    RILL_TRY(in_like(ctx, 2, DT, a, false, &b));                                          \
    RILL_TRY(in_like(ctx, 3, DT, a, false, &g));                                          \
    RILL_TRY(out_dims(ctx, 0, DT, &a->dims, true, &da));                                  \
    RILL_TRY(out_dims(ctx, 1, DT, &a->dims, true, &db));                                  \
    const T *lp = P(l), *ap = P(a), *bp = P(b), *gp = P(g);                               \
    for (int64_t i = 0, n = rill_tensor_numel(a); i < n; i++) {                           \
      T d = gp[i] * ((T)1 / ((T)1 + EXP(bp[i] - ap[i])) - lp[i]);                         \
      if (da) P(da)[i] = d;                                                               \
      if (db) P(db)[i] = -d;                                                              \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_margin_rank_loss_##SUF(rill_kernel_ctx *ctx) {                    \
    rill_tensor *x1, *x2, *l, *out, *act;                                                 \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &x1));                                      \
    RILL_TRY(in_like(ctx, 1, DT, x1, false, &x2));                                        \
    RILL_TRY(in_like(ctx, 2, DT, x1, false, &l));                                         \
    RILL_TRY(out_dims(ctx, 0, DT, &x1->dims, false, &out));                               \
    RILL_TRY(out_dims(ctx, 1, DT, &x1->dims, false, &act));                               \
    T margin = (T)ctx->attrs[RILL_MARGIN_RANK_LOSS_ATTR_MARGIN].v.f;                      \
    const T *ap = P(x1), *bp = P(x2), *lp = P(l);                                         \
    T *op = P(out), *cp = P(act);                                                         \
    for (int64_t i = 0, n = rill_tensor_numel(x1); i < n; i++) {                          \
      T v = -lp[i] * (ap[i] - bp[i]) + margin;                                            \
      op[i] = v > 0 ? v : (T)0;                                                           \
      cp[i] = v > 0 ? (T)1 : (T)0;                                                        \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_margin_rank_loss_grad_##SUF(rill_kernel_ctx *ctx) {               \
    rill_tensor *act, *l, *g, *d1, *d2;                                                   \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &act));                                     \
    RILL_TRY(in_like(ctx, 1, DT, act, false, &l));                                        \
    RILL_TRY(in_like(ctx, 2, DT, act, false, &g));                                        \
    RILL_TRY(out_dims(ctx, 0, DT, &act->dims, true, &d1));                                \
    RILL_TRY(out_dims(ctx, 1, DT, &act->dims, true, &d2));                                \
    const T *cp = P(act), *lp = P(l), *gp = P(g);                                         \
    for (int64_t i = 0, n = rill_tensor_numel(act); i < n; i++) {                         \
      T d = gp[i] * cp[i] * lp[i];                                                        \
      if (d1) P(d1)[i] = -d;                                                              \
      if (d2) P(d2)[i] = d;                                                               \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_label_smooth_##SUF(rill_kernel_ctx *ctx) {                        \
    rill_tensor *x, *prior, *out;                                                         \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &x));                                       \
    RILL_TRY(in_like(ctx, 1, DT, NULL, true, &prior));                                    \
    RILL_TRY(out_dims(ctx, 0, DT, &x->dims, false, &out));                                \
    int64_t n = rill_tensor_numel(x), k = x->dims.n ? x->dims.d[x->dims.n - 1] : 1;       \
    if (prior && rill_tensor_numel(prior) != k)                                           \
      return rill_kernel_error(ctx, "input PriorDist (%s) holds %lld values, input X (%s) " \
                               "has %lld classes", rill_kin_name(ctx, 1, 0),              \
                               (long long)rill_tensor_numel(prior), rill_kin_name(ctx, 0, 0), \
                               (long long)k);                                             \
    T eps = (T)ctx->attrs[RILL_LABEL_SMOOTH_ATTR_EPSILON].v.f;                            \
    const T *xp = P(x);                                                                   \
    T *op = P(out);                                                                       \
    for (int64_t i = 0; i < n; i++)                                                       \
      op[i] = ((T)1 - eps) * xp[i] + (prior ? eps * P(prior)[i % k] : eps / (T)k);        \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_label_smooth_grad_##SUF(rill_kernel_ctx *ctx) {                   \
    rill_tensor *g, *dx;                                                                  \
    RILL_TRY(in_like(ctx, 0, DT, NULL, false, &g));                                       \
    RILL_TRY(out_dims(ctx, 0, DT, &g->dims, true, &dx));                                  \
    if (!dx) return NULL;                                                                 \
    T eps = (T)ctx->attrs[RILL_LABEL_SMOOTH_GRAD_ATTR_EPSILON].v.f;                       \
    const T *gp = P(g);                                                                   \
    T *o = P(dx);                                                                         \
    for (int64_t i = 0, n = rill_tensor_numel(g); i < n; i++) o[i] = ((T)1 - eps) * gp[i]; \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_bpr_loss_##SUF(rill_kernel_ctx *ctx) {                            \
    rill_tensor *x, *l, *y;                                                               \
    int64_t n, c;                                                                         \
    RILL_TRY(bpr_inputs(ctx, DT, &x, &l, &n, &c));                                        \
    rill_dims yd = {.n = 2, .d = {n, 1}};                                                 \
    RILL_TRY(out_dims(ctx, 0, DT, &yd, false, &y));                                       \
    const T *xp = P(x);                                                                   \
    const int64_t *lp = rill_tensor_ptr(l);                                               \
    for (int64_t i = 0; i < n; i++) {                                                     \
      T s = 0, pos = xp[i * c + lp[i]];                                                   \
      for (int64_t j = 0; j < c; j++)                                                     \
        if (j != lp[i]) s += LOG((T)1 + EXP(xp[i * c + j] - pos));                        \
      P(y)[i] = s / (T)(c - 1);                                                           \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_bpr_loss_grad_##SUF(rill_kernel_ctx *ctx) {                       \
    rill_tensor *x, *l, *g, *dx;                                                          \
    int64_t n, c;                                                                         \
    RILL_TRY(bpr_inputs(ctx, DT, &x, &l, &n, &c));                                        \
    rill_dims yd = {.n = 2, .d = {n, 1}};                                                 \
    RILL_TRY(in_like(ctx, 2, DT, NULL, false, &g));                                       \
    RILL_TRY(rill_kin_check_dims(ctx, 2, g, &yd));                                        \
    RILL_TRY(out_dims(ctx, 0, DT, &x->dims, true, &dx));                                  \
    if (!dx) return NULL;                                                                 \
    const T *xp = P(x), *gp = P(g);                                                       \
    const int64_t *lp = rill_tensor_ptr(l);                                               \
    T *o = P(dx);                                                                         \
    memset(o, 0, (size_t)(n * c) * sizeof(T));                                            \
    for (int64_t i = 0; i < n; i++) {                                                     \
      int64_t p = i * c + lp[i];                                                          \
      for (int64_t j = 0; j < c; j++) {                                                   \
        if (j == lp[i]) continue;                                                         \
        T d = -gp[i] / ((T)(c - 1) * ((T)1 + EXP(xp[p] - xp[i * c + j])));                \
        o[p] += d;                                                                        \
        o[i * c + j] -= d;                                                                \
      }                                                                                   \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  /* Paddle's sigmoid_focal_loss forward (grad: its derivative), log p clamped at        \
   * FLT_MIN and log(1 - p) computed stably. */                                           \
  rill_status *rill_cpu_sigmoid_focal_loss_##SUF(rill_kernel_ctx *ctx) {                  \
    return focal_##SUF(ctx, false);                                                       \
  }                                                                                       \
  rill_status *rill_cpu_sigmoid_focal_loss_grad_##SUF(rill_kernel_ctx *ctx) {             \
    return focal_##SUF(ctx, true);                                                        \
  }

#define T float
LOSS_KERNELS(float, RILL_DTYPE_FP32, fp32, expf, logf, fabsf)
#undef T
#define T double
LOSS_KERNELS(double, RILL_DTYPE_FP64, fp64, exp, log, fabs)
#undef T
