/* scale CPU kernels: Out = s * X + b, or s * (X + b). Elementwise, in-place safe. */
#include "kernels/cpu/kernels.h"

/* Attribute scale, or the one element of ScaleTensor when given. */
static rill_status *scale_factor(rill_kernel_ctx *ctx, double *s) {
  *s = ctx->attrs[RILL_SCALE_ATTR_SCALE].v.f;
  rill_tensor *st = rill_kin(ctx, 1, 0);
  if (!st) return NULL;
  if (rill_tensor_numel(st) != 1 || !rill_tensor_ptr(st))
    return rill_kernel_error(ctx, "input ScaleTensor (%s) must hold one element",
                             rill_kin_name(ctx, 1, 0));
  const void *p = rill_tensor_ptr(st);
  switch (st->dtype) {
  case RILL_DTYPE_FP32: *s = *(const float *)p; break;
  case RILL_DTYPE_FP64: *s = *(const double *)p; break;
  case RILL_DTYPE_INT32: *s = *(const int32_t *)p; break;
  case RILL_DTYPE_INT64: *s = (double)*(const int64_t *)p; break;
  default:
    return rill_kernel_error(ctx, "input ScaleTensor (%s) is %s, expected a number",
                             rill_kin_name(ctx, 1, 0), rill_dtype_name(st->dtype));
  }
  return NULL;
}

#define SCALE(T, DT, NAME)                                                                \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    double sd;                                                                            \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                             \
    RILL_TRY(scale_factor(ctx, &sd));                                                     \
    T s = (T)sd, b = (T)ctx->attrs[RILL_SCALE_ATTR_BIAS].v.f;                             \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t n = rill_tensor_numel(x);                                                     \
    if (ctx->attrs[RILL_SCALE_ATTR_BIAS_AFTER_SCALE].v.b)                                 \
      for (int64_t i = 0; i < n; i++) op[i] = xp[i] * s + b;                              \
    else                                                                                  \
      for (int64_t i = 0; i < n; i++) op[i] = (xp[i] + b) * s;                            \
    return NULL;                                                                          \
  }

SCALE(float, RILL_DTYPE_FP32, rill_cpu_scale_fp32)
SCALE(double, RILL_DTYPE_FP64, rill_cpu_scale_fp64)
SCALE(int32_t, RILL_DTYPE_INT32, rill_cpu_scale_int32)
SCALE(int64_t, RILL_DTYPE_INT64, rill_cpu_scale_int64)
