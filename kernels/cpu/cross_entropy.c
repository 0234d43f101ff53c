/* CPU kernels of cross_entropy, softmax_with_cross_entropy and their gradients (schemas
 * in operators/cross_entropy.c and operators/softmax_with_cross_entropy.c).
 *
 * Both ops see their class dim through a [outer, n, inner] view (cross_entropy: the last
 * dim, inner = 1); labels and losses are indexed by (outer, inner). Hard labels are
 * int64 or int32; a label outside [0, n) that is not ignore_index is an error naming the
 * variable. */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

typedef struct labels {
  const void *p;
  bool i64;
} labels;

static inline int64_t label_at(const labels *l, int64_t i) {
  return l->i64 ? ((const int64_t *)l->p)[i] : ((const int32_t *)l->p)[i];
}

/* Input `slot` as hard labels (int64 or int32) with `count` elements. */
static rill_status *hard_labels(const rill_kernel_ctx *ctx, size_t slot, int64_t count, labels *l) {
  rill_tensor *t = rill_kin(ctx, slot, 0);
  const char *name = rill_kin_name(ctx, slot, 0);
  if (!t || !rill_tensor_is_set(t))
    return rill_kernel_error(ctx, "input Label (%s) is missing or holds no data", name);
  if (t->dtype != RILL_DTYPE_INT64 && t->dtype != RILL_DTYPE_INT32)
    return rill_kernel_error(ctx, "input Label (%s) is %s; hard labels are int64 or int32", name,
                             rill_dtype_name(t->dtype));
  if (rill_tensor_numel(t) != count)
    return rill_kernel_error(ctx, "input Label (%s) has %lld labels, expected %lld", name,
                             (long long)rill_tensor_numel(t), (long long)count);
  l->p = rill_tensor_ptr(t);
  l->i64 = t->dtype == RILL_DTYPE_INT64;
  return NULL;
}

/* Input `slot` as soft labels: dtype dt, shape `dims`. */
static rill_status *soft_labels(const rill_kernel_ctx *ctx, size_t slot, rill_dtype dt,
                                const rill_dims *dims, const void **p) {
  rill_tensor *t;
  RILL_TRY(rill_kin_need(ctx, slot, 0, dt, &t));
  if (!rill_dims_equal(&t->dims, dims)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input Label (%s) has shape %s, soft labels need %s",
                             rill_kin_name(ctx, slot, 0), rill_dims_str(&t->dims, a, sizeof a),
                             rill_dims_str(dims, b, sizeof b));
  }
  *p = rill_tensor_ptr(t);
  return NULL;
}

static rill_status *bad_label(const rill_kernel_ctx *ctx, size_t slot, int64_t lbl, int64_t at,
                              int64_t n, int ign) {
  return rill_kernel_error(ctx, "input Label (%s) holds %lld at position %lld, outside [0, %lld) "
                           "and not ignore_index %d", rill_kin_name(ctx, slot, 0), (long long)lbl,
                           (long long)at, (long long)n, ign);
}

/* outer, n, inner of dims around axis (already checked by inference; checked again). */
static rill_status *class_view(const rill_kernel_ctx *ctx, size_t slot, const rill_dims *d,
                               int axis, int64_t *outer, int64_t *n, int64_t *inner) {
  int r = d->n;
  if (r < 1 || axis < -r || axis >= r)
    return rill_kernel_error(ctx, "axis %d is out of range for input %s (%s) of rank %d", axis,
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0), r);
  if (axis < 0) axis += r;
  *outer = rill_dims_prod(d, 0, axis);
  *n = d->d[axis];
  *inner = rill_dims_prod(d, axis + 1, r);
  return NULL;
}

/* Paddle's TolerableValue: log(0) = -inf is clipped to -1e20 (and +inf to 1e20), so a
 * zero probability times a zero soft label is 0, not NaN. */
#define TOLERABLE(T, v) ((v) == (T)INFINITY ? (T)1e20 : ((v) == (T)-INFINITY ? (T)-1e20 : (v)))

/* Cross entropy of probabilities x [outer, n, inner] against labels (hard: ignore_index
 * = attribute `ign`, else `soft`) into loss [outer, inner]; and its gradient. */
