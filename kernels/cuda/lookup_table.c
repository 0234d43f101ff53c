/* lookup_table / lookup_table_v2 CUDA kernels and their gradient, float32 tables, ids
 * int64 (or int32 for v2). The ids are read back to the host and checked as the CPU
 * checks them (a bad id is an error naming the position), then:
 * - the lookup gathers rows on the device, zeros for padding_idx;
 * - the dense gradient zeroes W@GRAD and adds, per row, the Out@GRAD rows of the ids
 *   that address it, in their order (rows.c's groups): the CPU kernel's sums, bit for
 *   bit, without atomics;
 * - the sparse gradient (is_sparse) is selected rows: the ids as rows (padding
 *   included, as Paddle 1.8 does) and Out@GRAD copied as their values, on the device. */
#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"

_Static_assert(RILL_SAME_POS(RILL_LOOKUP_TABLE_V2_IN_IDS, RILL_LOOKUP_TABLE_IN_IDS) &&
                   RILL_SAME_POS(RILL_LOOKUP_TABLE_V2_ATTR_PADDING_IDX, RILL_LOOKUP_TABLE_ATTR_PADDING_IDX) &&
                   RILL_SAME_POS(RILL_LOOKUP_TABLE_GRAD_IN_IDS, RILL_LOOKUP_TABLE_IN_IDS) &&
                   RILL_SAME_POS(RILL_LOOKUP_TABLE_GRAD_ATTR_PADDING_IDX, RILL_LOOKUP_TABLE_ATTR_PADDING_IDX) &&
                   RILL_SAME_POS(RILL_LOOKUP_TABLE_GRAD_ATTR_IS_SPARSE, RILL_LOOKUP_TABLE_ATTR_IS_SPARSE),
               "lookup_table, lookup_table_v2 and the gradient share Ids and the attributes read here");

/* Input W as a matrix: *rows x *width. */
static rill_status *table_input(rill_kernel_ctx *ctx, bool need_data, rill_tensor **w, int64_t *rows,
                                int64_t *width) {
  *w = rill_kin(ctx, RILL_LOOKUP_TABLE_IN_W, 0);
  if (!*w || (*w)->dims.n != 2 || (need_data && !rill_tensor_is_set(*w)))
    return rill_kernel_error(ctx, "input W (%s) is missing or not a matrix", rill_kin_name(ctx, RILL_LOOKUP_TABLE_IN_W, 0));
  if (need_data && (*w)->dtype != RILL_DTYPE_FP32)
    return rill_kernel_error(ctx, "input W (%s) is %s; this kernel takes float32", rill_kin_name(ctx, 0, 0),
                             rill_dtype_name((*w)->dtype));
  *rows = (*w)->dims.d[0];
  *width = (*w)->dims.d[1];
  return NULL;
}

/* The ids on the host, checked against the table's rows. */
static rill_status *checked_ids(rill_kernel_ctx *ctx, rill_cuda_dev *d, int64_t rows, int64_t **ids, int64_t *n) {
  RILL_TRY(rill_cuda_ids_to_host(ctx, d, RILL_LOOKUP_TABLE_IN_IDS, ids, n));
  int64_t pad = ctx->attrs[RILL_LOOKUP_TABLE_ATTR_PADDING_IDX].v.l;
  rill_status *st = rill_cuda_check_ids(ctx, RILL_LOOKUP_TABLE_IN_IDS, RILL_LOOKUP_TABLE_IN_W, *ids, *n, rows, &pad);
  if (st) {
    rill_free(*ids);
    *ids = NULL;
  }
  return st;
}

