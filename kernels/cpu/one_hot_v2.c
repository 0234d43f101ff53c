/* one_hot_v2 (and one_hot: the same output layout) CPU kernels, one per index dtype; the
 * output dtype is the dtype attribute. */
#include <string.h>

#include "kernels/cpu/kernels.h"


#define SET_ONE(OT)                                                                          \
  for (int64_t i = 0; i < n; i++) {                                                        \
    int64_t v = (int64_t)xp[i];                                                            \
    if (v >= 0 && v < depth) ((OT *)op)[i * depth + v] = (OT)1;                            \
  }

#define ONE_HOT(T, DT, NAME)                                                                 \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *x = NULL, *out = NULL;                                                    \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                            \
    rill_dtype odt = (rill_dtype)ctx->attrs[RILL_ONE_HOT_V2_ATTR_DTYPE].v.i;               \
    RILL_TRY(rill_kout_need(ctx, 0, 0, odt, &out));                                        \
    int64_t n = rill_tensor_numel(x), depth = out->dims.n ? out->dims.d[out->dims.n - 1] : 0; \
    if (rill_tensor_numel(out) != n * depth)                                               \
      return rill_kernel_error(ctx, "output Out (%s) does not have X's shape + [depth]",   \
                               rill_kout_name(ctx, 0, 0));                                 \
    const T *xp = rill_tensor_ptr(x);                                                      \
    if (!ctx->attrs[RILL_ONE_HOT_V2_ATTR_ALLOW_OUT_OF_RANGE].v.b)                          \
      for (int64_t i = 0; i < n; i++)                                                      \
        if (xp[i] < 0 || (int64_t)xp[i] >= depth)                                          \
          return rill_kernel_error(ctx, "input X (%s) holds index %lld at %lld, outside [0, %lld) " \
                                   "(set allow_out_of_range to ignore it)",                \
                                   rill_kin_name(ctx, 0, 0), (long long)xp[i], (long long)i, \
                                   (long long)depth);                                      \
    void *op = rill_tensor_ptr(out);                                                       \
    if (rill_tensor_nbytes(out)) memset(op, 0, rill_tensor_nbytes(out));                   \
    switch (odt) {                                                                         \
    case RILL_DTYPE_FP32: SET_ONE(float) break;                                            \
    case RILL_DTYPE_FP64: SET_ONE(double) break;                                           \
    case RILL_DTYPE_INT32: SET_ONE(int32_t) break;                                         \
    case RILL_DTYPE_INT64: SET_ONE(int64_t) break;                                         \
    default:                                                                               \
      return rill_kernel_error(ctx, "output Out (%s) is %s: one_hot writes float32, "   \
                               "float64, int32 or int64", rill_kout_name(ctx, 0, 0),       \
                               rill_dtype_name(odt));                                      \
    }                                                                                      \
    return NULL;                                                                           \
  }

ONE_HOT(int32_t, RILL_DTYPE_INT32, rill_cpu_one_hot_v2_int32)
ONE_HOT(int64_t, RILL_DTYPE_INT64, rill_cpu_one_hot_v2_int64)
