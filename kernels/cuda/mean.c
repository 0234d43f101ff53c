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
