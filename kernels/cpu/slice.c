/* slice and slice_grad CPU kernels (every dtype): a box copy between the full tensor and
 * the packed slice. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"


static rill_status *kernel_plan(rill_kernel_ctx *ctx, const rill_tensor *x, rill_slice_plan *plan) {
  const rill_tensor *sl[RILL_MAX_DIMS], *el[RILL_MAX_DIMS];
  size_t ns = ctx->nin[3], ne = ctx->nin[4];
  if (ns > RILL_MAX_DIMS || ne > RILL_MAX_DIMS)
    return rill_kernel_error(ctx, "more than %d StartsTensorList/EndsTensorList tensors", RILL_MAX_DIMS);
  for (size_t i = 0; i < ns; i++) sl[i] = rill_kin(ctx, 3, i);
  for (size_t i = 0; i < ne; i++) el[i] = rill_kin(ctx, 4, i);
  rill_slice_bounds s = {rill_kin(ctx, 1, 0) != NULL, rill_kin(ctx, 1, 0), sl, ns, &ctx->attrs[RILL_SLICE_ATTR_STARTS]};
  rill_slice_bounds e = {rill_kin(ctx, 2, 0) != NULL, rill_kin(ctx, 2, 0), el, ne, &ctx->attrs[RILL_SLICE_ATTR_ENDS]};
  char err[256];
  if (!rill_slice_plan_make(&x->dims, &ctx->attrs[RILL_SLICE_ATTR_AXES], &s, &e, &ctx->attrs[RILL_SLICE_ATTR_INFER_FLAGS],
                            &ctx->attrs[RILL_SLICE_ATTR_DECREASE_AXIS], true, plan, err, sizeof err))
    return rill_kernel_error(ctx, "input Input (%s): %s", rill_kin_name(ctx, 0, 0), err);
  return NULL;
}

rill_status *rill_cpu_slice(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input Input (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  rill_slice_plan plan;
  RILL_TRY(kernel_plan(ctx, x, &plan));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &plan.out));
  size_t es = rill_dtype_size(x->dtype), ob = rill_tensor_nbytes(out);
  void *dst = rill_tensor_ptr(out), *tmp = dst;
  if (rill_overlaps(dst, ob, rill_tensor_ptr(x), rill_tensor_nbytes(x)) &&
      !(tmp = rill_aligned_alloc(ob, RILL_TENSOR_ALIGN)))
    return rill_oom();
  rill_cpu_box_copy(rill_tensor_ptr(x), &x->dims, plan.start, plan.len, tmp, es, true);
  if (tmp != dst) {
    memcpy(dst, tmp, ob);
    rill_free(tmp);
  }
  return NULL;
}

rill_status *rill_cpu_slice_grad(rill_kernel_ctx *ctx) {
  rill_tensor *x, *dout, *dx;
  RILL_TRY(rill_cpu_grad_like_input(ctx, 0, 5, &x, &dout, &dx));
  if (!dx) return NULL;
  rill_slice_plan plan;
  RILL_TRY(kernel_plan(ctx, x, &plan));
  int64_t want = 1;
  for (int i = 0; i < x->dims.n; i++) want *= plan.len[i];
  if (rill_tensor_numel(dout) != want)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) has %lld elements, the slice %lld",
                             rill_kin_name(ctx, 5, 0), (long long)rill_tensor_numel(dout),
                             (long long)want);
  size_t es = rill_dtype_size(dout->dtype);
  if (rill_tensor_nbytes(dx)) memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));
  rill_cpu_box_copy(rill_tensor_ptr(dx), &dx->dims, plan.start, plan.len, rill_tensor_ptr(dout), es,
                    false);
  return NULL;
}
