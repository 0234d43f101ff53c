/* pool2d CUDA kernel, float32: max or average pooling, NCHW or NHWC, with Paddle's
 * windows (global, adaptive, exclusive, ceil_mode, SAME / VALID and explicit paddings,
 * resolved by operators/nn.h as for the CPU kernel). */
#include "kernels/cuda/cuda.h"
#include "operators/nn.h"

/* The geometry of X (input 0) under the op's attributes, and the pooled dims. */
static rill_status *pool_geom(rill_kernel_ctx *ctx, const rill_tensor *x, rill_cuda_pool *p, rill_dims *od) {
  rill_pool_geom g;
  char err[256];
  if (!rill_nn_pool_geom(ctx->attrs, &x->dims, &g, err, sizeof err))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), err);
  *od = rill_nn_pool_dims(&g, g.oh, g.ow);
  *p = (rill_cuda_pool){.n = g.n, .c = g.c, .h = g.h, .w = g.w, .oh = g.oh, .ow = g.ow, .kh = g.kh, .kw = g.kw,
                        .sh = g.sh, .sw = g.sw, .pt = g.pt, .pl = g.pl, .max = g.max, .adaptive = g.adaptive,
                        .exclusive = g.exclusive, .last = g.last};
  return NULL;
}

rill_status *rill_cuda_pool2d_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *y = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_POOL2D_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_POOL2D_OUT_OUT, 0, RILL_DTYPE_FP32, &y));
  rill_cuda_pool p;
  rill_dims od;
  RILL_TRY(pool_geom(ctx, x, &p, &od));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_POOL2D_OUT_OUT, 0, y, &od));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, y, &d));
  return rill_cuda_kernel_check(ctx, rill_cuda_pool2d_f32(rill_tensor_ptr(x), rill_tensor_ptr(y), &p, d->stream),
                                "pool2d launch");
}

/* pool2d_grad CUDA kernel, float32: X@GRAD from X, Out and Out@GRAD, gathered per input
 * element (no atomics: the same sums as the CPU's, run after run). */
rill_status *rill_cuda_pool2d_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *y = NULL, *dy = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_POOL2D_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_POOL2D_GRAD_IN_OUT, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kin_need(ctx, RILL_POOL2D_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &dy));
  if (!rill_kout(ctx, RILL_POOL2D_GRAD_OUT_X_GRAD, 0)) return NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_POOL2D_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_POOL2D_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
  rill_cuda_pool p;
  rill_dims od;
  RILL_TRY(pool_geom(ctx, x, &p, &od));
  if (!rill_dims_equal(&y->dims, &od) || !rill_dims_equal(&dy->dims, &od)) {
    char a[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "inputs Out (%s) and Out@GRAD (%s) must have the pooled shape %s",
                             rill_kin_name(ctx, RILL_POOL2D_GRAD_IN_OUT, 0),
                             rill_kin_name(ctx, RILL_POOL2D_GRAD_IN_OUT_GRAD, 0), rill_dims_str(&od, a, sizeof a));
  }
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_pool2d_grad_f32(rill_tensor_ptr(x), rill_tensor_ptr(y), rill_tensor_ptr(dy),
                                                          rill_tensor_ptr(dx), &p, d->stream),
                                "pool2d_grad launch");
}
