/* conv2d and depthwise_conv2d CUDA kernels, their gradients, conv2d_fusion and the
 * transposed convolutions, float32, NCHW or NHWC (the filter OIHW in both, as Paddle
 * keeps it: cuDNN's KCRS beside NHWC tensors), on cuDNN through conv.h: the geometry
 * from operators/nn.h (strides, dilations, groups, paddings with Paddle's SAME and
 * VALID; asymmetric ones, Paddle's SAME at stride 2 or four-value paddings, on a
 * zero-grown copy), the algorithm kept per device and shape, the workspace capped by
 * workspace_size_MB (512 when unset). The Bias and ResidualData inputs of the plain op
 * are errors naming them. */
#include <string.h>

#include "kernels/cuda/conv.h"
#include "operators/fused_act.h"
#include "operators/nn.h"

_Static_assert(RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_ATTR_WORKSPACE_SIZE_MB, RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_IN_BIAS, RILL_CONV2D_IN_BIAS) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_IN_RESIDUAL_DATA, RILL_CONV2D_IN_RESIDUAL_DATA),
               "one kernel serves conv2d and depthwise_conv2d: their slots and attributes must agree");

/* The geometry of Input x and Filter f under the op's attributes (NHWC refused unless
 * allow_nhwc, as the CPU kernel refuses it), and as conv.h's shape; for a transposed
 * convolution (`transpose`), in convolution terms. */
static rill_status *conv_geom(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *f, bool transpose,
                              bool allow_nhwc, rill_conv_geom *g, rill_cuda_conv *shape) {
  char err[256];
  if (!rill_nn_conv_geom_fmt(ctx->attrs, transpose, allow_nhwc, &x->dims, &f->dims, g, err, sizeof err))
    return rill_kernel_error(ctx, "%s", err);
  *shape = (rill_cuda_conv){.nsp = 2, .last = g->nhwc, .n = g->n, .c = g->c, .m = g->m, .groups = g->groups,
                            .in = {g->h, g->w}, .out = {g->oh, g->ow}, .k = {g->kh, g->kw}, .s = {g->sh, g->sw},
                            .d = {g->dh, g->dw}, .lo = {g->pt, g->pl}, .hi = {g->pb, g->pr}};
  return NULL;
}

rill_status *rill_cuda_conv2d_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *f = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_IN_FILTER, 0, RILL_DTYPE_FP32, &f));
  RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_OUT_OUTPUT, 0, RILL_DTYPE_FP32, &out));
  if (rill_kin(ctx, RILL_CONV2D_IN_BIAS, 0) || rill_kin(ctx, RILL_CONV2D_IN_RESIDUAL_DATA, 0))
    return rill_kernel_error(ctx, "the CUDA kernel takes no Bias or ResidualData input");
  rill_conv_geom g;
  rill_cuda_conv shape;
  RILL_TRY(conv_geom(ctx, x, f, false, true, &g, &shape));
  rill_dims want = rill_nn_conv_out_dims(&g);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_OUT_OUTPUT, 0, out, &want));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_conv_forward(ctx, d, &shape, rill_cuda_conv_workspace_limit(ctx, RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB),
                                rill_tensor_ptr(x), rill_tensor_ptr(f), rill_tensor_ptr(out), NULL);
}

/* ---- conv2d_fusion ---- */

_Static_assert(RILL_SAME_POS(RILL_CONV2D_FUSION_ATTR_WORKSPACE_SIZE_MB, RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_CONV2D_FUSION_IN_INPUT, RILL_CONV2D_IN_INPUT) &&
                   RILL_SAME_POS(RILL_CONV2D_FUSION_IN_FILTER, RILL_CONV2D_IN_FILTER) &&
                   RILL_FUSED_IDENTITY == 0 && RILL_FUSED_RELU == 1 && RILL_FUSED_RELU6 == 2 &&
                   RILL_FUSED_SIGMOID == 3 && RILL_FUSED_TANH == 4,
               "conv2d_fusion reads conv2d's geometry; the epilogue numbers the activations as fused_act.h");

