/* mean CUDA kernel, float32: Out[0] = the mean of X, summed in double. */
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_mean_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_MEAN_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_MEAN_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  if (rill_tensor_numel(x) == 0)
    return rill_kernel_error(ctx, "input X (%s) is empty: it has no mean", rill_kin_name(ctx, 0, 0));
  if (rill_tensor_numel(out) != 1)
    return rill_kernel_error(ctx, "output Out (%s) must hold one element", rill_kout_name(ctx, 0, 0));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_mean_f32(rill_tensor_ptr(x), rill_tensor_numel(x), rill_tensor_ptr(out), d->stream),
      "mean launch");
}

/* mean_grad CUDA kernel, float32: X@GRAD = Out@GRAD[0] / numel(X) everywhere, the
 * gradient read on the device. */
rill_status *rill_cuda_mean_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *g = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_MEAN_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_MEAN_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_MEAN_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_MEAN_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
  if (rill_tensor_numel(g) != 1)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) must hold one element",
                             rill_kin_name(ctx, RILL_MEAN_GRAD_IN_OUT_GRAD, 0));
  int64_t n = rill_tensor_numel(x);
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_fill_from_scalar_f32(rill_tensor_ptr(dx), n, rill_tensor_ptr(g),
                                                               (float)(n ? n : 1), d->stream),
                                "mean gradient launch");
}
