/* stack, unstack and their gradients (every dtype): one tensor and n slices along an axis,
 * moved with the concat pieces copy (each piece one row of the axis). */
#include <stdlib.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"

/* Moves between `whole` (dims with n at axis) and the n slices: gather true joins the
 * slices into whole. Slices that are NULL are skipped (unwanted gradients). */
static rill_status *move_slices(rill_kernel_ctx *ctx, rill_tensor *whole, rill_tensor **parts,
                                size_t n, int axis, bool gather) {
  void **ptrs = rill_malloc((n ? n : 1) * sizeof *ptrs);
  int64_t *ones = rill_malloc((n ? n : 1) * sizeof *ones);
  if (!ptrs || !ones) {
    rill_free(ptrs);
    rill_free(ones);
    return rill_oom();
  }
  for (size_t i = 0; i < n; i++) {
    ptrs[i] = parts[i] ? rill_tensor_ptr(parts[i]) : NULL;
    ones[i] = 1;
  }
  int64_t outer = rill_dims_prod(&whole->dims, 0, axis);
  int64_t inner = rill_dims_prod(&whole->dims, axis + 1, whole->dims.n);
  rill_cpu_concat_bytes(rill_tensor_ptr(whole), ptrs, ones, n, outer, inner,
                        rill_dtype_size(whole->dtype), gather);
  rill_free(ptrs);
  rill_free(ones);
  (void)ctx;
  return NULL;
}

/* Checks the n slices (slot, i) against whole's dims without axis; absent ones are NULL
 * when allowed. out true: outputs, allocated here. */
static rill_status *slices_check(rill_kernel_ctx *ctx, size_t slot, bool out, const rill_tensor *whole,
                                 int axis, rill_tensor **parts, size_t n) {
  rill_dims d = {.n = whole->dims.n - 1};
  for (int i = 0, j = 0; i < whole->dims.n; i++)
    if (i != axis) d.d[j++] = whole->dims.d[i];
  for (size_t i = 0; i < n; i++) {
    rill_tensor *t = out ? rill_kout(ctx, slot, i) : rill_kin(ctx, slot, i);
    parts[i] = t;
    if (!t) {
      if (out) continue;
      return rill_kernel_error(ctx, "input %s (%s) is missing", ctx->schema->inputs[slot].name,
                               rill_kin_name(ctx, slot, i));
    }
    if (out) {
      if (t == whole) return rill_kernel_error(ctx, "output %s (%s) is its input",
                                               ctx->schema->outputs[slot].name, rill_kout_name(ctx, slot, i));
      rill_lod_clear(&t->lod);
      RILL_TRY(rill_tensor_alloc(t, whole->dtype, &d));
      continue;
    }
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    if (!rill_tensor_is_set(t) || t->dtype != whole->dtype || !rill_dims_equal(&t->dims, &d))
      return rill_kernel_error(ctx, "input %s (%s) is %s %s; expected %s %s",
                               ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, i),
                               rill_dtype_name(t->dtype), rill_dims_str(&t->dims, a, sizeof a),
                               rill_dtype_name(whole->dtype), rill_dims_str(&d, b, sizeof b));
  }
  return NULL;
}

/* stack / unstack_grad: output 0 := inputs (slot 0) stacked at attribute axis. */
static rill_status *stack_common(rill_kernel_ctx *ctx, int64_t axis64) {
  size_t n = ctx->nin[0];
  rill_tensor *x0 = rill_kin(ctx, 0, 0), *y = rill_kout(ctx, 0, 0);
  if (!y) return NULL;
  if (!x0 || !rill_tensor_is_set(x0))
    return rill_kernel_error(ctx, "input %s (%s) is missing or holds no data",
                             ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x0->dtype, &y));
  int axis;
  if (!rill_norm_axis(axis64, x0->dims.n + 1, &axis) || y->dims.n != x0->dims.n + 1 ||
      y->dims.d[axis] != (int64_t)n)
    return rill_kernel_error(ctx, "axis %lld does not stack %zu inputs of rank %d into output "
                             "%s (%s)", (long long)axis64, n, (int)x0->dims.n,
                             ctx->schema->outputs[0].name, rill_kout_name(ctx, 0, 0));
  rill_tensor **parts = rill_malloc(n * sizeof *parts);
  if (!parts) return rill_oom();
  rill_status *st = slices_check(ctx, 0, false, y, axis, parts, n);
  if (!st) st = move_slices(ctx, y, parts, n, axis, true);
  rill_free(parts);
  return st;
}

/* unstack / stack_grad: outputs (slot 0) := input 0's slices at axis. */
static rill_status *unstack_common(rill_kernel_ctx *ctx, int64_t axis64) {
  size_t n = ctx->nout[0];
  rill_tensor *x = rill_kin(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input %s (%s) is missing or holds no data",
                             ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0));
  int axis;
  if (!rill_norm_axis(axis64, x->dims.n, &axis) || x->dims.d[axis] != (int64_t)n)
    return rill_kernel_error(ctx, "input %s (%s) does not have %zu slices at axis %lld",
                             ctx->schema->inputs[0].name, rill_kin_name(ctx, 0, 0), n,
                             (long long)axis64);
  if (n == 0) return NULL;
  rill_tensor **parts = rill_malloc(n * sizeof *parts);
  if (!parts) return rill_oom();
  rill_status *st = slices_check(ctx, 0, true, x, axis, parts, n);
  if (!st) st = move_slices(ctx, x, parts, n, axis, false);
  rill_free(parts);
  return st;
}

rill_status *rill_cpu_stack(rill_kernel_ctx *ctx) {
  return stack_common(ctx, ctx->attrs[RILL_STACK_ATTR_AXIS].v.i);
}
rill_status *rill_cpu_unstack_grad(rill_kernel_ctx *ctx) {
  return stack_common(ctx, ctx->attrs[RILL_UNSTACK_GRAD_ATTR_AXIS].v.i);
}
rill_status *rill_cpu_unstack(rill_kernel_ctx *ctx) {
  return unstack_common(ctx, ctx->attrs[RILL_UNSTACK_ATTR_AXIS].v.i);
}
rill_status *rill_cpu_stack_grad(rill_kernel_ctx *ctx) {
  return unstack_common(ctx, ctx->attrs[RILL_STACK_GRAD_ATTR_AXIS].v.i);
}
