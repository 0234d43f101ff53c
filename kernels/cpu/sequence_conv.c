/* sequence_conv CPU kernels: the context rows of a block of output rows are gathered
 * into a [rows, contextLength * D] matrix (at most ~4 MiB at a time), which one GEMM
 * multiplies by Filter. A row t + contextStart + c outside its sequence [s, e) is zero,
 * or with paddingTrainable PaddingData row up_pad + (r - s) before the sequence and
 * up_pad + (r - e) after it (up_pad = max(0, -contextStart)). The gradient runs the
 * same blocks: Filter@GRAD += col^T Out@GRAD, and dcol = Out@GRAD Filter^T is added
 * back to the rows each context row came from. */
#include <cblas.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
#include "operators/sequence_conv.h"


#define SEQUENCE_CONV(T, DT, GEMM, NAME)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *pad = NULL, *f = NULL, *out = NULL;                                \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &f));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                             \
    bool train = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_PADDING_TRAINABLE].v.b;                    \
    if (train) RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &pad));                                   \
    int64_t len = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_CONTEXT_LENGTH].v.i, start = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_CONTEXT_START].v.i; \
    int64_t up, down, rows, D, N, K;                                                           \
    RILL_TRY(rill_seqconv_geometry(ctx, x, f, pad, len, start, &up, &down, &rows, &D, &N));    \
    K = len * D;                                                                               \
    const rill_lod_level *lv = &x->lod.levels[0];                                              \
    rill_dims want = {.n = 2, .d = {rows, N}};                                                 \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &want));                                     \
    if (rows == 0 || N == 0) return NULL;                                                      \
    if (K == 0) {                                                                              \
      memset(rill_tensor_ptr(out), 0, (size_t)(rows * N) * sizeof(T));                         \
      return NULL;                                                                             \
    }                                                                                          \
    int64_t block = ((int64_t)4 << 20) / (K * (int64_t)sizeof(T));                             \
    if (block < 1) block = 1;                                                                  \
    if (block > rows) block = rows;                                                            \
    T *col = rill_malloc((size_t)(block * K) * sizeof(T));                                     \
    if (!col) return rill_oom();                                                               \
    const T *xp = rill_tensor_ptr(x), *pp = pad ? (const T *)rill_tensor_ptr(pad) : NULL;      \
    T *op = rill_tensor_ptr(out);                                                              \
    size_t seq = 0;                                                                            \
    for (int64_t r0 = 0; r0 < rows; r0 += block) {                                             \
      int64_t nb = rows - r0 < block ? rows - r0 : block;                                      \
      for (int64_t t = r0; t < r0 + nb; t++) {                                                 \
        while (lv->offsets[seq + 1] <= (uint64_t)t) seq++;                                     \
        int64_t s = (int64_t)lv->offsets[seq], e = (int64_t)lv->offsets[seq + 1];              \
        T *c = col + (t - r0) * K;                                                             \
        for (int64_t j = 0; j < len; j++) {                                                    \
          int64_t r = t + start + j;                                                           \
          const T *src = NULL;                                                                 \
          if (r >= s && r < e)                                                                 \
            src = xp + r * D;                                                                  \
          else if (pp)                                                                         \
            src = pp + (r < s ? up + (r - s) : up + (r - e)) * D;                              \
          if (src)                                                                             \
            memcpy(c + j * D, src, (size_t)D * sizeof(T));                                     \
          else                                                                                 \
            memset(c + j * D, 0, (size_t)D * sizeof(T));                                       \
        }                                                                                      \
      }                                                                                        \
      GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)nb, (int)N, (int)K, (T)1, col,      \
           (int)K, (const T *)rill_tensor_ptr(f), (int)N, (T)0, op + r0 * N, (int)N);          \
    }                                                                                          \
    rill_free(col);                                                                            \
    return NULL;                                                                               \
  }

SEQUENCE_CONV(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, rill_cpu_sequence_conv_fp32)
SEQUENCE_CONV(double, RILL_DTYPE_FP64, cblas_dgemm, rill_cpu_sequence_conv_fp64)

