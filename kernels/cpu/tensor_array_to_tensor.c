/* tensor_array_to_tensor CPU kernels: the items are laid along the axis as bytes (any
 * dtype); stacking is concatenation of items seen with a unit axis inserted. The gradient
 * cuts Out@GRAD back into items shaped like X's. */
#include <string.h>

#include "kernels/cpu/kernels.h"

/* The layout shared by both directions: item k spans ext[k] along the axis; outer counts
 * the blocks before the axis, inner the bytes of one step along it. */
typedef struct layout {
  int64_t outer, total;
  size_t inner;
  int axis;
  rill_dims out;
} layout;

static rill_status *plan(rill_kernel_ctx *ctx, const rill_tensor_array *a, const char *name,
                         int32_t axis_attr, bool stack, layout *l) {
  for (size_t k = 0; k < a->n; k++)
    if (!rill_tensor_is_set(&a->items[k]))
      return rill_kernel_error(ctx, "item %zu of X '%s' holds no tensor", k, name);
  if (!a->n) return rill_kernel_error(ctx, "X '%s' has no items", name);
  const rill_tensor *first = &a->items[0];
  int rank = first->dims.n + (stack ? 1 : 0);
  int axis = axis_attr < 0 ? axis_attr + rank : axis_attr;
  if (axis < 0 || axis >= rank || (!stack && first->dims.n == 0) || rank > RILL_MAX_DIMS)
    return rill_kernel_error(ctx, "axis %d is out of range for items of rank %d of X '%s'",
                             (int)axis_attr, (int)first->dims.n, name);
  l->axis = axis;
  l->outer = 1;
  for (int i = 0; i < axis; i++) l->outer *= first->dims.d[i];
  l->inner = rill_dtype_size(first->dtype);
  for (int i = stack ? axis : axis + 1; i < first->dims.n; i++) l->inner *= (size_t)first->dims.d[i];
  l->total = 0;
  for (size_t k = 0; k < a->n; k++) {
    const rill_tensor *it = &a->items[k];
    bool same = it->dtype == first->dtype && it->dims.n == first->dims.n;
    for (int i = 0; same && i < it->dims.n; i++)
      same = it->dims.d[i] == first->dims.d[i] || (!stack && i == axis);
    if (!same)
      return rill_kernel_error(ctx, "item %zu of X '%s' differs from item 0 in dtype or in a "
                               "dim other than axis %d", k, name, axis);
    l->total += stack ? 1 : it->dims.d[axis];
  }
  l->out.n = rank;
  for (int i = 0; i < rank; i++)
    l->out.d[i] = i == axis ? l->total : first->dims.d[stack && i > axis ? i - 1 : i];
  return NULL;
}

static int64_t extent(const rill_tensor *it, const layout *l, bool stack) {
  return stack ? 1 : it->dims.d[l->axis];
}

/* The array X (input slot 0 of both ops) and its layout under the attributes axis and
 * use_stack (attributes 0 and 1 of both). */
static rill_status *prepare(rill_kernel_ctx *ctx, const rill_tensor_array **a, bool *stack,
                            layout *l) {
  const char *name = rill_kin_name(ctx, 0, 0);
  rill_variable *v = ctx->nin[0] ? ctx->in[0][0] : NULL;
  if (!v || v->kind != RILL_VARKIND_TENSOR_ARRAY)
    return rill_kernel_error(ctx, "X '%s' holds no tensor array", name);
  *a = &v->u.array;
  *stack = ctx->attrs[RILL_TENSOR_ARRAY_TO_TENSOR_ATTR_USE_STACK].v.b;
  return plan(ctx, *a, name, ctx->attrs[RILL_TENSOR_ARRAY_TO_TENSOR_ATTR_AXIS].v.i, *stack, l);
}

_Static_assert((int)RILL_TENSOR_ARRAY_TO_TENSOR_IN_X == 0 &&
                   (int)RILL_TENSOR_ARRAY_TO_TENSOR_GRAD_IN_X == 0 &&
                   (int)RILL_TENSOR_ARRAY_TO_TENSOR_ATTR_AXIS ==
                       (int)RILL_TENSOR_ARRAY_TO_TENSOR_GRAD_ATTR_AXIS &&
                   (int)RILL_TENSOR_ARRAY_TO_TENSOR_ATTR_USE_STACK ==
                       (int)RILL_TENSOR_ARRAY_TO_TENSOR_GRAD_ATTR_USE_STACK,
               "tensor_array_to_tensor and its gradient read X and the attributes alike");

