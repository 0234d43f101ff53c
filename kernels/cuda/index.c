/* gather, gather_nd, index_select and index_sample, and their gradients, CUDA kernels.
 * The indices are read back to the host and turned into X's slices by the CPU kernels'
 * own plan (operators/index_plan.h), so both check and address alike, with the same
 * messages; each slice is a row of X viewed as [rows, slice length]. The forwards copy
 * the rows on the device (float32, float64, int32 or int64: a row of 8-byte elements
 * moves as twice as many 4-byte words); the gradients (float32) zero X@GRAD and give
 * each addressed row the sum of its Out@GRAD rows in their order (rows.c's groups), as
 * the CPU adds them, or with gather's overwrite (its default) the last of them, as the
 * CPU's copies in order leave it. */
#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"
#include "operators/index_plan.h"

#define SAME_SLOTS(OP)                                                                         \
  (RILL_##OP##_IN_X == 0 && RILL_##OP##_IN_INDEX == 1 && RILL_##OP##_GRAD_IN_X == 0 &&         \
   RILL_##OP##_GRAD_IN_INDEX == 1 && RILL_##OP##_GRAD_IN_OUT_GRAD == 2 && RILL_##OP##_OUT_OUT == 0 && \
   RILL_##OP##_GRAD_OUT_X_GRAD == 0)
_Static_assert(SAME_SLOTS(GATHER) && SAME_SLOTS(GATHER_ND) && SAME_SLOTS(INDEX_SELECT) && SAME_SLOTS(INDEX_SAMPLE),
               "the index ops read X, Index and Out@GRAD at the positions index_plan.h and this file use");
enum { IN_X = 0, IN_INDEX = 1, IN_OUT_GRAD = 2, OUT_0 = 0 };

/* The slices, checked against `packed` (Out or Out@GRAD), as row numbers of X viewed as
 * [rows, s->len]: s->off[i] / s->len. */
static rill_status *slice_rows(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_index_mode mode, int32_t dim_attr,
                               const rill_dims *x, const rill_tensor *packed, const char *what,
                               const char *packed_name, rill_index_slices *s) {
  int64_t *vals = NULL, n = 0;
  s->off = NULL;
  RILL_TRY(rill_cuda_ids_to_host(ctx, d, IN_INDEX, &vals, &n));
  rill_status *st = rill_index_slices_packed(ctx, mode, dim_attr, x, vals, true, packed, what, packed_name, s);
  rill_free(vals);
  if (!st && s->len)
    for (int64_t i = 0; i < s->count; i++) s->off[i] /= s->len;
  return st;
}

static rill_status *index_gather(rill_kernel_ctx *ctx, rill_index_mode mode, int32_t dim_attr) {
  rill_tensor *x = rill_kin(ctx, IN_X, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, IN_X, 0));
  size_t es = rill_dtype_size(x->dtype);
  if (es != 4 && es != 8)
    return rill_kernel_error(ctx, "input X (%s) is %s; the device copies 4- and 8-byte elements",
                             rill_kin_name(ctx, IN_X, 0), rill_dtype_name(x->dtype));
  RILL_TRY(rill_kout_need(ctx, OUT_0, 0, x->dtype, &out));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  rill_index_slices s;
  RILL_TRY(slice_rows(ctx, d, mode, dim_attr, &x->dims, out, "output Out", rill_kout_name(ctx, OUT_0, 0), &s));
  rill_status *st = NULL;
  if (s.count && s.len) {
    size_t bytes = (size_t)s.count * sizeof *s.off;
    int64_t *rows = rill_cuda_mem_alloc(d, bytes);
    if (!rows) st = rill_kernel_error(ctx, "out of device memory for %lld slice numbers", (long long)s.count);
    cudaError_t e = rows ? cudaMemcpyAsync(rows, s.off, bytes, cudaMemcpyHostToDevice, d->stream) : cudaSuccess;
    if (!st && e == cudaSuccess) {
      int64_t words = (int64_t)(es / sizeof(float));
      e = rill_cuda_gather_rows_f32(rill_tensor_ptr(x), rows, true, s.count, s.len * words, -1, rill_tensor_ptr(out),
                                    d->stream);
    }
    if (!st) st = rill_cuda_kernel_check(ctx, e, "index gather launch");
    if (rows) rill_cuda_mem_free(d, rows);
  }
  rill_free(s.off);
  return st;
}

