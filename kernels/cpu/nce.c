/* nce CPU kernels. The negatives come from one rill_rng per run (framework/base/random.h),
 * seeded by the seed attribute (the same draws every run, as Paddle's fixed-seed
 * sampler) or, with seed 0, by the device's generator. */
#include <math.h>
#include <string.h>

#include "framework/base/random.h"
#include "kernels/cpu/selected_rows.h"
#include "kernels/cpu/tensor_ops.h"

typedef struct nce_sampler {
  int kind;
  int64_t k;                     /* classes */
  double log_k;                  /* log-uniform */
  const float *probs, *aprobs;   /* custom */
  const int32_t *alias;
  rill_rng rng;
} nce_sampler;

/* The sampler's probability of class t, in float as Paddle's (b = P(t) * negatives). */
static float nce_prob(const nce_sampler *s, int64_t t) {
  if (s->kind == 0) return (float)(1.0 / (double)s->k);
  if (s->kind == 1) return (float)(log((t + 2.0) / (t + 1.0)) / s->log_k);
  return s->probs[t];
}

static int64_t nce_draw(nce_sampler *s) {
  int64_t range = s->k - 1;
  if (s->kind == 0) return (int64_t)(rill_rng_uniform(&s->rng) * (double)s->k);
  if (s->kind == 1) {
    int64_t v = (int64_t)exp(rill_rng_uniform(&s->rng) * s->log_k) - 1;
    return v % range;
  }
  int64_t i = (int64_t)(rill_rng_uniform(&s->rng) * (double)s->k);
  double p = rill_rng_uniform(&s->rng);
  if (p <= s->aprobs[i]) return i;
  return s->alias[i] >= 0 ? s->alias[i] : (i + 1) % range;
}

/* The sampler of attribute `sampler` with its custom tables (input slots 5-7); `draws`:
 * seeded for drawing (the forward op only: the gradient reads probabilities). */
static rill_status *nce_sampler_init(rill_kernel_ctx *ctx, nce_sampler *s, int64_t k,
                                     bool draws) {
  memset(s, 0, sizeof *s);
  s->kind = ctx->attrs[RILL_NCE_ATTR_SAMPLER].v.i;
  s->k = k;
  s->log_k = log((double)k);
  if (s->kind < 0 || s->kind > 2)
    return rill_kernel_error(ctx, "attribute sampler %d is not 0, 1 or 2", s->kind);
  if (s->kind == 2) {
    rill_tensor *p, *a, *ap;
    RILL_TRY(rill_kin_need(ctx, 5, 0, RILL_DTYPE_FP32, &p));
    RILL_TRY(rill_kin_need(ctx, 6, 0, RILL_DTYPE_INT32, &a));
    RILL_TRY(rill_kin_need(ctx, 7, 0, RILL_DTYPE_FP32, &ap));
    if (rill_tensor_numel(p) != k || rill_tensor_numel(a) != k || rill_tensor_numel(ap) != k)
      return rill_kernel_error(ctx, "inputs CustomDistProbs (%s), CustomDistAlias (%s) and "
                               "CustomDistAliasProbs (%s) must hold num_total_classes = %lld "
                               "values each", rill_kin_name(ctx, 5, 0), rill_kin_name(ctx, 6, 0),
                               rill_kin_name(ctx, 7, 0), (long long)k);
    s->probs = rill_tensor_ptr(p);
    s->alias = rill_tensor_ptr(a);
    s->aprobs = rill_tensor_ptr(ap);
    for (int64_t i = 0; i < k; i++)
      if (s->alias[i] >= k || !(s->probs[i] > 0))
        return rill_kernel_error(ctx, "input CustomDistAlias (%s) or CustomDistProbs (%s) "
                                 "is invalid at class %lld", rill_kin_name(ctx, 6, 0),
                                 rill_kin_name(ctx, 5, 0), (long long)i);
  }
  if (!draws) return NULL;
  rill_rng_seed(&s->rng, rill_random_seed_or_run(ctx, ctx->attrs[RILL_NCE_ATTR_SEED].v.i));
  return NULL;
}

/* Input, Label, Weight, SampleWeight (slots 0, 1, 2, 4), checked. */
static rill_status *nce_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                               rill_tensor **l, rill_tensor **w, rill_tensor **sw) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT64, l));
  RILL_TRY(rill_kin_need(ctx, 2, 0, dt, w));
  int64_t k = ctx->attrs[RILL_NCE_ATTR_NUM_TOTAL_CLASSES].v.i;
  if ((*x)->dims.n != 2 || (*w)->dims.n != 2 || (*w)->dims.d[0] != k ||
      (*w)->dims.d[1] != (*x)->dims.d[1])
    return rill_kernel_error(ctx, "inputs Input (%s) and Weight (%s) must be [N, D] and "
                             "[num_total_classes = %lld, D]", rill_kin_name(ctx, 0, 0),
                             rill_kin_name(ctx, 2, 0), (long long)k);
  int64_t n = (*x)->dims.d[0];
  if ((*l)->dims.n < 1 || (*l)->dims.d[0] != n)
    return rill_kernel_error(ctx, "input Label (%s) must have Input (%s)'s %lld rows",
                             rill_kin_name(ctx, 1, 0), rill_kin_name(ctx, 0, 0), (long long)n);
  *sw = NULL;
  if (rill_kin(ctx, 4, 0)) {
    RILL_TRY(rill_kin_need(ctx, 4, 0, dt, sw));
    if (rill_tensor_numel(*sw) != n)
      return rill_kernel_error(ctx, "input SampleWeight (%s) must hold one weight per row of "
                               "Input (%s)", rill_kin_name(ctx, 4, 0), rill_kin_name(ctx, 0, 0));
  }
  return NULL;
}

