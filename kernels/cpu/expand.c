/* expand CPU kernels (Fluid 1.x's tiling). The times per dim are Out's extent over X's
 * (inference sized Out). Forward: each row of X (its innermost dim) is copied times[last]
 * times into the output row whose index, taken modulo X's extents, is the X row's.
 * Gradient: every element of Out@GRAD is added to the X element it was copied from. */
#include <stdio.h>
#include <string.h>

#include "kernels/cpu/kernels.h"

/* Checks that `big` is `small` tiled a whole number of times; rows = numel / inner. */
static rill_status *tile_dims(rill_kernel_ctx *ctx, const rill_tensor *small, const char *sn,
                              const rill_tensor *big, const char *bn) {
  if (small->dims.n != big->dims.n)
    return rill_kernel_error(ctx, "%s has rank %d but %s has rank %d", bn, big->dims.n, sn,
                             small->dims.n);
  for (int i = 0; i < small->dims.n; i++)
    if (small->dims.d[i] == 0 ? big->dims.d[i] != 0 : big->dims.d[i] % small->dims.d[i] != 0)
      return rill_kernel_error(ctx, "%s extent %lld at dim %d is not a multiple of %s's %lld",
                               bn, (long long)big->dims.d[i], i, sn, (long long)small->dims.d[i]);
  return NULL;
}

/* The offset in X of output row `row` (all dims but the last, row-major). */
static int64_t x_row(const rill_dims *od, const rill_dims *xd, int64_t row) {
  int64_t off = 0, stride = xd->n ? xd->d[xd->n - 1] : 1;
  for (int i = od->n - 2; i >= 0; i--) {
    off += (row % od->d[i]) % xd->d[i] * stride;
    row /= od->d[i];
    stride *= xd->d[i];
  }
  return off;
}

rill_status *rill_cpu_expand(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_EXPAND_IN_X, 0), *out = NULL;
  char xn[160], on[160];
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) holds no data", rill_kin_name(ctx, RILL_EXPAND_IN_X, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_EXPAND_OUT_OUT, 0, x->dtype, &out));
  snprintf(xn, sizeof xn, "input X (%s)", rill_kin_name(ctx, RILL_EXPAND_IN_X, 0));
  snprintf(on, sizeof on, "output Out (%s)", rill_kout_name(ctx, RILL_EXPAND_OUT_OUT, 0));
  RILL_TRY(tile_dims(ctx, x, xn, out, on));
  int64_t n = rill_tensor_numel(out);
  if (n == 0) return NULL;
  size_t es = rill_dtype_size(x->dtype);
  const char *xp = rill_tensor_ptr(x);
  char *op = rill_tensor_ptr(out);
  if (out->dims.n == 0) {
    memcpy(op, xp, es);
    return NULL;
  }
  int64_t xin = x->dims.d[x->dims.n - 1], oin = out->dims.d[out->dims.n - 1];
  for (int64_t r = 0, rows = n / oin; r < rows; r++) {
    const char *src = xp + (size_t)x_row(&out->dims, &x->dims, r) * es;
    for (int64_t k = 0; k < oin; k += xin) memcpy(op + (size_t)(r * oin + k) * es, src, (size_t)xin * es);
  }
  return NULL;
}

#define EXPAND_GRAD(T, DT, NAME)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *g, *dx;                                                                  \
    char xn[160], gn[160];                                                                \
    RILL_TRY(rill_kin_need(ctx, RILL_EXPAND_GRAD_IN_OUT_GRAD, 0, DT, &g));                \
    dx = rill_kout(ctx, RILL_EXPAND_GRAD_OUT_X_GRAD, 0);                                  \
    if (!dx) return NULL; /* not wanted */                                                \
    RILL_TRY(rill_kout_need(ctx, RILL_EXPAND_GRAD_OUT_X_GRAD, 0, DT, &dx));               \
    snprintf(xn, sizeof xn, "output X@GRAD (%s)", rill_kout_name(ctx, RILL_EXPAND_GRAD_OUT_X_GRAD, 0)); \
    snprintf(gn, sizeof gn, "input Out@GRAD (%s)", rill_kin_name(ctx, RILL_EXPAND_GRAD_IN_OUT_GRAD, 0)); \
    RILL_TRY(tile_dims(ctx, dx, xn, g, gn));                                              \
    T *d = rill_tensor_ptr(dx);                                                           \
    const T *gp = rill_tensor_ptr(g);                                                     \
    int64_t nx = rill_tensor_numel(dx), n = rill_tensor_numel(g);                         \
    if (nx) memset(d, 0, (size_t)nx * sizeof(T));                                         \
    if (n == 0) return NULL;                                                              \
    if (g->dims.n == 0) {                                                                 \
      d[0] = gp[0];                                                                       \
      return NULL;                                                                        \
    }                                                                                     \
    int64_t xin = dx->dims.d[dx->dims.n - 1], oin = g->dims.d[g->dims.n - 1];             \
    for (int64_t r = 0, rows = n / oin; r < rows; r++) {                                  \
      T *dst = d + x_row(&g->dims, &dx->dims, r);                                         \
      const T *src = gp + r * oin;                                                        \
      for (int64_t k = 0; k < oin; k += xin)                                              \
        for (int64_t j = 0; j < xin; j++) dst[j] += src[k + j];                           \
    }                                                                                     \
    return NULL;                                                                          \
  }

EXPAND_GRAD(float, RILL_DTYPE_FP32, rill_cpu_expand_grad_fp32)
EXPAND_GRAD(double, RILL_DTYPE_FP64, rill_cpu_expand_grad_fp64)