#define CE_PROB(T, S, LOG)                                                                \
  static rill_status *ce_prob_##S(const rill_kernel_ctx *ctx, size_t lslot, const T *x,   \
                                  const labels *hard, const T *soft, int ign, T *loss,    \
                                  int64_t outer, int64_t n, int64_t inner) {              \
    for (int64_t o = 0; o < outer; o++)                                                   \
      for (int64_t j = 0; j < inner; j++) {                                               \
        int64_t at = o * inner + j;                                                       \
        const T *xr = x + o * n * inner + j;                                              \
        if (hard) {                                                                       \
          int64_t lbl = label_at(hard, at);                                               \
          if (lbl == ign) {                                                               \
            loss[at] = 0;                                                                 \
            continue;                                                                     \
          }                                                                               \
          if (lbl < 0 || lbl >= n) return bad_label(ctx, lslot, lbl, at, n, ign);             \
          T lg = LOG(xr[lbl * inner]);                                                    \
          loss[at] = -TOLERABLE(T, lg);                                                   \
        } else {                                                                          \
          const T *lr = soft + o * n * inner + j;                                         \
          T s = 0;                                                                        \
          for (int64_t k = 0; k < n; k++) {                                               \
            T lg = LOG(xr[k * inner]);                                                    \
            s += TOLERABLE(T, lg) * lr[k * inner];                                        \
          }                                                                               \
          loss[at] = -s;                                                                  \
        }                                                                                 \
      }                                                                                   \
    return NULL;                                                                          \
  }                                                                                       \
  /* dx may alias x. */                                                                   \
  static rill_status *ce_prob_grad_##S(const rill_kernel_ctx *ctx, size_t lslot,          \
                                       const T *x, const labels *hard, const T *soft,     \
                                       int ign, const T *dy, T *dx, int64_t outer,        \
                                       int64_t n, int64_t inner) {                        \
    if (!hard) {                                                                          \
      for (int64_t o = 0; o < outer; o++)                                                 \
        for (int64_t k = 0; k < n; k++)                                                   \
          for (int64_t j = 0; j < inner; j++) {                                           \
            int64_t i = (o * n + k) * inner + j;                                          \
            dx[i] = -soft[i] * dy[o * inner + j] / x[i];                                  \
          }                                                                               \
      return NULL;                                                                        \
    }                                                                                     \
    for (int64_t o = 0; o < outer; o++)                                                   \
      for (int64_t j = 0; j < inner; j++) {                                               \
        int64_t at = o * inner + j, base = o * n * inner + j;                             \
        int64_t lbl = label_at(hard, at);                                                 \
        if (lbl != ign && (lbl < 0 || lbl >= n)) return bad_label(ctx, lslot, lbl, at, n, ign); \
        T g = lbl != ign ? -dy[at] / x[base + lbl * inner] : (T)0;                        \
        for (int64_t k = 0; k < n; k++) dx[base + k * inner] = 0;                         \
        if (lbl != ign) dx[base + lbl * inner] = g;                                       \
      }                                                                                   \
    return NULL;                                                                          \
  }

CE_PROB(float, fp32, logf)
CE_PROB(double, fp64, log)

/* ---- cross_entropy ---- */

/* Shared checks: X [..., D]; rows = numel / D; Label; the loss dims. */
#define CE_SETUP(T, DT)                                                                   \
  rill_tensor *x;                                                                         \
  RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
  bool soft = ctx->attrs[RILL_CROSS_ENTROPY_ATTR_SOFT_LABEL].v.b;                         \
  int ign = ctx->attrs[RILL_CROSS_ENTROPY_ATTR_IGNORE_INDEX].v.i;                         \
  int64_t outer, n, inner;                                                                \
  RILL_TRY(class_view(ctx, 0, &x->dims, -1, &outer, &n, &inner));                         \
  labels hl;                                                                              \
  const T *sl = NULL;                                                                     \
  if (soft) RILL_TRY(soft_labels(ctx, 1, DT, &x->dims, (const void **)&sl));              \
  else RILL_TRY(hard_labels(ctx, 1, outer, &hl));                                         \
  rill_tensor *lt = rill_kin(ctx, 1, 0);                                                  \
  rill_dims yd = lt->dims;                                                                \
  if (yd.n == x->dims.n) yd.d[yd.n - 1] = 1;

