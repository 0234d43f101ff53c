/* assign_value CPU kernel: copies the value list of the output's dtype into Out
 * (inference has checked that its length is the element count). */
#include <string.h>

#include "kernels/cpu/kernels.h"


rill_status *rill_cpu_assign_value(rill_kernel_ctx *ctx) {
  rill_dtype dt = (rill_dtype)ctx->attrs[RILL_ASSIGN_VALUE_ATTR_DTYPE].v.i;
  rill_tensor *out = NULL;
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &out));
  int64_t n = rill_tensor_numel(out);
  const rill_attr_value *v;
  switch (dt) {
  case RILL_DTYPE_FP32: v = &ctx->attrs[RILL_ASSIGN_VALUE_ATTR_FP32_VALUES]; break;
  case RILL_DTYPE_INT32: v = &ctx->attrs[RILL_ASSIGN_VALUE_ATTR_INT32_VALUES]; break;
  case RILL_DTYPE_INT64: v = &ctx->attrs[RILL_ASSIGN_VALUE_ATTR_INT64_VALUES]; break;
  case RILL_DTYPE_BOOL: v = &ctx->attrs[RILL_ASSIGN_VALUE_ATTR_BOOL_VALUES]; break;
  case RILL_DTYPE_FP64: v = &ctx->attrs[RILL_ASSIGN_VALUE_ATTR_FP64_VALUES]; break;
  default:
    return rill_kernel_error(ctx, "output Out (%s) is %s: assign_value writes bool, int32, "
                             "int64, float32 or float64", rill_kout_name(ctx, 0, 0),
                             rill_dtype_name(dt));
  }
  if ((int64_t)v->n != n)
    return rill_kernel_error(ctx, "output Out (%s) has %lld elements but attribute %s has %zu",
                             rill_kout_name(ctx, 0, 0), (long long)n,
                             ctx->schema->attrs[v - ctx->attrs].name, v->n);
  if (n == 0) return NULL;
  void *p = rill_tensor_ptr(out);
  if (dt == RILL_DTYPE_BOOL) {
    bool *b = p;
    for (int64_t i = 0; i < n; i++) b[i] = v->list.ints[i] != 0;
  } else {
    memcpy(p, v->list.ptr, (size_t)n * rill_dtype_size(dt));
  }
  return NULL;
}
