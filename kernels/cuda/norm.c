/* layer_norm and group_norm CUDA kernels and their gradients, float32: the CPU kernels'
 * arithmetic (statistics in double, one block a row or a sample's group,
 * device/norm.cu). Scale, Bias, Mean and Variance are optional in the forwards; Y may
 * be X. layer_norm takes X as [left, right] rows from begin_norm_axis; group_norm NCHW
 * or NHWC, its gradient from Y as Paddle computes it. */
#include <string.h>

#include "kernels/cuda/cuda.h"

/* Optional [n] float32 input (NULL when absent) or output (NULL when not wanted). */
static rill_status *vec(rill_kernel_ctx *ctx, bool out, size_t slot, int64_t n, float **p) {
  *p = NULL;
  rill_tensor *t = out ? rill_kout(ctx, slot, 0) : rill_kin(ctx, slot, 0);
  if (!t) return NULL;
  RILL_TRY(out ? rill_kout_need(ctx, slot, 0, RILL_DTYPE_FP32, &t) : rill_kin_need(ctx, slot, 0, RILL_DTYPE_FP32, &t));
  if (rill_tensor_numel(t) != n)
    return rill_kernel_error(ctx, "%s %s (%s) has %lld elements, expected %lld", out ? "output" : "input",
                             out ? ctx->schema->outputs[slot].name : ctx->schema->inputs[slot].name,
                             out ? rill_kout_name(ctx, slot, 0) : rill_kin_name(ctx, slot, 0),
                             (long long)rill_tensor_numel(t), (long long)n);
  *p = rill_tensor_ptr(t);
  return NULL;
}

_Static_assert(RILL_SAME_POS(RILL_LAYER_NORM_GRAD_ATTR_BEGIN_NORM_AXIS, RILL_LAYER_NORM_ATTR_BEGIN_NORM_AXIS) &&
                   RILL_SAME_POS(RILL_LAYER_NORM_GRAD_IN_X, RILL_LAYER_NORM_IN_X),
               "layer_norm and its gradient read X's rows alike");

/* X (input 0) as [left, right] rows from begin_norm_axis. */
static rill_status *ln_rows(rill_kernel_ctx *ctx, const rill_tensor *x, int64_t *left, int64_t *right) {
  int axis = ctx->attrs[RILL_LAYER_NORM_ATTR_BEGIN_NORM_AXIS].v.i;
  if (axis < 1 || axis >= x->dims.n)
    return rill_kernel_error(ctx, "begin_norm_axis %d must lie in [1, rank) for input X (%s) of rank %d", axis,
                             rill_kin_name(ctx, RILL_LAYER_NORM_IN_X, 0), (int)x->dims.n);
  *left = rill_dims_prod(&x->dims, 0, axis);
  *right = rill_dims_prod(&x->dims, axis, x->dims.n);
  return NULL;
}

rill_status *rill_cuda_layer_norm_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *y = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LAYER_NORM_IN_X, 0, RILL_DTYPE_FP32, &x));
  int64_t left, right;
  RILL_TRY(ln_rows(ctx, x, &left, &right));
  float *scale, *bias, *mean, *var;
  RILL_TRY(vec(ctx, false, RILL_LAYER_NORM_IN_SCALE, right, &scale));
  RILL_TRY(vec(ctx, false, RILL_LAYER_NORM_IN_BIAS, right, &bias));
  RILL_TRY(rill_kout_need(ctx, RILL_LAYER_NORM_OUT_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LAYER_NORM_OUT_Y, 0, y, &x->dims));
  RILL_TRY(vec(ctx, true, RILL_LAYER_NORM_OUT_MEAN, left, &mean));
  RILL_TRY(vec(ctx, true, RILL_LAYER_NORM_OUT_VARIANCE, left, &var));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, y, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_layer_norm_f32(rill_tensor_ptr(x), scale, bias, rill_tensor_ptr(y), mean, var,
                                                         left, right, ctx->attrs[RILL_LAYER_NORM_ATTR_EPSILON].v.f,
                                                         d->stream),
                                "layer_norm launch");
}

