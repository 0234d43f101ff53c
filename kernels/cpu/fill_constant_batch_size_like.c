/* fill_constant_batch_size_like CPU kernels: the value read as fill_constant reads it
 * (operators/fill_value.h) without a ValueTensor: str_value when set (int64 parsed
 * exactly, else as a double; "inf" and "nan" accepted), else value. */
#include "kernels/cpu/kernels.h"
#include "operators/fill_value.h"

#define FCBSL(T, DT, IS_LONG, NAME)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out = NULL;                                                              \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    const char *s = ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_STR_VALUE].v.s;    \
    rill_fill_value v;                                                                    \
    if (!rill_fill_value_get(ctx->attrs[RILL_FILL_CONSTANT_BATCH_SIZE_LIKE_ATTR_VALUE].v.f, s, NULL, \
                             RILL_DTYPE_FP32, IS_LONG, &v))                               \
      return rill_kernel_error(ctx, "attribute str_value \"%s\" is not a number", s);     \
    T val = IS_LONG && v.exact_long ? (T)v.l : (T)v.d;                                    \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t n = rill_tensor_numel(out);                                                   \
    for (int64_t i = 0; i < n; i++) op[i] = val;                                          \
    return NULL;                                                                          \
  }

FCBSL(bool, RILL_DTYPE_BOOL, false, rill_cpu_fill_constant_batch_size_like_bool)
FCBSL(float, RILL_DTYPE_FP32, false, rill_cpu_fill_constant_batch_size_like_fp32)
FCBSL(double, RILL_DTYPE_FP64, false, rill_cpu_fill_constant_batch_size_like_fp64)
FCBSL(int32_t, RILL_DTYPE_INT32, false, rill_cpu_fill_constant_batch_size_like_int32)
FCBSL(int64_t, RILL_DTYPE_INT64, true, rill_cpu_fill_constant_batch_size_like_int64)
