/* Summing and zeroing the gradients of sub-block steps (step_grad.h). */
#include "kernels/cpu/step_grad.h"

#include <string.h>

static const rill_place HOST = {RILL_HOST_DEVICE, 0};

rill_status *rill_cpu_step_grad_start(rill_tensor *dst, const rill_tensor *src, const char *name) {
  return rill_status_wrap(rill_tensor_copy_at(dst, src, HOST), "gradient '%s'", name);
}

static rill_status *add_on_host(const rill_kernel_ctx *ctx, rill_tensor *dst, const rill_tensor *src,
                                const char *name);

rill_status *rill_cpu_step_grad_add(const rill_kernel_ctx *ctx, rill_tensor *dst,
                                    const rill_tensor *src, const char *name) {
  if (dst->dtype != src->dtype || rill_tensor_numel(dst) != rill_tensor_numel(src) ||
      !rill_dims_equal(&dst->dims, &src->dims))
    return rill_kernel_error(ctx, "the gradient '%s' of one step differs in dtype or shape from "
                             "the other steps'", name);
  if (rill_tensor_place(dst).device != RILL_HOST_DEVICE)
    return rill_kernel_error(ctx, "the sum of gradient '%s' is not on the host", name);
  if (rill_tensor_place(src).device == RILL_HOST_DEVICE) return add_on_host(ctx, dst, src, name);
  rill_tensor host;
  rill_tensor_init(&host);
  rill_status *st = rill_cpu_step_grad_start(&host, src, name);
  if (!st) st = add_on_host(ctx, dst, &host, name);
  rill_tensor_clear(&host);
  return st;
}

static rill_status *add_on_host(const rill_kernel_ctx *ctx, rill_tensor *dst, const rill_tensor *src,
                                const char *name) {
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
