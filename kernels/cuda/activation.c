/* CUDA kernels of the elementwise activations and their gradients, float32: Out = f(X),
 * in-place safe. */
#include "kernels/cuda/cuda.h"

static rill_status *unary(rill_kernel_ctx *ctx, int op, float a, float b, float c) {
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, 0, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_unary_f32(op, rill_tensor_ptr(x), rill_tensor_ptr(out),
                                                    rill_tensor_numel(x), a, b, c, d->stream),
                                "activation launch");
}

rill_status *rill_cuda_relu_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_RELU, 0, 0, 0); }
rill_status *rill_cuda_sigmoid_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_SIGMOID, 0, 0, 0); }
rill_status *rill_cuda_tanh_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_TANH, 0, 0, 0); }
rill_status *rill_cuda_exp_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_EXP, 0, 0, 0); }
rill_status *rill_cuda_sqrt_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_SQRT, 0, 0, 0); }
rill_status *rill_cuda_square_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_SQUARE, 0, 0, 0); }
rill_status *rill_cuda_relu6_fp32(rill_kernel_ctx *ctx) {
  return unary(ctx, RILL_CUDA_RELU6, (float)ctx->attrs[RILL_RELU6_ATTR_THRESHOLD].v.f, 0, 0);
}
rill_status *rill_cuda_leaky_relu_fp32(rill_kernel_ctx *ctx) {
  return unary(ctx, RILL_CUDA_LEAKY_RELU, (float)ctx->attrs[RILL_LEAKY_RELU_ATTR_ALPHA].v.f, 0, 0);
}
rill_status *rill_cuda_hard_sigmoid_fp32(rill_kernel_ctx *ctx) {
  return unary(ctx, RILL_CUDA_HARD_SIGMOID, (float)ctx->attrs[RILL_HARD_SIGMOID_ATTR_SLOPE].v.f,
               (float)ctx->attrs[RILL_HARD_SIGMOID_ATTR_OFFSET].v.f, 0);
}
rill_status *rill_cuda_hard_swish_fp32(rill_kernel_ctx *ctx) {
  return unary(ctx, RILL_CUDA_HARD_SWISH, (float)ctx->attrs[RILL_HARD_SWISH_ATTR_THRESHOLD].v.f,
               (float)ctx->attrs[RILL_HARD_SWISH_ATTR_SCALE].v.f, (float)ctx->attrs[RILL_HARD_SWISH_ATTR_OFFSET].v.f);
}
rill_status *rill_cuda_swish_fp32(rill_kernel_ctx *ctx) {
  return unary(ctx, RILL_CUDA_SWISH, (float)ctx->attrs[RILL_SWISH_ATTR_BETA].v.f, 0, 0);
}
rill_status *rill_cuda_silu_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_SILU, 0, 0, 0); }
rill_status *rill_cuda_gelu_fp32(rill_kernel_ctx *ctx) {
  return unary(ctx, ctx->attrs[RILL_GELU_ATTR_APPROXIMATE].v.b ? RILL_CUDA_GELU_TANH : RILL_CUDA_GELU_ERF, 0, 0, 0);
}

/* The activations' gradients, float32: X@GRAD (output slot 0) from the forward value in
 * input slot `v_slot` (Out, or X for leaky_relu and square) and Out@GRAD in `g_slot`,
 * with the op's parameter a. */
_Static_assert((int)RILL_SIGMOID_GRAD_IN_OUT == (int)RILL_RELU_GRAD_IN_OUT && (int)RILL_TANH_GRAD_IN_OUT == (int)RILL_RELU_GRAD_IN_OUT &&
                   (int)RILL_SIGMOID_GRAD_IN_OUT_GRAD == (int)RILL_RELU_GRAD_IN_OUT_GRAD &&
                   (int)RILL_TANH_GRAD_IN_OUT_GRAD == (int)RILL_RELU_GRAD_IN_OUT_GRAD,
               "activation gradient slots differ");
