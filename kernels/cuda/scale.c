/* scale CUDA kernel, float32 dense tensors: Out = s * X + b, or s * (X + b). A
 * ScaleTensor, when given, is on the host (RILL_SLOT_HOST_DATA): one float. */
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_scale_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SCALE_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_SCALE_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  float s = (float)ctx->attrs[RILL_SCALE_ATTR_SCALE].v.f, bias = (float)ctx->attrs[RILL_SCALE_ATTR_BIAS].v.f;
  rill_tensor *st = rill_kin(ctx, RILL_SCALE_IN_SCALE_TENSOR, 0);
  if (st) {
    if (st->dtype != RILL_DTYPE_FP32 || rill_tensor_numel(st) != 1 || !rill_tensor_ptr(st))
      return rill_kernel_error(ctx, "input ScaleTensor (%s) must hold one float32",
                               rill_kin_name(ctx, RILL_SCALE_IN_SCALE_TENSOR, 0));
    s = *(const float *)rill_tensor_ptr(st);
  }
  int op = ctx->attrs[RILL_SCALE_ATTR_BIAS_AFTER_SCALE].v.b ? RILL_CUDA_SCALE : RILL_CUDA_SCALE_BIAS_FIRST;
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_unary_f32(op, rill_tensor_ptr(x), rill_tensor_ptr(out),
                                                    rill_tensor_numel(x), s, bias, 0, d->stream),
                                "scale launch");
}
