/* transpose2 and transpose2_grad CPU kernels (every dtype). */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"

/* dst := src transposed by perm; through scratch memory when the two overlap. */
static rill_status *transpose_into(rill_kernel_ctx *ctx, const rill_tensor *src, const int *perm,
                                   rill_tensor *dst) {
  size_t es = rill_dtype_size(src->dtype), bytes = rill_tensor_nbytes(src);
  if (!bytes) return NULL;
  void *sp = rill_tensor_ptr(src), *dp = rill_tensor_ptr(dst), *tmp = dp;
  if (rill_overlaps(sp, bytes, dp, rill_tensor_nbytes(dst))) {
    if (!(tmp = rill_aligned_alloc(bytes, RILL_TENSOR_ALIGN))) return rill_oom();
  }
  rill_cpu_transpose_bytes(sp, &src->dims, perm, tmp, es);
  if (tmp != dp) {
    memcpy(dp, tmp, bytes);
    rill_free(tmp);
  }
  (void)ctx;
  return NULL;
}

rill_status *rill_cpu_transpose2(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  int perm[RILL_MAX_DIMS];
  char err[256];
  if (!rill_transpose_perm(&ctx->attrs[RILL_TRANSPOSE2_ATTR_AXIS], x->dims.n, perm, err, sizeof err))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), err);
  rill_dims d = {.n = x->dims.n};
  for (int i = 0; i < d.n; i++) d.d[i] = x->dims.d[perm[i]];
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &d));
  return transpose_into(ctx, x, perm, out);
}

rill_status *rill_cpu_transpose2_grad(rill_kernel_ctx *ctx) {
  rill_tensor *dx = rill_kout(ctx, 0, 0), *dout = rill_kin(ctx, 1, 0), *xs = rill_kin(ctx, 0, 0);
  if (!dx) return NULL;
  if (!xs || !dout || !rill_tensor_is_set(dout))
    return rill_kernel_error(ctx, "inputs XShape (%s) and Out@GRAD (%s) must be dense tensors "
                             "with data", rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dout->dtype, &dx));
  int perm[RILL_MAX_DIMS], inv[RILL_MAX_DIMS];
  char err[256];
  if (!rill_transpose_perm(&ctx->attrs[RILL_TRANSPOSE2_GRAD_ATTR_AXIS], dout->dims.n, perm, err, sizeof err))
    return rill_kernel_error(ctx, "input Out@GRAD (%s): %s", rill_kin_name(ctx, 1, 0), err);
  for (int i = 0; i < dout->dims.n; i++) inv[perm[i]] = i;
  rill_dims d = {.n = dout->dims.n};
  for (int i = 0; i < d.n; i++) d.d[i] = dout->dims.d[inv[i]];
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &d));
  return transpose_into(ctx, dout, inv, dx);
}
