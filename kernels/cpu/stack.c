/* stack, stack_grad, unstack and unstack_grad CPU kernels (any dtype): byte copies
 * between each piece (viewed as [outer, inner], outer the product of the dims before
 * axis) and its slice of the whole ([outer, n, inner]). */
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

/* Output 0's first tensor = the tensors of input slot 0 stacked at a new dim `attr_axis`. */
static rill_status *join(rill_kernel_ctx *ctx, int attr_axis) {
  size_t n = ctx->nin[0];
  rill_tensor *y = rill_kout(ctx, 0, 0);
  if (!n || !y)
    return rill_kernel_error(ctx, "needs inputs %s and a dense output %s (%s)",
                             ctx->schema->inputs[0].name, ctx->schema->outputs[0].name,
                             rill_kout_name(ctx, 0, 0));
  rill_tensor *x0 = rill_kin(ctx, 0, 0);
  if (!x0 || !rill_tensor_is_set(x0))
    return rill_kernel_error(ctx, "input %s (%s) holds no dense tensor",
                             ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0));
  int axis = norm_axis(attr_axis, x0->dims.n + 1);
  if (axis < 0 || axis > x0->dims.n || x0->dims.n + 1 > RILL_MAX_DIMS)
    return rill_kernel_error(ctx, "axis %d is out of range for input %s (%s) of rank %d",
                             attr_axis, ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0),
                             x0->dims.n);
  for (size_t i = 0; i < n; i++) {
    rill_tensor *xi = rill_kin(ctx, 0, i);
    if (!xi || !rill_tensor_is_set(xi) || xi->dtype != x0->dtype ||
        !rill_dims_equal(&xi->dims, &x0->dims))
      return rill_kernel_error(ctx, "input %s (%s) is missing or differs from %s (%s) in dtype "
                               "or shape", ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, i),
                               ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0));
    if (xi == y)
      return rill_kernel_error(ctx, "output %s (%s) is an input", ctx->schema->outputs[0].name,
                               rill_kout_name(ctx, 0, 0));
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

/* Output slot 0's tensors = the slices of input 0 at `attr_axis` (absent ones skipped). */
static rill_status *cut(rill_kernel_ctx *ctx, int attr_axis) {
  rill_tensor *src = rill_kin(ctx, 0, 0);
  if (!src || !rill_tensor_is_set(src))
    return rill_kernel_error(ctx, "input %s (%s) holds no dense tensor",
                             ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0));
  size_t n = ctx->nout[0];
  int r = src->dims.n, axis = norm_axis(attr_axis, r);
  if (axis < 0 || axis >= r || src->dims.d[axis] != (int64_t)n)
    return rill_kernel_error(ctx, "input %s (%s) of rank %d does not hold %zu slices at axis %d",
                             ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0), r, n,
                             attr_axis);
  rill_dims d = {.n = r - 1};
  for (int k = 0, j = 0; k < r; k++)
    if (k != axis) d.d[j++] = src->dims.d[k];
  int64_t outer;
  size_t inner;
  split_at(&d, axis, rill_dtype_size(src->dtype), &outer, &inner);
  const char *sp = rill_tensor_ptr(src);
  for (size_t i = 0; i < n; i++) {
    rill_tensor *o = rill_kout(ctx, 0, i);
    if (!o) continue; /* not wanted */
    if (o == src)
      return rill_kernel_error(ctx, "output %s (%s) is the input", ctx->schema->outputs[0].name,
                               rill_kout_name(ctx, 0, i));
    RILL_TRY(rill_tensor_alloc(o, src->dtype, &d));
    rill_lod_clear(&o->lod);
    char *op = rill_tensor_ptr(o);
    for (int64_t k = 0; k < outer; k++)
      memcpy(op + (size_t)k * inner, sp + ((size_t)k * n + i) * inner, inner);
  }
  return NULL;
}

rill_status *rill_cpu_stack(rill_kernel_ctx *ctx) {
  return join(ctx, ctx->attrs[RILL_STACK_ATTR_AXIS].v.i);
}

rill_status *rill_cpu_stack_grad(rill_kernel_ctx *ctx) {
  return cut(ctx, ctx->attrs[RILL_STACK_GRAD_ATTR_AXIS].v.i);
}

rill_status *rill_cpu_unstack(rill_kernel_ctx *ctx) {
  return cut(ctx, ctx->attrs[RILL_UNSTACK_ATTR_AXIS].v.i);
}

rill_status *rill_cpu_unstack_grad(rill_kernel_ctx *ctx) {
  return join(ctx, ctx->attrs[RILL_UNSTACK_GRAD_ATTR_AXIS].v.i);
}
