/* conv3d, conv3d_transpose and their gradients, CUDA kernels, float32, NCDHW or NDHWC
 * (the filter [M, C / groups, kd, kh, kw] in both), on cuDNN's N-D convolution through
 * conv.h: the geometry from operators/conv3d.h, the CPU kernel's (3 or 6 paddings,
 * Paddle's SAME and VALID, groups, strides, dilations; uneven paddings on a zero-grown
 * copy), the algorithm kept per device and shape, the workspace capped by
 * workspace_size_MB (512 when unset). A transposed convolution is the data gradient of
 * the convolution operators/conv3d.h describes it as. */
#include "kernels/cuda/conv.h"
#include "operators/conv3d.h"

_Static_assert(RILL_SAME_POS(RILL_CONV3D_IN_INPUT, RILL_CONV3D_GRAD_IN_INPUT) &&
                   RILL_SAME_POS(RILL_CONV3D_IN_FILTER, RILL_CONV3D_GRAD_IN_FILTER) &&
                   RILL_SAME_POS(RILL_CONV3D_TRANSPOSE_GRAD_IN_INPUT, RILL_CONV3D_GRAD_IN_INPUT) &&
                   RILL_SAME_POS(RILL_CONV3D_TRANSPOSE_GRAD_IN_FILTER, RILL_CONV3D_GRAD_IN_FILTER) &&
                   RILL_SAME_POS(RILL_CONV3D_TRANSPOSE_GRAD_IN_OUTPUT_GRAD, RILL_CONV3D_GRAD_IN_OUTPUT_GRAD) &&
                   RILL_SAME_POS(RILL_CONV3D_TRANSPOSE_GRAD_OUT_INPUT_GRAD, RILL_CONV3D_GRAD_OUT_INPUT_GRAD) &&
                   RILL_SAME_POS(RILL_CONV3D_TRANSPOSE_GRAD_OUT_FILTER_GRAD, RILL_CONV3D_GRAD_OUT_FILTER_GRAD) &&
                   RILL_SAME_POS(RILL_CONV3D_GRAD_IN_OUTPUT_GRAD, CONV3D_GRAD_IN_DOUT),
               "the 3-D convolutions and their gradients keep their operands at the same positions");

/* conv3d.h's geometry of Input x and Filter f (conv3d_transpose's when `transpose`, in
 * convolution terms) as conv.h's shape; the error names Input. */
static rill_status *shape_of(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *f, bool transpose,
                             conv3d_geom *g, rill_cuda_conv *s) {
  const char *err = transpose ? conv3d_transpose_geom_get(ctx->attrs, &x->dims, &f->dims, g)
                              : conv3d_geom_get(ctx->attrs, &x->dims, &f->dims, g);
  if (err) return rill_kernel_error(ctx, "Input (%s): %s", rill_kin_name(ctx, 0, 0), err);
  *s = (rill_cuda_conv){.nsp = 3, .last = g->last, .n = g->n, .c = g->c, .m = g->m, .groups = g->groups};
  for (int i = 0; i < 3; i++) {
    s->in[i] = g->in[i];
    s->out[i] = g->out[i];
    s->k[i] = g->k[i];
    s->s[i] = g->s[i];
    s->d[i] = g->d[i];
    s->lo[i] = g->p[2 * i];
    s->hi[i] = g->p[2 * i + 1];
  }
  return NULL;
}

_Static_assert(RILL_SAME_POS(RILL_CONV3D_IN_INPUT, RILL_CONV3D_TRANSPOSE_IN_INPUT) &&
                   RILL_SAME_POS(RILL_CONV3D_IN_FILTER, RILL_CONV3D_TRANSPOSE_IN_FILTER) &&
                   RILL_SAME_POS(RILL_CONV3D_OUT_OUTPUT, RILL_CONV3D_TRANSPOSE_OUT_OUTPUT),
               "conv3d and conv3d_transpose keep their operands at the same positions");

/* The operands of conv3d and conv3d_transpose: Input, Filter and Output (checked against
 * the shape), the shape and the device; *d stays NULL when Output is empty. */
static rill_status *forward_args_get(rill_kernel_ctx *ctx, bool transpose, rill_tensor **x, rill_tensor **f,
                                     rill_tensor **out, rill_cuda_conv *s, rill_cuda_dev **d) {
  RILL_TRY(rill_kin_need(ctx, RILL_CONV3D_IN_INPUT, 0, RILL_DTYPE_FP32, x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV3D_IN_FILTER, 0, RILL_DTYPE_FP32, f));
  RILL_TRY(rill_kout_need(ctx, RILL_CONV3D_OUT_OUTPUT, 0, RILL_DTYPE_FP32, out));
  conv3d_geom g;
  RILL_TRY(shape_of(ctx, *x, *f, transpose, &g, s));
  rill_dims want = transpose ? conv3d_dims(&g, g.c, g.in) : conv3d_dims(&g, g.m, g.out);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV3D_OUT_OUTPUT, 0, *out, &want));
  *d = NULL;
  return rill_tensor_numel(*out) ? rill_cuda_kernel_dev(ctx, *out, d) : NULL;
}

