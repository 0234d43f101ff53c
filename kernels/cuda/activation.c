/* CUDA kernels of the elementwise activations, float32: Out = f(X), in-place safe. */
#include "kernels/cuda/cuda.h"

static rill_status *unary(rill_kernel_ctx *ctx, int op, float a, float b) {
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, 0, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_unary_f32(op, rill_tensor_ptr(x), rill_tensor_ptr(out),
                                                    rill_tensor_numel(x), a, b, d->stream),
                                "activation launch");
}

rill_status *rill_cuda_relu_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_RELU, 0, 0); }
rill_status *rill_cuda_sigmoid_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_SIGMOID, 0, 0); }
rill_status *rill_cuda_tanh_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_TANH, 0, 0); }
rill_status *rill_cuda_exp_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_EXP, 0, 0); }
rill_status *rill_cuda_sqrt_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_SQRT, 0, 0); }
rill_status *rill_cuda_square_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_SQUARE, 0, 0); }
rill_status *rill_cuda_relu6_fp32(rill_kernel_ctx *ctx) {
  return unary(ctx, RILL_CUDA_RELU6, (float)ctx->attrs[RILL_RELU6_ATTR_THRESHOLD].v.f, 0);
}
rill_status *rill_cuda_leaky_relu_fp32(rill_kernel_ctx *ctx) {
  return unary(ctx, RILL_CUDA_LEAKY_RELU, (float)ctx->attrs[RILL_LEAKY_RELU_ATTR_ALPHA].v.f, 0);
}

/* relu_grad, sigmoid_grad and tanh_grad, float32: X@GRAD from Out and Out@GRAD (the
 * three schemas share their slots). */
_Static_assert((int)RILL_SIGMOID_GRAD_IN_OUT == (int)RILL_RELU_GRAD_IN_OUT && (int)RILL_TANH_GRAD_IN_OUT == (int)RILL_RELU_GRAD_IN_OUT &&
                   (int)RILL_SIGMOID_GRAD_IN_OUT_GRAD == (int)RILL_RELU_GRAD_IN_OUT_GRAD &&
                   (int)RILL_TANH_GRAD_IN_OUT_GRAD == (int)RILL_RELU_GRAD_IN_OUT_GRAD,
               "activation gradient slots differ");
static rill_status *act_grad(rill_kernel_ctx *ctx, int op) {
  rill_tensor *out = NULL, *g = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_RELU_GRAD_IN_OUT, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kin_need(ctx, RILL_RELU_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_RELU_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_RELU_GRAD_IN_OUT_GRAD, g, &out->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_RELU_GRAD_OUT_X_GRAD, 0, dx, &out->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_act_grad_f32(op, rill_tensor_ptr(out), rill_tensor_ptr(g),
                                                       rill_tensor_ptr(dx), rill_tensor_numel(out),
                                                       d->stream),
                                "activation gradient launch");
}

rill_status *rill_cuda_relu_grad_fp32(rill_kernel_ctx *ctx) { return act_grad(ctx, RILL_CUDA_RELU); }
rill_status *rill_cuda_sigmoid_grad_fp32(rill_kernel_ctx *ctx) { return act_grad(ctx, RILL_CUDA_SIGMOID); }
rill_status *rill_cuda_tanh_grad_fp32(rill_kernel_ctx *ctx) { return act_grad(ctx, RILL_CUDA_TANH); }
