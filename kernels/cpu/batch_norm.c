/* batch_norm and batch_norm_grad CPU kernels. NCHW (channels at dim 1) views X as
 * [N, C, S]; NHWC (channels last) as [N * S, C], where each channel's sums run over the
 * same elements in the same order (sample, then position) as NCHW's, so the two
 * layouts give the same bits for the same values. Statistics accumulate in double. Every output element is computed from
 * inputs at the same position after the statistics are known, so Y may be X and
 * MeanOut / VarianceOut may be Mean / Variance (Paddle's in-place update). */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/isa.h"
#include "kernels/cpu/kernels.h"
#include "operators/nn.h"


typedef struct bn_shape {
  int64_t n, c, s;
  bool nhwc; /* channels last */
} bn_shape;

static rill_status *bn_shape_of(rill_kernel_ctx *ctx, const rill_tensor *x, bn_shape *sh) {
  if (x->dims.n < 2 || x->dims.n > 5)
    return rill_kernel_error(ctx, "input X (%s) must have rank 2 to 5, has rank %d",
                             rill_kin_name(ctx, 0, 0), (int)x->dims.n);
  sh->nhwc = !rill_nn_is_nchw(&ctx->attrs[RILL_BATCH_NORM_ATTR_DATA_LAYOUT]);
  sh->n = x->dims.d[0];
  sh->c = sh->nhwc ? x->dims.d[x->dims.n - 1] : x->dims.d[1];
  sh->s = sh->nhwc ? rill_dims_prod(&x->dims, 1, x->dims.n - 1) : rill_dims_prod(&x->dims, 2, x->dims.n);
  return NULL;
}

/* [C] doubles of scratch, times k (NULL when out of memory). */
static double *bn_scratch(const bn_shape *sh, int k) {
  return rill_calloc((size_t)(sh->c > 0 ? sh->c : 1) * (size_t)k, sizeof(double));
}

/* Input (slot, 0) as a [C] vector of dt. */
static rill_status *cvec_in(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt, int64_t c,
                            rill_tensor **t) {
  RILL_TRY(rill_kin_need(ctx, slot, 0, dt, t));
  if ((*t)->dims.n == 1 && (*t)->dims.d[0] == c) return NULL;
  char s[RILL_DIMS_STR_MAX];
  return rill_kernel_error(ctx, "input %s (%s) has shape %s, expected [%lld]",
                           ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0),
                           rill_dims_str(&(*t)->dims, s, sizeof s), (long long)c);
}

/* Output (slot, 0) as a [C] vector of dt; *t NULL when the output is absent. */
static rill_status *cvec_out(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt, int64_t c,
                             rill_tensor **t) {
  *t = NULL;
  if (!rill_kout(ctx, slot, 0)) return NULL;
  RILL_TRY(rill_kout_need(ctx, slot, 0, dt, t));
  rill_dims d = {1, {c}};
  return rill_kout_check_dims(ctx, slot, 0, *t, &d);
}

/* o[i] = r[i] * a + b, where o may be r (Y = X): every chunk is loaded before it is
 * stored. float32 runs 8 lanes with FMA where the CPU has AVX2 (isa.h), its tail with
 * fmaf, so every element gets the same bits; the compiler's own vectorisation of this
 * loop is versioned on aliasing and falls back to scalar code when Y is X. */
#if RILL_X86_SIMD
RILL_AVX2_BEGIN
static void bn_affine_avx2(const float *r, float *o, int64_t n, float a, float b) {
  int64_t i = 0;
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(o + i, _mm256_fmadd_ps(_mm256_loadu_ps(r + i), va, vb));
  for (; i < n; i++) o[i] = fmaf(r[i], a, b);
}
RILL_AVX2_END
#endif
static void bn_affine_f32(const float *r, float *o, int64_t n, float a, float b) {
#if RILL_X86_SIMD
  if (rill_cpu_avx2()) {
    bn_affine_avx2(r, o, n, a, b);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++) o[i] = r[i] * a + b;
}

static void bn_affine_f64(const double *r, double *o, int64_t n, double a, double b) {
  for (int64_t i = 0; i < n; i++) o[i] = r[i] * a + b;
}

/* The same per element for channels last: o[p, c] = r[p, c] * a[c] + b[c] over np rows
 * of c channels, each element rounded as bn_affine_f32 rounds it under the same ISA. */
