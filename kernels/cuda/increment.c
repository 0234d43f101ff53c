/* increment CUDA kernel: Out = X + step on one element of int32, int64, float32 or
 * float64. A while loop's counter then stays on the device beside the comparison that
 * reads it, instead of travelling to the host and back at every step. */
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_increment_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_INCREMENT_IN_X, 0), *out = NULL;
  if (!x || !rill_tensor_ptr(x))
    return rill_kernel_error(ctx, "input X (%s) holds no tensor", rill_kin_name(ctx, RILL_INCREMENT_IN_X, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_INCREMENT_OUT_OUT, 0, x->dtype, &out));
  if (rill_tensor_numel(x) != 1 || rill_tensor_numel(out) != 1)
    return rill_kernel_error(ctx, "input X (%s) must hold one element", rill_kin_name(ctx, RILL_INCREMENT_IN_X, 0));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_increment(rill_tensor_ptr(x), rill_tensor_ptr(out), x->dtype,
                                                    (double)ctx->attrs[RILL_INCREMENT_ATTR_STEP].v.f, d->stream),
                                "increment launch");
}
