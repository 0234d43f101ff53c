/* Summing and zeroing the gradients of sub-block steps (step_grad.h). */
#include "kernels/cpu/step_grad.h"

#include <string.h>

static const rill_place HOST = {RILL_HOST_DEVICE, 0};

rill_status *rill_cpu_step_grad_start(rill_tensor *dst, const rill_tensor *src, const char *name) {
  return rill_status_wrap(rill_tensor_copy_at(dst, src, rill_tensor_place(src)), "gradient '%s'", name);
}

rill_status *rill_cpu_step_grad_add(const rill_kernel_ctx *ctx, rill_tensor *dst,
                                    const rill_tensor *src, const char *name) {
  if (dst->dtype != src->dtype || rill_tensor_numel(dst) != rill_tensor_numel(src) ||
      !rill_dims_equal(&dst->dims, &src->dims))
    return rill_kernel_error(ctx, "the gradient '%s' of one step differs in dtype or shape from "
                             "the other steps'", name);
  rill_status *st = rill_tensor_accumulate(dst, src);
  if (!st || rill_status_code(st) != RILL_UNIMPLEMENTED || rill_tensor_place(dst).device == RILL_HOST_DEVICE)
    return rill_status_wrap(st, "summing the steps' gradient '%s'", name);
  /* The sum's device does not add this dtype: the sum moves to the host for good. */
  rill_status_destroy(st);
  RILL_TRY(rill_status_wrap(rill_tensor_copy_at(dst, dst, HOST), "gradient '%s'", name));
  st = rill_tensor_accumulate(dst, src);
  return rill_status_wrap(st, "summing the steps' gradient '%s'", name);
}

rill_status *rill_cpu_zeros_like(rill_tensor *dst, const rill_tensor *like) {
  RILL_TRY(rill_tensor_alloc(dst, like->dtype, &like->dims));
  memset(rill_tensor_ptr(dst), 0, rill_tensor_nbytes(dst));
  return NULL;
}