rill_status *rill_cuda_layer_norm_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *dy = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LAYER_NORM_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_LAYER_NORM_GRAD_IN_Y_GRAD, 0, RILL_DTYPE_FP32, &dy));
  rill_cuda_ln_grad p = {.x = rill_tensor_ptr(x), .dy = rill_tensor_ptr(dy),
                         .eps = ctx->attrs[RILL_LAYER_NORM_GRAD_ATTR_EPSILON].v.f};
  RILL_TRY(ln_rows(ctx, x, &p.left, &p.right));
  if (!rill_dims_equal(&dy->dims, &x->dims))
    return rill_kernel_error(ctx, "input Y@GRAD (%s) does not have the shape of X (%s)",
                             rill_kin_name(ctx, RILL_LAYER_NORM_GRAD_IN_Y_GRAD, 0),
                             rill_kin_name(ctx, RILL_LAYER_NORM_GRAD_IN_X, 0));
  float *scale, *mean, *var;
  RILL_TRY(vec(ctx, false, RILL_LAYER_NORM_GRAD_IN_SCALE, p.right, &scale));
  if (!rill_kin(ctx, RILL_LAYER_NORM_GRAD_IN_MEAN, 0) || !rill_kin(ctx, RILL_LAYER_NORM_GRAD_IN_VARIANCE, 0))
    return rill_kernel_error(ctx, "inputs Mean and Variance are required");
  RILL_TRY(vec(ctx, false, RILL_LAYER_NORM_GRAD_IN_MEAN, p.left, &mean));
  RILL_TRY(vec(ctx, false, RILL_LAYER_NORM_GRAD_IN_VARIANCE, p.left, &var));
  p.scale = scale;
  p.mean = mean;
  p.var = var;
  if (rill_kout(ctx, RILL_LAYER_NORM_GRAD_OUT_X_GRAD, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_LAYER_NORM_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_LAYER_NORM_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
    p.dx = rill_tensor_ptr(dx);
  }
  RILL_TRY(vec(ctx, true, RILL_LAYER_NORM_GRAD_OUT_SCALE_GRAD, p.right, &p.dscale));
  RILL_TRY(vec(ctx, true, RILL_LAYER_NORM_GRAD_OUT_BIAS_GRAD, p.right, &p.dbias));
  if (!p.dx && !p.dscale && !p.dbias) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, x, &d));
  cudaError_t e = cudaSuccess;
  if (p.left == 0) { /* no rows: the sums are zeros */
    if (p.dscale) e = cudaMemsetAsync(p.dscale, 0, (size_t)p.right * sizeof(float), d->stream);
    if (e == cudaSuccess && p.dbias) e = cudaMemsetAsync(p.dbias, 0, (size_t)p.right * sizeof(float), d->stream);
  }
  if (e == cudaSuccess) e = rill_cuda_layer_norm_grad_f32(&p, d->stream);
  return rill_cuda_kernel_check(ctx, e, "layer_norm_grad launch");
}

rill_status *rill_cuda_group_norm_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *y = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_GROUP_NORM_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_GROUP_NORM_OUT_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_GROUP_NORM_OUT_Y, 0, y, &x->dims));
  const char *layout = ctx->attrs[RILL_GROUP_NORM_ATTR_DATA_LAYOUT].v.s;
  bool nhwc = layout && (strcmp(layout, "NHWC") == 0 || strcmp(layout, "NDHWC") == 0);
  const rill_dims *d = &x->dims;
  int64_t g = ctx->attrs[RILL_GROUP_NORM_ATTR_GROUPS].v.i;
  if (d->n < 2 || g < 1)
    return rill_kernel_error(ctx, "input X (%s) must have rank >= 2 and groups >= 1",
                             rill_kin_name(ctx, RILL_GROUP_NORM_IN_X, 0));
  rill_cuda_gn p = {.x = rill_tensor_ptr(x), .y = rill_tensor_ptr(y), .n = d->d[0], .g = g, .nhwc = nhwc,
                    .eps = ctx->attrs[RILL_GROUP_NORM_ATTR_EPSILON].v.f};
  p.c = nhwc ? d->d[d->n - 1] : d->d[1];
  p.s = nhwc ? rill_dims_prod(d, 1, d->n - 1) : rill_dims_prod(d, 2, d->n);
  if (p.c % g)
    return rill_kernel_error(ctx, "input X (%s) has %lld channels, which groups %lld does not divide",
                             rill_kin_name(ctx, RILL_GROUP_NORM_IN_X, 0), (long long)p.c, (long long)g);
  float *scale, *bias;
  RILL_TRY(vec(ctx, false, RILL_GROUP_NORM_IN_SCALE, p.c, &scale));
  RILL_TRY(vec(ctx, false, RILL_GROUP_NORM_IN_BIAS, p.c, &bias));
  RILL_TRY(vec(ctx, true, RILL_GROUP_NORM_OUT_MEAN, p.n * g, &p.mean));
  RILL_TRY(vec(ctx, true, RILL_GROUP_NORM_OUT_VARIANCE, p.n * g, &p.var));
  p.scale = scale;
  p.bias = bias;
  rill_cuda_dev *dev = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, y, &dev));
  return rill_cuda_kernel_check(ctx, rill_cuda_group_norm_f32(&p, dev->stream), "group_norm launch");
}

