/* pool2d CUDA kernel, float32: max or average pooling, NCHW or NHWC, with Paddle's
 * windows (global, adaptive, exclusive, ceil_mode, SAME / VALID and explicit paddings,
 * resolved by operators/nn.h as for the CPU kernel). */
#include "kernels/cuda/cuda.h"
#include "operators/nn.h"

rill_status *rill_cuda_pool2d_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *y = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_POOL2D_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_POOL2D_OUT_OUT, 0, RILL_DTYPE_FP32, &y));
  rill_pool_geom g;
  char err[256];
  if (!rill_nn_pool_geom(ctx->attrs, &x->dims, &g, err, sizeof err))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, RILL_POOL2D_IN_X, 0), err);
  rill_dims od = rill_nn_pool_dims(&g, g.oh, g.ow);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_POOL2D_OUT_OUT, 0, y, &od));
  rill_cuda_pool p = {.n = g.n, .c = g.c, .h = g.h, .w = g.w, .oh = g.oh, .ow = g.ow, .kh = g.kh, .kw = g.kw,
                      .sh = g.sh, .sw = g.sw, .pt = g.pt, .pl = g.pl, .max = g.max, .adaptive = g.adaptive,
                      .exclusive = g.exclusive, .last = g.last};
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, y, &d));
  return rill_cuda_kernel_check(ctx, rill_cuda_pool2d_f32(rill_tensor_ptr(x), rill_tensor_ptr(y), &p, d->stream),
                                "pool2d launch");
}