#define SEQUENCE_CONV_GRAD(T, DT, GEMM, NAME)                                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *pad = NULL, *f = NULL, *dout = NULL;                               \
    rill_tensor *dx = NULL, *dpad = NULL, *df = NULL;                                          \
    if (!rill_kout(ctx, 0, 0) && !rill_kout(ctx, 1, 0) && !rill_kout(ctx, 2, 0)) return NULL;  \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &f));                                                \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &dout));                                             \
    bool train = ctx->attrs[RILL_SEQUENCE_CONV_GRAD_ATTR_PADDING_TRAINABLE].v.b;               \
    if (train) RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &pad));                                   \
    if (rill_kout(ctx, 1, 0) && !pad)                                                          \
      return rill_kernel_error(ctx, "output PaddingData@GRAD needs paddingTrainable and "      \
                               "input PaddingData");                                           \
    int64_t len = ctx->attrs[RILL_SEQUENCE_CONV_GRAD_ATTR_CONTEXT_LENGTH].v.i, start = ctx->attrs[RILL_SEQUENCE_CONV_GRAD_ATTR_CONTEXT_START].v.i; \
    int64_t up, down, rows, D, N, K;                                                           \
    RILL_TRY(rill_seqconv_geometry(ctx, x, f, pad, len, start, &up, &down, &rows, &D, &N));    \
    K = len * D;                                                                               \
    const rill_lod_level *lv = &x->lod.levels[0];                                              \
    rill_dims gd = {.n = 2, .d = {rows, N}};                                                   \
    if (dout->dims.n != 2 || dout->dims.d[0] != rows || dout->dims.d[1] != N)                  \
      return rill_kernel_error(ctx, "input Out@GRAD (%s) must have shape [%lld, %lld]",        \
                               rill_kin_name(ctx, 3, 0), (long long)gd.d[0], (long long)N);    \
    if (rill_kout(ctx, 0, 0)) {                                                                \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                            \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                                 \
      memset(rill_tensor_ptr(dx), 0, (size_t)rill_tensor_numel(dx) * sizeof(T));               \
    }                                                                                          \
    if (rill_kout(ctx, 1, 0)) {                                                                \
      RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &dpad));                                          \
      RILL_TRY(rill_kout_check_dims(ctx, 1, 0, dpad, &pad->dims));                             \
      memset(rill_tensor_ptr(dpad), 0, (size_t)rill_tensor_numel(dpad) * sizeof(T));           \
    }                                                                                          \
    if (rill_kout(ctx, 2, 0)) {                                                                \
      RILL_TRY(rill_kout_need(ctx, 2, 0, DT, &df));                                            \
      RILL_TRY(rill_kout_check_dims(ctx, 2, 0, df, &f->dims));                                 \
      memset(rill_tensor_ptr(df), 0, (size_t)rill_tensor_numel(df) * sizeof(T));               \
    }                                                                                          \
    if (rows == 0 || N == 0 || K == 0) return NULL;                                            \
    int64_t block = ((int64_t)4 << 20) / (K * (int64_t)sizeof(T));                             \
    if (block < 1) block = 1;                                                                  \
    if (block > rows) block = rows;                                                            \
    T *col = rill_malloc((size_t)(block * K) * sizeof(T));                                     \
    if (!col) return rill_oom();                                                               \
    const T *xp = rill_tensor_ptr(x), *pp = pad ? (const T *)rill_tensor_ptr(pad) : NULL;      \
    const T *gp = rill_tensor_ptr(dout), *fp = rill_tensor_ptr(f);                             \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *dpp = dpad ? (T *)rill_tensor_ptr(dpad) : NULL; \
    size_t seq = 0;                                                                            \
    for (int64_t r0 = 0; r0 < rows; r0 += block) {                                             \
      int64_t nb = rows - r0 < block ? rows - r0 : block;                                      \
      size_t seq0 = seq;                                                                       \
      if (df) {                                                                                \
        for (int64_t t = r0; t < r0 + nb; t++) {                                               \
          while (lv->offsets[seq + 1] <= (uint64_t)t) seq++;                                   \
          int64_t s = (int64_t)lv->offsets[seq], e = (int64_t)lv->offsets[seq + 1];            \
          for (int64_t j = 0; j < len; j++) {                                                  \
            bool fromp;                                                                        \
            int64_t r = rill_seqconv_context_row(t, j, start, s, e, up, pp != NULL, &fromp);   \
            T *c = col + (t - r0) * K + j * D;                                                 \
            if (r < 0)                                                                         \
              memset(c, 0, (size_t)D * sizeof(T));                                             \
            else                                                                               \
              memcpy(c, (fromp ? pp : xp) + r * D, (size_t)D * sizeof(T));                     \
          }                                                                                    \
        }                                                                                      \
        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)K, (int)N, (int)nb, (T)1, col,      \
             (int)K, gp + r0 * N, (int)N, (T)1, (T *)rill_tensor_ptr(df), (int)N);             \
      }                                                                                        \
      if (!dxp && !dpp) continue;                                                              \
      GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)K, (int)N, (T)1,             \
           gp + r0 * N, (int)N, fp, (int)N, (T)0, col, (int)K);                                \
      seq = seq0;                                                                              \
      for (int64_t t = r0; t < r0 + nb; t++) {                                                 \
        while (lv->offsets[seq + 1] <= (uint64_t)t) seq++;                                     \
        int64_t s = (int64_t)lv->offsets[seq], e = (int64_t)lv->offsets[seq + 1];              \
        for (int64_t j = 0; j < len; j++) {                                                    \
          bool fromp;                                                                          \
          int64_t r = rill_seqconv_context_row(t, j, start, s, e, up, pp != NULL, &fromp);     \
          T *dst = r < 0 ? NULL : fromp ? (dpp ? dpp + r * D : NULL) : (dxp ? dxp + r * D : NULL); \
          if (!dst) continue;                                                                  \
          const T *c = col + (t - r0) * K + j * D;                                             \
          for (int64_t k = 0; k < D; k++) dst[k] += c[k];                                      \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    rill_free(col);                                                                            \
    return NULL;                                                                               \
  }

SEQUENCE_CONV_GRAD(float, RILL_DTYPE_FP32, cblas_sgemm, rill_cpu_sequence_conv_grad_fp32)
SEQUENCE_CONV_GRAD(double, RILL_DTYPE_FP64, cblas_dgemm, rill_cpu_sequence_conv_grad_fp64)
