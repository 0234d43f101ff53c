/* grid_sampler and its gradient, CUDA kernels, float32: every padding (zeros, border,
 * reflection) and both modes (bilinear, nearest) forward; zeros and border padding
 * backward, as the CPU kernels take. The source coordinates are computed on the device
 * from Grid by the CPU's functions (kernels/cpu/grid_sample_coord.h), in double
 * (device/grid_sample.cu). */
#include <string.h>

#include "kernels/cpu/grid_sample_coord.h"
#include "kernels/cuda/cuda.h"

/* X [N, C, H, W] and Grid [N, OH, OW, 2], float32; the launch parameters from them and
 * the attributes. */
static rill_status *sample_inputs(rill_kernel_ctx *ctx, rill_tensor **x, rill_tensor **g,
                                  rill_cuda_grid_sample *p) {
  RILL_TRY(rill_kin_need(ctx, RILL_GRID_SAMPLER_IN_X, 0, RILL_DTYPE_FP32, x));
  RILL_TRY(rill_kin_need(ctx, RILL_GRID_SAMPLER_IN_GRID, 0, RILL_DTYPE_FP32, g));
  const rill_dims *xd = &(*x)->dims, *gd = &(*g)->dims;
  if (xd->n != 4 || gd->n != 4 || gd->d[3] != 2 || gd->d[0] != xd->d[0])
    return rill_kernel_error(ctx, "inputs X (%s) and Grid (%s) must be [N, C, H, W] and [N, OH, OW, 2]",
                             rill_kin_name(ctx, RILL_GRID_SAMPLER_IN_X, 0),
                             rill_kin_name(ctx, RILL_GRID_SAMPLER_IN_GRID, 0));
  const char *pm = ctx->attrs[RILL_GRID_SAMPLER_ATTR_PADDING_MODE].v.s;
  const char *mode = ctx->attrs[RILL_GRID_SAMPLER_ATTR_MODE].v.s;
  *p = (rill_cuda_grid_sample){
      .n = xd->d[0], .c = xd->d[1], .h = xd->d[2], .w = xd->d[3], .oh = gd->d[1], .ow = gd->d[2],
      .pad = pm && !strcmp(pm, "border")       ? RILL_GRID_PAD_BORDER
             : pm && !strcmp(pm, "reflection") ? RILL_GRID_PAD_REFLECT
                                               : RILL_GRID_PAD_ZEROS,
      .align_corners = ctx->attrs[RILL_GRID_SAMPLER_ATTR_ALIGN_CORNERS].v.b,
      .nearest = mode && !strcmp(mode, "nearest")};
  return NULL;
}

rill_status *rill_cuda_grid_sampler_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *g = NULL, *out = NULL;
  rill_cuda_grid_sample p;
  RILL_TRY(sample_inputs(ctx, &x, &g, &p));
  RILL_TRY(rill_kout_need(ctx, RILL_GRID_SAMPLER_OUT_OUTPUT, 0, RILL_DTYPE_FP32, &out));
  rill_dims od = {4, {p.n, p.c, p.oh, p.ow}};
  RILL_TRY(rill_kout_check_dims(ctx, RILL_GRID_SAMPLER_OUT_OUTPUT, 0, out, &od));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  cudaError_t e = rill_cuda_grid_sample_f32(rill_tensor_ptr(x), rill_tensor_ptr(g), rill_tensor_ptr(out), &p, d->stream);
  return rill_cuda_kernel_check(ctx, e, "grid sampling launch");
}

/* X@GRAD (zeroed, then each (n, c) plane adds Output@GRAD back in the CPU's order) and
 * Grid@GRAD (a thread a sampled position), either of them absent when unwanted. */
rill_status *rill_cuda_grid_sampler_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *g = NULL, *dout = NULL, *dx = NULL, *dg = NULL;
  rill_cuda_grid_sample p;
  RILL_TRY(sample_inputs(ctx, &x, &g, &p));
  if (p.pad == RILL_GRID_PAD_REFLECT)
    return rill_kernel_error(ctx, "attribute padding_mode \"reflection\": the gradient takes zeros or border padding");
  RILL_TRY(rill_kin_need(ctx, RILL_GRID_SAMPLER_GRAD_IN_OUTPUT_GRAD, 0, RILL_DTYPE_FP32, &dout));
  rill_dims od = {4, {p.n, p.c, p.oh, p.ow}};
  RILL_TRY(rill_kin_check_dims(ctx, RILL_GRID_SAMPLER_GRAD_IN_OUTPUT_GRAD, dout, &od));
  const rill_tensor *like[2] = {x, g};
  const size_t like_slot[2] = {RILL_GRID_SAMPLER_GRAD_IN_X, RILL_GRID_SAMPLER_GRAD_IN_GRID};
  rill_tensor *outs[2];
  RILL_TRY(rill_kout_like(ctx, 2, RILL_DTYPE_FP32, like, like_slot, 0, outs));
  dx = outs[RILL_GRID_SAMPLER_GRAD_OUT_X_GRAD];
  dg = outs[RILL_GRID_SAMPLER_GRAD_OUT_GRID_GRAD];
  if ((!dx || rill_tensor_numel(dx) == 0) && (!dg || rill_tensor_numel(dg) == 0)) return NULL;
  rill_tensor *any = dx && rill_tensor_numel(dx) ? dx : dg;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, any, &d));
  cudaError_t e = rill_cuda_grid_sample_grad_f32(rill_tensor_ptr(x), rill_tensor_ptr(g), rill_tensor_ptr(dout),
                                                 dx ? rill_tensor_ptr(dx) : NULL, dg ? rill_tensor_ptr(dg) : NULL, &p,
                                                 d->stream);
  return rill_cuda_kernel_check(ctx, e, "grid sampling gradient launch");
}
