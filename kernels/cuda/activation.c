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
rill_status *rill_cuda_log_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_LOG, 0, 0, 0); }
rill_status *rill_cuda_abs_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_ABS, 0, 0, 0); }
rill_status *rill_cuda_reciprocal_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_RECIPROCAL, 0, 0, 0); }
rill_status *rill_cuda_softplus_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_SOFTPLUS, 0, 0, 0); }
rill_status *rill_cuda_logsigmoid_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_LOGSIGMOID, 0, 0, 0); }
rill_status *rill_cuda_elu_fp32(rill_kernel_ctx *ctx) {
  return unary(ctx, RILL_CUDA_ELU, (float)ctx->attrs[RILL_ELU_ATTR_ALPHA].v.f, 0, 0);
}
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

/* clip's bounds: the Min and Max tensors (on the host, RILL_SLOT_HOST_DATA) when given,
 * else the attributes; checked as the CPU checks them. */
_Static_assert(RILL_SAME_POS(RILL_CLIP_GRAD_IN_MIN, RILL_CLIP_IN_MIN) &&
                   RILL_SAME_POS(RILL_CLIP_GRAD_IN_MAX, RILL_CLIP_IN_MAX) &&
                   RILL_SAME_POS(RILL_CLIP_GRAD_ATTR_MIN, RILL_CLIP_ATTR_MIN) &&
                   RILL_SAME_POS(RILL_CLIP_GRAD_ATTR_MAX, RILL_CLIP_ATTR_MAX),
               "clip and clip_grad read their bounds at the same positions");
static rill_status *clip_bounds(rill_kernel_ctx *ctx, float *lo, float *hi) {
  *lo = (float)ctx->attrs[RILL_CLIP_ATTR_MIN].v.f;
  *hi = (float)ctx->attrs[RILL_CLIP_ATTR_MAX].v.f;
  for (size_t s = RILL_CLIP_IN_MIN; s <= RILL_CLIP_IN_MAX; s++) {
    rill_tensor *b = rill_kin(ctx, s, 0);
    if (!b) continue;
    RILL_TRY(rill_kin_need(ctx, s, 0, RILL_DTYPE_FP32, &b));
    if (rill_tensor_numel(b) != 1)
      return rill_kernel_error(ctx, "input %s (%s) must hold one element", ctx->schema->inputs[s].name,
                               rill_kin_name(ctx, s, 0));
    *(s == RILL_CLIP_IN_MIN ? lo : hi) = *(const float *)rill_tensor_ptr(b);
  }
  if (!(*lo <= *hi)) return rill_kernel_error(ctx, "min (%g) must not exceed max (%g)", (double)*lo, (double)*hi);
  return NULL;
}

/* A selected-rows X (a sparse gradient) is merged first, as the CPU kernel does: Out
 * holds each row once with the sum of its values, clipped. */
rill_status *rill_cuda_clip_fp32(rill_kernel_ctx *ctx) {
  float lo, hi;
  RILL_TRY(clip_bounds(ctx, &lo, &hi));
  rill_variable *xv = ctx->nin[RILL_CLIP_IN_X] ? ctx->in[RILL_CLIP_IN_X][0] : NULL;
  if (!xv || xv->kind != RILL_VARKIND_SELECTED_ROWS) return unary(ctx, RILL_CUDA_CLIP, lo, hi, 0);
  const rill_selected_rows *x = &xv->u.rows;
  const char *xn = rill_kin_name(ctx, RILL_CLIP_IN_X, 0), *on = rill_kout_name(ctx, RILL_CLIP_OUT_OUT, 0);
  if (!rill_tensor_is_set(&x->value) || x->value.dtype != RILL_DTYPE_FP32)
    return rill_kernel_error(ctx, "input X (%s) holds selected rows without float32 values", xn);
  if (x->value.dims.n < 1 || x->value.dims.d[0] != (int64_t)x->nrows)
    return rill_kernel_error(ctx, "input X (%s): %zu rows but a value of %lld elements in %d dimensions", xn,
                             x->nrows, (long long)rill_tensor_numel(&x->value), x->value.dims.n);
  rill_variable *ov = ctx->nout[RILL_CLIP_OUT_OUT] ? ctx->out[RILL_CLIP_OUT_OUT][0] : NULL;
  if (!ov) return rill_kernel_error(ctx, "output Out is missing");
  if (ov == xv) return rill_kernel_error(ctx, "output Out (%s) is the input X: merging is not in place", on);
  if (ov->kind == RILL_VARKIND_TENSOR) rill_variable_clear(ov); /* an unset dense Out becomes selected rows */
  rill_selected_rows *out = rill_variable_selected_rows(ov);
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) holds a %s, input X selected rows", on, rill_var_kind_name(ov->kind));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, &x->value, &d));
  RILL_TRY(rill_cuda_rows_merge(ctx, d, x, out));
  float *v = rill_tensor_ptr(&out->value);
  return rill_cuda_kernel_check(
      ctx, rill_cuda_unary_f32(RILL_CUDA_CLIP, v, v, rill_tensor_numel(&out->value), lo, hi, 0, d->stream),
      "clip launch");
}

rill_status *rill_cuda_clip_grad_fp32(rill_kernel_ctx *ctx) {
  float lo, hi;
  if (!rill_kout(ctx, 0, 0)) return NULL; /* X@GRAD not wanted */
  RILL_TRY(clip_bounds(ctx, &lo, &hi));
  return act_grad(ctx, RILL_CUDA_CLIP, RILL_CLIP_GRAD_IN_X, RILL_CLIP_GRAD_IN_OUT_GRAD, lo, hi, 0);
}

/* log reads X, Out@GRAD after Out; abs, softplus, logsigmoid and elu read X,
 * reciprocal Out, each with Out@GRAD after it. */
rill_status *rill_cuda_log_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_LOG, RILL_LOG_GRAD_IN_X, RILL_LOG_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_abs_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_ABS, RILL_ABS_GRAD_IN_X, RILL_ABS_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_reciprocal_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_RECIPROCAL, RILL_RECIPROCAL_GRAD_IN_OUT, RILL_RECIPROCAL_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_softplus_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_SOFTPLUS, RILL_SOFTPLUS_GRAD_IN_X, RILL_SOFTPLUS_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_logsigmoid_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_LOGSIGMOID, RILL_LOGSIGMOID_GRAD_IN_X, RILL_LOGSIGMOID_GRAD_IN_OUT_GRAD, 0, 0, 0);
}
rill_status *rill_cuda_elu_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_ELU, RILL_ELU_GRAD_IN_X, RILL_ELU_GRAD_IN_OUT_GRAD,
                  (float)ctx->attrs[RILL_ELU_GRAD_ATTR_ALPHA].v.f, 0, 0);
}
