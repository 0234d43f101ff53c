/* increment CPU kernels: Out = X + step on one element. */
#include "kernels/cpu/kernels.h"

#define INCREMENT(T, SUF, DT)                                                          \
  rill_status *rill_cpu_increment_##SUF(rill_kernel_ctx *ctx) {                        \
    rill_tensor *x, *out;                                                              \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                        \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                     \
    if (rill_tensor_numel(x) != 1 || rill_tensor_numel(out) != 1)                      \
      return rill_kernel_error(ctx, "input X (%s) must hold one element",              \
                               rill_kin_name(ctx, 0, 0));                              \
    *(T *)rill_tensor_ptr(out) = (T)(*(const T *)rill_tensor_ptr(x) + (T)ctx->attrs[RILL_INCREMENT_ATTR_STEP].v.f); \
    return NULL;                                                                       \
  }

INCREMENT(int32_t, int32, RILL_DTYPE_INT32)
INCREMENT(int64_t, int64, RILL_DTYPE_INT64)
INCREMENT(float, fp32, RILL_DTYPE_FP32)
INCREMENT(double, fp64, RILL_DTYPE_FP64)