/* conv2d_fusion (the inference passes' conv + bias [+ residual] + activation), float32,
 * NCHW: with relu, one cuDNN call (cudnnConvolutionBiasActivationForward); with the
 * other activations, the convolution on cuDNN, then one epilogue pass in place, in the
 * CPU kernel's order (bias, residual, activation). */
rill_status *rill_cuda_conv2d_fusion_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *f = NULL, *b = NULL, *res = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_FUSION_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_FUSION_IN_FILTER, 0, RILL_DTYPE_FP32, &f));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_FUSION_IN_BIAS, 0, RILL_DTYPE_FP32, &b));
  if (rill_kin(ctx, RILL_CONV2D_FUSION_IN_RESIDUAL_DATA, 0))
    RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_FUSION_IN_RESIDUAL_DATA, 0, RILL_DTYPE_FP32, &res));
  RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_FUSION_OUT_OUTPUT, 0, RILL_DTYPE_FP32, &out));
  rill_fused_act act = rill_fused_act_of(&ctx->attrs[RILL_CONV2D_FUSION_ATTR_ACTIVATION], false);
  if (act == RILL_FUSED_UNKNOWN)
    return rill_kernel_error(ctx, "activation '%s' is not supported (identity, relu, relu6, sigmoid, tanh)",
                             ctx->attrs[RILL_CONV2D_FUSION_ATTR_ACTIVATION].v.s);
  rill_conv_geom g;
  rill_cuda_conv shape;
  RILL_TRY(conv_geom(ctx, x, f, false, false, &g, &shape));
  rill_dims want = rill_nn_conv_out_dims(&g);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_FUSION_OUT_OUTPUT, 0, out, &want));
  if (rill_tensor_numel(b) != g.m)
    return rill_kernel_error(ctx, "Bias (%s) holds %lld values for %lld output channels",
                             rill_kin_name(ctx, RILL_CONV2D_FUSION_IN_BIAS, 0), (long long)rill_tensor_numel(b),
                             (long long)g.m);
  if (res && !rill_dims_equal(&res->dims, &out->dims))
    return rill_kernel_error(ctx, "ResidualData (%s) does not have the output's shape",
                             rill_kin_name(ctx, RILL_CONV2D_FUSION_IN_RESIDUAL_DATA, 0));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  size_t limit = rill_cuda_conv_workspace_limit(ctx, RILL_CONV2D_FUSION_ATTR_WORKSPACE_SIZE_MB);
  if (act == RILL_FUSED_RELU) {
    rill_cuda_conv_fused fused = {rill_tensor_ptr(b), res ? rill_tensor_ptr(res) : NULL};
    return rill_cuda_conv_forward(ctx, d, &shape, limit, rill_tensor_ptr(x), rill_tensor_ptr(f), rill_tensor_ptr(out),
                                  &fused);
  }
  RILL_TRY(rill_cuda_conv_forward(ctx, d, &shape, limit, rill_tensor_ptr(x), rill_tensor_ptr(f), rill_tensor_ptr(out),
                                  NULL));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_conv_epilogue_f32(rill_tensor_ptr(out), rill_tensor_ptr(b),
                                                            res ? rill_tensor_ptr(res) : NULL, rill_tensor_numel(out),
                                                            g.m, g.oh * g.ow, (int)act, d->stream),
                                "conv2d_fusion epilogue launch");
}

/* ---- conv2d_grad, depthwise_conv2d_grad ---- */

_Static_assert(RILL_SAME_POS(RILL_CONV2D_GRAD_ATTR_WORKSPACE_SIZE_MB, RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_GRAD_ATTR_WORKSPACE_SIZE_MB, RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_GRAD_IN_OUTPUT_GRAD, RILL_CONV2D_GRAD_IN_OUTPUT_GRAD) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_GRAD_OUT_FILTER_GRAD, RILL_CONV2D_GRAD_OUT_FILTER_GRAD),
               "one gradient kernel serves conv2d and depthwise_conv2d: their slots and attributes must agree");

