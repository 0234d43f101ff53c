/* cross_entropy (the class dim last), softmax_with_cross_entropy (any class axis) and
 * sigmoid_cross_entropy_with_logits CUDA kernels and their gradients, float32: soft labels, or hard ones (int64 or int32)
 * with ignore_index. A hard label outside the classes is an error naming the variable,
 * the position and the value, as on the CPU: the device kernel marks the first bad row,
 * and the check reads that mark back, which waits for the device's queue to reach this
 * op. */
#include "kernels/cuda/cuda.h"

_Static_assert(RILL_SAME_POS(RILL_CROSS_ENTROPY_GRAD_IN_LABEL, RILL_CROSS_ENTROPY_IN_LABEL) &&
                   RILL_SAME_POS(RILL_CROSS_ENTROPY_GRAD_ATTR_SOFT_LABEL, RILL_CROSS_ENTROPY_ATTR_SOFT_LABEL) &&
                   RILL_SAME_POS(RILL_CROSS_ENTROPY_GRAD_ATTR_IGNORE_INDEX, RILL_CROSS_ENTROPY_ATTR_IGNORE_INDEX),
               "cross_entropy and its gradient share the Label slot and the attributes");

/* Input `ls` as the labels of X (dims xd, `rows` rows): soft ones (float32 of X's shape)
 * into *soft, or hard ones (int64 or int32, one a row) into *labels and *i64, checked as
 * the CPU kernels check them. */
static rill_status *label_input(rill_kernel_ctx *ctx, size_t ls, bool want_soft, const rill_dims *xd, int64_t rows,
                                const float **soft, const void **labels, bool *i64) {
  rill_tensor *lt = rill_kin(ctx, ls, 0);
  if (!lt || !rill_tensor_is_set(lt))
    return rill_kernel_error(ctx, "input Label (%s) is missing or holds no data", rill_kin_name(ctx, ls, 0));
  if (want_soft) {
    if (lt->dtype != RILL_DTYPE_FP32 || !rill_dims_equal(&lt->dims, xd)) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx, "input Label (%s) is %s of shape %s; soft labels need float32 of shape %s",
                               rill_kin_name(ctx, ls, 0), rill_dtype_name(lt->dtype),
                               rill_dims_str(&lt->dims, a, sizeof a), rill_dims_str(xd, b, sizeof b));
    }
    *soft = rill_tensor_ptr(lt);
    return NULL;
  }
  if (lt->dtype != RILL_DTYPE_INT64 && lt->dtype != RILL_DTYPE_INT32)
    return rill_kernel_error(ctx, "input Label (%s) is %s; hard labels are int64 or int32", rill_kin_name(ctx, ls, 0),
                             rill_dtype_name(lt->dtype));
  if (rill_tensor_numel(lt) != rows)
    return rill_kernel_error(ctx, "input Label (%s) has %lld labels, expected %lld", rill_kin_name(ctx, ls, 0),
                             (long long)rill_tensor_numel(lt), (long long)rows);
  *labels = rill_tensor_ptr(lt);
  *i64 = lt->dtype == RILL_DTYPE_INT64;
  return NULL;
}

/* X, Label and the rows x classes view, as the CPU kernel checks them. */
static rill_status *ce_setup(rill_kernel_ctx *ctx, rill_cuda_ce *p, rill_tensor **x, rill_dims *loss_dims) {
  RILL_TRY(rill_kin_need(ctx, RILL_CROSS_ENTROPY_IN_X, 0, RILL_DTYPE_FP32, x));
  const rill_dims *xd = &(*x)->dims;
  if (xd->n < 1) return rill_kernel_error(ctx, "input X (%s) has rank 0", rill_kin_name(ctx, 0, 0));
  *p = (rill_cuda_ce){.x = rill_tensor_ptr(*x), .n = xd->d[xd->n - 1],
                      .ignore_index = ctx->attrs[RILL_CROSS_ENTROPY_ATTR_IGNORE_INDEX].v.i};
  p->rows = rill_dims_prod(xd, 0, xd->n - 1);
  size_t ls = RILL_CROSS_ENTROPY_IN_LABEL;
  RILL_TRY(label_input(ctx, ls, ctx->attrs[RILL_CROSS_ENTROPY_ATTR_SOFT_LABEL].v.b, xd, p->rows, &p->soft, &p->labels,
                       &p->labels_i64));
  *loss_dims = rill_kin(ctx, ls, 0)->dims;
  if (loss_dims->n == xd->n) loss_dims->d[loss_dims->n - 1] = 1;
  return NULL;
}

