/* range, linspace (float32/64, int32/64 as Paddle has them), eye, fill_any_like, diag
 * and size (any dtype). */
#include <string.h>

#include "kernels/cpu/tensor_ops.h"

/* Values of Paddle's range and linspace: each the previous plus step, from start. */
#define SERIES(T, DT, RANGE, NAME)                                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *s, *e, *st, *out;                                                        \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &s));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &e));                                           \
    st = rill_kin(ctx, 2, 0);                                                             \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    T start = *(const T *)rill_tensor_ptr(s), stop = *(const T *)rill_tensor_ptr(e), step; \
    int64_t n;                                                                            \
    char err[160];                                                                        \
    if (RANGE) {                                                                          \
      if (!rill_range_count(s, e, st, &n, err, sizeof err))                               \
        return rill_kernel_error(ctx, "inputs Start (%s), End (%s), Step (%s): %s",       \
                                 rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0),      \
                                 rill_kin_name(ctx, 2, 0), err);                          \
      if (st->dtype != DT)                                                                \
        return rill_kernel_error(ctx, "input Step (%s) is %s; it must be Start's %s",     \
                                 rill_kin_name(ctx, 2, 0), rill_dtype_name(st->dtype),    \
                                 rill_dtype_name(DT));                                    \
      step = *(const T *)rill_tensor_ptr(st);                                             \
    } else {                                                                              \
      if (!rill_int_tensor_at(st, 0, &n) || n < 1)                                        \
        return rill_kernel_error(ctx, "input Num (%s) must hold one int32 value > 0",     \
                                 rill_kin_name(ctx, 2, 0));                               \
      step = n > 1 ? (T)((stop - start) / (T)(n - 1)) : (T)0;                             \
    }                                                                                     \
    if (rill_tensor_numel(out) != n)                                                      \
      return rill_kernel_error(ctx, "output Out (%s) holds %lld elements, expected %lld", \
                               rill_kout_name(ctx, 0, 0), (long long)rill_tensor_numel(out), \
                               (long long)n);                                             \
    T *op = rill_tensor_ptr(out), v = start;                                              \
    for (int64_t i = 0; i < n; i++) {                                                     \
      op[i] = v;                                                                          \
      v = (T)(v + step);                                                                  \
    }                                                                                     \
    return NULL;                                                                          \
  }

SERIES(float, RILL_DTYPE_FP32, 1, rill_cpu_range_fp32)
SERIES(double, RILL_DTYPE_FP64, 1, rill_cpu_range_fp64)
SERIES(int32_t, RILL_DTYPE_INT32, 1, rill_cpu_range_int32)
SERIES(int64_t, RILL_DTYPE_INT64, 1, rill_cpu_range_int64)
SERIES(float, RILL_DTYPE_FP32, 0, rill_cpu_linspace_fp32)
SERIES(double, RILL_DTYPE_FP64, 0, rill_cpu_linspace_fp64)

static rill_status *fill_out(rill_kernel_ctx *ctx, rill_tensor *out, double v) {
  if (!rill_cpu_fill_elems(rill_tensor_ptr(out), rill_tensor_numel(out), out->dtype, v))
    return rill_kernel_error(ctx, "output Out (%s) is %s, which holds no numbers",
                             rill_kout_name(ctx, 0, 0), rill_dtype_name(out->dtype));
  return NULL;
}

rill_status *rill_cpu_eye(rill_kernel_ctx *ctx) {
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!out || !rill_tensor_is_set(out) || out->dims.n != 2)
    return rill_kernel_error(ctx, "output Out (%s) must be an allocated matrix",
                             rill_kout_name(ctx, 0, 0));
  RILL_TRY(fill_out(ctx, out, 0));
  int64_t r = out->dims.d[0], c = out->dims.d[1], n = r < c ? r : c;
  size_t es = rill_dtype_size(out->dtype);
  char one[16];
  rill_cpu_fill_elems(one, 1, out->dtype, 1);
  for (int64_t i = 0; i < n; i++) memcpy((char *)rill_tensor_ptr(out) + (size_t)(i * c + i) * es, one, es);
  return NULL;
}

rill_status *rill_cpu_fill_any_like(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = rill_kout(ctx, 0, 0);
  if (!x || !out || !rill_tensor_is_set(out))
    return rill_kernel_error(ctx, "needs input X (%s) and an allocated output Out (%s)",
                             rill_kin_name(ctx, 0, 0), rill_kout_name(ctx, 0, 0));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  return fill_out(ctx, out, ctx->attrs[RILL_FILL_ANY_LIKE_ATTR_VALUE].v.f);
}

rill_status *rill_cpu_diag(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = rill_kout(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x) || x->dims.n != 1)
    return rill_kernel_error(ctx, "input Diagonal (%s) must be a 1-D tensor with data",
                             rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  int64_t n = x->dims.d[0];
  rill_dims d = {.n = 2, .d = {n, n}};
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &d));
  size_t es = rill_dtype_size(x->dtype);
  char *op = rill_tensor_ptr(out);
  const char *xp = rill_tensor_ptr(x);
  memset(op, 0, rill_tensor_nbytes(out));
  for (int64_t i = 0; i < n; i++) memcpy(op + (size_t)(i * n + i) * es, xp + (size_t)i * es, es);
  return NULL;
}

rill_status *rill_cpu_size(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out;
  if (!x)
    return rill_kernel_error(ctx, "input Input (%s) is missing or not a dense tensor",
                             rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_INT64, &out));
  *(int64_t *)rill_tensor_ptr(out) = rill_dims_prod(&x->dims, 0, x->dims.n);
  return NULL;
}