rill_status *rill_cuda_group_norm_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *y = NULL, *dy = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_GROUP_NORM_GRAD_IN_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kin_need(ctx, RILL_GROUP_NORM_GRAD_IN_Y_GRAD, 0, RILL_DTYPE_FP32, &dy));
  const char *layout = ctx->attrs[RILL_GROUP_NORM_GRAD_ATTR_DATA_LAYOUT].v.s;
  bool nhwc = layout && (strcmp(layout, "NHWC") == 0 || strcmp(layout, "NDHWC") == 0);
  const rill_dims *d = &y->dims;
  int64_t g = ctx->attrs[RILL_GROUP_NORM_GRAD_ATTR_GROUPS].v.i;
  if (d->n < 2 || g < 1)
    return rill_kernel_error(ctx, "input Y (%s) must have rank >= 2 and groups >= 1",
                             rill_kin_name(ctx, RILL_GROUP_NORM_GRAD_IN_Y, 0));
  rill_cuda_gn_grad p = {.y = rill_tensor_ptr(y), .dy = rill_tensor_ptr(dy), .n = d->d[0], .g = g, .nhwc = nhwc,
                         .eps = ctx->attrs[RILL_GROUP_NORM_GRAD_ATTR_EPSILON].v.f};
  p.c = nhwc ? d->d[d->n - 1] : d->d[1];
  p.s = nhwc ? rill_dims_prod(d, 1, d->n - 1) : rill_dims_prod(d, 2, d->n);
  if (p.c % g || !rill_dims_equal(&dy->dims, d))
    return rill_kernel_error(ctx, "input Y (%s) with %lld channels does not fit groups %lld and the shape of Y@GRAD",
                             rill_kin_name(ctx, RILL_GROUP_NORM_GRAD_IN_Y, 0), (long long)p.c, (long long)g);
  float *scale, *bias, *var;
  RILL_TRY(vec(ctx, false, RILL_GROUP_NORM_GRAD_IN_SCALE, p.c, &scale));
  RILL_TRY(vec(ctx, false, RILL_GROUP_NORM_GRAD_IN_BIAS, p.c, &bias));
  if (!rill_kin(ctx, RILL_GROUP_NORM_GRAD_IN_VARIANCE, 0)) return rill_kernel_error(ctx, "input Variance is required");
  RILL_TRY(vec(ctx, false, RILL_GROUP_NORM_GRAD_IN_VARIANCE, p.n * g, &var));
  p.scale = scale;
  p.bias = bias;
  p.var = var;
  if (rill_kout(ctx, RILL_GROUP_NORM_GRAD_OUT_X_GRAD, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_GROUP_NORM_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_GROUP_NORM_GRAD_OUT_X_GRAD, 0, dx, d));
    p.dx = rill_tensor_ptr(dx);
  }
  RILL_TRY(vec(ctx, true, RILL_GROUP_NORM_GRAD_OUT_SCALE_GRAD, p.c, &p.dscale));
  RILL_TRY(vec(ctx, true, RILL_GROUP_NORM_GRAD_OUT_BIAS_GRAD, p.c, &p.dbias));
  if (!p.dx && !p.dscale && !p.dbias) return NULL;
  rill_cuda_dev *dev = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, y, &dev));
  return rill_cuda_kernel_check(ctx, rill_cuda_group_norm_grad_f32(&p, dev->stream), "group_norm_grad launch");
}
