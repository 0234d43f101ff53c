/* gather (rows of X's first dim) and its gradient, CUDA kernels, float32 X, int32 or
 * int64 Index ([N] or [N, 1]). As lookup_table's: the indices read back to the host and
 * checked as the CPU checks them, the rows gathered on the device; the gradient zeroes
 * X@GRAD and writes each addressed row from the Out@GRAD rows of its indices
 * (rows.c's groups): with overwrite (Paddle's default) the last of them, as the CPU
 * kernel's copies in order leave it, else their sum in order. */
#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"

_Static_assert(RILL_SAME_POS(RILL_GATHER_GRAD_IN_X, RILL_GATHER_IN_X) &&
                   RILL_SAME_POS(RILL_GATHER_GRAD_IN_INDEX, RILL_GATHER_IN_INDEX),
               "gather and its gradient read X and Index at the same positions");

/* X's rows and their width (elements), and the checked indices on the host. */
static rill_status *gather_rows(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_tensor *x, int64_t *rows,
                                int64_t *width, int64_t **idx, int64_t *n) {
  const rill_tensor *ix = rill_kin(ctx, RILL_GATHER_IN_INDEX, 0);
  if (x->dims.n < 1)
    return rill_kernel_error(ctx, "input X (%s) must have rank >= 1", rill_kin_name(ctx, RILL_GATHER_IN_X, 0));
  if (!ix || (ix->dims.n != 1 && !(ix->dims.n == 2 && ix->dims.d[1] == 1)))
    return rill_kernel_error(ctx, "input Index (%s) must be [N] or [N, 1]", rill_kin_name(ctx, RILL_GATHER_IN_INDEX, 0));
  *rows = x->dims.d[0];
  *width = *rows ? rill_tensor_numel(x) / *rows : 0;
  RILL_TRY(rill_cuda_ids_to_host(ctx, d, RILL_GATHER_IN_INDEX, idx, n));
  rill_status *st = rill_cuda_check_ids(ctx, RILL_GATHER_IN_INDEX, RILL_GATHER_IN_X, *idx, *n, *rows, NULL);
  if (st) {
    rill_free(*idx);
    *idx = NULL;
  }
  return st;
}

rill_status *rill_cuda_gather_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_GATHER_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_GATHER_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  int64_t rows, width, n, *idx;
  RILL_TRY(gather_rows(ctx, d, x, &rows, &width, &idx, &n));
  rill_free(idx);
  if (rill_tensor_numel(out) != n * width)
    return rill_kernel_error(ctx, "output Out (%s) holds %lld elements, expected %lld",
                             rill_kout_name(ctx, RILL_GATHER_OUT_OUT, 0), (long long)rill_tensor_numel(out),
                             (long long)(n * width));
  const rill_tensor *ix = rill_kin(ctx, RILL_GATHER_IN_INDEX, 0);
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_gather_rows_f32(rill_tensor_ptr(x), rill_tensor_ptr(ix),
                                                          ix->dtype == RILL_DTYPE_INT64, n, width, -1,
                                                          rill_tensor_ptr(out), d->stream),
                                "gather launch");
}

rill_status *rill_cuda_gather_grad_fp32(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, RILL_GATHER_GRAD_OUT_X_GRAD, 0)) return NULL; /* not wanted */
  rill_tensor *x = rill_kin(ctx, RILL_GATHER_GRAD_IN_X, 0), *g = NULL, *dx = NULL;
  if (!x) return rill_kernel_error(ctx, "input X (%s) is missing", rill_kin_name(ctx, RILL_GATHER_GRAD_IN_X, 0));
  RILL_TRY(rill_kin_need(ctx, RILL_GATHER_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, RILL_GATHER_GRAD_OUT_X_GRAD, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_GATHER_GRAD_OUT_X_GRAD, 0, dx, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  int64_t rows, width, n, *idx;
  RILL_TRY(gather_rows(ctx, d, x, &rows, &width, &idx, &n));
  rill_status *st = NULL;
  if (rill_tensor_numel(g) != n * width)
    st = rill_kernel_error(ctx, "input Out@GRAD (%s) holds %lld elements, expected %lld",
                           rill_kin_name(ctx, RILL_GATHER_GRAD_IN_OUT_GRAD, 0), (long long)rill_tensor_numel(g),
                           (long long)(n * width));
  /* overwrite: only each row's last index counts; the earlier ones are dropped (-1) */
  int64_t drop = -1;
  if (!st && ctx->attrs[RILL_GATHER_GRAD_ATTR_OVERWRITE].v.b) {
    bool *seen = rill_calloc((size_t)(rows ? rows : 1), sizeof *seen);
    if (!seen) st = rill_oom();
    for (int64_t i = n - 1; !st && i >= 0; i--) {
      if (seen[idx[i]]) idx[i] = drop;
      else seen[idx[i]] = true;
    }
    rill_free(seen);
  }
  rill_cuda_groups grp = {0};
  if (!st) st = rill_cuda_groups_make(ctx, d, idx, n, &drop, &grp);
  rill_free(idx);
  if (st) return st;
  cudaError_t e = rill_tensor_nbytes(dx) ? cudaMemsetAsync(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx), d->stream)
                                         : cudaSuccess;
  if (e == cudaSuccess)
    e = rill_cuda_sum_groups_f32(rill_tensor_ptr(g), grp.dev, grp.ngroups, width, NULL, rill_tensor_ptr(dx), d->stream);
  rill_cuda_groups_free(d, &grp);
  return rill_cuda_kernel_check(ctx, e, "gather gradient launch");
}
