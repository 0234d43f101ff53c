/* sequence_pool CPU kernels: one pass over each sequence's rows (row width D = the
 * product of X's trailing dims), accumulating in T as Paddle does; the gradient
 * writes every row of X@GRAD once (zeros where nothing flows back). */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "operators/sequence_pool.h"

#define SEQUENCE_POOL(T, DT, SQRT, NAME)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *out = NULL, *mi = NULL;                                            \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                             \
    int kind;                                                                                  \
    RILL_TRY(rill_seqpool_kind_of(ctx, &ctx->attrs[RILL_SEQUENCE_POOL_ATTR_POOLTYPE], &kind)); \
    if (kind == RILL_SEQPOOL_MAX && rill_kout(ctx, 1, 0))                                      \
      RILL_TRY(rill_kout_need(ctx, 1, 0, RILL_DTYPE_INT32, &mi));                              \
    const rill_lod_level *lv = NULL;                                                           \
    int64_t nseq = 0, rows = 0, D = 0;                                                         \
    RILL_TRY(rill_seqpool_sequences(ctx, x, &lv, &nseq, &rows, &D));                           \
    rill_dims want = x->dims;                                                                  \
    want.d[0] = nseq;                                                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &want));                                     \
    if (mi) RILL_TRY(rill_kout_check_dims(ctx, 1, 0, mi, &want));                              \
    if (x->lod.nlevels == 2) {                                                                 \
      rill_lod lod = {0, NULL};                                                                \
      rill_lod first = {1, x->lod.levels};                                                     \
      RILL_TRY(rill_lod_copy(&lod, &first));                                                   \
      rill_lod_clear(&out->lod);                                                               \
      out->lod = lod;                                                                          \
    }                                                                                          \
    const T *xp = rill_tensor_ptr(x);                                                          \
    T *op = rill_tensor_ptr(out), pad = (T)ctx->attrs[RILL_SEQUENCE_POOL_ATTR_PAD_VALUE].v.f;  \
    int32_t *ip = mi ? (int32_t *)rill_tensor_ptr(mi) : NULL;                                  \
    for (int64_t i = 0; i < nseq; i++) {                                                       \
      int64_t a = (int64_t)lv->offsets[i], b = (int64_t)lv->offsets[i + 1];                    \
      T *o = op + i * D;                                                                       \
      if (a == b) {                                                                            \
        for (int64_t k = 0; k < D; k++) o[k] = pad;                                            \
        if (ip)                                                                                \
          for (int64_t k = 0; k < D; k++) ip[i * D + k] = -1;                                  \
        continue;                                                                              \
      }                                                                                        \
      switch (kind) {                                                                          \
      case RILL_SEQPOOL_LAST:                                                                  \
        memcpy(o, xp + (b - 1) * D, (size_t)D * sizeof(T));                                    \
        break;                                                                                 \
      case RILL_SEQPOOL_FIRST:                                                                 \
        memcpy(o, xp + a * D, (size_t)D * sizeof(T));                                          \
        break;                                                                                 \
      case RILL_SEQPOOL_MAX:                                                                   \
        memcpy(o, xp + a * D, (size_t)D * sizeof(T));                                          \
        if (ip)                                                                                \
          for (int64_t k = 0; k < D; k++) ip[i * D + k] = (int32_t)a;                          \
        for (int64_t r = a + 1; r < b; r++)                                                    \
          for (int64_t k = 0; k < D; k++)                                                      \
            if (xp[r * D + k] > o[k]) {                                                        \
              o[k] = xp[r * D + k];                                                            \
              if (ip) ip[i * D + k] = (int32_t)r;                                              \
            }                                                                                  \
        break;                                                                                 \
      default: {                                                                               \
        memcpy(o, xp + a * D, (size_t)D * sizeof(T));                                          \
        for (int64_t r = a + 1; r < b; r++)                                                    \
          for (int64_t k = 0; k < D; k++) o[k] += xp[r * D + k];                               \
        T div = kind == RILL_SEQPOOL_AVERAGE ? (T)(b - a) : kind == RILL_SEQPOOL_SQRT ? SQRT((T)(b - a)) : (T)1; \
        if (kind != RILL_SEQPOOL_SUM)                                                          \
          for (int64_t k = 0; k < D; k++) o[k] /= div;                                         \
      }                                                                                        \
      }                                                                                        \
    }                                                                                          \
    return NULL;                                                                               \
  }

