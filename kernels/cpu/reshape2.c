/* reshape2 CPU kernel (every dtype): Out shares X's buffer under the new shape. */
#include "kernels/cpu/tensor_ops.h"

rill_status *rill_cpu_reshape2(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  const rill_tensor *list[RILL_MAX_DIMS];
  size_t nlist = ctx->nin[2];
  if (nlist > RILL_MAX_DIMS)
    return rill_kernel_error(ctx, "input ShapeTensor has %zu tensors, more than %d dims", nlist,
                             RILL_MAX_DIMS);
  for (size_t i = 0; i < nlist; i++) list[i] = rill_kin(ctx, 2, i);
  const rill_tensor *shape = rill_kin(ctx, 1, 0);
  int64_t target[RILL_MAX_DIMS];
  size_t n;
  rill_dims d;
  char err[256];
  if (!rill_reshape_target(list, nlist, shape, &ctx->attrs[RILL_RESHAPE2_ATTR_SHAPE], target, &n, err, sizeof err) ||
      !rill_reshape_dims(target, n, &x->dims, &d, err, sizeof err))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), err);
  RILL_TRY(rill_cpu_xshape(ctx, 1, x));
  return rill_cpu_view(ctx, 0, x, &d);
}
