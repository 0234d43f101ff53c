/* reduce_sum and reduce_mean CUDA kernels, float32, over any dims (Paddle's `dim`,
 * `keep_dim` and `reduce_all`), and their gradients; then reduce_max, _min, _prod, _all
 * and _any, and the first three's gradients. The walk is the CPU's
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

/* A reduction's X (of dtype dt; RILL_KERNEL_ANY_DTYPE: whatever it holds) and Out of
 * X's dtype and the walk's shape, the walk and the device. */
static rill_status *forward_setup(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x, rill_tensor **out,
                                  rill_cuda_reduce *r, rill_cuda_dev **d) {
  *x = rill_kin(ctx, RILL_REDUCE_SUM_IN_X, 0);
  if (dt != RILL_KERNEL_ANY_DTYPE) RILL_TRY(rill_kin_need(ctx, RILL_REDUCE_SUM_IN_X, 0, dt, x));
  if (!*x || !rill_tensor_is_set(*x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, RILL_REDUCE_SUM_IN_X, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_REDUCE_SUM_OUT_OUT, 0, (*x)->dtype, out));
  rill_reduce_plan p;
  RILL_TRY(plan(ctx, *x, &p, r));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_REDUCE_SUM_OUT_OUT, 0, *out, &p.out));
  return rill_cuda_kernel_dev(ctx, *out, d);
}

static rill_status *reduce(rill_kernel_ctx *ctx, bool mean) {
  rill_tensor *x = NULL, *out = NULL;
  rill_cuda_reduce r;
  rill_cuda_dev *d = NULL;
  RILL_TRY(forward_setup(ctx, RILL_DTYPE_FP32, &x, &out, &r, &d));
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

/* reduce_max, _min and _prod (float32, float64, int32, int64), reduce_all and _any
 * (bool): the CPU's folds (launch.h, rill_cuda_reduce_fold), on the same walk. */
#define SAME_WALK_ATTRS(OP)                                                                      \
  (RILL_SAME_POS(RILL_##OP##_ATTR_DIM, RILL_REDUCE_SUM_ATTR_DIM) &&                              \
   RILL_SAME_POS(RILL_##OP##_ATTR_KEEP_DIM, RILL_REDUCE_SUM_ATTR_KEEP_DIM) &&                    \
   RILL_SAME_POS(RILL_##OP##_ATTR_REDUCE_ALL, RILL_REDUCE_SUM_ATTR_REDUCE_ALL))
#define SAME_ATTRS(OP) \
  (SAME_WALK_ATTRS(OP) && RILL_SAME_POS(RILL_##OP##_IN_X, RILL_REDUCE_SUM_IN_X) && \
   RILL_SAME_POS(RILL_##OP##_OUT_OUT, RILL_REDUCE_SUM_OUT_OUT))
_Static_assert(SAME_ATTRS(REDUCE_MAX) && SAME_ATTRS(REDUCE_MIN) && SAME_ATTRS(REDUCE_PROD) && SAME_ATTRS(REDUCE_ALL) &&
                   SAME_ATTRS(REDUCE_ANY),
               "the reductions keep their attributes and slots at reduce_sum's positions");

static rill_status *reduce_fold(rill_kernel_ctx *ctx, int op) {
  rill_tensor *x = NULL, *out = NULL;
  rill_cuda_reduce r;
  rill_cuda_dev *d = NULL;
  RILL_TRY(forward_setup(ctx, RILL_KERNEL_ANY_DTYPE, &x, &out, &r, &d));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_reduce_fold(rill_tensor_ptr(x), rill_tensor_ptr(out), (int)x->dtype, op, &r, d->stream),
      "reduce launch");
}

rill_status *rill_cuda_reduce_max_kernel(rill_kernel_ctx *ctx) { return reduce_fold(ctx, RILL_CUDA_FOLD_MAX); }
rill_status *rill_cuda_reduce_min_kernel(rill_kernel_ctx *ctx) { return reduce_fold(ctx, RILL_CUDA_FOLD_MIN); }
rill_status *rill_cuda_reduce_prod_kernel(rill_kernel_ctx *ctx) { return reduce_fold(ctx, RILL_CUDA_FOLD_PROD); }
rill_status *rill_cuda_reduce_all_bool(rill_kernel_ctx *ctx) { return reduce_fold(ctx, RILL_CUDA_FOLD_ALL); }
rill_status *rill_cuda_reduce_any_bool(rill_kernel_ctx *ctx) { return reduce_fold(ctx, RILL_CUDA_FOLD_ANY); }

/* Their gradients read X, the forward Out and Out@GRAD. */
#define SAME_GRAD_SLOTS(OP)                                                                            \
  (SAME_WALK_ATTRS(OP##_GRAD) && RILL_SAME_POS(RILL_##OP##_GRAD_IN_X, RILL_REDUCE_MAX_GRAD_IN_X) &&      \
   RILL_SAME_POS(RILL_##OP##_GRAD_IN_OUT, RILL_REDUCE_MAX_GRAD_IN_OUT) &&                               \
   RILL_SAME_POS(RILL_##OP##_GRAD_IN_OUT_GRAD, RILL_REDUCE_MAX_GRAD_IN_OUT_GRAD))
_Static_assert(SAME_GRAD_SLOTS(REDUCE_MAX) && SAME_GRAD_SLOTS(REDUCE_MIN) && SAME_GRAD_SLOTS(REDUCE_PROD),
               "the fold gradients keep their slots and attributes at one position");

static rill_status *reduce_out_grad(rill_kernel_ctx *ctx, bool prod) {
  if (!rill_kout(ctx, RILL_REDUCE_MAX_GRAD_OUT_X_GRAD, 0)) return NULL; /* X@GRAD not wanted */
  rill_tensor *x = NULL, *y = NULL, *g = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_REDUCE_MAX_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_REDUCE_MAX_GRAD_IN_OUT, 0, RILL_DTYPE_FP32, &y));
  RILL_TRY(rill_kin_need(ctx, RILL_REDUCE_MAX_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_REDUCE_MAX_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  rill_reduce_plan p;
  rill_cuda_reduce r;
  RILL_TRY(plan(ctx, x, &p, &r));
  const size_t slots[] = {RILL_REDUCE_MAX_GRAD_IN_OUT, RILL_REDUCE_MAX_GRAD_IN_OUT_GRAD};
  const rill_tensor *ts[] = {y, g};
  for (int i = 0; i < 2; i++)
    if (rill_tensor_numel(ts[i]) != p.onumel)
      return rill_kernel_error(ctx, "input %s (%s) holds %lld elements, the forward Out %lld",
                               ctx->schema->inputs[slots[i]].name, rill_kin_name(ctx, slots[i], 0),
                               (long long)rill_tensor_numel(ts[i]), (long long)p.onumel);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_REDUCE_MAX_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_reduce_out_grad_f32(rill_tensor_ptr(x), rill_tensor_ptr(y), rill_tensor_ptr(g),
                                                              rill_tensor_ptr(dx), &r, prod, d->stream),
                                "reduce gradient launch");
}

rill_status *rill_cuda_reduce_max_grad_fp32(rill_kernel_ctx *ctx) { return reduce_out_grad(ctx, false); }
rill_status *rill_cuda_reduce_min_grad_fp32(rill_kernel_ctx *ctx) { return reduce_out_grad(ctx, false); }
rill_status *rill_cuda_reduce_prod_grad_fp32(rill_kernel_ctx *ctx) { return reduce_out_grad(ctx, true); }
