/* batch_norm and batch_norm_grad CPU kernels (channels at dim 1: X viewed as
 * [N, C, S]). Statistics accumulate in double. Every output element is computed from
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
} bn_shape;

static rill_status *bn_shape_of(rill_kernel_ctx *ctx, const rill_tensor *x, bn_shape *sh) {
  if (!rill_nn_is_nchw(&ctx->attrs[RILL_BATCH_NORM_ATTR_DATA_LAYOUT]))
    return rill_error(RILL_UNIMPLEMENTED, "op '%s': data_layout NHWC is not supported yet (input "
                      "X (%s)): use NCHW", ctx->schema->type, rill_kin_name(ctx, 0, 0));
  if (x->dims.n < 2 || x->dims.n > 5)
    return rill_kernel_error(ctx, "input X (%s) must have rank 2 to 5, has rank %d",
                             rill_kin_name(ctx, 0, 0), (int)x->dims.n);
  sh->n = x->dims.d[0];
  sh->c = x->dims.d[1];
  sh->s = rill_dims_prod(&x->dims, 2, x->dims.n);
  return NULL;
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

#define BN(T, SUF, DT)                                                                          \
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