#define CROSS_ENTROPY(T, DT, S)                                                           \
  rill_status *rill_cpu_cross_entropy_##S(rill_kernel_ctx *ctx) {                         \
    CE_SETUP(T, DT)                                                                       \
    rill_tensor *y;                                                                       \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &yd));                                    \
    return ce_prob_##S(ctx, 1, rill_tensor_ptr(x), soft ? NULL : &hl, sl, ign,            \
                       rill_tensor_ptr(y), outer, n, inner);                              \
  }                                                                                       \
  rill_status *rill_cpu_cross_entropy_grad_##S(rill_kernel_ctx *ctx) {                    \
    if (!rill_kout(ctx, 0, 0)) return NULL; /* X@GRAD not wanted */                       \
    CE_SETUP(T, DT)                                                                       \
    rill_tensor *dy, *dx;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dy));                                          \
    if (rill_tensor_numel(dy) != outer)                                                   \
      return rill_kernel_error(ctx, "input Y@GRAD (%s) has %lld elements, the loss has %lld", \
                               rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(dy), \
                               (long long)outer);                                         \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    (void)yd;                                                                             \
    return ce_prob_grad_##S(ctx, 1, rill_tensor_ptr(x), soft ? NULL : &hl, sl, ign,       \
                            rill_tensor_ptr(dy), rill_tensor_ptr(dx), outer, n, inner);   \
  }

CROSS_ENTROPY(float, RILL_DTYPE_FP32, fp32)
CROSS_ENTROPY(double, RILL_DTYPE_FP64, fp64)

/* ---- softmax_with_cross_entropy ---- */

/* Softmax and loss from logits in one sweep per outer index: max, label gather (hard),
 * exponentials and sums (soft: label-weighted sums of the shifted logits), loss,
 * normalization. Shifted logits are clipped at -64 (rill_softmax_clip), so the loss is
 * -log of the clipped softmax, as Paddle computes it: at most 64 + log(sum).
 * sm may alias x: each element is read before it is written. */
#define SWCE_SOFTMAX(T, S, EXP, LOG, CLIP)                                                \
  static rill_status *swce_softmax_##S(const rill_kernel_ctx *ctx, const T *x,            \
                                       const labels *hard, const T *soft, int ign, T *sm, \
                                       T *loss, int64_t outer, int64_t n, int64_t inner) { \
    T *mx = rill_calloc((size_t)inner * 4, sizeof(T));                                    \
    if (!mx) return rill_oom();                                                           \
    T *sum = mx + inner, *xl = sum + inner, *lsum = xl + inner;                           \
    rill_status *st = NULL;                                                               \
    for (int64_t o = 0; o < outer && !st; o++) {                                          \
      const T *a = x + o * n * inner;                                                     \
      T *d = sm + o * n * inner;                                                          \
      for (int64_t j = 0; j < inner; j++) {                                               \
        mx[j] = a[j];                                                                     \
        sum[j] = xl[j] = lsum[j] = 0;                                                     \
      }                                                                                   \
      for (int64_t i = 1; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++)                                               \
          mx[j] = a[i * inner + j] > mx[j] ? a[i * inner + j] : mx[j];                    \
      if (hard)                                                                           \
        for (int64_t j = 0; j < inner; j++) {                                             \
          int64_t lbl = label_at(hard, o * inner + j);                                    \
          if (lbl == ign) continue;                                                       \
          if (lbl < 0 || lbl >= n) {                                                      \
            st = bad_label(ctx, 1, lbl, o * inner + j, n, ign);                                \
            break;                                                                        \
          }                                                                               \
          xl[j] = CLIP(a[lbl * inner + j] - mx[j]);                                       \
        }                                                                                 \
      if (st) break;                                                                      \
      for (int64_t i = 0; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++) {                                             \
          int64_t at = i * inner + j;                                                     \
          T v = CLIP(a[at] - mx[j]);                                                      \
          if (soft) {                                                                     \
            T l = soft[o * n * inner + at];                                               \
            xl[j] += l * v;                                                               \
            lsum[j] += l;                                                                 \
          }                                                                               \
          T e = EXP(v);                                                                   \
          d[at] = e;                                                                      \
          sum[j] += e;                                                                    \
        }                                                                                 \
      for (int64_t j = 0; j < inner; j++) {                                               \
        T lse = LOG(sum[j]); /* of the shifted logits */                                  \
        if (soft) loss[o * inner + j] = lse * lsum[j] - xl[j];                            \
        else                                                                              \
          loss[o * inner + j] = label_at(hard, o * inner + j) == ign ? (T)0 : lse - xl[j]; \
        sum[j] = (T)1 / sum[j];                                                           \
      }                                                                                   \
      for (int64_t i = 0; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++) d[i * inner + j] *= sum[j];                   \
    }                                                                                     \
    rill_free(mx);                                                                        \
    return st;                                                                            \
  }

SWCE_SOFTMAX(float, fp32, expf, logf, rill_softmax_clip_f32)
SWCE_SOFTMAX(double, fp64, exp, log, rill_softmax_clip_f64)

