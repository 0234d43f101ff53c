/* cumsum (float32/64, int32/64) and tril_triu / tril_triu_grad (every dtype). */
#include <string.h>

#include "kernels/cpu/tensor_ops.h"

/* Integers sum with wraparound through U, as Paddle's int kernels do. */
#define CUMSUM(T, U, DT, NAME)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out;                                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    int64_t outer = 1, n = rill_tensor_numel(x), inner = 1;                               \
    if (!ctx->attrs[RILL_CUMSUM_ATTR_FLATTEN].v.b) {                                      \
      int a;                                                                              \
      if (!rill_norm_axis(ctx->attrs[RILL_CUMSUM_ATTR_AXIS].v.i, x->dims.n, &a))          \
        return rill_kernel_error(ctx, "axis %d is out of range for input X (%s) of rank %d", \
                                 (int)ctx->attrs[RILL_CUMSUM_ATTR_AXIS].v.i,              \
                                 rill_kin_name(ctx, 0, 0), (int)x->dims.n);               \
      outer = rill_dims_prod(&x->dims, 0, a);                                             \
      n = x->dims.d[a];                                                                   \
      inner = rill_dims_prod(&x->dims, a + 1, x->dims.n);                                 \
    }                                                                                     \
    if (rill_tensor_numel(out) != rill_tensor_numel(x))                                   \
      return rill_kernel_error(ctx, "output Out (%s) does not hold X's elements",         \
                               rill_kout_name(ctx, 0, 0));                                \
    bool excl = ctx->attrs[RILL_CUMSUM_ATTR_EXCLUSIVE].v.b;                               \
    bool rev = ctx->attrs[RILL_CUMSUM_ATTR_REVERSE].v.b;                                  \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    for (int64_t o = 0; o < outer; o++)                                                   \
      for (int64_t i = 0; i < inner; i++) {                                               \
        const T *src = xp + o * n * inner + i;                                            \
        T *dst = op + o * n * inner + i;                                                  \
        T acc = 0;                                                                        \
        for (int64_t k = 0; k < n; k++) {                                                 \
          int64_t j = (rev ? n - 1 - k : k) * inner;                                      \
          T v = src[j];                                                                   \
          if (excl) dst[j] = acc;                                                         \
          acc = (T)((U)acc + (U)v);                                                       \
          if (!excl) dst[j] = acc;                                                        \
        }                                                                                 \
      }                                                                                   \
    return NULL;                                                                          \
  }

CUMSUM(float, float, RILL_DTYPE_FP32, rill_cpu_cumsum_fp32)
CUMSUM(double, double, RILL_DTYPE_FP64, rill_cpu_cumsum_fp64)
CUMSUM(int32_t, uint32_t, RILL_DTYPE_INT32, rill_cpu_cumsum_int32)
CUMSUM(int64_t, uint64_t, RILL_DTYPE_INT64, rill_cpu_cumsum_int64)

/* Out := X with the elements outside the triangle zeroed (Out may be X). */
static rill_status *triangle(rill_kernel_ctx *ctx, int32_t diagonal, bool lower) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = rill_kout(ctx, 0, 0);
  if (!out) return NULL;
  const char *xs = ctx->schema->inputs[0].name;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input %s (%s) is missing or holds no data", xs, rill_kin_name(ctx, 0, 0));
  if (x->dims.n < 2)
    return rill_kernel_error(ctx, "input %s (%s) has rank %d; it needs rank >= 2", xs,
                             rill_kin_name(ctx, 0, 0), (int)x->dims.n);
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  int64_t h = x->dims.d[x->dims.n - 2], w = x->dims.d[x->dims.n - 1];
  int64_t mats = rill_dims_prod(&x->dims, 0, x->dims.n - 2);
  size_t es = rill_dtype_size(x->dtype);
  char *dst = rill_tensor_ptr(out);
  const char *src = rill_tensor_ptr(x);
  if (dst != src) memcpy(dst, src, rill_tensor_nbytes(x));
  for (int64_t m = 0; m < mats; m++)
    for (int64_t i = 0; i < h; i++) {
      char *row = dst + (size_t)((m * h + i) * w) * es;
      /* Kept columns: j <= i + diagonal (lower) or j >= i + diagonal (upper). */
      int64_t edge = i + diagonal;
      if (lower) {
        int64_t from = edge + 1 < 0 ? 0 : edge + 1;
        if (from < w) memset(row + (size_t)from * es, 0, (size_t)(w - from) * es);
      } else {
        int64_t to = edge > w ? w : edge;
        if (to > 0) memset(row, 0, (size_t)to * es);
      }
    }
  return NULL;
}

rill_status *rill_cpu_tril_triu(rill_kernel_ctx *ctx) {
  return triangle(ctx, ctx->attrs[RILL_TRIL_TRIU_ATTR_DIAGONAL].v.i,
                  ctx->attrs[RILL_TRIL_TRIU_ATTR_LOWER].v.b);
}
rill_status *rill_cpu_tril_triu_grad(rill_kernel_ctx *ctx) {
  return triangle(ctx, ctx->attrs[RILL_TRIL_TRIU_GRAD_ATTR_DIAGONAL].v.i,
                  ctx->attrs[RILL_TRIL_TRIU_GRAD_ATTR_LOWER].v.b);
}