rill_status *rill_cpu_tensor_array_to_tensor(rill_kernel_ctx *ctx) {
  const rill_tensor_array *a;
  bool stack;
  layout l;
  RILL_TRY(prepare(ctx, &a, &stack, &l));
  rill_tensor *out = rill_kout(ctx, RILL_TENSOR_ARRAY_TO_TENSOR_OUT_OUT, 0);
  if (!out) return rill_kernel_error(ctx, "Out '%s' cannot hold a tensor", rill_kout_name(ctx, 0, 0));
  rill_lod_clear(&out->lod);
  RILL_TRY(rill_tensor_alloc(out, a->items[0].dtype, &l.out));
  char *dst = rill_tensor_ptr(out);
  size_t row = (size_t)l.total * l.inner;
  size_t at = 0;
  for (size_t k = 0; k < a->n; k++) {
    size_t len = (size_t)extent(&a->items[k], &l, stack) * l.inner;
    const char *src = rill_tensor_ptr(&a->items[k]);
    for (int64_t o = 0; o < l.outer; o++) memcpy(dst + (size_t)o * row + at, src + (size_t)o * len, len);
    at += len;
  }
  size_t oi = RILL_TENSOR_ARRAY_TO_TENSOR_OUT_OUT_INDEX;
  rill_tensor *idx = ctx->nout[oi] ? rill_kout(ctx, oi, 0) : NULL;
  if (idx) {
    rill_dims d = {.n = 1, .d = {(int64_t)a->n}};
    rill_lod_clear(&idx->lod);
    RILL_TRY(rill_tensor_alloc(idx, RILL_DTYPE_INT32, &d));
    int32_t *v = rill_tensor_ptr(idx);
    for (size_t k = 0; k < a->n; k++) v[k] = (int32_t)extent(&a->items[k], &l, stack);
  }
  return NULL;
}

rill_status *rill_cpu_tensor_array_to_tensor_grad(rill_kernel_ctx *ctx) {
  const rill_tensor_array *a;
  bool stack;
  layout l;
  RILL_TRY(prepare(ctx, &a, &stack, &l));
  size_t gi = RILL_TENSOR_ARRAY_TO_TENSOR_GRAD_IN_OUT_GRAD;
  rill_tensor *g = rill_kin(ctx, gi, 0);
  if (!g || !rill_tensor_is_set(g) || g->dtype != a->items[0].dtype ||
      !rill_dims_equal(&g->dims, &l.out))
    return rill_kernel_error(ctx, "Out@GRAD '%s' must have Out's dtype and shape",
                             ctx->nin[gi] ? rill_kin_name(ctx, gi, 0) : "(none)");
  rill_variable *ov = ctx->out[RILL_TENSOR_ARRAY_TO_TENSOR_GRAD_OUT_X_GRAD][0];
  rill_variable_clear(ov);
  rill_tensor_array *ga = rill_variable_array(ov);
  if (!ga)
    return rill_kernel_error(ctx, "X@GRAD '%s' cannot hold a tensor array",
                             rill_kout_name(ctx, 0, 0));
  RILL_TRY(rill_tensor_array_resize(ga, a->n));
  const char *src = rill_tensor_ptr(g);
  size_t row = (size_t)l.total * l.inner, at = 0;
  for (size_t k = 0; k < a->n; k++) {
    const rill_tensor *it = &a->items[k];
    RILL_TRY(rill_tensor_alloc(&ga->items[k], it->dtype, &it->dims));
    size_t len = (size_t)extent(it, &l, stack) * l.inner;
    char *dst = rill_tensor_ptr(&ga->items[k]);
    for (int64_t o = 0; o < l.outer; o++) memcpy(dst + (size_t)o * len, src + (size_t)o * row + at, len);
    at += len;
  }
  return NULL;
}
