/* fill_constant CPU kernels. The value comes from ValueTensor, else str_value (parsed
 * exactly: int64 through strtoll, "inf"/"nan" through strtod), else attribute value. */
#include "kernels/cpu/kernels.h"
#include "operators/fill_value.h"


/* The value, as operators/fill_value.h reads it. */
static rill_status *fill_value_get(rill_kernel_ctx *ctx, bool want_long, rill_fill_value *v) {
  rill_tensor *vt = rill_kin(ctx, RILL_FILL_CONSTANT_IN_VALUE_TENSOR, 0);
  if (vt && (rill_tensor_numel(vt) < 1 || !rill_tensor_ptr(vt)))
    return rill_kernel_error(ctx, "input ValueTensor (%s) holds no value", rill_kin_name(ctx, 0, 0));
  if (!rill_fill_value_get(ctx->attrs[RILL_FILL_CONSTANT_ATTR_VALUE].v.f, ctx->attrs[RILL_FILL_CONSTANT_ATTR_STR_VALUE].v.s,
                           vt ? rill_tensor_ptr(vt) : NULL, vt ? vt->dtype : RILL_DTYPE_FP32, want_long, v)) {
    if (vt)
      return rill_kernel_error(ctx, "input ValueTensor (%s) is %s, expected a number", rill_kin_name(ctx, 0, 0),
                               rill_dtype_name(vt->dtype));
    return rill_kernel_error(ctx, "attribute str_value \"%s\" is not a number",
                             ctx->attrs[RILL_FILL_CONSTANT_ATTR_STR_VALUE].v.s);
  }
  return NULL;
}

#define FILL(T, DT, IS_LONG, NAME)                                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    rill_fill_value v;                                                                    \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(fill_value_get(ctx, IS_LONG, &v));                                           \
    T val = IS_LONG && v.exact_long ? (T)v.l : (T)v.d;                                    \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t n = rill_tensor_numel(out);                                                   \
    for (int64_t i = 0; i < n; i++) op[i] = val;                                          \
    return NULL;                                                                          \
  }

FILL(bool, RILL_DTYPE_BOOL, false, rill_cpu_fill_constant_bool)
FILL(float, RILL_DTYPE_FP32, false, rill_cpu_fill_constant_fp32)
FILL(double, RILL_DTYPE_FP64, false, rill_cpu_fill_constant_fp64)
FILL(int32_t, RILL_DTYPE_INT32, false, rill_cpu_fill_constant_int32)
FILL(int64_t, RILL_DTYPE_INT64, true, rill_cpu_fill_constant_int64)