/* The hard labels being checked: where they are, the class count, and the mark the
 * launch fills (the kernels' *bad). */
typedef struct label_check {
  const void *labels;
  bool i64;
  int64_t n, ignore_index;
  size_t slot; /* the Label input, for the message */
  unsigned long long **bad;
} label_check;

/* Runs `launch` (with `arg`) with a fresh bad-row mark, then reads the mark back and
 * names the first bad label; with lc NULL (soft labels) just launches. */
typedef cudaError_t (*ce_launch)(void *arg, cudaStream_t s);

static rill_status *run_checked(rill_kernel_ctx *ctx, rill_cuda_dev *d, const label_check *lc, ce_launch launch,
                                void *arg) {
  if (!lc) return rill_cuda_kernel_check(ctx, launch(arg, d->stream), "cross entropy launch");
  unsigned long long *mark = rill_cuda_mem_alloc(d, sizeof *mark);
  if (!mark) return rill_kernel_error(ctx, "out of device memory for the label check");
  *lc->bad = mark;
  unsigned long long bad = ~0ull;
  cudaError_t e = cudaMemsetAsync(mark, 0xff, sizeof *mark, d->stream);
  if (e == cudaSuccess) e = launch(arg, d->stream);
  if (e == cudaSuccess) e = cudaMemcpyAsync(&bad, mark, sizeof bad, cudaMemcpyDeviceToHost, d->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
  int64_t label = 0;
  size_t es = lc->i64 ? sizeof(int64_t) : sizeof(int32_t);
  if (e == cudaSuccess && bad != ~0ull) {
    int32_t l32 = 0;
    e = cudaMemcpyAsync(lc->i64 ? (void *)&label : (void *)&l32, (const uint8_t *)lc->labels + bad * es, es,
                        cudaMemcpyDeviceToHost, d->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(d->stream);
    if (!lc->i64) label = l32;
  }
  rill_cuda_mem_free(d, mark);
  *lc->bad = NULL;
  RILL_TRY(rill_cuda_kernel_check(ctx, e, "cross entropy launch"));
  if (bad == ~0ull) return NULL;
  return rill_kernel_error(ctx, "input Label (%s) holds %lld at position %llu, outside [0, %lld) and not ignore_index %lld",
                           rill_kin_name(ctx, lc->slot, 0), (long long)label, bad, (long long)lc->n,
                           (long long)lc->ignore_index);
}

/* The check of a cross_entropy's hard labels; NULL for soft ones. */
static const label_check *ce_check(rill_cuda_ce *p, label_check *lc) {
  if (p->soft) return NULL;
  *lc = (label_check){p->labels, p->labels_i64, p->n, p->ignore_index, RILL_CROSS_ENTROPY_IN_LABEL, &p->bad};
  return lc;
}

typedef struct ce_args {
  const rill_cuda_ce *p;
  const float *dy;
  float *out; /* Y, or X@GRAD */
} ce_args;

static cudaError_t launch_forward(void *arg, cudaStream_t s) {
  ce_args *a = arg;
  return rill_cuda_cross_entropy_f32(a->p, a->out, s);
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
  label_check lc;
  ce_args args = {&p, NULL, rill_tensor_ptr(y)};
  return run_checked(ctx, d, ce_check(&p, &lc), launch_forward, &args);
}

static cudaError_t launch_backward(void *arg, cudaStream_t s) {
  ce_args *a = arg;
  return rill_cuda_cross_entropy_grad_f32(a->p, a->dy, a->out, s);
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
  label_check lc;
  ce_args args = {&p, rill_tensor_ptr(dy), rill_tensor_ptr(dx)};
  return run_checked(ctx, d, ce_check(&p, &lc), launch_backward, &args);
}

/* ---- softmax_with_cross_entropy ---- */

_Static_assert(RILL_SAME_POS(RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_ATTR_SOFT_LABEL,
                             RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_SOFT_LABEL) &&
                   RILL_SAME_POS(RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_ATTR_USE_SOFTMAX,
                                 RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_USE_SOFTMAX) &&
                   RILL_SAME_POS(RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_ATTR_IGNORE_INDEX,
                                 RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_IGNORE_INDEX) &&
                   RILL_SAME_POS(RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_ATTR_AXIS, RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_AXIS),
               "softmax_with_cross_entropy and its gradient share their attributes");

/* Logits or Softmax (input xs) viewed as [outer, n, inner] around `axis`, and the labels
 * of input ls, as the CPU kernel checks them. */
static rill_status *swce_setup(rill_kernel_ctx *ctx, size_t xs, size_t ls, rill_cuda_swce *p, rill_tensor **x,
                               label_check *lc, const label_check **check) {
  const rill_attr_value *a = ctx->attrs;
  RILL_TRY(rill_kin_need(ctx, xs, 0, RILL_DTYPE_FP32, x));
  const rill_dims *xd = &(*x)->dims;
  int r = xd->n;
  int64_t axis = a[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_AXIS].v.i;
  if (r < 1 || axis < -r || axis >= r)
    return rill_kernel_error(ctx, "axis %lld is out of range for input %s (%s) of rank %d", (long long)axis,
                             ctx->schema->inputs[xs].name, rill_kin_name(ctx, xs, 0), r);
  if (axis < 0) axis += r;
  *p = (rill_cuda_swce){.x = rill_tensor_ptr(*x), .use_softmax = a[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_USE_SOFTMAX].v.b,
                        .ignore_index = a[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_IGNORE_INDEX].v.i,
                        .outer = rill_dims_prod(xd, 0, (int)axis), .n = xd->d[axis],
                        .inner = rill_dims_prod(xd, (int)axis + 1, r)};
  *check = NULL;
  RILL_TRY(label_input(ctx, ls, a[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_SOFT_LABEL].v.b, xd, p->outer * p->inner,
                       &p->soft, &p->labels, &p->labels_i64));
  if (p->soft) return NULL;
  *lc = (label_check){p->labels, p->labels_i64, p->n, p->ignore_index, ls, &p->bad};
  *check = lc;
  return NULL;
}

typedef struct swce_args {
  const rill_cuda_swce *p;
  const float *g;
  float *a, *b; /* Softmax and Loss, or Logits@GRAD */
} swce_args;

static cudaError_t launch_swce(void *arg, cudaStream_t s) {
  swce_args *a = arg;
  return rill_cuda_swce_f32(a->p, a->a, a->b, s);
}

static cudaError_t launch_swce_grad(void *arg, cudaStream_t s) {
  swce_args *a = arg;
  return rill_cuda_swce_grad_f32(a->p, a->g, a->a, s);
}

rill_status *rill_cuda_softmax_with_cross_entropy_fp32(rill_kernel_ctx *ctx) {
  rill_cuda_swce p;
  rill_tensor *x = NULL, *sm = NULL, *loss = NULL;
  label_check lc;
  const label_check *check;
  RILL_TRY(swce_setup(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_IN_LOGITS, RILL_SOFTMAX_WITH_CROSS_ENTROPY_IN_LABEL, &p, &x,
                      &lc, &check));
  RILL_TRY(rill_kout_need(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_OUT_SOFTMAX, 0, RILL_DTYPE_FP32, &sm));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_OUT_SOFTMAX, 0, sm, &x->dims));
  /* Loss: X's dims with the class axis 1 (the axis was checked by swce_setup) */
  rill_dims ld = x->dims;
  int64_t axis = ctx->attrs[RILL_SOFTMAX_WITH_CROSS_ENTROPY_ATTR_AXIS].v.i;
  ld.d[axis < 0 ? axis + ld.n : axis] = 1;
  RILL_TRY(rill_kout_need(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_OUT_LOSS, 0, RILL_DTYPE_FP32, &loss));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_OUT_LOSS, 0, loss, &ld));
  if (p.outer * p.n * p.inner == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, sm, &d));
  swce_args args = {&p, NULL, rill_tensor_ptr(sm), rill_tensor_ptr(loss)};
  return run_checked(ctx, d, check, launch_swce, &args);
}

