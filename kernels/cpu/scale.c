/* scale CPU kernels: Out = s * X + b, or s * (X + b). Elementwise, in-place safe. A
 * SelectedRows X (a pserver averaging sparse gradients) gives a SelectedRows Out with
 * X's rows and height and the values scaled. */
#include "kernels/cpu/kernels.h"

/* X's and Out's value tensors when X holds selected rows; Out takes X's rows. */
static rill_status *rows_operands(rill_kernel_ctx *ctx, rill_dtype dtype, rill_tensor **x,
                                  rill_tensor **out) {
  rill_variable *xv = ctx->in[0][0], *ov = ctx->nout[0] ? ctx->out[0][0] : NULL;
  if (!ov) return rill_kernel_error(ctx, "output Out is missing");
  rill_selected_rows *xr = &xv->u.rows;
  if (!rill_tensor_is_set(&xr->value) || xr->value.dtype != dtype)
    return rill_kernel_error(ctx, "input X (%s) holds selected rows without %s values",
                             rill_kin_name(ctx, 0, 0), rill_dtype_name(dtype));
  if (ov != xv) {
    if (ov->kind == RILL_VARKIND_TENSOR) rill_variable_clear(ov);
    rill_selected_rows *orows = rill_variable_selected_rows(ov);
    if (!orows)
      return rill_kernel_error(ctx, "output Out (%s) holds a %s, not selected rows",
                               rill_kout_name(ctx, 0, 0), rill_var_kind_name(ov->kind));
    RILL_TRY(rill_selected_rows_set_rows(orows, xr->rows, xr->nrows));
    orows->height = xr->height;
    RILL_TRY(rill_tensor_alloc(&orows->value, dtype, &xr->value.dims));
  }
  *x = &xr->value;
  *out = &ov->u.rows.value;
  return NULL;
}

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
    rill_variable *xv = ctx->nin[0] ? ctx->in[0][0] : NULL;                               \
    if (xv && xv->kind == RILL_VARKIND_SELECTED_ROWS) {                                   \
      RILL_TRY(rows_operands(ctx, DT, &x, &out));                                         \
    } else {                                                                              \
      RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                         \
      RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                      \
      RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));                           \
    }                                                                                     \
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
