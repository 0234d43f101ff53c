/* cross_entropy and cross_entropy_grad CUDA kernels, float32, the class dim last: soft
 * labels, or hard ones (int64 or int32) with ignore_index. A hard label outside the
 * classes is an error naming the variable, the position and the value, as on the CPU:
 * the device kernel marks the first bad row, and the check reads that mark back, which
 * waits for the device's queue to reach this op. */
#include "kernels/cuda/cuda.h"

_Static_assert(RILL_SAME_POS(RILL_CROSS_ENTROPY_GRAD_IN_LABEL, RILL_CROSS_ENTROPY_IN_LABEL) &&
                   RILL_SAME_POS(RILL_CROSS_ENTROPY_GRAD_ATTR_SOFT_LABEL, RILL_CROSS_ENTROPY_ATTR_SOFT_LABEL) &&
                   RILL_SAME_POS(RILL_CROSS_ENTROPY_GRAD_ATTR_IGNORE_INDEX, RILL_CROSS_ENTROPY_ATTR_IGNORE_INDEX),
               "cross_entropy and its gradient share the Label slot and the attributes");

/* X, Label and the rows x classes view, as the CPU kernel checks them. */
static rill_status *ce_setup(rill_kernel_ctx *ctx, rill_cuda_ce *p, rill_tensor **x, rill_dims *loss_dims) {
  RILL_TRY(rill_kin_need(ctx, RILL_CROSS_ENTROPY_IN_X, 0, RILL_DTYPE_FP32, x));
  const rill_dims *xd = &(*x)->dims;
  if (xd->n < 1) return rill_kernel_error(ctx, "input X (%s) has rank 0", rill_kin_name(ctx, 0, 0));
  *p = (rill_cuda_ce){.x = rill_tensor_ptr(*x), .n = xd->d[xd->n - 1],
                      .ignore_index = ctx->attrs[RILL_CROSS_ENTROPY_ATTR_IGNORE_INDEX].v.i};
  p->rows = rill_dims_prod(xd, 0, xd->n - 1);
  size_t ls = RILL_CROSS_ENTROPY_IN_LABEL;
  rill_tensor *lt = rill_kin(ctx, ls, 0);
  if (!lt || !rill_tensor_is_set(lt))
    return rill_kernel_error(ctx, "input Label (%s) is missing or holds no data", rill_kin_name(ctx, ls, 0));
  if (ctx->attrs[RILL_CROSS_ENTROPY_ATTR_SOFT_LABEL].v.b) {
    if (lt->dtype != RILL_DTYPE_FP32 || !rill_dims_equal(&lt->dims, xd)) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx, "input Label (%s) is %s of shape %s; soft labels need float32 of shape %s",
                               rill_kin_name(ctx, ls, 0), rill_dtype_name(lt->dtype),
                               rill_dims_str(&lt->dims, a, sizeof a), rill_dims_str(xd, b, sizeof b));
    }
    p->soft = rill_tensor_ptr(lt);
  } else {
    if (lt->dtype != RILL_DTYPE_INT64 && lt->dtype != RILL_DTYPE_INT32)
      return rill_kernel_error(ctx, "input Label (%s) is %s; hard labels are int64 or int32", rill_kin_name(ctx, ls, 0),
                               rill_dtype_name(lt->dtype));
    if (rill_tensor_numel(lt) != p->rows)
      return rill_kernel_error(ctx, "input Label (%s) has %lld labels, expected %lld", rill_kin_name(ctx, ls, 0),
                               (long long)rill_tensor_numel(lt), (long long)p->rows);
    p->labels = rill_tensor_ptr(lt);
    p->labels_i64 = lt->dtype == RILL_DTYPE_INT64;
  }
  *loss_dims = lt->dims;
  if (loss_dims->n == xd->n) loss_dims->d[loss_dims->n - 1] = 1;
  return NULL;
}

/* Runs `launch` with a fresh bad-row mark for hard labels, then reads the mark back and
 * names the first bad label. */
typedef cudaError_t (*ce_launch)(const rill_cuda_ce *p, void *arg, cudaStream_t s);