static rill_status *index_gather_grad(rill_kernel_ctx *ctx, rill_index_mode mode, int32_t dim_attr, bool overwrite) {
  if (!rill_kout(ctx, OUT_0, 0)) return NULL; /* X@GRAD not wanted */
  rill_tensor *x = rill_kin(ctx, IN_X, 0), *g = NULL, *dx = NULL;
  if (!x) return rill_kernel_error(ctx, "input X (%s) is missing", rill_kin_name(ctx, IN_X, 0));
  RILL_TRY(rill_kin_need(ctx, IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &g));
  RILL_TRY(rill_kout_need(ctx, OUT_0, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, OUT_0, 0, dx, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  rill_index_slices s;
  RILL_TRY(slice_rows(ctx, d, mode, dim_attr, &x->dims, g, "input Out@GRAD", rill_kin_name(ctx, IN_OUT_GRAD, 0), &s));
  /* overwrite: only each row's last index counts; the earlier ones are dropped (-1) */
  int64_t drop = -1;
  rill_status *st = NULL;
  if (overwrite && s.len) {
    int64_t rows = rill_tensor_numel(dx) / s.len;
    bool *seen = rill_calloc((size_t)(rows ? rows : 1), sizeof *seen);
    if (!seen) st = rill_oom();
    for (int64_t i = s.count - 1; !st && i >= 0; i--) {
      if (seen[s.off[i]]) s.off[i] = drop;
      else seen[s.off[i]] = true;
    }
    rill_free(seen);
  }
  rill_cuda_groups grp = {0};
  if (!st && s.len) st = rill_cuda_groups_make(ctx, d, s.off, s.count, &drop, &grp);
  rill_free(s.off);
  if (st) return st;
  cudaError_t e = rill_tensor_nbytes(dx) ? cudaMemsetAsync(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx), d->stream)
                                         : cudaSuccess;
  if (e == cudaSuccess && grp.ngroups)
    e = rill_cuda_sum_groups_f32(rill_tensor_ptr(g), grp.dev, grp.ngroups, s.len, NULL, rill_tensor_ptr(dx), d->stream);
  rill_cuda_groups_free(d, &grp);
  return rill_cuda_kernel_check(ctx, e, "index gather gradient launch");
}

rill_status *rill_cuda_gather_kernel(rill_kernel_ctx *ctx) { return index_gather(ctx, RILL_INDEX_BY_ROWS, 0); }
rill_status *rill_cuda_gather_nd_kernel(rill_kernel_ctx *ctx) { return index_gather(ctx, RILL_INDEX_BY_TUPLES, 0); }
rill_status *rill_cuda_index_select_kernel(rill_kernel_ctx *ctx) {
  return index_gather(ctx, RILL_INDEX_BY_DIM, ctx->attrs[RILL_INDEX_SELECT_ATTR_DIM].v.i);
}
rill_status *rill_cuda_index_sample_kernel(rill_kernel_ctx *ctx) {
  return index_gather(ctx, RILL_INDEX_BY_ROW_SAMPLE, 0);
}
rill_status *rill_cuda_gather_grad_fp32(rill_kernel_ctx *ctx) {
  return index_gather_grad(ctx, RILL_INDEX_BY_ROWS, 0, ctx->attrs[RILL_GATHER_GRAD_ATTR_OVERWRITE].v.b);
}
rill_status *rill_cuda_gather_nd_grad_fp32(rill_kernel_ctx *ctx) {
  return index_gather_grad(ctx, RILL_INDEX_BY_TUPLES, 0, false);
}
rill_status *rill_cuda_index_select_grad_fp32(rill_kernel_ctx *ctx) {
  return index_gather_grad(ctx, RILL_INDEX_BY_DIM, ctx->attrs[RILL_INDEX_SELECT_GRAD_ATTR_DIM].v.i, false);
}
rill_status *rill_cuda_index_sample_grad_fp32(rill_kernel_ctx *ctx) {
  return index_gather_grad(ctx, RILL_INDEX_BY_ROW_SAMPLE, 0, false);
}