rill_status *rill_cuda_lookup_table_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *w, *out = NULL;
  int64_t rows, width, n, *ids;
  RILL_TRY(table_input(ctx, true, &w, &rows, &width));
  RILL_TRY(rill_kout_need(ctx, RILL_LOOKUP_TABLE_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  RILL_TRY(checked_ids(ctx, d, rows, &ids, &n));
  rill_free(ids);
  if (rill_tensor_numel(out) != n * width)
    return rill_kernel_error(ctx, "output Out (%s) does not hold %lld rows of %lld", rill_kout_name(ctx, 0, 0),
                             (long long)n, (long long)width);
  const rill_tensor *it = rill_kin(ctx, RILL_LOOKUP_TABLE_IN_IDS, 0);
  return rill_cuda_kernel_check(
      ctx,
      rill_cuda_gather_rows_f32(rill_tensor_ptr(w), rill_tensor_ptr(it), it->dtype == RILL_DTYPE_INT64, n, width,
                                ctx->attrs[RILL_LOOKUP_TABLE_ATTR_PADDING_IDX].v.l, rill_tensor_ptr(out), d->stream),
      "lookup launch");
}

/* W@GRAD as selected rows on dout's device: the ids and a copy of Out@GRAD. */
static rill_status *sparse_grad(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_variable *dwv, const int64_t *ids,
                                int64_t n, int64_t rows, int64_t width, const rill_tensor *dout) {
  if (dwv->kind == RILL_VARKIND_TENSOR) rill_variable_clear(dwv);
  rill_selected_rows *sr = rill_variable_selected_rows(dwv);
  if (!sr)
    return rill_kernel_error(ctx, "output W@GRAD (%s) holds a %s, not selected rows", rill_kout_name(ctx, 0, 0),
                             rill_var_kind_name(dwv->kind));
  RILL_TRY(rill_selected_rows_set_rows(sr, ids, (size_t)n));
  sr->height = rows;
  rill_dims vd = {.n = 2, .d = {n, width}};
  RILL_TRY(rill_tensor_alloc_on(&sr->value, RILL_DTYPE_FP32, &vd, rill_tensor_place(dout), &rill_cuda_backend.memory));
  rill_lod_clear(&sr->value.lod);
  size_t bytes = rill_tensor_nbytes(&sr->value);
  return rill_cuda_kernel_check(ctx,
                                bytes ? cudaMemcpyAsync(rill_tensor_ptr(&sr->value), rill_tensor_ptr(dout), bytes,
                                                        cudaMemcpyDeviceToDevice, d->stream)
                                      : cudaSuccess,
                                "copying Out@GRAD");
}

/* W@GRAD dense: zeroed, then each addressed row the sum of its ids' Out@GRAD rows. */
static rill_status *dense_grad(rill_kernel_ctx *ctx, rill_cuda_dev *d, const int64_t *ids, int64_t n, int64_t width,
                               const rill_tensor *w, const rill_tensor *dout) {
  rill_tensor *dw = NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_LOOKUP_TABLE_GRAD_OUT_W_GRAD, 0, RILL_DTYPE_FP32, &dw));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LOOKUP_TABLE_GRAD_OUT_W_GRAD, 0, dw, &w->dims));
  int64_t pad = ctx->attrs[RILL_LOOKUP_TABLE_ATTR_PADDING_IDX].v.l;
  rill_cuda_groups g;
  RILL_TRY(rill_cuda_groups_make(ctx, d, ids, n, &pad, &g));
  cudaError_t e = rill_tensor_nbytes(dw) ? cudaMemsetAsync(rill_tensor_ptr(dw), 0, rill_tensor_nbytes(dw), d->stream)
                                         : cudaSuccess;
  if (e == cudaSuccess)
    e = rill_cuda_sum_groups_f32(rill_tensor_ptr(dout), g.dev, g.ngroups, width, NULL, rill_tensor_ptr(dw), d->stream);
  rill_cuda_groups_free(d, &g);
  return rill_cuda_kernel_check(ctx, e, "lookup gradient launch");
}

rill_status *rill_cuda_lookup_table_grad_fp32(rill_kernel_ctx *ctx) {
  rill_variable *dwv = ctx->nout[RILL_LOOKUP_TABLE_GRAD_OUT_W_GRAD] ? ctx->out[RILL_LOOKUP_TABLE_GRAD_OUT_W_GRAD][0] : NULL;
  if (!dwv) return NULL; /* W@GRAD not wanted */
  rill_tensor *w, *dout = NULL;
  int64_t rows, width, n, *ids;
  RILL_TRY(table_input(ctx, false, &w, &rows, &width));
  RILL_TRY(rill_kin_need(ctx, RILL_LOOKUP_TABLE_GRAD_IN_OUT_GRAD, 0, RILL_DTYPE_FP32, &dout));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dout, &d));
  RILL_TRY(checked_ids(ctx, d, rows, &ids, &n));
  rill_status *st = NULL;
  if (rill_tensor_numel(dout) != n * width)
    st = rill_kernel_error(ctx, "input Out@GRAD (%s) does not hold %lld rows of %lld",
                           rill_kin_name(ctx, RILL_LOOKUP_TABLE_GRAD_IN_OUT_GRAD, 0), (long long)n, (long long)width);
  else if (ctx->attrs[RILL_LOOKUP_TABLE_ATTR_IS_SPARSE].v.b)
    st = sparse_grad(ctx, d, dwv, ids, n, rows, width, dout);
  else
    st = dense_grad(ctx, d, ids, n, width, w, dout);
  rill_free(ids);
  return st;
}