#if RILL_X86_SIMD
RILL_AVX2_BEGIN
static void bn_affine_rows_avx2(const float *r, float *o, int64_t np, int64_t c, const float *a,
                                const float *b) {
  for (int64_t p = 0; p < np; p++, r += c, o += c) {
    int64_t i = 0;
    for (; i + 8 <= c; i += 8)
      _mm256_storeu_ps(o + i, _mm256_fmadd_ps(_mm256_loadu_ps(r + i), _mm256_loadu_ps(a + i),
                                              _mm256_loadu_ps(b + i)));
    for (; i < c; i++) o[i] = fmaf(r[i], a[i], b[i]);
  }
}
RILL_AVX2_END
#endif
static void bn_affine_rows_f32(const float *r, float *o, int64_t np, int64_t c, const float *a,
                               const float *b) {
#if RILL_X86_SIMD
  if (rill_cpu_avx2()) {
    bn_affine_rows_avx2(r, o, np, c, a, b);
    return;
  }
#endif
  for (int64_t p = 0; p < np; p++, r += c, o += c)
    for (int64_t i = 0; i < c; i++) o[i] = r[i] * a[i] + b[i];
}

static void bn_affine_rows_f64(const double *r, double *o, int64_t np, int64_t c, const double *a,
                               const double *b) {
  for (int64_t p = 0; p < np; p++, r += c, o += c)
    for (int64_t i = 0; i < c; i++) o[i] = r[i] * a[i] + b[i];
}

