/* sample_logits CPU kernels. The log-uniform negatives come from one rill_rng per run
 * (seeded by rill_random_seed_or_run); distinctness is tracked with a bitmap over the K
 * classes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/random.h"
#include "kernels/cpu/tensor_ops.h"

/* Paddle's "tolerable value": infinities become +-1e20. */
static double sl_tolerable(double v) {
  return v == INFINITY ? 1e20 : v == -INFINITY ? -1e20 : v;
}

/* Draws the S distinct log-uniform negatives shared by all rows: samples[j], and their
 * adjusted probabilities of true labels and negatives (columns T..) into q per row. */
#define SL_DRAW(T)                                                                        \
  static rill_status *sl_draw_##T(rill_kernel_ctx *ctx, const int64_t *lab, int64_t n,    \
                                  int64_t nt, int64_t s, int64_t k, int64_t *smp, T *q) { \
    unsigned char *seen = rill_malloc((size_t)(k ? k : 1));                               \
    if (!seen) return rill_oom();                                                         \
    memset(seen, 0, (size_t)(k ? k : 1));                                                 \
    rill_rng rng;                                                                         \
    int32_t seed_attr = ctx->attrs[RILL_SAMPLE_LOGITS_ATTR_SEED].v.i;                     \
    rill_rng_seed(&rng, rill_random_seed_or_run(ctx, seed_attr));                         \
    double log_range = log((double)k + 1.0);                                              \
    int64_t cols = nt + s, tries = 0;                                                     \
    for (int64_t j = nt; j < cols;) {                                                     \
      tries++;                                                                            \
      int64_t v = ((int64_t)exp(rill_rng_uniform(&rng) * log_range) - 1) % k;             \
      if (seen[v]) continue;                                                              \
      seen[v] = 1;                                                                        \
      for (int64_t i = 0; i < n; i++) smp[i * cols + j] = v;                              \
      j++;                                                                                \
    }                                                                                     \
    rill_free(seen);                                                                      \
    for (int64_t i = 0; i < n; i++)                                                       \
      for (int64_t j = 0; j < cols; j++) {                                                \
        if (j < nt) smp[i * cols + j] = lab[i * nt + j];                                  \
        int64_t v = smp[i * cols + j];                                                    \
        T p = (T)(log((v + 2.0) / (v + 1.0)) / log_range);                                \
        q[i * cols + j] = tries == s ? p * (T)s : (T)(-expm1((double)tries * log1p(-(double)p))); \
      }                                                                                   \
    return NULL;                                                                          \
  }
SL_DRAW(float)
SL_DRAW(double)

/* Output `slot` as the copy of input `islot` (nothing when they are one variable). */
static rill_status *sl_same(rill_kernel_ctx *ctx, size_t islot, size_t oslot, rill_dtype dt,
                            const rill_dims *want, rill_tensor **out) {
  rill_tensor *in;
  RILL_TRY(rill_kin_need(ctx, islot, 0, dt, &in));
  RILL_TRY(rill_kin_check_dims(ctx, islot, in, want));
  RILL_TRY(rill_kout_need(ctx, oslot, 0, dt, out));
  RILL_TRY(rill_kout_check_dims(ctx, oslot, 0, *out, want));
  if (rill_tensor_ptr(*out) != rill_tensor_ptr(in))
    memcpy(rill_tensor_ptr(*out), rill_tensor_ptr(in), rill_tensor_nbytes(in));
  return NULL;
}

