/* target_assign CPU kernels: one pass over the [N, M] matches, then the negatives. Every
 * index is checked against the data: a match beyond its instance's rows or a negative
 * beyond M is an error naming the input. */
#include "kernels/cpu/kernels.h"

#define TARGET_ASSIGN(T, DT, NAME)                                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *x = NULL, *m = NULL, *neg = rill_kin(ctx, 2, 0), *out = NULL, *wt = NULL;     \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                \
    RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT32, &m));                                  \
    if (neg) RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_INT32, &neg));                       \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                             \
    RILL_TRY(rill_kout_need(ctx, 1, 0, RILL_DTYPE_FP32, &wt));                                 \
    if (x->dims.n != 3 || m->dims.n != 2)                                                      \
      return rill_kernel_error(ctx, "inputs X (%s) and MatchIndices (%s) must be 3-D and 2-D", \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));            \
    if (x->lod.nlevels != 1)                                                                   \
      return rill_kernel_error(ctx, "input X (%s) has %zu LoD levels, needs 1 (its rows per "  \
                               "instance)", rill_kin_name(ctx, 0, 0), x->lod.nlevels);         \
    int64_t n = m->dims.d[0], cols = m->dims.d[1], p = x->dims.d[1], k = x->dims.d[2];         \
    const rill_lod_level *lv = &x->lod.levels[0];                                              \
    if ((int64_t)lv->n != n + 1)                                                               \
      return rill_kernel_error(ctx, "input X (%s) has %lld instances in its LoD, "             \
                               "MatchIndices (%s) %lld rows: they must be equal",              \
                               rill_kin_name(ctx, 0, 0), (long long)lv->n - 1,                 \
                               rill_kin_name(ctx, 1, 0), (long long)n);                        \
    if ((int64_t)lv->offsets[n] > x->dims.d[0])                                               \
      return rill_kernel_error(ctx, "input X (%s) has a LoD beyond its %lld rows",             \
                               rill_kin_name(ctx, 0, 0), (long long)x->dims.d[0]);             \
    rill_dims od = {.n = 3, .d = {n, cols, k}}, wd = {.n = 3, .d = {n, cols, 1}};              \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                       \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, wt, &wd));                                        \
    const T *xp = rill_tensor_ptr(x);                                                          \
    const int32_t *mp = rill_tensor_ptr(m);                                                    \
    T *op = rill_tensor_ptr(out);                                                              \
    float *wp = rill_tensor_ptr(wt);                                                           \
    T mismatch = (T)ctx->attrs[RILL_TARGET_ASSIGN_ATTR_MISMATCH_VALUE].v.i;                    \
    for (int64_t i = 0; i < n; i++) {                                                          \
      int64_t off = (int64_t)lv->offsets[i], size = (int64_t)lv->offsets[i + 1] - off;         \
      for (int64_t j = 0; j < cols; j++) {                                                     \
        int32_t id = mp[i * cols + j];                                                         \
        T *o = op + (i * cols + j) * k;                                                        \
        if (id >= size)                                                                        \
          return rill_kernel_error(ctx, "input MatchIndices (%s) holds %d at [%lld, %lld], "   \
                                   "but instance %lld of X (%s) has %lld rows",                \
                                   rill_kin_name(ctx, 1, 0), (int)id, (long long)i,            \
                                   (long long)j, (long long)i, rill_kin_name(ctx, 0, 0),       \
                                   (long long)size);                                           \
        if (id > -1) {                                                                         \
          const T *src = xp + ((off + id) * p + j % p) * k;                                    \
          for (int64_t c = 0; c < k; c++) o[c] = src[c];                                       \
          wp[i * cols + j] = 1.f;                                                              \
        } else {                                                                               \
          for (int64_t c = 0; c < k; c++) o[c] = mismatch;                                     \
          wp[i * cols + j] = 0.f;                                                              \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    if (!neg) return NULL;                                                                     \
    if (neg->lod.nlevels != 1 || (int64_t)neg->lod.levels[0].n != n + 1)                       \
      return rill_kernel_error(ctx, "input NegIndices (%s) needs one LoD level with %lld "     \
                               "instances", rill_kin_name(ctx, 2, 0), (long long)n);           \
    const uint64_t *no = neg->lod.levels[0].offsets;                                           \
    const int32_t *np = rill_tensor_ptr(neg);                                                  \
    if ((int64_t)no[n] > rill_tensor_numel(neg))                                               \
      return rill_kernel_error(ctx, "input NegIndices (%s) has a LoD beyond its %lld values",  \
                               rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(neg));   \
    for (int64_t i = 0; i < n; i++)                                                            \
      for (uint64_t q = no[i]; q < no[i + 1]; q++) {                                           \
        int32_t id = np[q];                                                                    \
        if (id < 0 || id >= cols)                                                              \
          return rill_kernel_error(ctx, "input NegIndices (%s) holds %d, outside the %lld "    \
                                   "priors", rill_kin_name(ctx, 2, 0), (int)id,                \
                                   (long long)cols);                                           \
        T *o = op + (i * cols + id) * k;                                                       \
        for (int64_t c = 0; c < k; c++) o[c] = mismatch;                                       \
        wp[i * cols + id] = 1.f;                                                               \
      }                                                                                        \
    return NULL;                                                                               \
  }

TARGET_ASSIGN(float, RILL_DTYPE_FP32, rill_cpu_target_assign_fp32)
TARGET_ASSIGN(double, RILL_DTYPE_FP64, rill_cpu_target_assign_fp64)
TARGET_ASSIGN(int32_t, RILL_DTYPE_INT32, rill_cpu_target_assign_int32)