/* Logits (slot xs) or Softmax [outer, n, inner] and the labels of slot ls. */
#define SWCE_SETUP(T, DT, XS, LS)                                                         \
  rill_tensor *x;                                                                         \
  RILL_TRY(rill_kin_need(ctx, XS, 0, DT, &x));                                            \
  bool soft = ctx->attrs[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_SOFT_LABEL].v.b, use_softmax = ctx->attrs[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_USE_SOFTMAX].v.b;  \
  int ign = ctx->attrs[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_IGNORE_INDEX].v.i, axis = ctx->attrs[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_AXIS].v.i;                \
  int64_t outer, n, inner;                                                                \
  RILL_TRY(class_view(ctx, XS, &x->dims, axis, &outer, &n, &inner));                      \
  labels hl;                                                                              \
  const T *sl = NULL;                                                                     \
  if (soft) RILL_TRY(soft_labels(ctx, LS, DT, &x->dims, (const void **)&sl));             \
  else RILL_TRY(hard_labels(ctx, LS, outer * inner, &hl));                                \
  const labels *hard = soft ? NULL : &hl;

#define SWCE(T, DT, S)                                                                    \
  rill_status *rill_cpu_softmax_with_cross_entropy_##S(rill_kernel_ctx *ctx) {            \
    SWCE_SETUP(T, DT, 0, 1)                                                               \
    rill_tensor *sm, *loss;                                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &sm));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, sm, &x->dims));                              \
    rill_dims ld = x->dims;                                                               \
    ld.d[axis < 0 ? axis + ld.n : axis] = 1;                                              \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &loss));                                       \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, loss, &ld));                                 \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *sp = rill_tensor_ptr(sm), *lp = rill_tensor_ptr(loss);                             \
    if (outer * n * inner == 0) return NULL;                                              \
    if (use_softmax) return swce_softmax_##S(ctx, xp, hard, sl, ign, sp, lp, outer, n, inner); \
    /* Logits already holds probabilities: Softmax is a copy. */                          \
    RILL_TRY(ce_prob_##S(ctx, 1, xp, hard, sl, ign, lp, outer, n, inner));                \
    if (sp != xp) memmove(sp, xp, (size_t)(outer * n * inner) * sizeof(T));               \
    return NULL;                                                                          \
  }                                                                                       \
  rill_status *rill_cpu_softmax_with_cross_entropy_grad_##S(rill_kernel_ctx *ctx) {       \
    if (!rill_kout(ctx, 0, 0)) return NULL; /* Logits@GRAD not wanted */                  \
    SWCE_SETUP(T, DT, 1, 0)                                                               \
    rill_tensor *dl, *dx;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dl));                                          \
    if (rill_tensor_numel(dl) != outer * inner)                                           \
      return rill_kernel_error(ctx, "input Loss@GRAD (%s) has %lld elements, the loss has %lld", \
                               rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(dl), \
                               (long long)(outer * inner));                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    const T *sp = rill_tensor_ptr(x), *gp = rill_tensor_ptr(dl);                          \
    T *dp = rill_tensor_ptr(dx);                                                          \
    if (!use_softmax)                                                                     \
      return ce_prob_grad_##S(ctx, 0, sp, hard, sl, ign, gp, dp, outer, n, inner);        \
    if (hard)                                                                             \
      for (int64_t at = 0; at < outer * inner; at++) {                                    \
        int64_t lbl = label_at(hard, at);                                                 \
        if (lbl != ign && (lbl < 0 || lbl >= n)) return bad_label(ctx, 0, lbl, at, n, ign);    \
      }                                                                                   \
    for (int64_t o = 0; o < outer; o++) {                                                 \
      const T *y = sp + o * n * inner, *g = gp + o * inner;                               \
      T *d = dp + o * n * inner;                                                          \
      if (soft) {                                                                         \
        const T *l = sl + o * n * inner;                                                  \
        for (int64_t i = 0; i < n; i++)                                                   \
          for (int64_t j = 0; j < inner; j++)                                             \
            d[i * inner + j] = (y[i * inner + j] - l[i * inner + j]) * g[j];              \
        continue;                                                                         \
      }                                                                                   \
      for (int64_t i = 0; i < n; i++)                                                     \
        for (int64_t j = 0; j < inner; j++) d[i * inner + j] = y[i * inner + j] * g[j];   \
      for (int64_t j = 0; j < inner; j++) {                                               \
        int64_t lbl = label_at(hard, o * inner + j);                                      \
        if (lbl != ign) {                                                                 \
          d[lbl * inner + j] -= g[j];                                                     \
          continue;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) d[i * inner + j] = 0;                             \
      }                                                                                   \
    }                                                                                     \
    return NULL;                                                                          \
  }

