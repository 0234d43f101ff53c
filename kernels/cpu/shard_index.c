/* shard_index on the CPU: one pass over the indices, each checked against index_num. */
#include "kernels/cpu/kernels.h"

#define SHARD_INDEX(T, DT, NAME)                                                                \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                     \
    rill_tensor *x = NULL, *out = NULL;                                                         \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                                 \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                              \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                                   \
    int64_t num = ctx->attrs[RILL_SHARD_INDEX_ATTR_INDEX_NUM].v.i;                              \
    int64_t ns = ctx->attrs[RILL_SHARD_INDEX_ATTR_NSHARDS].v.i;                                 \
    int64_t id = ctx->attrs[RILL_SHARD_INDEX_ATTR_SHARD_ID].v.i;                                \
    T ignore = (T)ctx->attrs[RILL_SHARD_INDEX_ATTR_IGNORE_VALUE].v.i;                           \
    if (num <= 0 || ns <= 0 || id < 0 || id >= ns)                                              \
      return rill_kernel_error(ctx, "attributes index_num %lld, nshards %lld, shard_id %lld: "  \
                               "expected index_num > 0 and 0 <= shard_id < nshards",            \
                               (long long)num, (long long)ns, (long long)id);                   \
    int64_t size = (num + ns - 1) / ns, n = rill_tensor_numel(x);                               \
    const T *xp = rill_tensor_ptr(x);                                                           \
    T *op = rill_tensor_ptr(out);                                                               \
    for (int64_t i = 0; i < n; i++) {                                                           \
      int64_t v = (int64_t)xp[i];                                                               \
      if (v < 0 || v >= num)                                                                    \
        return rill_kernel_error(ctx, "input X (%s) holds %lld at [%lld], outside [0, "         \
                                 "index_num = %lld)", rill_kin_name(ctx, 0, 0), (long long)v,   \
                                 (long long)i, (long long)num);                                 \
      op[i] = v / size == id ? (T)(v % size) : ignore;                                          \
    }                                                                                           \
    return NULL;                                                                                \
  }

SHARD_INDEX(int32_t, RILL_DTYPE_INT32, rill_cpu_shard_index_int32)
SHARD_INDEX(int64_t, RILL_DTYPE_INT64, rill_cpu_shard_index_int64)