/* The operands of a convolution's gradient op (conv2d_grad and conv2d_transpose_grad
 * keep them at the same positions): Input, Filter and Output@GRAD, the gradients wanted
 * (NULL when not) checked against Input's and Filter's shapes, the geometry (`transpose`:
 * the transposed op's, in convolution terms) and the device. */
_Static_assert(RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_IN_INPUT, RILL_CONV2D_GRAD_IN_INPUT) &&
                   RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_IN_FILTER, RILL_CONV2D_GRAD_IN_FILTER) &&
                   RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_IN_OUTPUT_GRAD, RILL_CONV2D_GRAD_IN_OUTPUT_GRAD) &&
                   RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_OUT_INPUT_GRAD, RILL_CONV2D_GRAD_OUT_INPUT_GRAD) &&
                   RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_OUT_FILTER_GRAD, RILL_CONV2D_GRAD_OUT_FILTER_GRAD),
               "the convolution gradients keep their operands at the same positions");
typedef struct conv_grad_args {
  rill_tensor *x, *f, *dy, *dx, *dw;
  rill_conv_geom g;
  rill_cuda_conv shape;
  rill_cuda_dev *d;
} conv_grad_args;

/* Fills *a; *done when nothing is left to compute (no gradient wanted, or none flows
 * through an empty tensor: the wanted ones are then zeroed). */
static rill_status *conv_grad_args_get(rill_kernel_ctx *ctx, bool transpose, conv_grad_args *a, bool *done) {
  memset(a, 0, sizeof *a);
  *done = true;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_GRAD_IN_INPUT, 0, RILL_DTYPE_FP32, &a->x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_GRAD_IN_FILTER, 0, RILL_DTYPE_FP32, &a->f));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_GRAD_IN_OUTPUT_GRAD, 0, RILL_DTYPE_FP32, &a->dy));
  if (rill_kout(ctx, RILL_CONV2D_GRAD_OUT_INPUT_GRAD, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_GRAD_OUT_INPUT_GRAD, 0, RILL_DTYPE_FP32, &a->dx));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_GRAD_OUT_INPUT_GRAD, 0, a->dx, &a->x->dims));
  }
  if (rill_kout(ctx, RILL_CONV2D_GRAD_OUT_FILTER_GRAD, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_GRAD_OUT_FILTER_GRAD, 0, RILL_DTYPE_FP32, &a->dw));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_GRAD_OUT_FILTER_GRAD, 0, a->dw, &a->f->dims));
  }
  if (!a->dx && !a->dw) return NULL;
  RILL_TRY(conv_geom(ctx, a->x, a->f, transpose, true, &a->g, &a->shape));
  /* Output@GRAD has the forward's output shape: the convolution's output, or its input
   * for the transposed op. */
  rill_dims want = transpose ? rill_nn_convt_out_dims(&a->g) : rill_nn_conv_out_dims(&a->g);
  RILL_TRY(rill_kin_check_dims(ctx, RILL_CONV2D_GRAD_IN_OUTPUT_GRAD, a->dy, &want));
  RILL_TRY(rill_cuda_kernel_dev(ctx, a->dx ? a->dx : a->dw, &a->d));
  if (rill_tensor_numel(a->dy) && rill_tensor_numel(a->x)) {
    *done = false;
    return NULL;
  }
  return rill_cuda_conv_zero_grads(ctx, a->d, a->dx, a->dw);
}

/* conv2d_grad and depthwise_conv2d_grad CUDA kernel, float32, NCHW or NHWC: Input@GRAD and
 * Filter@GRAD (either may be absent) from Input, Filter and Output@GRAD. */
