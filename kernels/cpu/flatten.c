/* flatten2, flatten_contiguous_range, squeeze2 and unsqueeze2 CPU kernels (every dtype):
 * Out shares X's buffer under the new shape; XShape gets [0] + X's shape. */
#include "kernels/cpu/tensor_ops.h"

static rill_status *need_x(rill_kernel_ctx *ctx, rill_tensor **x) {
  *x = rill_kin(ctx, 0, 0);
  if (!*x || !rill_tensor_is_set(*x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  return NULL;
}

static rill_status *finish(rill_kernel_ctx *ctx, rill_tensor *x, bool ok, const char *err,
                           const rill_dims *d) {
  if (!ok) return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), err);
  RILL_TRY(rill_cpu_xshape(ctx, 1, x));
  return rill_cpu_view(ctx, 0, x, d);
}

rill_status *rill_cpu_flatten2(rill_kernel_ctx *ctx) {
  rill_tensor *x;
  RILL_TRY(need_x(ctx, &x));
  rill_dims d;
  char err[256];
  bool ok = rill_flatten2_dims(ctx->attrs[RILL_FLATTEN2_ATTR_AXIS].v.i, &x->dims, &d, err, sizeof err);
  return finish(ctx, x, ok, err, &d);
}

rill_status *rill_cpu_flatten_contiguous_range(rill_kernel_ctx *ctx) {
  rill_tensor *x;
  RILL_TRY(need_x(ctx, &x));
  rill_dims d;
  char err[256];
  bool ok = rill_flatten_range_dims(ctx->attrs[RILL_FLATTEN_CONTIGUOUS_RANGE_ATTR_START_AXIS].v.i, ctx->attrs[RILL_FLATTEN_CONTIGUOUS_RANGE_ATTR_STOP_AXIS].v.i, &x->dims, &d, err,
                                    sizeof err);
  return finish(ctx, x, ok, err, &d);
}

rill_status *rill_cpu_squeeze2(rill_kernel_ctx *ctx) {
  rill_tensor *x;
  RILL_TRY(need_x(ctx, &x));
  rill_dims d;
  char err[256];
  const rill_attr_value *axes = &ctx->attrs[RILL_SQUEEZE2_ATTR_AXES];
  bool ok = rill_squeeze_dims(axes->list.ints, axes->n, &x->dims, true, &d, err, sizeof err);
  return finish(ctx, x, ok, err, &d);
}

rill_status *rill_cpu_unsqueeze2(rill_kernel_ctx *ctx) {
  rill_tensor *x;
  RILL_TRY(need_x(ctx, &x));
  const rill_tensor *list[RILL_MAX_DIMS];
  size_t nlist = ctx->nin[2];
  if (nlist > RILL_MAX_DIMS)
    return rill_kernel_error(ctx, "input AxesTensorList has %zu tensors, more than %d", nlist,
                             RILL_MAX_DIMS);
  for (size_t i = 0; i < nlist; i++) list[i] = rill_kin(ctx, 2, i);
  int64_t axes[RILL_MAX_DIMS];
  size_t n;
  rill_dims d;
  char err[256];
  bool ok = rill_unsqueeze_axes(rill_kin(ctx, 1, 0), list, nlist, &ctx->attrs[RILL_UNSQUEEZE2_ATTR_AXES], axes, &n, err,
                                sizeof err) &&
            rill_unsqueeze_dims(axes, n, &x->dims, &d, err, sizeof err);
  return finish(ctx, x, ok, err, &d);
}