#define BN(T, SUF, DT)                                                                          \
/* The forward on channels last ([np, C] rows): the statistics of every channel at once, \
   * sample by sample and position by position as NCHW sums them, then Y row by row. */ \
  static rill_status *bn_fwd_nhwc_##SUF(const bn_shape *sh, bool global, double momentum, \
                                        double eps, const T *xp, const T *scp, const T *bp, \
                                        const T *mp, const T *vp, T *yp, T *mop, T *vop, T *smp, \
                                        T *svp) { \
    int64_t C = sh->c, np = sh->n * sh->s; \
    double cnt = (double)np; \
    double *mu = bn_scratch(sh, 2); \
    T *ab = rill_malloc((size_t)(C > 0 ? C : 1) * 2 * sizeof(T)); \
    if (!mu || !ab) { \
      rill_free(mu); \
      rill_free(ab); \
      return rill_oom(); \
    } \
    double *inv = mu + C; \
    if (global) { \
      for (int64_t c = 0; c < C; c++) { \
        mu[c] = mp[c]; \
        inv[c] = 1.0 / sqrt((double)vp[c] + eps); \
        if (mop) mop[c] = mp[c]; \
        if (vop) vop[c] = vp[c]; \
      } \
    } else { \
      for (int64_t p = 0; p < np; p++) \
        for (int64_t c = 0; c < C; c++) mu[c] += xp[p * C + c]; \
      for (int64_t c = 0; c < C; c++) mu[c] /= cnt; \
      for (int64_t p = 0; p < np; p++) \
        for (int64_t c = 0; c < C; c++) \
          inv[c] += ((double)xp[p * C + c] - mu[c]) * ((double)xp[p * C + c] - mu[c]); \
      for (int64_t c = 0; c < C; c++) { \
        double v = inv[c] / cnt; \
        inv[c] = 1.0 / sqrt(v + eps); \
        if (mop) mop[c] = (T)((double)mp[c] * momentum + mu[c] * (1 - momentum)); \
        if (vop) vop[c] = (T)((double)vp[c] * momentum + v * (1 - momentum)); \
      } \
    } \
    for (int64_t c = 0; c < C; c++) { \
      if (smp) smp[c] = (T)mu[c]; \
      if (svp) svp[c] = (T)inv[c]; \
      ab[c] = (T)(inv[c] * scp[c]); \
      ab[C + c] = (T)(bp[c] - mu[c] * inv[c] * scp[c]); \
    } \
    bn_affine_rows_##SUF(xp, yp, np, C, ab, ab + C); \
    rill_free(mu); \
    rill_free(ab); \
    return NULL; \
  } \
 \
  /* The gradients on channels last, every channel's sums at once in NCHW's order. */ \
  static rill_status *bn_bwd_nhwc_##SUF(const bn_shape *sh, bool global, double eps, \
                                        const T *xp, const T *dyp, const T *scp, const T *mp, \
                                        const T *ip, const T *vp, T *dxp, T *dsp, T *dbp) { \
    int64_t C = sh->c, np = sh->n * sh->s; \
    double cnt = (double)np; \
    double *inv = bn_scratch(sh, 3); \
    if (!inv) return rill_oom(); \
    double *sdy = inv + C, *sdyx = inv + 2 * C; \
    for (int64_t c = 0; c < C; c++) inv[c] = global ? 1.0 / sqrt((double)vp[c] + eps) : (double)ip[c]; \
    for (int64_t p = 0; p < np; p++) \
      for (int64_t c = 0; c < C; c++) { \
        T d = dyp[p * C + c]; \
        sdy[c] += d; \
        sdyx[c] += d * (((double)xp[p * C + c] - mp[c]) * inv[c]); \
      } \
    for (int64_t c = 0; c < C; c++) { \
      if (dsp) dsp[c] = (T)sdyx[c]; \
      if (dbp) dbp[c] = (T)sdy[c]; \
    } \
    if (dxp) \
      for (int64_t p = 0; p < np; p++) \
        for (int64_t c = 0; c < C; c++) { \
          double k = scp[c] * inv[c]; \
          T d = dyp[p * C + c]; \
          if (global) { \
            dxp[p * C + c] = (T)(d * k); \
          } else { \
            double mdy = sdy[c] / cnt, mdyx = sdyx[c] / cnt; \
            dxp[p * C + c] = (T)(k * (d - mdy - ((double)xp[p * C + c] - mp[c]) * inv[c] * mdyx)); \
          } \
        } \
    rill_free(inv); \
    return NULL; \
  } \
 \
  static rill_status *bn_fwd_##SUF(rill_kernel_ctx *ctx) {                                      \
    rill_tensor *x, *scale, *bias, *mean, *var, *y, *mo, *vo, *sm, *sv;                         \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                 \
    bn_shape sh;                                                                                \
    RILL_TRY(bn_shape_of(ctx, x, &sh));                                                         \
    RILL_TRY(cvec_in(ctx, 1, DT, sh.c, &scale));                                                \
    RILL_TRY(cvec_in(ctx, 2, DT, sh.c, &bias));                                                 \
    RILL_TRY(cvec_in(ctx, 3, DT, sh.c, &mean));                                                 \
    RILL_TRY(cvec_in(ctx, 4, DT, sh.c, &var));                                                  \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &y));                                                \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &x->dims));                                     \
    RILL_TRY(cvec_out(ctx, 1, DT, sh.c, &mo));                                                  \
    RILL_TRY(cvec_out(ctx, 2, DT, sh.c, &vo));                                                  \
    RILL_TRY(cvec_out(ctx, 3, DT, sh.c, &sm));                                                  \
    RILL_TRY(cvec_out(ctx, 4, DT, sh.c, &sv));                                                  \
    double momentum = ctx->attrs[RILL_BATCH_NORM_ATTR_MOMENTUM].v.f, eps = ctx->attrs[RILL_BATCH_NORM_ATTR_EPSILON].v.f;              \
    rill_tensor *mt = rill_kin(ctx, 5, 0);                                                      \
    if (mt) {                                                                                   \
      if (!rill_tensor_is_set(mt) || rill_tensor_numel(mt) != 1 ||                              \
          (mt->dtype != RILL_DTYPE_FP32 && mt->dtype != RILL_DTYPE_FP64))                       \
        return rill_kernel_error(ctx, "input MomentumTensor (%s) must be one float",            \
                                 rill_kin_name(ctx, 5, 0));                                     \
      momentum = mt->dtype == RILL_DTYPE_FP32 ? *(const float *)rill_tensor_ptr(mt)             \
                                              : *(const double *)rill_tensor_ptr(mt);           \
    }                                                                                           \
    bool test_mode = ctx->attrs[RILL_BATCH_NORM_ATTR_IS_TEST].v.b && !ctx->attrs[RILL_BATCH_NORM_ATTR_TRAINABLE_STATISTICS].v.b;                 \
    bool global = test_mode || ctx->attrs[RILL_BATCH_NORM_ATTR_USE_GLOBAL_STATS].v.b;             \
    const T *xp = rill_tensor_ptr(x), *scp = rill_tensor_ptr(scale), *bp = rill_tensor_ptr(bias); \
    const T *mp = rill_tensor_ptr(mean), *vp = rill_tensor_ptr(var);                            \
    T *yp = rill_tensor_ptr(y), *mop = mo ? rill_tensor_ptr(mo) : NULL;                         \
    T *vop = vo ? rill_tensor_ptr(vo) : NULL, *smp = sm ? rill_tensor_ptr(sm) : NULL;           \
    T *svp = sv ? rill_tensor_ptr(sv) : NULL;                                                   \
    int64_t cs = sh.c * sh.s;                                                                   \
    double cnt = (double)(sh.n * sh.s);                                                         \
    if (!global && cnt <= 0)                                                                    \
      return rill_kernel_error(ctx, "input X (%s) is empty: no batch statistics",              \
                               rill_kin_name(ctx, 0, 0));                                       \
    if (sh.nhwc)                                                                                \
      return bn_fwd_nhwc_##SUF(&sh, global, momentum, eps, xp, scp, bp, mp, vp, yp, mop, vop,    \
                               smp, svp);                                                       \
    for (int64_t c = 0; c < sh.c; c++) {                                                        \
      double mu, inv;                                                                           \
      if (global) {                                                                             \
        mu = mp[c];                                                                             \
        inv = 1.0 / sqrt((double)vp[c] + eps);                                                  \
        if (mop) mop[c] = mp[c];                                                                \
        if (vop) vop[c] = vp[c];                                                                \
      } else {                                                                                  \
        double s = 0, q = 0;                                                                    \
        for (int64_t n = 0; n < sh.n; n++) {                                                    \
          const T *r = xp + n * cs + c * sh.s;                                                  \
          for (int64_t i = 0; i < sh.s; i++) s += r[i];                                         \
        }                                                                                       \
        mu = s / cnt;                                                                           \
        for (int64_t n = 0; n < sh.n; n++) {                                                    \
          const T *r = xp + n * cs + c * sh.s;                                                  \
          for (int64_t i = 0; i < sh.s; i++) q += ((double)r[i] - mu) * ((double)r[i] - mu);    \
        }                                                                                       \
        double v = q / cnt;                                                                     \
        inv = 1.0 / sqrt(v + eps);                                                              \
        if (mop) mop[c] = (T)((double)mp[c] * momentum + mu * (1 - momentum));                  \
        if (vop) vop[c] = (T)((double)vp[c] * momentum + v * (1 - momentum));                   \
      }                                                                                         \
      if (smp) smp[c] = (T)mu;                                                                  \
      if (svp) svp[c] = (T)inv;                                                                 \
      T a = (T)(inv * scp[c]), b = (T)(bp[c] - mu * inv * scp[c]);                              \
      for (int64_t n = 0; n < sh.n; n++) {                                                      \
        const T *r = xp + n * cs + c * sh.s;                                                    \
        T *o = yp + n * cs + c * sh.s;                                                          \
        bn_affine_##SUF(r, o, sh.s, a, b);                                                      \
      }                                                                                         \
    }                                                                                           \
    return NULL;                                                                                \
  }                                                                                             \
                                                                                                \
  static rill_status *bn_bwd_##SUF(rill_kernel_ctx *ctx) {                                      \
    rill_tensor *x, *scale, *sm, *sv, *dy, *dx = NULL, *dscale = NULL, *dbias = NULL;           \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                 \
    bn_shape sh;                                                                                \
    RILL_TRY(bn_shape_of(ctx, x, &sh));                                                         \
    RILL_TRY(cvec_in(ctx, 1, DT, sh.c, &scale));                                                \
    RILL_TRY(cvec_in(ctx, 5, DT, sh.c, &sm));                                                   \
    RILL_TRY(cvec_in(ctx, 6, DT, sh.c, &sv));                                                   \
    RILL_TRY(rill_kin_need(ctx, 9, 0, DT, &dy));                                                \
    if (!rill_dims_equal(&dy->dims, &x->dims))                                                  \
      return rill_kernel_error(ctx, "input Y@GRAD (%s) does not have the shape of X (%s)",      \
                               rill_kin_name(ctx, 9, 0), rill_kin_name(ctx, 0, 0));             \
    bool global = ctx->attrs[RILL_BATCH_NORM_ATTR_USE_GLOBAL_STATS].v.b || ctx->attrs[RILL_BATCH_NORM_ATTR_IS_TEST].v.b;                        \
    const T *mp = rill_tensor_ptr(sm), *ip = rill_tensor_ptr(sv), *vp = NULL;                   \
    if (global) {                                                                               \
      rill_tensor *mean, *var;                                                                  \
      RILL_TRY(cvec_in(ctx, 3, DT, sh.c, &mean));                                               \
      RILL_TRY(cvec_in(ctx, 4, DT, sh.c, &var));                                                \
      mp = rill_tensor_ptr(mean);                                                               \
      vp = rill_tensor_ptr(var);                                                                \
    }                                                                                           \
    if (rill_kout(ctx, 0, 0)) {                                                                 \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                             \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                                  \
    }                                                                                           \
    if (rill_kout(ctx, 1, 0)) RILL_TRY(cvec_out(ctx, 1, DT, sh.c, &dscale));                    \
    if (rill_kout(ctx, 2, 0)) RILL_TRY(cvec_out(ctx, 2, DT, sh.c, &dbias));                     \
    double eps = ctx->attrs[RILL_BATCH_NORM_ATTR_EPSILON].v.f;                                  \
    const T *xp = rill_tensor_ptr(x), *dyp = rill_tensor_ptr(dy), *scp = rill_tensor_ptr(scale); \
    T *dxp = dx ? rill_tensor_ptr(dx) : NULL;                                                   \
    int64_t cs = sh.c * sh.s;                                                                   \
    double cnt = (double)(sh.n * sh.s);                                                         \
    if (sh.nhwc)                                                                                \
      return bn_bwd_nhwc_##SUF(&sh, global, eps, xp, dyp, scp, mp, ip, vp, dxp,                 \
                               dscale ? rill_tensor_ptr(dscale) : NULL,                         \
                               dbias ? rill_tensor_ptr(dbias) : NULL);                          \
    for (int64_t c = 0; c < sh.c; c++) {                                                        \
      double mu = mp[c], inv = global ? 1.0 / sqrt((double)vp[c] + eps) : (double)ip[c];        \
      double sdy = 0, sdyx = 0;                                                                 \
      for (int64_t n = 0; n < sh.n; n++) {                                                      \
        const T *r = xp + n * cs + c * sh.s, *d = dyp + n * cs + c * sh.s;                      \
        for (int64_t i = 0; i < sh.s; i++) {                                                    \
          sdy += d[i];                                                                          \
          sdyx += d[i] * (((double)r[i] - mu) * inv);                                           \
        }                                                                                       \
      }                                                                                         \
      if (dscale) ((T *)rill_tensor_ptr(dscale))[c] = (T)sdyx;                                  \
      if (dbias) ((T *)rill_tensor_ptr(dbias))[c] = (T)sdy;                                     \
      if (!dxp) continue;                                                                       \
      double k = scp[c] * inv;                                                                  \
      for (int64_t n = 0; n < sh.n; n++) {                                                      \
        const T *r = xp + n * cs + c * sh.s, *d = dyp + n * cs + c * sh.s;                      \
        T *o = dxp + n * cs + c * sh.s;                                                         \
        if (global) {                                                                           \
          for (int64_t i = 0; i < sh.s; i++) o[i] = (T)(d[i] * k);                              \
        } else {                                                                                \
          double mdy = sdy / cnt, mdyx = sdyx / cnt;                                            \
          for (int64_t i = 0; i < sh.s; i++)                                                    \
            o[i] = (T)(k * (d[i] - mdy - ((double)r[i] - mu) * inv * mdyx));                    \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
    return NULL;                                                                                \
  }

BN(float, f32, RILL_DTYPE_FP32)
BN(double, f64, RILL_DTYPE_FP64)

rill_status *rill_cpu_batch_norm_fp32(rill_kernel_ctx *ctx) { return bn_fwd_f32(ctx); }
rill_status *rill_cpu_batch_norm_fp64(rill_kernel_ctx *ctx) { return bn_fwd_f64(ctx); }
rill_status *rill_cpu_batch_norm_grad_fp32(rill_kernel_ctx *ctx) { return bn_bwd_f32(ctx); }
rill_status *rill_cpu_batch_norm_grad_fp64(rill_kernel_ctx *ctx) { return bn_bwd_f64(ctx); }
