/* sequence_conv CPU kernels: the context rows of a block of output rows are gathered
 * into a [rows, contextLength * D] matrix (at most ~4 MiB at a time), which one GEMM
 * multiplies by Filter. A row t + contextStart + c outside its sequence [s, e) is zero,
 * or with paddingTrainable PaddingData row up_pad + (r - s) before the sequence and
 * up_pad + (r - e) after it (up_pad = max(0, -contextStart)). */
#include <cblas.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"


#define SEQUENCE_CONV(T, DT, GEMM, NAME)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *pad = NULL, *f = NULL, *out = NULL;                                \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &f));                                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                             \
    bool train = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_PADDING_TRAINABLE].v.b;                    \
    if (train) RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &pad));                                   \
    int64_t len = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_CONTEXT_LENGTH].v.i, start = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_CONTEXT_START].v.i;                      \
    int64_t up = start < 0 ? -start : 0, down = start + len - 1 > 0 ? start + len - 1 : 0;     \
    if (x->dims.n != 2 || f->dims.n != 2 || len < 1 || f->dims.d[0] != len * x->dims.d[1] ||   \
        (pad && (pad->dims.n != 2 || pad->dims.d[0] != up + down ||                            \
                 pad->dims.d[1] != x->dims.d[1])))                                             \
      return rill_kernel_error(ctx, "inputs X (%s), Filter (%s) and PaddingData do not fit "   \
                               "contextLength %lld and contextStart %lld",                     \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 2, 0),             \
                               (long long)len, (long long)start);                              \
    if (x->lod.nlevels != 1)                                                                   \
      return rill_kernel_error(ctx, "input X (%s) has %zu LoD levels, expected 1 (the "        \
                               "sequences to convolve)", rill_kin_name(ctx, 0, 0),             \
                               x->lod.nlevels);                                                \
    int64_t rows = x->dims.d[0], D = x->dims.d[1], N = f->dims.d[1], K = len * D;              \
    const rill_lod_level *lv = &x->lod.levels[0];                                              \
    if (lv->n < 1 || lv->offsets[lv->n - 1] != (uint64_t)rows)                                 \
      return rill_kernel_error(ctx, "input X (%s): its LoD does not end at its %lld rows",     \
                               rill_kin_name(ctx, 0, 0), (long long)rows);                     \
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
