/* Summing and zeroing the gradients of sub-block steps (step_grad.h). */
#include "kernels/cpu/step_grad.h"

#include <string.h>

rill_status *rill_cpu_step_grad_add(const rill_kernel_ctx *ctx, rill_tensor *dst,
                                    const rill_tensor *src, const char *name) {
  if (dst->dtype != src->dtype || rill_tensor_numel(dst) != rill_tensor_numel(src) ||
      !rill_dims_equal(&dst->dims, &src->dims))
    return rill_kernel_error(ctx, "the gradient '%s' of one step differs in dtype or shape from "
                             "the other steps'", name);
  int64_t n = rill_tensor_numel(dst);
  if (dst->dtype == RILL_DTYPE_FP32) {
    float *d = rill_tensor_ptr(dst);
    const float *s = rill_tensor_ptr(src);
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
  } else if (dst->dtype == RILL_DTYPE_FP64) {
    double *d = rill_tensor_ptr(dst);
    const double *s = rill_tensor_ptr(src);
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
  } else {
    return rill_kernel_error(ctx, "gradient '%s' is %s; step gradients sum float32 and float64",
                             name, rill_dtype_name(dst->dtype));
  }
  return NULL;
}

rill_status *rill_cpu_zeros_like(rill_tensor *dst, const rill_tensor *like) {
  RILL_TRY(rill_tensor_alloc(dst, like->dtype, &like->dims));
  memset(rill_tensor_ptr(dst), 0, rill_tensor_nbytes(dst));
  return NULL;
}
