/* fill_constant CPU kernels. The value comes from ValueTensor, else str_value (parsed
 * exactly: int64 through strtoll, "inf"/"nan" through strtod), else attribute value. */
#include <errno.h>
#include <stdlib.h>

#include "kernels/cpu/kernels.h"


typedef struct fill_value {
  double d;
  int64_t l;
  bool exact_long; /* l holds the exact int64 value */
} fill_value;

static rill_status *fill_value_get(rill_kernel_ctx *ctx, bool want_long, fill_value *v) {
  v->exact_long = false;
  v->d = ctx->attrs[RILL_FILL_CONSTANT_ATTR_VALUE].v.f;
  rill_tensor *vt = rill_kin(ctx, 0, 0);
  if (vt) {
    const void *p = rill_tensor_ptr(vt);
    if (rill_tensor_numel(vt) < 1 || !p)
      return rill_kernel_error(ctx, "input ValueTensor (%s) holds no value", rill_kin_name(ctx, 0, 0));
    switch (vt->dtype) {
    case RILL_DTYPE_FP32: v->d = *(const float *)p; break;
    case RILL_DTYPE_FP64: v->d = *(const double *)p; break;
    case RILL_DTYPE_INT32: v->d = *(const int32_t *)p; break;
    case RILL_DTYPE_INT64:
      v->l = *(const int64_t *)p;
      v->d = (double)v->l;
      v->exact_long = true;
      break;
    case RILL_DTYPE_BOOL: v->d = *(const bool *)p; break;
    default:
      return rill_kernel_error(ctx, "input ValueTensor (%s) is %s, expected a number",
                               rill_kin_name(ctx, 0, 0), rill_dtype_name(vt->dtype));
    }
    return NULL;
  }
  const char *s = ctx->attrs[RILL_FILL_CONSTANT_ATTR_STR_VALUE].v.s;
  if (!s || !*s) return NULL;
  char *end;
  errno = 0;
  if (want_long) {
    long long l = strtoll(s, &end, 10);
    if (end != s && !*end && errno == 0) {
      v->l = l;
      v->d = (double)l;
      v->exact_long = true;
      return NULL;
    }
    errno = 0;
  }
  double d = strtod(s, &end);
  if (end == s || *end)
    return rill_kernel_error(ctx, "attribute str_value \"%s\" is not a number", s);
  v->d = d;
  return NULL;
}

#define FILL(T, DT, IS_LONG, NAME)                                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *out;                                                                     \
    fill_value v;                                                                         \
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