static rill_status *act_grad(rill_kernel_ctx *ctx, int op, size_t v_slot, size_t g_slot, float a, float b, float c) {
  rill_tensor *v = NULL, *g = NULL, *dx = NULL;
  if (!rill_kout(ctx, 0, 0)) return NULL; /* X@GRAD not wanted */
  RILL_TRY(rill_kin_need(ctx, v_slot, 0, RILL_DTYPE_FP32, &v));
  RILL_TRY(rill_kin_need(ctx, g_slot, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kin_check_dims(ctx, g_slot, g, &v->dims));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &v->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_act_grad_f32(op, rill_tensor_ptr(v), rill_tensor_ptr(g), rill_tensor_ptr(dx),
                                                       rill_tensor_numel(v), a, b, c, d->stream),
                                "activation gradient launch");
}

rill_status *rill_cuda_relu_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_RELU, RILL_RELU_GRAD_IN_OUT, RILL_RELU_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_sigmoid_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_SIGMOID, RILL_RELU_GRAD_IN_OUT, RILL_RELU_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_tanh_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_TANH, RILL_RELU_GRAD_IN_OUT, RILL_RELU_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_relu6_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_RELU6, RILL_RELU6_GRAD_IN_OUT, RILL_RELU6_GRAD_IN_OUT_GRAD,
                  (float)ctx->attrs[RILL_RELU6_GRAD_ATTR_THRESHOLD].v.f, 0, 0);
}
rill_status *rill_cuda_leaky_relu_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_LEAKY_RELU, RILL_LEAKY_RELU_GRAD_IN_X, RILL_LEAKY_RELU_GRAD_IN_OUT_GRAD,
                  (float)ctx->attrs[RILL_LEAKY_RELU_GRAD_ATTR_ALPHA].v.f, 0, 0);
}
rill_status *rill_cuda_exp_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_EXP, RILL_EXP_GRAD_IN_OUT, RILL_EXP_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_sqrt_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_SQRT, RILL_SQRT_GRAD_IN_OUT, RILL_SQRT_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_square_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_SQUARE, RILL_SQUARE_GRAD_IN_X, RILL_SQUARE_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_hard_sigmoid_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_HARD_SIGMOID, RILL_HARD_SIGMOID_GRAD_IN_OUT, RILL_HARD_SIGMOID_GRAD_IN_OUT_GRAD,
                  (float)ctx->attrs[RILL_HARD_SIGMOID_GRAD_ATTR_SLOPE].v.f, 0, 0);
}
rill_status *rill_cuda_hard_swish_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_HARD_SWISH, RILL_HARD_SWISH_GRAD_IN_X, RILL_HARD_SWISH_GRAD_IN_OUT_GRAD,
                  (float)ctx->attrs[RILL_HARD_SWISH_GRAD_ATTR_THRESHOLD].v.f,
                  (float)ctx->attrs[RILL_HARD_SWISH_GRAD_ATTR_SCALE].v.f,
                  (float)ctx->attrs[RILL_HARD_SWISH_GRAD_ATTR_OFFSET].v.f);
}
rill_status *rill_cuda_swish_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_SWISH, RILL_SWISH_GRAD_IN_X, RILL_SWISH_GRAD_IN_OUT_GRAD,
                  (float)ctx->attrs[RILL_SWISH_GRAD_ATTR_BETA].v.f, 0, 0);
}
rill_status *rill_cuda_silu_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_SILU, RILL_SILU_GRAD_IN_X, RILL_SILU_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_gelu_grad_fp32(rill_kernel_ctx *ctx) {
  int op = ctx->attrs[RILL_GELU_GRAD_ATTR_APPROXIMATE].v.b ? RILL_CUDA_GELU_TANH : RILL_CUDA_GELU_ERF;
  return act_grad(ctx, op, RILL_GELU_GRAD_IN_X, RILL_GELU_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
