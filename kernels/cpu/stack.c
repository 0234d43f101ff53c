/* stack and stack_grad CPU kernels (any dtype): byte copies between each X (viewed as
 * [outer, inner], outer the product of the dims before axis) and its slice of Y
 * ([outer, n, inner]). */
#include <string.h>

#include "kernels/cpu/kernels.h"

/* outer and inner (in bytes) of an X of dims d for a new dim at axis. */
static void split_at(const rill_dims *d, int axis, size_t esz, int64_t *outer, size_t *inner) {
  *outer = 1;
  *inner = esz;
  for (int k = 0; k < d->n; k++) {
    if (k < axis) *outer *= d->d[k];
    else *inner *= (size_t)d->d[k];
  }
}

static int norm_axis(int axis, int rank) { return axis < 0 ? axis + rank : axis; }

rill_status *rill_cpu_stack(rill_kernel_ctx *ctx) {
  size_t n = ctx->nin[0];
  rill_tensor *y = rill_kout(ctx, 0, 0);
  if (!n || !y)
    return rill_kernel_error(ctx, "needs inputs X and a dense output Y (%s)",
                             rill_kout_name(ctx, 0, 0));
  rill_tensor *x0 = rill_kin(ctx, 0, 0);
  if (!x0 || !rill_tensor_is_set(x0))
    return rill_kernel_error(ctx, "input X (%s) holds no dense tensor", rill_kin_name(ctx, 0, 0));
  int axis = norm_axis(ctx->attrs[RILL_STACK_ATTR_AXIS].v.i, x0->dims.n + 1);
  if (axis < 0 || axis > x0->dims.n || x0->dims.n + 1 > RILL_MAX_DIMS)
    return rill_kernel_error(ctx, "axis %d is out of range for input X (%s) of rank %d",
                             ctx->attrs[RILL_STACK_ATTR_AXIS].v.i, rill_kin_name(ctx, 0, 0),
                             x0->dims.n);
  for (size_t i = 0; i < n; i++) {
    rill_tensor *xi = rill_kin(ctx, 0, i);
    if (!xi || !rill_tensor_is_set(xi) || xi->dtype != x0->dtype ||
        !rill_dims_equal(&xi->dims, &x0->dims))
      return rill_kernel_error(ctx, "input X (%s) is missing or differs from X (%s) in dtype "
                               "or shape", rill_kin_name(ctx, 0, i), rill_kin_name(ctx, 0, 0));
    if (xi == y)
      return rill_kernel_error(ctx, "output Y (%s) is input X (%s)", rill_kout_name(ctx, 0, 0),
                               rill_kin_name(ctx, 0, i));
  }
  rill_dims d = {.n = x0->dims.n + 1};
  for (int k = 0, j = 0; k < d.n; k++) d.d[k] = k == axis ? (int64_t)n : x0->dims.d[j++];
  RILL_TRY(rill_tensor_alloc(y, x0->dtype, &d));
  rill_lod_clear(&y->lod);
  int64_t outer;
  size_t inner;
  split_at(&x0->dims, axis, rill_dtype_size(x0->dtype), &outer, &inner);
  char *yp = rill_tensor_ptr(y);
  for (size_t i = 0; i < n; i++) {
    const char *xp = rill_tensor_ptr(rill_kin(ctx, 0, i));
    for (int64_t o = 0; o < outer; o++)
      memcpy(yp + ((size_t)o * n + i) * inner, xp + (size_t)o * inner, inner);
  }
  return NULL;
}

rill_status *rill_cpu_stack_grad(rill_kernel_ctx *ctx) {
  rill_tensor *dy = rill_kin(ctx, 0, 0);
  if (!dy || !rill_tensor_is_set(dy))
    return rill_kernel_error(ctx, "input Y@GRAD (%s) holds no dense tensor",
                             rill_kin_name(ctx, 0, 0));
  size_t n = ctx->nout[0];
  int r = dy->dims.n, axis = norm_axis(ctx->attrs[RILL_STACK_GRAD_ATTR_AXIS].v.i, r);
  if (axis < 0 || axis >= r || dy->dims.d[axis] != (int64_t)n)
    return rill_kernel_error(ctx, "input Y@GRAD (%s) of rank %d does not hold %zu slices at "
                             "axis %d", rill_kin_name(ctx, 0, 0), r, n,
                             ctx->attrs[RILL_STACK_GRAD_ATTR_AXIS].v.i);
  rill_dims d = {.n = r - 1};
  for (int k = 0, j = 0; k < r; k++)
    if (k != axis) d.d[j++] = dy->dims.d[k];
  int64_t outer;
  size_t inner;
  split_at(&d, axis, rill_dtype_size(dy->dtype), &outer, &inner);
  const char *yp = rill_tensor_ptr(dy);
  for (size_t i = 0; i < n; i++) {
    rill_tensor *dx = rill_kout(ctx, 0, i);
    if (!dx) continue; /* not wanted */
    if (dx == dy)
      return rill_kernel_error(ctx, "output X@GRAD (%s) is input Y@GRAD",
                               rill_kout_name(ctx, 0, i));
    RILL_TRY(rill_tensor_alloc(dx, dy->dtype, &d));
    rill_lod_clear(&dx->lod);
    char *xp = rill_tensor_ptr(dx);
    for (int64_t o = 0; o < outer; o++)
      memcpy(xp + (size_t)o * inner, yp + ((size_t)o * n + i) * inner, inner);
  }
  return NULL;
}
