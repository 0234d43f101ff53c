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

/* The rest of the math family (kernels/cpu/activation.c's): the forward reads X and the
 * gradient its slot V (X or Out) and Out@GRAD; A and B name the attributes read as the
 * launch's a and b. */
#define ACT_PAIR(name, NAME, OP, V, a, b)                                                                   \
  rill_status *rill_cuda_##name##_fp32(rill_kernel_ctx *ctx) { return unary(ctx, OP, a, b, 0); }            \
  rill_status *rill_cuda_##name##_grad_fp32(rill_kernel_ctx *ctx) {                                         \
    return act_grad(ctx, OP, RILL_##NAME##_GRAD_IN_##V, RILL_##NAME##_GRAD_IN_OUT_GRAD, a, b, 0);           \
  }
#define ATTR_F(NAME, A) ((float)ctx->attrs[RILL_##NAME##_ATTR_##A].v.f)
_Static_assert(RILL_SAME_POS(RILL_SOFTSHRINK_ATTR_LAMBDA, RILL_SOFTSHRINK_GRAD_ATTR_LAMBDA) &&
                   RILL_SAME_POS(RILL_HARD_SHRINK_ATTR_THRESHOLD, RILL_HARD_SHRINK_GRAD_ATTR_THRESHOLD) &&
                   RILL_SAME_POS(RILL_THRESHOLDED_RELU_ATTR_THRESHOLD, RILL_THRESHOLDED_RELU_GRAD_ATTR_THRESHOLD) &&
                   RILL_SAME_POS(RILL_SELU_ATTR_SCALE, RILL_SELU_GRAD_ATTR_SCALE) &&
                   RILL_SAME_POS(RILL_SELU_ATTR_ALPHA, RILL_SELU_GRAD_ATTR_ALPHA) &&
                   RILL_SAME_POS(RILL_BRELU_ATTR_T_MIN, RILL_BRELU_GRAD_ATTR_T_MIN) &&
                   RILL_SAME_POS(RILL_BRELU_ATTR_T_MAX, RILL_BRELU_GRAD_ATTR_T_MAX) &&
                   RILL_SAME_POS(RILL_SOFT_RELU_ATTR_THRESHOLD, RILL_SOFT_RELU_GRAD_ATTR_THRESHOLD) &&
                   RILL_SAME_POS(RILL_STANH_ATTR_SCALE_A, RILL_STANH_GRAD_ATTR_SCALE_A) &&
                   RILL_SAME_POS(RILL_STANH_ATTR_SCALE_B, RILL_STANH_GRAD_ATTR_SCALE_B) &&
                   RILL_SAME_POS(RILL_MISH_ATTR_THRESHOLD, RILL_MISH_GRAD_ATTR_THRESHOLD),
               "an activation and its gradient read their attributes at the same positions");
ACT_PAIR(cos, COS, RILL_CUDA_COS, X, 0, 0)
ACT_PAIR(sin, SIN, RILL_CUDA_SIN, X, 0, 0)
ACT_PAIR(acos, ACOS, RILL_CUDA_ACOS, X, 0, 0)
ACT_PAIR(asin, ASIN, RILL_CUDA_ASIN, X, 0, 0)
ACT_PAIR(atan, ATAN, RILL_CUDA_ATAN, X, 0, 0)
ACT_PAIR(rsqrt, RSQRT, RILL_CUDA_RSQRT, OUT, 0, 0)
ACT_PAIR(softsign, SOFTSIGN, RILL_CUDA_SOFTSIGN, X, 0, 0)
ACT_PAIR(tanh_shrink, TANH_SHRINK, RILL_CUDA_TANH_SHRINK, X, 0, 0)
ACT_PAIR(softshrink, SOFTSHRINK, RILL_CUDA_SOFTSHRINK, X, ATTR_F(SOFTSHRINK, LAMBDA), 0)
ACT_PAIR(hard_shrink, HARD_SHRINK, RILL_CUDA_HARD_SHRINK, X, ATTR_F(HARD_SHRINK, THRESHOLD), 0)
ACT_PAIR(thresholded_relu, THRESHOLDED_RELU, RILL_CUDA_THRESHOLDED_RELU, X, ATTR_F(THRESHOLDED_RELU, THRESHOLD), 0)
ACT_PAIR(selu, SELU, RILL_CUDA_SELU, OUT, ATTR_F(SELU, SCALE), ATTR_F(SELU, ALPHA))
ACT_PAIR(brelu, BRELU, RILL_CUDA_BRELU, X, ATTR_F(BRELU, T_MIN), ATTR_F(BRELU, T_MAX))
ACT_PAIR(soft_relu, SOFT_RELU, RILL_CUDA_SOFT_RELU, OUT, ATTR_F(SOFT_RELU, THRESHOLD), 0)
ACT_PAIR(stanh, STANH, RILL_CUDA_STANH, X, ATTR_F(STANH, SCALE_A), ATTR_F(STANH, SCALE_B))
ACT_PAIR(erf, ERF, RILL_CUDA_ERF, X, 0, 0)
ACT_PAIR(mish, MISH, RILL_CUDA_MISH, X, ATTR_F(MISH, THRESHOLD), 0)
ACT_PAIR(log1p, LOG1P, RILL_CUDA_LOG1P, X, 0, 0)

