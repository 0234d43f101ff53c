/* momentum CUDA kernel, float32, fused: Paddle's update with its rescale_grad, l2_decay
 * regularization and Nesterov variant in one pass. A selected-rows gradient counts as
 * zero in the rows it lacks, as on the CPU (every row's velocity decays): it is made
 * dense on the device first, its rows merged as the CPU merges them. */
#include <string.h>

#include "kernels/cuda/cuda.h"

/* multi_precision (master weights of float16 parameters) runs on the host. */
bool rill_cuda_momentum_accepts(const rill_kernel_ctx *ctx) { return !ctx->attrs[RILL_MOMENTUM_ATTR_MULTI_PRECISION].v.b; }

rill_status *rill_cuda_momentum_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *p = NULL, *g = NULL, *v = NULL, *lr = NULL, *po = NULL, *vo = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_MOMENTUM_IN_PARAM, 0, RILL_DTYPE_FP32, &p));
  RILL_TRY(rill_kin_need(ctx, RILL_MOMENTUM_IN_VELOCITY, 0, RILL_DTYPE_FP32, &v));
  RILL_TRY(rill_kin_need(ctx, RILL_MOMENTUM_IN_LEARNING_RATE, 0, RILL_DTYPE_FP32, &lr));
  RILL_TRY(rill_kout_need(ctx, RILL_MOMENTUM_OUT_PARAM_OUT, 0, RILL_DTYPE_FP32, &po));
  RILL_TRY(rill_kout_need(ctx, RILL_MOMENTUM_OUT_VELOCITY_OUT, 0, RILL_DTYPE_FP32, &vo));
  if (ctx->attrs[RILL_MOMENTUM_ATTR_MULTI_PRECISION].v.b)
    return rill_kernel_error(ctx, "the CUDA kernel takes no multi_precision");
  RILL_TRY(rill_kin_check_dims(ctx, RILL_MOMENTUM_IN_VELOCITY, v, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_MOMENTUM_OUT_PARAM_OUT, 0, po, &p->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_MOMENTUM_OUT_VELOCITY_OUT, 0, vo, &p->dims));
  if (rill_tensor_numel(lr) != 1)
    return rill_kernel_error(ctx, "input LearningRate (%s) must hold one element",
                             rill_kin_name(ctx, RILL_MOMENTUM_IN_LEARNING_RATE, 0));
  const char *reg = ctx->attrs[RILL_MOMENTUM_ATTR_REGULARIZATION_METHOD].v.s;
  float l2 = reg && strcmp(reg, "l2_decay") == 0 ? ctx->attrs[RILL_MOMENTUM_ATTR_REGULARIZATION_COEFF].v.f : 0.0f;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, po, &d));
  rill_variable *gv = ctx->nin[RILL_MOMENTUM_IN_GRAD] ? ctx->in[RILL_MOMENTUM_IN_GRAD][0] : NULL;
  float *dense = NULL;
  const float *grad;
  if (gv && gv->kind == RILL_VARKIND_SELECTED_ROWS) {
    RILL_TRY(rill_cuda_grad_rows_densify(ctx, d, RILL_MOMENTUM_IN_GRAD, &gv->u.rows, p, &dense));
    grad = dense;
  } else {
    RILL_TRY(rill_kin_need(ctx, RILL_MOMENTUM_IN_GRAD, 0, RILL_DTYPE_FP32, &g));
    RILL_TRY(rill_kin_check_dims(ctx, RILL_MOMENTUM_IN_GRAD, g, &p->dims));
    grad = rill_tensor_ptr(g);
  }
  cudaError_t e = rill_cuda_momentum_f32(rill_tensor_ptr(po), rill_tensor_ptr(vo), rill_tensor_ptr(p), grad,
                                         rill_tensor_ptr(v), rill_tensor_ptr(lr), rill_tensor_numel(p),
                                         ctx->attrs[RILL_MOMENTUM_ATTR_MU].v.f,
                                         ctx->attrs[RILL_MOMENTUM_ATTR_RESCALE_GRAD].v.f, l2,
                                         ctx->attrs[RILL_MOMENTUM_ATTR_USE_NESTEROV].v.b, d->stream);
  if (dense) rill_cuda_mem_free(d, dense); /* its next user is queued behind the update */
  return rill_cuda_kernel_check(ctx, e, "momentum launch");
}
