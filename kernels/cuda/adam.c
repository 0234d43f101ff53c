/* adam CUDA kernel, float32 dense gradients: Fluid 1.x's update (kernels/cpu/adam.c) in
 * one pass, then the beta pows advanced by one-element kernels queued after it, so that
 * a pow that is its own output is read before it is written. Beta1Tensor, Beta2Tensor,
 * EpsilonTensor, SkipUpdate, MasterParam and selected-rows gradients are errors naming
 * them. */
#include "kernels/cuda/cuda.h"

static const size_t unsupported[] = {RILL_ADAM_IN_BETA1_TENSOR, RILL_ADAM_IN_BETA2_TENSOR,
                                     RILL_ADAM_IN_EPSILON_TENSOR, RILL_ADAM_IN_SKIP_UPDATE,
                                     RILL_ADAM_IN_MASTER_PARAM};

rill_status *rill_cuda_adam_fp32(rill_kernel_ctx *ctx) {
  for (size_t i = 0; i < RILL_COUNTOF(unsupported); i++)
    if (rill_kin(ctx, unsupported[i], 0))
      return rill_kernel_error(ctx, "the CUDA kernel does not take input %s (%s)",
                               ctx->schema->inputs[unsupported[i]].name, rill_kin_name(ctx, unsupported[i], 0));
  rill_tensor *p = NULL, *g = NULL, *m1 = NULL, *m2 = NULL, *lr = NULL, *b1p = NULL, *b2p = NULL;
  rill_tensor *po = NULL, *m1o = NULL, *m2o = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_PARAM, 0, RILL_DTYPE_FP32, &p));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_MOMENT1, 0, RILL_DTYPE_FP32, &m1));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_MOMENT2, 0, RILL_DTYPE_FP32, &m2));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_LEARNING_RATE, 0, RILL_DTYPE_FP32, &lr));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_BETA1_POW, 0, RILL_DTYPE_FP32, &b1p));
  RILL_TRY(rill_kin_need(ctx, RILL_ADAM_IN_BETA2_POW, 0, RILL_DTYPE_FP32, &b2p));
  RILL_TRY(rill_kout_need(ctx, RILL_ADAM_OUT_PARAM_OUT, 0, RILL_DTYPE_FP32, &po));
  RILL_TRY(rill_kout_need(ctx, RILL_ADAM_OUT_MOMENT1_OUT, 0, RILL_DTYPE_FP32, &m1o));
  RILL_TRY(rill_kout_need(ctx, RILL_ADAM_OUT_MOMENT2_OUT, 0, RILL_DTYPE_FP32, &m2o));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_ADAM_IN_GRAD, g, &p->dims));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_ADAM_IN_MOMENT1, m1, &p->dims));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_ADAM_IN_MOMENT2, m2, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_ADAM_OUT_PARAM_OUT, 0, po, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_ADAM_OUT_MOMENT1_OUT, 0, m1o, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_ADAM_OUT_MOMENT2_OUT, 0, m2o, &p->dims));
  if (rill_tensor_numel(lr) != 1 || rill_tensor_numel(b1p) != 1 || rill_tensor_numel(b2p) != 1)
    return rill_kernel_error(ctx, "LearningRate (%s), Beta1Pow (%s) and Beta2Pow (%s) must hold one element each",
                             rill_kin_name(ctx, RILL_ADAM_IN_LEARNING_RATE, 0),
                             rill_kin_name(ctx, RILL_ADAM_IN_BETA1_POW, 0), rill_kin_name(ctx, RILL_ADAM_IN_BETA2_POW, 0));
  float b1 = ctx->attrs[RILL_ADAM_ATTR_BETA1].v.f, b2 = ctx->attrs[RILL_ADAM_ATTR_BETA2].v.f;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, po, &d));
  cudaError_t e = rill_cuda_adam_f32(rill_tensor_ptr(po), rill_tensor_ptr(m1o), rill_tensor_ptr(m2o), rill_tensor_ptr(p),
                                     rill_tensor_ptr(g), rill_tensor_ptr(m1), rill_tensor_ptr(m2), rill_tensor_ptr(lr),
                                     rill_tensor_ptr(b1p), rill_tensor_ptr(b2p), rill_tensor_numel(p), b1, b2,
                                     ctx->attrs[RILL_ADAM_ATTR_EPSILON].v.f, d->stream);
  bool advance = !ctx->attrs[RILL_ADAM_ATTR_USE_GLOBAL_BETA_POW].v.b;
  const size_t pows[2][2] = {{RILL_ADAM_IN_BETA1_POW, RILL_ADAM_OUT_BETA1_POW_OUT},
                             {RILL_ADAM_IN_BETA2_POW, RILL_ADAM_OUT_BETA2_POW_OUT}};
  for (int k = 0; k < 2 && e == cudaSuccess; k++) {
    rill_tensor *in = rill_kin(ctx, pows[k][0], 0), *out = rill_kout(ctx, pows[k][1], 0);
    if (!out || !rill_tensor_is_set(out)) continue;
    if (out->dtype != RILL_DTYPE_FP32 || rill_tensor_numel(out) != 1)
      return rill_kernel_error(ctx, "output %s (%s) must be one float32", ctx->schema->outputs[pows[k][1]].name,
                               rill_kout_name(ctx, pows[k][1], 0));
    if (advance)
      e = rill_cuda_scale_scalar_f32(rill_tensor_ptr(out), rill_tensor_ptr(in), k ? b2 : b1, d->stream);
    else if (rill_tensor_ptr(out) != rill_tensor_ptr(in))
      e = cudaMemcpyAsync(rill_tensor_ptr(out), rill_tensor_ptr(in), sizeof(float), cudaMemcpyDeviceToDevice, d->stream);
  }
  return rill_cuda_kernel_check(ctx, e, "adam launch");
}
