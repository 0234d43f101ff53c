/* reduce_sum and reduce_mean CUDA kernels, float32, over any dims (Paddle's `dim`,
 * `keep_dim` and `reduce_all`), and their gradients. The walk is the CPU's
 * (operators/reduce.h): sums in double, one block an output element; the gradient
 * spreads Out@GRAD over X, divided by the count for the mean, as the CPU does. */
#include "kernels/cuda/cuda.h"
#include "operators/reduce.h"

_Static_assert(RILL_SAME_POS(RILL_REDUCE_MEAN_ATTR_DIM, RILL_REDUCE_SUM_ATTR_DIM) &&
                   RILL_SAME_POS(RILL_REDUCE_MEAN_ATTR_KEEP_DIM, RILL_REDUCE_SUM_ATTR_KEEP_DIM) &&
                   RILL_SAME_POS(RILL_REDUCE_MEAN_ATTR_REDUCE_ALL, RILL_REDUCE_SUM_ATTR_REDUCE_ALL) &&
                   RILL_SAME_POS(RILL_REDUCE_MEAN_GRAD_IN_X, RILL_REDUCE_SUM_GRAD_IN_X) &&
                   RILL_SAME_POS(RILL_REDUCE_MEAN_GRAD_IN_OUT_GRAD, RILL_REDUCE_SUM_GRAD_IN_OUT_GRAD),
               "reduce_sum and reduce_mean keep their attributes and slots at one position");

/* The walk over X for the op's attributes, and its device form. */
static rill_status *plan(rill_kernel_ctx *ctx, const rill_tensor *x, rill_reduce_plan *p, rill_cuda_reduce *r) {
  char why[128];
  if (!rill_reduce_plan_make(&x->dims, &ctx->attrs[RILL_REDUCE_SUM_ATTR_DIM],
                             ctx->attrs[RILL_REDUCE_SUM_ATTR_KEEP_DIM].v.b,
                             ctx->attrs[RILL_REDUCE_SUM_ATTR_REDUCE_ALL].v.b, p, why, sizeof why))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), why);
  if (p->n > RILL_CUDA_BCAST_DIMS)
    return rill_kernel_error(ctx, "input X (%s) has more than %d dims", rill_kin_name(ctx, 0, 0),
                             RILL_CUDA_BCAST_DIMS);
  *r = (rill_cuda_reduce){.n = p->n, .xnumel = p->xnumel, .onumel = p->onumel, .count = p->count};
  for (int k = 0; k < p->n; k++) {
    r->dims[k] = p->dims[k];
    r->os[k] = p->os[k];
  }
  return NULL;
}

static rill_status *reduce(rill_kernel_ctx *ctx, bool mean) {
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_REDUCE_SUM_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_REDUCE_SUM_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  rill_reduce_plan p;
  rill_cuda_reduce r;
  RILL_TRY(plan(ctx, x, &p, &r));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_REDUCE_SUM_OUT_OUT, 0, out, &p.out));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_reduce_sum_f32(rill_tensor_ptr(x), rill_tensor_ptr(out), &r, mean, d->stream), "reduce launch");
}

rill_status *rill_cuda_reduce_sum_fp32(rill_kernel_ctx *ctx) { return reduce(ctx, false); }
rill_status *rill_cuda_reduce_mean_fp32(rill_kernel_ctx *ctx) { return reduce(ctx, true); }

static rill_status *reduce_grad(rill_kernel_ctx *ctx, bool mean) {
  if (!rill_kout(ctx, RILL_REDUCE_SUM_GRAD_OUT_X_GRAD, 0)) return NULL; /* X@GRAD not wanted */
  rill_tensor *x = NULL, *g = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_REDUCE_SUM_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_REDUCE_SUM_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_REDUCE_SUM_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  rill_reduce_plan p;
  rill_cuda_reduce r;
  RILL_TRY(plan(ctx, x, &p, &r));
  if (rill_tensor_numel(g) != p.onumel)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) holds %lld elements, the forward Out %lld",
                             rill_kin_name(ctx, RILL_REDUCE_SUM_GRAD_IN_OUT_GRAD, 0), (long long)rill_tensor_numel(g),
                             (long long)p.onumel);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_REDUCE_SUM_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
  float scale = mean && p.count ? 1.0f / (float)p.count : 1.0f;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_reduce_grad_f32(rill_tensor_ptr(g), rill_tensor_ptr(dx), &r, scale, d->stream),
      "reduce gradient launch");
}

rill_status *rill_cuda_reduce_sum_grad_fp32(rill_kernel_ctx *ctx) { return reduce_grad(ctx, false); }
rill_status *rill_cuda_reduce_mean_grad_fp32(rill_kernel_ctx *ctx) { return reduce_grad(ctx, true); }