rill_status *rill_cuda_softmax_with_cross_entropy_grad_fp32(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_OUT_LOGITS_GRAD, 0)) return NULL; /* not wanted */
  rill_cuda_swce p;
  rill_tensor *y = NULL, *g = NULL, *dx = NULL;
  label_check lc;
  const label_check *check;
  RILL_TRY(swce_setup(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_IN_SOFTMAX, RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_IN_LABEL,
                      &p, &y, &lc, &check));
  RILL_TRY(rill_kin_need(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_IN_LOSS_GRAD, 0, RILL_DTYPE_FP32, &g));
  if (rill_tensor_numel(g) != p.outer * p.inner)
    return rill_kernel_error(ctx, "input Loss@GRAD (%s) has %lld elements, the loss has %lld",
                             rill_kin_name(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_IN_LOSS_GRAD, 0),
                             (long long)rill_tensor_numel(g), (long long)(p.outer * p.inner));
  RILL_TRY(rill_kout_need(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_OUT_LOGITS_GRAD, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SOFTMAX_WITH_CROSS_ENTROPY_GRAD_OUT_LOGITS_GRAD, 0, dx, &y->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  swce_args args = {&p, rill_tensor_ptr(g), rill_tensor_ptr(dx), NULL};
  return run_checked(ctx, d, check, launch_swce_grad, &args);
}

/* ---- sigmoid_cross_entropy_with_logits ---- */

_Static_assert(RILL_SAME_POS(RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_GRAD_IN_X, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_IN_X) &&
                   RILL_SAME_POS(RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_GRAD_IN_LABEL,
                                 RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_IN_LABEL) &&
                   RILL_SAME_POS(RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_GRAD_ATTR_IGNORE_INDEX,
                                 RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_ATTR_IGNORE_INDEX) &&
                   RILL_SAME_POS(RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_GRAD_ATTR_NORMALIZE,
                                 RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_ATTR_NORMALIZE),
               "sigmoid_cross_entropy_with_logits and its gradient read X, Label and the attributes alike");

/* The forward (dout NULL) or the gradient into out, element by element on the device;
 * normalize's count made there too, into a one-float scratch. */
static rill_status *sce_run(rill_kernel_ctx *ctx, const rill_tensor *dout, rill_tensor *out) {
  rill_tensor *x = NULL, *l = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_IN_LABEL, 0, RILL_DTYPE_FP32, &l));
  int64_t n = rill_tensor_numel(x);
  if (rill_tensor_numel(l) != n) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input Label (%s) has shape %s, input X (%s) %s",
                             rill_kin_name(ctx, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_IN_LABEL, 0),
                             rill_dims_str(&l->dims, a, sizeof a),
                             rill_kin_name(ctx, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_IN_X, 0),
                             rill_dims_str(&x->dims, b, sizeof b));
  }
  if (dout && rill_tensor_numel(dout) != n)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) holds %lld elements, X (%s) %lld",
                             rill_kin_name(ctx, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_GRAD_IN_OUT_GRAD, 0),
                             (long long)rill_tensor_numel(dout),
                             rill_kin_name(ctx, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_IN_X, 0), (long long)n);
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  float *norm = NULL;
  if (ctx->attrs[RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_ATTR_NORMALIZE].v.b && n &&
      !(norm = rill_cuda_mem_alloc(d, sizeof *norm)))
    return rill_kernel_error(ctx, "out of device memory for normalize's count");
  cudaError_t e = rill_cuda_sce_f32(rill_tensor_ptr(x), rill_tensor_ptr(l), dout ? rill_tensor_ptr(dout) : NULL,
                                    rill_tensor_ptr(out), n,
                                    ctx->attrs[RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_ATTR_IGNORE_INDEX].v.i, norm,
                                    d->stream);
  rill_cuda_mem_free(d, norm); /* queued behind the launch */
  return rill_cuda_kernel_check(ctx, e, dout ? "sigmoid cross entropy gradient launch" : "sigmoid cross entropy launch");
}

rill_status *rill_cuda_sigmoid_cross_entropy_with_logits_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *out = NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  return sce_run(ctx, NULL, out);
}

rill_status *rill_cuda_sigmoid_cross_entropy_with_logits_grad_fp32(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_GRAD_OUT_X_GRAD, 0)) return NULL; /* not wanted */
  rill_tensor *g = NULL, *dx = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_SIGMOID_CROSS_ENTROPY_WITH_LOGITS_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  return sce_run(ctx, g, dx);
}