/* ceil, floor and round (halves to even), and sign; the first three's gradient is
 * 0 * Out@GRAD, Out@GRAD being their gradient op's only input. */
rill_status *rill_cuda_ceil_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_CEIL, 0, 0, 0); }
rill_status *rill_cuda_floor_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_FLOOR, 0, 0, 0); }
rill_status *rill_cuda_round_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_ROUND, 0, 0, 0); }
rill_status *rill_cuda_sign_fp32(rill_kernel_ctx *ctx) { return unary(ctx, RILL_CUDA_SIGN, 0, 0, 0); }
_Static_assert(RILL_SAME_POS(RILL_FLOOR_GRAD_IN_OUT_GRAD, RILL_CEIL_GRAD_IN_OUT_GRAD) &&
                   RILL_SAME_POS(RILL_ROUND_GRAD_IN_OUT_GRAD, RILL_CEIL_GRAD_IN_OUT_GRAD),
               "ceil_grad, floor_grad and round_grad read Out@GRAD at the same position");
rill_status *rill_cuda_act_zero_grad_fp32(rill_kernel_ctx *ctx) {
  return act_grad(ctx, RILL_CUDA_ZERO_GRAD, RILL_CEIL_GRAD_IN_OUT_GRAD, RILL_CEIL_GRAD_IN_OUT_GRAD, 0, 0, 0);
}

/* pow: the exponent is FactorTensor's one element (float32, on the host: RILL_SLOT_HOST_DATA)
 * when given, else attribute factor. */
_Static_assert(RILL_SAME_POS(RILL_POW_ATTR_FACTOR, RILL_POW_GRAD_ATTR_FACTOR), "pow tables");
static rill_status *pow_factor(rill_kernel_ctx *ctx, size_t slot, float *factor) {
  *factor = (float)ctx->attrs[RILL_POW_ATTR_FACTOR].v.f;
  rill_tensor *f = rill_kin(ctx, slot, 0);
  if (!f) return NULL;
  RILL_TRY(rill_kin_need(ctx, slot, 0, RILL_DTYPE_FP32, &f));
  if (rill_tensor_numel(f) != 1)
    return rill_kernel_error(ctx, "input %s (%s) must hold one element, has %lld", ctx->schema->inputs[slot].name,
                             rill_kin_name(ctx, slot, 0), (long long)rill_tensor_numel(f));
  *factor = *(const float *)rill_tensor_ptr(f);
  return NULL;
}
rill_status *rill_cuda_pow_fp32(rill_kernel_ctx *ctx) {
  float a;
  RILL_TRY(pow_factor(ctx, RILL_POW_IN_FACTOR_TENSOR, &a));
  return unary(ctx, RILL_CUDA_POW_FACTOR, a, 0, 0);
}
rill_status *rill_cuda_pow_grad_fp32(rill_kernel_ctx *ctx) {
  float a;
  if (!rill_kout(ctx, 0, 0)) return NULL; /* X@GRAD not wanted */
  RILL_TRY(pow_factor(ctx, RILL_POW_GRAD_IN_FACTOR_TENSOR, &a));
  return act_grad(ctx, RILL_CUDA_POW_FACTOR, RILL_POW_GRAD_IN_X, RILL_POW_GRAD_IN_OUT_GRAD, a, 0, 0);
}