SEQUENCE_POOL(float, RILL_DTYPE_FP32, sqrtf, rill_cpu_sequence_pool_fp32)
SEQUENCE_POOL(double, RILL_DTYPE_FP64, sqrt, rill_cpu_sequence_pool_fp64)

#define SEQUENCE_POOL_GRAD(T, DT, SQRT, NAME)                                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *mi = NULL, *dout = NULL, *dx = NULL;                               \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                                    \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                             \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                              \
    int kind;                                                                                  \
    RILL_TRY(rill_seqpool_kind_of(ctx, &ctx->attrs[RILL_SEQUENCE_POOL_GRAD_ATTR_POOLTYPE], &kind)); \
    if (kind == RILL_SEQPOOL_MAX) RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT32, &mi));   \
    const rill_lod_level *lv = NULL;                                                           \
    int64_t nseq = 0, rows = 0, D = 0;                                                         \
    RILL_TRY(rill_seqpool_sequences(ctx, x, &lv, &nseq, &rows, &D));                           \
    if (rill_tensor_numel(dout) != nseq * D || (mi && rill_tensor_numel(mi) != nseq * D))      \
      return rill_kernel_error(ctx, "inputs Out@GRAD (%s) and MaxIndex must hold %lld x %lld " \
                               "elements (one row per sequence of X (%s))",                    \
                               rill_kin_name(ctx, 2, 0), (long long)nseq, (long long)D,        \
                               rill_kin_name(ctx, 0, 0));                                      \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                                   \
    const T *gp = rill_tensor_ptr(dout);                                                       \
    T *dp = rill_tensor_ptr(dx);                                                               \
    const int32_t *ip = mi ? (const int32_t *)rill_tensor_ptr(mi) : NULL;                      \
    memset(dp, 0, (size_t)(rows * D) * sizeof(T));                                             \
    for (int64_t i = 0; i < nseq; i++) {                                                       \
      int64_t a = (int64_t)lv->offsets[i], b = (int64_t)lv->offsets[i + 1];                    \
      const T *g = gp + i * D;                                                                 \
      if (a == b) continue;                                                                    \
      switch (kind) {                                                                          \
      case RILL_SEQPOOL_LAST:                                                                  \
        memcpy(dp + (b - 1) * D, g, (size_t)D * sizeof(T));                                    \
        break;                                                                                 \
      case RILL_SEQPOOL_FIRST:                                                                 \
        memcpy(dp + a * D, g, (size_t)D * sizeof(T));                                          \
        break;                                                                                 \
      case RILL_SEQPOOL_MAX:                                                                   \
        for (int64_t k = 0; k < D; k++) {                                                      \
          int64_t r = ip[i * D + k];                                                           \
          if (r < a || r >= b)                                                                 \
            return rill_kernel_error(ctx, "input MaxIndex (%s) holds row %lld for sequence "   \
                                     "%lld, which spans rows %lld..%lld",                      \
                                     rill_kin_name(ctx, 1, 0), (long long)r, (long long)i,     \
                                     (long long)a, (long long)(b - 1));                        \
          dp[r * D + k] = g[k];                                                                \
        }                                                                                      \
        break;                                                                                 \
      default: {                                                                               \
        T div = kind == RILL_SEQPOOL_AVERAGE ? (T)(b - a) : kind == RILL_SEQPOOL_SQRT ? SQRT((T)(b - a)) : (T)1; \
        for (int64_t r = a; r < b; r++)                                                        \
          for (int64_t k = 0; k < D; k++) dp[r * D + k] = g[k] / div;                          \
      }                                                                                        \
      }                                                                                        \
    }                                                                                          \
    return NULL;                                                                               \
  }

SEQUENCE_POOL_GRAD(float, RILL_DTYPE_FP32, sqrtf, rill_cpu_sequence_pool_grad_fp32)
SEQUENCE_POOL_GRAD(double, RILL_DTYPE_FP64, sqrt, rill_cpu_sequence_pool_grad_fp64)
