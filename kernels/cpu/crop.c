/* crop, crop_tensor and their gradients (every dtype): a box copy between X and Out at
 * the offsets; Out's dims (sized by inference) give the box's extents. */
#include <string.h>

#include "kernels/cpu/tensor_ops.h"

/* The offsets from input (oslot) or the one-element tensors of lslot (-1: none) or the
 * attribute; checked so that a box of extents len fits in x. */
static rill_status *box_offsets(rill_kernel_ctx *ctx, size_t oslot, int lslot,
                                const rill_attr_value *attr, const rill_dims *x,
                                const rill_dims *len, int64_t *offs) {
  rill_tensor *t = rill_kin(ctx, oslot, 0);
  const rill_tensor *list[RILL_MAX_DIMS];
  size_t nlist = lslot >= 0 ? ctx->nin[lslot] : 0;
  if (nlist > RILL_MAX_DIMS) nlist = RILL_MAX_DIMS + 1;
  for (size_t i = 0; i < nlist && i < RILL_MAX_DIMS; i++) list[i] = rill_kin(ctx, (size_t)lslot, i);
  bool known;
  char err[160];
  if (!rill_crop_values(t, t != NULL, list, nlist, attr, x->n, offs, &known, err, sizeof err) || !known)
    return rill_kernel_error(ctx, "the offsets of input X (%s) %s", rill_kin_name(ctx, 0, 0),
                             known ? err : "are unknown");
  if (len->n != x->n)
    return rill_kernel_error(ctx, "the box has rank %d but input X (%s) rank %d", (int)len->n,
                             rill_kin_name(ctx, 0, 0), (int)x->n);
  for (int i = 0; i < x->n; i++)
    if (offs[i] < 0 || offs[i] + len->d[i] > x->d[i])
      return rill_kernel_error(ctx, "the box [%lld, %lld) of dim %d exceeds input X (%s)'s "
                               "extent %lld", (long long)offs[i], (long long)(offs[i] + len->d[i]),
                               i, rill_kin_name(ctx, 0, 0), (long long)x->d[i]);
  return NULL;
}

static rill_status *crop_common(rill_kernel_ctx *ctx, size_t oslot, int lslot,
                                const rill_attr_value *attr) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  int64_t offs[RILL_MAX_DIMS];
  RILL_TRY(box_offsets(ctx, oslot, lslot, attr, &x->dims, &out->dims, offs));
  if (rill_tensor_numel(out))
    rill_cpu_box_copy(rill_tensor_ptr(x), &x->dims, offs, out->dims.d, rill_tensor_ptr(out),
                      rill_dtype_size(x->dtype), true);
  return NULL;
}

static rill_status *crop_grad_common(rill_kernel_ctx *ctx, size_t oslot, int lslot,
                                     const rill_attr_value *attr) {
  rill_tensor *x, *g, *dx;
  RILL_TRY(rill_cpu_grad_like_input(ctx, 0, 1, &x, &g, &dx));
  if (!dx) return NULL;
  int64_t offs[RILL_MAX_DIMS];
  RILL_TRY(box_offsets(ctx, oslot, lslot, attr, &x->dims, &g->dims, offs));
  memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));
  if (rill_tensor_numel(g))
    rill_cpu_box_copy(rill_tensor_ptr(dx), &dx->dims, offs, g->dims.d, rill_tensor_ptr(g),
                      rill_dtype_size(g->dtype), false);
  return NULL;
}

rill_status *rill_cpu_crop(rill_kernel_ctx *ctx) {
  return crop_common(ctx, RILL_CROP_IN_OFFSETS, -1, &ctx->attrs[RILL_CROP_ATTR_OFFSETS]);
}
rill_status *rill_cpu_crop_tensor(rill_kernel_ctx *ctx) {
  return crop_common(ctx, RILL_CROP_TENSOR_IN_OFFSETS, RILL_CROP_TENSOR_IN_OFFSETS_TENSOR,
                     &ctx->attrs[RILL_CROP_TENSOR_ATTR_OFFSETS]);
}
rill_status *rill_cpu_crop_grad(rill_kernel_ctx *ctx) {
  return crop_grad_common(ctx, RILL_CROP_GRAD_IN_OFFSETS, -1, &ctx->attrs[RILL_CROP_GRAD_ATTR_OFFSETS]);
}
rill_status *rill_cpu_crop_tensor_grad(rill_kernel_ctx *ctx) {
  return crop_grad_common(ctx, RILL_CROP_TENSOR_GRAD_IN_OFFSETS,
                          RILL_CROP_TENSOR_GRAD_IN_OFFSETS_TENSOR,
                          &ctx->attrs[RILL_CROP_TENSOR_GRAD_ATTR_OFFSETS]);
}