#define NCE(T, DT, SUF)                                                                   \
  rill_status *rill_cpu_nce_##SUF(rill_kernel_ctx *ctx) {                                \
    rill_tensor *x, *l, *w, *sw, *b = NULL, *cost, *logits, *labels;                      \
    RILL_TRY(nce_inputs(ctx, DT, &x, &l, &w, &sw));                                       \
    int64_t k = w->dims.d[0], n = x->dims.d[0], d = x->dims.d[1];                         \
    int64_t nt = l->dims.n == 2 ? l->dims.d[1] : 1;                                       \
    int64_t neg = ctx->attrs[RILL_NCE_ATTR_NUM_NEG_SAMPLES].v.i, s = nt + neg;            \
    if (rill_kin(ctx, 3, 0)) {                                                            \
      RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &b));                                         \
      if (rill_tensor_numel(b) != k)                                                      \
        return rill_kernel_error(ctx, "input Bias (%s) must hold num_total_classes = %lld " \
                                 "values", rill_kin_name(ctx, 3, 0), (long long)k);       \
    }                                                                                     \
    const rill_attr_value *cn = &ctx->attrs[RILL_NCE_ATTR_CUSTOM_NEG_CLASSES];            \
    if (cn->n && (int64_t)cn->n != neg)                                                   \
      return rill_kernel_error(ctx, "attribute custom_neg_classes holds %zu classes, "    \
                               "num_neg_samples is %lld", cn->n, (long long)neg);         \
    nce_sampler smp;                                                                      \
    RILL_TRY(nce_sampler_init(ctx, &smp, k, !cn->n));                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &cost));                                       \
    RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &logits));                                     \
    RILL_TRY(rill_kout_need(ctx, 2, 0, RILL_DTYPE_INT64, &labels));                       \
    rill_dims cd = {.n = 2, .d = {n, 1}}, sd = {.n = 2, .d = {n, s}};                     \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, cost, &cd));                                 \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, logits, &sd));                               \
    RILL_TRY(rill_kout_check_dims(ctx, 2, 0, labels, &sd));                               \
    const int64_t *lp = rill_tensor_ptr(l);                                               \
    int64_t *sl = rill_tensor_ptr(labels);                                                \
    for (int64_t i = 0; i < n; i++) {                                                     \
      for (int64_t j = 0; j < nt; j++) {                                                  \
        int64_t t = lp[i * nt + j];                                                       \
        if (t < 0 || t >= k)                                                              \
          return rill_kernel_error(ctx, "input Label (%s) holds class %lld in row %lld, " \
                                   "outside [0, num_total_classes = %lld)",               \
                                   rill_kin_name(ctx, 1, 0), (long long)t, (long long)i,  \
                                   (long long)k);                                         \
        sl[i * s + j] = t;                                                                \
      }                                                                                   \
      for (int64_t j = 0; j < neg; j++)                                                   \
        sl[i * s + nt + j] = cn->n ? cn->list.ints[j] : nce_draw(&smp);                   \
    }                                                                                     \
    const T *xp = rill_tensor_ptr(x), *wp = rill_tensor_ptr(w);                           \
    const T *bp = b ? (const T *)rill_tensor_ptr(b) : NULL;                               \
    const T *swp = sw ? (const T *)rill_tensor_ptr(sw) : NULL;                            \
    T *op = rill_tensor_ptr(logits), *cp = rill_tensor_ptr(cost);                         \
    for (int64_t i = 0; i < n; i++) {                                                     \
      double c = 0;                                                                       \
      for (int64_t j = 0; j < s; j++) {                                                   \
        int64_t t = sl[i * s + j];                                                        \
        double z = bp ? (double)bp[t] : 0.0;                                              \
        for (int64_t q = 0; q < d; q++) z += (double)xp[i * d + q] * (double)wp[t * d + q]; \
        T o = (T)(1.0 / (1.0 + exp(-z)));                                                 \
        op[i * s + j] = o;                                                                \
        T bb = (T)(nce_prob(&smp, t) * (float)neg);                                       \
        c += j < nt ? -log((double)(o / (o + bb))) : -log((double)(bb / (o + bb)));       \
      }                                                                                   \
      cp[i] = (T)((swp ? (double)swp[i] : 1.0) * c);                                      \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_nce_grad_##SUF(rill_kernel_ctx *ctx) {                           \
    rill_tensor *x, *l, *w, *sw, *logits, *labels, *dc, *dx = NULL, *dw = NULL, *db = NULL; \
    RILL_TRY(nce_inputs(ctx, DT, &x, &l, &w, &sw));                                       \
    int64_t k = w->dims.d[0], n = x->dims.d[0], d = x->dims.d[1];                         \
    int64_t nt = l->dims.n == 2 ? l->dims.d[1] : 1;                                       \
    int64_t neg = ctx->attrs[RILL_NCE_ATTR_NUM_NEG_SAMPLES].v.i, s = nt + neg;            \
    RILL_TRY(rill_kin_need(ctx, 8, 0, DT, &logits));                                      \
    RILL_TRY(rill_kin_need(ctx, 9, 0, RILL_DTYPE_INT64, &labels));                        \
    RILL_TRY(rill_kin_need(ctx, 10, 0, DT, &dc));                                         \
    rill_dims sd = {.n = 2, .d = {n, s}};                                                 \
    RILL_TRY(rill_kin_check_dims(ctx, 8, logits, &sd));                                   \
    RILL_TRY(rill_kin_check_dims(ctx, 9, labels, &sd));                                   \
    if (rill_tensor_numel(dc) != n)                                                       \
      return rill_kernel_error(ctx, "input Cost@GRAD (%s) must hold %lld values",         \
                               rill_kin_name(ctx, 10, 0), (long long)n);                  \
    const int64_t *sl = rill_tensor_ptr(labels);                                          \
    for (int64_t i = 0; i < n * s; i++)                                                   \
      if (sl[i] < 0 || sl[i] >= k)                                                        \
        return rill_kernel_error(ctx, "input SampleLabels (%s) holds class %lld, outside "  \
                                 "[0, %lld)", rill_kin_name(ctx, 9, 0), (long long)sl[i], \
                                 (long long)k);                                           \
    nce_sampler smp;                                                                      \
    RILL_TRY(nce_sampler_init(ctx, &smp, k, false));                                      \
    if (rill_kout(ctx, 0, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                            \
      memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));                             \
    }                                                                                     \
    if (rill_kout(ctx, 2, 0)) {                                                           \
      RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &db));                                       \
      if (rill_tensor_numel(db) != k)                                                     \
        return rill_kernel_error(ctx, "output Bias@GRAD (%s) must hold %lld values",      \
                                 rill_kout_name(ctx, 2, 0), (long long)k);                \
      memset(rill_tensor_ptr(db), 0, rill_tensor_nbytes(db));                             \
    }                                                                                     \
    T *dwp = NULL;                                                                        \
    rill_selected_rows *sr = NULL;                                                        \
    bool want_w = ctx->nout[1] && ctx->out[1][0];                                         \
    if (want_w && ctx->attrs[RILL_NCE_ATTR_IS_SPARSE].v.b) {                              \
      RILL_TRY(rill_cpu_rows_out_ids(ctx, 1, sl, n * s, k, d, DT, &sr));                  \
      dwp = rill_tensor_ptr(&sr->value);                                                  \
    } else if (want_w && rill_kout(ctx, 1, 0)) {                                          \
      RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &dw));                                       \
      RILL_TRY(rill_kout_check_dims(ctx, 1, 0, dw, &w->dims));                            \
      dwp = rill_tensor_ptr(dw);                                                          \
      memset(dwp, 0, rill_tensor_nbytes(dw));                                             \
    }                                                                                     \
    const T *xp = rill_tensor_ptr(x), *wp = rill_tensor_ptr(w), *op = rill_tensor_ptr(logits); \
    const T *gp = rill_tensor_ptr(dc), *swp = sw ? (const T *)rill_tensor_ptr(sw) : NULL; \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *dbp = db ? (T *)rill_tensor_ptr(db) : NULL; \
    for (int64_t i = 0; i < n; i++)                                                       \
      for (int64_t j = 0; j < s; j++) {                                                   \
        int64_t t = sl[i * s + j];                                                        \
        T o = op[i * s + j], bb = (T)(nce_prob(&smp, t) * (float)neg);                    \
        T wt = swp ? swp[i] : (T)1;                                                       \
        T g = j < nt ? wt * (bb / (o + bb)) * (o - (T)1) : wt * (o * ((T)1 - o) / (o + bb)); \
        g *= gp[i];                                                                       \
        if (dbp) dbp[t] += g;                                                             \
        if (dwp) {                                                                        \
          int64_t r = sr ? rill_cpu_rows_find(sr, t) : t;                                 \
          for (int64_t q = 0; q < d; q++) dwp[r * d + q] += g * xp[i * d + q];            \
        }                                                                                 \
        if (dxp)                                                                          \
          for (int64_t q = 0; q < d; q++) dxp[i * d + q] += g * wp[t * d + q];            \
      }                                                                                   \
    return NULL;                                                                          \
  }

NCE(float, RILL_DTYPE_FP32, fp32)
NCE(double, RILL_DTYPE_FP64, fp64)
