/* add_position_encoding and its gradient (float32, float64); the encoding is computed in
 * double, as Paddle's. */
#include <math.h>

#include "framework/data/tensor.h"
#include "kernels/cpu/kernels.h"

#define APE(T, DT, NAME, GRAD)                                                               \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *out;                                                                   \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    const rill_dims *d = &x->dims;                                                          \
    bool lod = x->lod.nlevels > 0;                                                          \
    if ((lod && (d->n != 2 || x->lod.nlevels != 1)) || (!lod && d->n != 3) ||               \
        d->d[d->n - 1] % 2 != 0)                                                            \
      return rill_kernel_error(ctx, "input X (%s) must be [N, T, P], or [total, P] with one " \
                               "LoD level, P even", rill_kin_name(ctx, 0, 0));             \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, d));                                      \
    double alpha = ctx->attrs[RILL_ADD_POSITION_ENCODING_ATTR_ALPHA].v.f;                   \
    double beta = ctx->attrs[RILL_ADD_POSITION_ENCODING_ATTR_BETA].v.f;                     \
    int64_t P = d->d[d->n - 1], half = P / 2;                                               \
    int64_t nseq = lod ? (int64_t)x->lod.levels[0].n - 1 : d->d[0];                         \
    const T *src = rill_tensor_ptr(x);                                                      \
    T *dst = rill_tensor_ptr(out);                                                          \
    int64_t row = 0;                                                                        \
    for (int64_t s = 0; s < nseq; s++) {                                                    \
      int64_t len = lod ? (int64_t)(x->lod.levels[0].offsets[s + 1] -                       \
                                    x->lod.levels[0].offsets[s])                            \
                        : d->d[1];                                                          \
      for (int64_t j = 0; j < len; j++, row++) {                                            \
        for (int64_t k = 0; k < half; k++) {                                                \
          double v = half > 1 ? (double)j / pow(10000.0, (double)k / (double)(half - 1))    \
                              : (double)j / 10000.0;                                        \
          dst[row * P + k] = (T)(src[row * P + k] * alpha + sin(v) * beta);                 \
          dst[row * P + half + k] = (T)(src[row * P + half + k] * alpha + cos(v) * beta);   \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
    if (row * P != rill_tensor_numel(x))                                                    \
      return rill_kernel_error(ctx, "input X (%s): its LoD covers %lld rows of %lld",       \
                               rill_kin_name(ctx, 0, 0), (long long)row,                    \
                               (long long)(rill_tensor_numel(x) / (P ? P : 1)));            \
    return NULL;                                                                            \
  }                                                                                         \
  rill_status *GRAD(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *x, *g, *dx = rill_kout(ctx, 0, 0);                                         \
    if (!dx) return NULL;                                                                   \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &g));                                             \
    RILL_TRY(rill_kin_check_dims(ctx, 1, g, &x->dims));                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                           \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                                \
    T alpha = (T)ctx->attrs[RILL_ADD_POSITION_ENCODING_GRAD_ATTR_ALPHA].v.f;                \
    const T *gp = rill_tensor_ptr(g);                                                       \
    T *dp = rill_tensor_ptr(dx);                                                            \
    for (int64_t i = 0, n = rill_tensor_numel(x); i < n; i++) dp[i] = gp[i] * alpha;        \
    return NULL;                                                                            \
  }

APE(float, RILL_DTYPE_FP32, rill_cpu_add_position_encoding_fp32,
    rill_cpu_add_position_encoding_grad_fp32)
APE(double, RILL_DTYPE_FP64, rill_cpu_add_position_encoding_fp64,
    rill_cpu_add_position_encoding_grad_fp64)