SWCE(float, RILL_DTYPE_FP32, fp32)
SWCE(double, RILL_DTYPE_FP64, fp64)

/* ---- cross_entropy2 / cross_entropy_grad2 ---- */

#define CROSS_ENTROPY2(T, DT, S, LOG)                                                     \
  rill_status *rill_cpu_cross_entropy2_##S(rill_kernel_ctx *ctx) {                        \
    rill_tensor *x, *y, *mx;                                                              \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    int ign = ctx->attrs[RILL_CROSS_ENTROPY2_ATTR_IGNORE_INDEX].v.i;                      \
    int64_t rows, n, inner;                                                               \
    RILL_TRY(class_view(ctx, 0, &x->dims, -1, &rows, &n, &inner));                        \
    labels hl;                                                                            \
    RILL_TRY(hard_labels(ctx, 1, rows, &hl));                                             \
    rill_dims yd = rill_kin(ctx, 1, 0)->dims, md = x->dims;                               \
    if (yd.n == x->dims.n) yd.d[yd.n - 1] = 1;                                            \
    md.d[md.n - 1] = 1;                                                                   \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &yd));                                    \
    RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &mx));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 2, 0, mx, &md));                                   \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *yp = rill_tensor_ptr(y), *mp = rill_tensor_ptr(mx);                                \
    for (int64_t i = 0; i < rows; i++) {                                                  \
      int64_t lbl = label_at(&hl, i);                                                     \
      if (lbl == ign) {                                                                   \
        yp[i] = mp[i] = 0;                                                                \
        continue;                                                                         \
      }                                                                                   \
      if (lbl < 0 || lbl >= n) return bad_label(ctx, 1, lbl, i, n, ign);                 \
      T m = xp[i * n + lbl], lg = LOG(m);                                                 \
      mp[i] = m;                                                                          \
      yp[i] = -TOLERABLE(T, lg);                                                          \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
  rill_status *rill_cpu_cross_entropy_grad2_##S(rill_kernel_ctx *ctx) {                   \
    if (!rill_kout(ctx, 0, 0)) return NULL; /* X@GRAD not wanted */                       \
    rill_tensor *mx, *dy, *dx, *xs = rill_kin(ctx, 2, 0);                                 \
    if (!xs || xs->dims.n < 2)                                                            \
      return rill_kernel_error(ctx, "input XShape (%s) is missing or not X's dims plus a 0", \
                               rill_kin_name(ctx, 2, 0));                                 \
    rill_dims xd = xs->dims;                                                              \
    xd.n--;                                                                               \
    int ign = ctx->attrs[RILL_CROSS_ENTROPY_GRAD2_ATTR_IGNORE_INDEX].v.i;                 \
    int64_t rows, n, inner;                                                               \
    RILL_TRY(class_view(ctx, 2, &xd, -1, &rows, &n, &inner));                             \
    labels hl;                                                                            \
    RILL_TRY(hard_labels(ctx, 0, rows, &hl));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &mx));                                          \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &dy));                                          \
    if (rill_tensor_numel(mx) != rows || rill_tensor_numel(dy) != rows)                   \
      return rill_kernel_error(ctx, "inputs MatchX (%s) and Y@GRAD (%s) need %lld elements, " \
                               "not %lld and %lld", rill_kin_name(ctx, 1, 0),             \
                               rill_kin_name(ctx, 3, 0), (long long)rows,                 \
                               (long long)rill_tensor_numel(mx), (long long)rill_tensor_numel(dy)); \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &xd));                                   \
    const T *mp = rill_tensor_ptr(mx), *gp = rill_tensor_ptr(dy);                         \
    T *dp = rill_tensor_ptr(dx);                                                          \
    for (int64_t i = 0; i < rows; i++) {                                                  \
      int64_t lbl = label_at(&hl, i);                                                     \
      for (int64_t k = 0; k < n; k++) dp[i * n + k] = 0;                                  \
      if (lbl != ign && lbl >= 0 && lbl < n) dp[i * n + lbl] = -gp[i] / mp[i];            \
    }                                                                                     \
    return NULL;                                                                          \
  }

CROSS_ENTROPY2(float, RILL_DTYPE_FP32, fp32, logf)
CROSS_ENTROPY2(double, RILL_DTYPE_FP64, fp64, log)
