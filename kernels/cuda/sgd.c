/* sgd CUDA kernel, float32 dense gradients: ParamOut = Param - LearningRate * Grad, the
 * rate read on the device. */
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_sgd_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *p = NULL, *lr = NULL, *g = NULL, *po = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SGD_IN_PARAM, 0, RILL_DTYPE_FP32, &p));
  RILL_TRY(rill_kin_need(ctx, RILL_SGD_IN_LEARNING_RATE, 0, RILL_DTYPE_FP32, &lr));
  RILL_TRY(rill_kin_need(ctx, RILL_SGD_IN_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_SGD_OUT_PARAM_OUT, 0, RILL_DTYPE_FP32, &po));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_SGD_IN_GRAD, g, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SGD_OUT_PARAM_OUT, 0, po, &p->dims));
  if (rill_tensor_numel(lr) != 1)
    return rill_kernel_error(ctx, "input LearningRate (%s) must hold one element", rill_kin_name(ctx, 1, 0));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, po, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_sgd_f32(rill_tensor_ptr(po), rill_tensor_ptr(p), rill_tensor_ptr(g),
                                                  rill_tensor_ptr(lr), rill_tensor_numel(p), d->stream),
                                "sgd launch");
}