static rill_status *run_checked(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_cuda_ce *p, ce_launch launch, void *arg) {
  if (p->soft) return rill_cuda_kernel_check(ctx, launch(p, arg, d->stream), "cross_entropy launch");
  if (!(p->bad = rill_cuda_mem_alloc(d, sizeof *p->bad)))
    return rill_kernel_error(ctx, "out of device memory for the label check");
  unsigned long long bad = ~0ull;
  cudaError_t e = cudaMemsetAsync(p->bad, 0xff, sizeof *p->bad, d->stream);
  if (e == cudaSuccess) e = launch(p, arg, d->stream);
  if (e == cudaSuccess) e = cudaMemcpyAsync(&bad, p->bad, sizeof bad, cudaMemcpyDeviceToHost, d->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
  int64_t label = 0;
  size_t es = p->labels_i64 ? sizeof(int64_t) : sizeof(int32_t);
  if (e == cudaSuccess && bad != ~0ull) {
    int32_t l32 = 0;
    e = cudaMemcpyAsync(p->labels_i64 ? (void *)&label : (void *)&l32, (const uint8_t *)p->labels + bad * es, es,
                        cudaMemcpyDeviceToHost, d->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
    if (!p->labels_i64) label = l32;
  }
  rill_cuda_mem_free(d, p->bad);
  p->bad = NULL;
  RILL_TRY(rill_cuda_kernel_check(ctx, e, "cross_entropy launch"));
  if (bad == ~0ull) return NULL;
  return rill_kernel_error(ctx, "input Label (%s) holds %lld at position %llu, outside [0, %lld) and not ignore_index %lld",
                           rill_kin_name(ctx, RILL_CROSS_ENTROPY_IN_LABEL, 0), (long long)label, bad, (long long)p->n,
                           (long long)p->ignore_index);
}

static cudaError_t launch_forward(const rill_cuda_ce *p, void *loss, cudaStream_t s) {
  return rill_cuda_cross_entropy_f32(p, loss, s);
}

rill_status *rill_cuda_cross_entropy_fp32(rill_kernel_ctx *ctx) {
  rill_cuda_ce p;
  rill_tensor *x = NULL, *y = NULL;
  rill_dims yd;
  RILL_TRY(ce_setup(ctx, &p, &x, &yd));
  RILL_TRY(rill_kout_need(ctx, RILL_CROSS_ENTROPY_OUT_Y, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CROSS_ENTROPY_OUT_Y, 0, y, &yd));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, y, &d));
  return run_checked(ctx, d, &p, launch_forward, rill_tensor_ptr(y));
}

typedef struct grad_args {
  const float *dy;
  float *dx;
} grad_args;

static cudaError_t launch_backward(const rill_cuda_ce *p, void *arg, cudaStream_t s) {
  grad_args *g = arg;
  return rill_cuda_cross_entropy_grad_f32(p, g->dy, g->dx, s);
}

rill_status *rill_cuda_cross_entropy_grad_fp32(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, RILL_CROSS_ENTROPY_GRAD_OUT_X_GRAD, 0)) return NULL; /* X@GRAD not wanted */
  rill_cuda_ce p;
  rill_tensor *x = NULL, *dy = NULL, *dx = NULL;
  rill_dims yd;
  RILL_TRY(ce_setup(ctx, &p, &x, &yd));
  RILL_TRY(rill_kin_need(ctx, RILL_CROSS_ENTROPY_GRAD_IN_Y_GRAD, 0, RILL_DTYPE_FP32, &dy));
  if (rill_tensor_numel(dy) != p.rows)
    return rill_kernel_error(ctx, "input Y@GRAD (%s) has %lld elements, the loss has %lld",
                             rill_kin_name(ctx, RILL_CROSS_ENTROPY_GRAD_IN_Y_GRAD, 0), (long long)rill_tensor_numel(dy),
                             (long long)p.rows);
  RILL_TRY(rill_kout_need(ctx, RILL_CROSS_ENTROPY_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CROSS_ENTROPY_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  grad_args a = {rill_tensor_ptr(dy), rill_tensor_ptr(dx)};
  return run_checked(ctx, d, &p, launch_backward, &a);
}