rill_status *rill_cuda_conv2d_grad_fp32(rill_kernel_ctx *ctx) {
  conv_grad_args a;
  bool done;
  RILL_TRY(conv_grad_args_get(ctx, false, &a, &done));
  if (done) return NULL;
  size_t limit = rill_cuda_conv_workspace_limit(ctx, RILL_CONV2D_GRAD_ATTR_WORKSPACE_SIZE_MB);
  return rill_cuda_conv_backward(ctx, a.d, &a.shape, limit, rill_tensor_ptr(a.x), rill_tensor_ptr(a.f), rill_tensor_ptr(a.dy),
                                 a.dx ? rill_tensor_ptr(a.dx) : NULL, a.dw ? rill_tensor_ptr(a.dw) : NULL);
}

/* ---- conv2d_transpose, depthwise_conv2d_transpose and their gradients ----
 * A transposed convolution is the gradient of a convolution with respect to its input:
 * in the geometry rill_nn_conv_geom gives it, the transposed op's Output is the
 * convolution's input, its Input the convolution's output, and its Filter [C_in, C_out /
 * groups, kh, kw] the convolution's filter. So Output = cuDNN's backward data of Input;
 * its Input@GRAD = the forward convolution of Output@GRAD, and its Filter@GRAD = the
 * backward filter of Output@GRAD against Input. */

_Static_assert(RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_IN_INPUT, RILL_CONV2D_TRANSPOSE_IN_INPUT) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_IN_FILTER, RILL_CONV2D_TRANSPOSE_IN_FILTER) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_ATTR_WORKSPACE_SIZE_MB,
                                 RILL_CONV2D_TRANSPOSE_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_GRAD_ATTR_WORKSPACE_SIZE_MB,
                                 RILL_CONV2D_TRANSPOSE_GRAD_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_GRAD_IN_OUTPUT_GRAD,
                                 RILL_CONV2D_TRANSPOSE_GRAD_IN_OUTPUT_GRAD) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_GRAD_OUT_FILTER_GRAD,
                                 RILL_CONV2D_TRANSPOSE_GRAD_OUT_FILTER_GRAD),
               "one kernel serves conv2d_transpose and its depthwise form: their slots and attributes must agree");

rill_status *rill_cuda_conv2d_transpose_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *f = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_TRANSPOSE_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_TRANSPOSE_IN_FILTER, 0, RILL_DTYPE_FP32, &f));
  RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_TRANSPOSE_OUT_OUTPUT, 0, RILL_DTYPE_FP32, &out));
  if (rill_kin(ctx, RILL_CONV2D_TRANSPOSE_IN_BIAS, 0)) return rill_kernel_error(ctx, "the Bias input must be absent");
  rill_conv_geom g;
  rill_cuda_conv shape;
  RILL_TRY(conv_geom(ctx, x, f, true, true, &g, &shape));
  rill_dims want = rill_nn_convt_out_dims(&g);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_TRANSPOSE_OUT_OUTPUT, 0, out, &want));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_conv_backward(ctx, d, &shape,
                                 rill_cuda_conv_workspace_limit(ctx, RILL_CONV2D_TRANSPOSE_ATTR_WORKSPACE_SIZE_MB), NULL,
                                 rill_tensor_ptr(f), rill_tensor_ptr(x), rill_tensor_ptr(out), NULL);
}

rill_status *rill_cuda_conv2d_transpose_grad_fp32(rill_kernel_ctx *ctx) {
  conv_grad_args a;
  bool done;
  RILL_TRY(conv_grad_args_get(ctx, true, &a, &done));
  if (done) return NULL;
  size_t limit = rill_cuda_conv_workspace_limit(ctx, RILL_CONV2D_TRANSPOSE_GRAD_ATTR_WORKSPACE_SIZE_MB);
  return rill_cuda_conv_transpose_backward(ctx, a.d, &a.shape, limit, rill_tensor_ptr(a.x), rill_tensor_ptr(a.f),
                                           rill_tensor_ptr(a.dy), a.dx ? rill_tensor_ptr(a.dx) : NULL,
                                           a.dw ? rill_tensor_ptr(a.dw) : NULL);
}