#define SAMPLE_LOGITS(T, DT, SUF)                                                         \
  rill_status *rill_cpu_sample_logits_##SUF(rill_kernel_ctx *ctx) {                      \
    rill_tensor *x, *l, *samples, *probs, *out, *slab;                                    \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT64, &l));                             \
    if (x->dims.n != 2 || l->dims.n != 2 || l->dims.d[0] != x->dims.d[0])                 \
      return rill_kernel_error(ctx, "inputs Logits (%s) and Labels (%s) must be [N, K] and " \
                               "[N, T]", rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0)); \
    int64_t n = x->dims.d[0], k = x->dims.d[1], nt = l->dims.d[1];                        \
    int64_t s = ctx->attrs[RILL_SAMPLE_LOGITS_ATTR_NUM_SAMPLES].v.i, cols = nt + s;       \
    if (s < 0 || s > k)                                                                   \
      return rill_kernel_error(ctx, "attribute num_samples %lld needs 0 to Logits (%s)'s " \
                               "%lld classes", (long long)s, rill_kin_name(ctx, 0, 0),    \
                               (long long)k);                                             \
    const int64_t *lp = rill_tensor_ptr(l);                                               \
    for (int64_t i = 0; i < n * nt; i++)                                                  \
      if (lp[i] < 0 || lp[i] >= k)                                                        \
        return rill_kernel_error(ctx, "input Labels (%s) holds class %lld, outside [0, %lld)", \
                                 rill_kin_name(ctx, 1, 0), (long long)lp[i], (long long)k); \
    rill_dims sd = {.n = 2, .d = {n, cols}};                                              \
    if (ctx->attrs[RILL_SAMPLE_LOGITS_ATTR_USE_CUSTOMIZED_SAMPLES].v.b) {                 \
      RILL_TRY(sl_same(ctx, 2, 0, RILL_DTYPE_INT64, &sd, &samples));                      \
      RILL_TRY(sl_same(ctx, 3, 1, DT, &sd, &probs));                                      \
      const int64_t *sp = rill_tensor_ptr(samples);                                       \
      for (int64_t i = 0; i < n * cols; i++)                                              \
        if (sp[i] < 0 || sp[i] >= k)                                                      \
          return rill_kernel_error(ctx, "input CustomizedSamples (%s) holds class %lld, "  \
                                   "outside [0, %lld)", rill_kin_name(ctx, 2, 0),         \
                                   (long long)sp[i], (long long)k);                       \
    } else {                                                                              \
      RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_INT64, &samples));                    \
      RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &probs));                                    \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, samples, &sd));                            \
      RILL_TRY(rill_kout_check_dims(ctx, 1, 0, probs, &sd));                              \
      RILL_TRY(sl_draw_##T(ctx, lp, n, nt, s, k, rill_tensor_ptr(samples),                \
                           rill_tensor_ptr(probs)));                                      \
    }                                                                                     \
    RILL_TRY(rill_kout_need(ctx, 4, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_need(ctx, 5, 0, RILL_DTYPE_INT64, &slab));                         \
    RILL_TRY(rill_kout_check_dims(ctx, 4, 0, out, &sd));                                  \
    RILL_TRY(rill_kout_check_dims(ctx, 5, 0, slab, &l->dims));                            \
    bool hits = ctx->attrs[RILL_SAMPLE_LOGITS_ATTR_REMOVE_ACCIDENTAL_HITS].v.b;           \
    const int64_t *sp = rill_tensor_ptr(samples);                                         \
    const T *xp = rill_tensor_ptr(x), *qp = rill_tensor_ptr(probs);                       \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t *lo = rill_tensor_ptr(slab);                                                  \
    for (int64_t i = 0; i < n; i++) {                                                     \
      for (int64_t j = 0; j < nt; j++) lo[i * nt + j] = j;                                \
      for (int64_t j = 0; j < cols; j++) {                                                \
        int64_t c = sp[i * cols + j];                                                     \
        T v = xp[i * k + c];                                                              \
        if (hits && j >= nt)                                                              \
          for (int64_t t = 0; t < nt; t++)                                                \
            if (sp[i * cols + t] == c) {                                                  \
              v -= (T)1e20;                                                               \
              break;                                                                      \
            }                                                                             \
        op[i * cols + j] =                                                                \
            (T)sl_tolerable((double)(v - (T)sl_tolerable(log((double)qp[i * cols + j])))); \
      }                                                                                   \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
                                                                                          \
  rill_status *rill_cpu_sample_logits_grad_##SUF(rill_kernel_ctx *ctx) {                 \
    rill_tensor *samples, *g, *dx;                                                        \
    RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_INT64, &samples));                       \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &g));                                           \
    RILL_TRY(rill_kin_check_dims(ctx, 3, g, &samples->dims));                             \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    if (dx->dims.n != 2 || samples->dims.n != 2 || dx->dims.d[0] != samples->dims.d[0])   \
      return rill_kernel_error(ctx, "output Logits@GRAD (%s) and input Samples (%s) must be " \
                               "[N, K] and [N, S]", rill_kout_name(ctx, 0, 0),            \
                               rill_kin_name(ctx, 2, 0));                                 \
    int64_t n = dx->dims.d[0], k = dx->dims.d[1], cols = samples->dims.d[1];              \
    const int64_t *sp = rill_tensor_ptr(samples);                                         \
    const T *gp = rill_tensor_ptr(g);                                                     \
    T *o = rill_tensor_ptr(dx);                                                           \
    memset(o, 0, rill_tensor_nbytes(dx));                                                 \
    for (int64_t i = 0; i < n; i++)                                                       \
      for (int64_t j = 0; j < cols; j++) {                                                \
        int64_t c = sp[i * cols + j];                                                     \
        if (c < 0 || c >= k)                                                              \
          return rill_kernel_error(ctx, "input Samples (%s) holds class %lld, outside "   \
                                   "[0, %lld)", rill_kin_name(ctx, 2, 0), (long long)c,   \
                                   (long long)k);                                         \
        o[i * k + c] += gp[i * cols + j];                                                 \
      }                                                                                   \
    return NULL;                                                                          \
  }

SAMPLE_LOGITS(float, RILL_DTYPE_FP32, fp32)
SAMPLE_LOGITS(double, RILL_DTYPE_FP64, fp64)