rill_status *rill_cuda_conv3d_fp32(rill_kernel_ctx *ctx) {
  if (rill_kin(ctx, RILL_CONV3D_IN_RESIDUAL_DATA, 0))
    return rill_kernel_error(ctx, "input ResidualData is a oneDNN fusion rill does not run");
  rill_tensor *x = NULL, *f = NULL, *out = NULL;
  rill_cuda_conv s;
  rill_cuda_dev *d = NULL;
  RILL_TRY(forward_args_get(ctx, false, &x, &f, &out, &s, &d));
  if (!d) return NULL;
  return rill_cuda_conv_forward(ctx, d, &s, rill_cuda_conv_workspace_limit(ctx, RILL_CONV3D_ATTR_WORKSPACE_SIZE_MB),
                                rill_tensor_ptr(x), rill_tensor_ptr(f), rill_tensor_ptr(out), NULL);
}

rill_status *rill_cuda_conv3d_transpose_fp32(rill_kernel_ctx *ctx) {
  if (rill_kin(ctx, RILL_CONV3D_TRANSPOSE_IN_BIAS, 0))
    return rill_kernel_error(ctx, "input Bias is not supported: add the bias with elementwise_add");
  rill_tensor *x = NULL, *f = NULL, *out = NULL;
  rill_cuda_conv s;
  rill_cuda_dev *d = NULL;
  RILL_TRY(forward_args_get(ctx, true, &x, &f, &out, &s, &d));
  if (!d) return NULL;
  return rill_cuda_conv_backward(ctx, d, &s,
                                 rill_cuda_conv_workspace_limit(ctx, RILL_CONV3D_TRANSPOSE_ATTR_WORKSPACE_SIZE_MB),
                                 NULL, rill_tensor_ptr(f), rill_tensor_ptr(x), rill_tensor_ptr(out), NULL);
}

/* The operands of conv3d_grad and conv3d_transpose_grad: Input, Filter, Output@GRAD
 * (checked against the forward's output), the gradients wanted (NULL when not), the
 * shape and the device. *done when nothing is left to compute: no gradient wanted, or
 * none flows through an empty tensor (the wanted ones are then zeroed). */
typedef struct grad_args {
  rill_tensor *x, *f, *dy, *dx, *dw;
  rill_cuda_conv s;
  rill_cuda_dev *d;
} grad_args;

static rill_status *grad_args_get(rill_kernel_ctx *ctx, bool transpose, grad_args *a, bool *done) {
  *a = (grad_args){0};
  *done = true;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV3D_GRAD_IN_INPUT, 0, RILL_DTYPE_FP32, &a->x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV3D_GRAD_IN_FILTER, 0, RILL_DTYPE_FP32, &a->f));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV3D_GRAD_IN_OUTPUT_GRAD, 0, RILL_DTYPE_FP32, &a->dy));
  conv3d_geom g;
  RILL_TRY(shape_of(ctx, a->x, a->f, transpose, &g, &a->s));
  rill_dims want = transpose ? conv3d_dims(&g, g.c, g.in) : conv3d_dims(&g, g.m, g.out);
  RILL_TRY(rill_kin_check_dims(ctx, RILL_CONV3D_GRAD_IN_OUTPUT_GRAD, a->dy, &want));
  const rill_tensor *like[2] = {a->x, a->f};
  const size_t like_slot[2] = {RILL_CONV3D_GRAD_IN_INPUT, RILL_CONV3D_GRAD_IN_FILTER};
  rill_tensor *outs[2];
  RILL_TRY(rill_kout_like(ctx, 2, RILL_DTYPE_FP32, like, like_slot, 0, outs));
  a->dx = outs[RILL_CONV3D_GRAD_OUT_INPUT_GRAD];
  a->dw = outs[RILL_CONV3D_GRAD_OUT_FILTER_GRAD];
  if (!a->dx && !a->dw) return NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, a->dx ? a->dx : a->dw, &a->d));
  if (rill_tensor_numel(a->dy) && rill_tensor_numel(a->x)) {
    *done = false;
    return NULL;
  }
  return rill_cuda_conv_zero_grads(ctx, a->d, a->dx, a->dw);
}

static float *ptr_or_null(rill_tensor *t) { return t ? rill_tensor_ptr(t) : NULL; }

rill_status *rill_cuda_conv3d_grad_fp32(rill_kernel_ctx *ctx) {
  grad_args a;
  bool done;
  RILL_TRY(grad_args_get(ctx, false, &a, &done));
  if (done) return NULL;
  size_t limit = rill_cuda_conv_workspace_limit(ctx, RILL_CONV3D_GRAD_ATTR_WORKSPACE_SIZE_MB);
  return rill_cuda_conv_backward(ctx, a.d, &a.s, limit, rill_tensor_ptr(a.x), rill_tensor_ptr(a.f),
                                 rill_tensor_ptr(a.dy), ptr_or_null(a.dx), ptr_or_null(a.dw));
}

rill_status *rill_cuda_conv3d_transpose_grad_fp32(rill_kernel_ctx *ctx) {
  grad_args a;
  bool done;
  RILL_TRY(grad_args_get(ctx, true, &a, &done));
  if (done) return NULL;
  size_t limit = rill_cuda_conv_workspace_limit(ctx, RILL_CONV3D_TRANSPOSE_GRAD_ATTR_WORKSPACE_SIZE_MB);
  return rill_cuda_conv_transpose_backward(ctx, a.d, &a.s, limit, rill_tensor_ptr(a.x), rill_tensor_ptr(a.f),
                                           rill_tensor_ptr(a.dy), ptr_or_null(a.dx), ptr_or_null(a.dw));
}
