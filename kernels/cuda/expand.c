/* expand (Fluid 1.x's tiling), expand_as and their gradients, CUDA kernels: each dim d
 * of Out (X's extent x_d times t_d, the executor sized it) is walked as two, t_d
 * repeats of stride 0 outside x_d elements of X's stride; the forward gathers that walk
 * (every dtype, device/transpose.cu), the gradient sums Out@GRAD over the repeats into
 * X@GRAD (float32, in double, one block an element of X: device/reduce.cu). */
#include "kernels/cuda/cuda.h"

_Static_assert(RILL_SAME_POS(RILL_EXPAND_AS_IN_X, RILL_EXPAND_IN_X) &&
                   RILL_SAME_POS(RILL_EXPAND_AS_OUT_OUT, RILL_EXPAND_OUT_OUT) &&
                   RILL_SAME_POS(RILL_EXPAND_AS_GRAD_IN_OUT_GRAD, RILL_EXPAND_GRAD_IN_OUT_GRAD) &&
                   RILL_SAME_POS(RILL_EXPAND_AS_GRAD_OUT_X_GRAD, RILL_EXPAND_GRAD_OUT_X_GRAD),
               "expand_as and its gradient run expand's kernels: their slots must agree");

/* The repeats t_d = big_d / small_d, checked: same rank, each extent a whole multiple. */
static rill_status *tile_times(rill_kernel_ctx *ctx, const rill_tensor *small, const char *sn, const rill_tensor *big,
                               const char *bn, int64_t *times) {
  if (small->dims.n != big->dims.n)
    return rill_kernel_error(ctx, "%s has rank %d but %s has rank %d", bn, big->dims.n, sn, small->dims.n);
  for (int i = 0; i < small->dims.n; i++) {
    int64_t s = small->dims.d[i], b = big->dims.d[i];
    if (s == 0 ? b != 0 : b % s != 0)
      return rill_kernel_error(ctx, "%s extent %lld at dim %d is not a multiple of %s's %lld", bn, (long long)b, i,
                               sn, (long long)s);
    times[i] = s ? b / s : 1;
  }
  return NULL;
}

rill_status *rill_cuda_expand_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_EXPAND_IN_X, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) holds no data", rill_kin_name(ctx, RILL_EXPAND_IN_X, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_EXPAND_OUT_OUT, 0, x->dtype, &out));
  int64_t times[RILL_MAX_DIMS], strides[RILL_MAX_DIMS];
  RILL_TRY(tile_times(ctx, x, "input X", out, "output Out", times));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_strides(&x->dims, strides);
  rill_cuda_perm p = {.numel = rill_tensor_numel(out)};
  for (int i = 0; i < x->dims.n; i++)
    if (!rill_cuda_walk_add(&p, times[i], 0) || !rill_cuda_walk_add(&p, x->dims.d[i], strides[i]))
      return rill_kernel_error(ctx, "tiling input X (%s) needs more than %d strided dims",
                               rill_kin_name(ctx, RILL_EXPAND_IN_X, 0), RILL_CUDA_BCAST_DIMS);
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_permute(rill_tensor_ptr(x), rill_tensor_ptr(out), &p, rill_dtype_size(x->dtype), d->stream),
      "expand launch");
}

/* Appends a run of Out@GRAD's walk: `extent` elements, summed over (reduced) or kept;
 * consecutive runs of one kind merge. */
static bool run_add(rill_cuda_reduce *r, int64_t extent, bool reduced) {
  if (extent == 1) return true;
  if (r->n > 0 && (r->os[r->n - 1] == 0) == reduced) {
    r->dims[r->n - 1] *= extent;
    return true;
  }
  if (r->n == RILL_CUDA_BCAST_DIMS) return false;
  r->dims[r->n] = extent;
  r->os[r->n++] = reduced ? 0 : 1;
  return true;
}

rill_status *rill_cuda_expand_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *g = NULL, *dx = rill_kout(ctx, RILL_EXPAND_GRAD_OUT_X_GRAD, 0);
  if (!dx) return NULL; /* not wanted */
  RILL_TRY(rill_kin_need(ctx, RILL_EXPAND_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_EXPAND_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  int64_t times[RILL_MAX_DIMS];
  RILL_TRY(tile_times(ctx, dx, "output X@GRAD", g, "input Out@GRAD", times));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  int64_t nx = rill_tensor_numel(dx), n = rill_tensor_numel(g);
  if (nx == 0) return NULL;
  if (n == 0)
    return rill_cuda_kernel_check(ctx, cudaMemsetAsync(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx), d->stream),
                                  "clearing X@GRAD");
  rill_cuda_reduce r = {.xnumel = n, .onumel = nx, .count = n / nx};
  for (int i = 0; i < dx->dims.n; i++)
    if (!run_add(&r, times[i], true) || !run_add(&r, dx->dims.d[i], false))
      return rill_kernel_error(ctx, "summing input Out@GRAD (%s) needs more than %d runs",
                               rill_kin_name(ctx, RILL_EXPAND_GRAD_IN_OUT_GRAD, 0), RILL_CUDA_BCAST_DIMS);
  return rill_cuda_kernel_check(ctx, rill_cuda_reduce_sum_f32(rill_tensor_ptr(g), rill_tensor_ptr(dx), &r, false,
                                                              d->stream),
                                "expand_grad launch");
}
