/* sum CUDA kernel, float32, as the CPU kernel sums (kernels/cpu/sum.c):
 * - dense inputs of one shape: Out = X[0] + X[1] + ...; Out may be one of the inputs
 *   (gradient accumulation): the sum starts from that one;
 * - selected rows only, and Out not already dense: Out is their concatenation (rows and
 *   values), as Paddle's sum makes a shared embedding's sparse gradient;
 * - dense and selected rows together: a dense Out, each selected-rows input added into
 *   its rows in turn (device/rows.cu's groups, the CPU's order of additions).
 * Uninitialized inputs are skipped, as in Paddle. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"

static bool var_set(const rill_variable *v) {
  if (!v) return false;
  if (v->kind == RILL_VARKIND_TENSOR) return rill_tensor_is_set(&v->u.tensor);
  if (v->kind == RILL_VARKIND_SELECTED_ROWS) return rill_tensor_is_set(&v->u.rows.value);
  return false;
}

/* A float32 input's values on the device (for its device context). */
static rill_status *f32_values(rill_kernel_ctx *ctx, size_t i, const rill_tensor *t) {
  if (t->dtype != RILL_DTYPE_FP32)
    return rill_kernel_error(ctx, "input X[%zu] (%s) is %s; the CUDA kernel sums float32", i, rill_kin_name(ctx, 0, i),
                             rill_dtype_name(t->dtype));
  return NULL;
}

/* Out (selected rows) = the inputs' rows and values, concatenated; made aside, since Out
 * may be one of the inputs. */
static rill_status *concat_rows(rill_kernel_ctx *ctx, rill_variable *outv) {
  size_t total = 0;
  const rill_selected_rows *first = NULL;
  rill_cuda_dev *d = NULL;
  for (size_t i = 0; i < ctx->nin[RILL_SUM_IN_X]; i++) {
    const rill_variable *v = ctx->in[RILL_SUM_IN_X][i];
    if (!var_set(v)) continue;
    const rill_selected_rows *sr = &v->u.rows;
    RILL_TRY(f32_values(ctx, i, &sr->value));
    if (!first) {
      first = sr;
      RILL_TRY(rill_cuda_kernel_dev(ctx, &sr->value, &d));
    }
    int64_t w1 = rill_tensor_numel(&first->value) / (first->nrows ? (int64_t)first->nrows : 1);
    int64_t w2 = rill_tensor_numel(&sr->value) / (sr->nrows ? (int64_t)sr->nrows : 1);
    if ((sr->nrows && first->nrows && w1 != w2) || sr->height != first->height)
      return rill_kernel_error(ctx, "input X[%zu] (%s) does not match X's first selected rows (row width or height)", i,
                               rill_kin_name(ctx, RILL_SUM_IN_X, i));
    total += sr->nrows;
  }
  if (!first) return rill_kernel_error(ctx, "every input X is uninitialized");
  rill_dims dims = first->value.dims;
  dims.d[0] = (int64_t)total;
  int64_t *rows = rill_malloc((total ? total : 1) * sizeof *rows);
  if (!rows) return rill_oom();
  rill_selected_rows res, *out = &res;
  rill_selected_rows_init(&res);
  rill_status *st = rill_cuda_kernel_status(
      ctx, rill_tensor_alloc_on(&res.value, RILL_DTYPE_FP32, &dims, rill_tensor_place(&first->value),
                                &rill_cuda_backend.memory));
  cudaError_t e = cudaSuccess;
  size_t at = 0, bytes_at = 0;
  for (size_t i = 0; i < ctx->nin[RILL_SUM_IN_X] && !st && e == cudaSuccess; i++) {
    const rill_variable *v = ctx->in[RILL_SUM_IN_X][i];
    if (!var_set(v)) continue;
    const rill_selected_rows *sr = &v->u.rows;
    if (sr->nrows) memcpy(rows + at, sr->rows, sr->nrows * sizeof *rows);
    size_t bytes = rill_tensor_nbytes(&sr->value);
    if (bytes)
      e = cudaMemcpyAsync((char *)rill_tensor_ptr(&out->value) + bytes_at, rill_tensor_ptr(&sr->value), bytes,
                          cudaMemcpyDeviceToDevice, d->stream);
    bytes_at += bytes;
    at += sr->nrows;
  }
  if (!st) st = rill_cuda_kernel_check(ctx, e, "sum of selected rows");
  if (!st) st = rill_cuda_kernel_status(ctx, rill_selected_rows_set_rows(out, rows, total));
  rill_free(rows);
  if (st) {
    rill_selected_rows_clear(&res);
    return st;
  }
  res.height = first->height;
  rill_variable_clear(outv);
  outv->kind = RILL_VARKIND_SELECTED_ROWS;
  outv->u.rows = res;
  return NULL;
}

/* out[rows] += sr's values, each row in turn; rows checked against out's extent. */
static rill_status *add_rows(rill_kernel_ctx *ctx, rill_cuda_dev *d, size_t i, const rill_selected_rows *sr,
                             rill_tensor *out, int64_t width) {
  int64_t height = out->dims.n ? out->dims.d[0] : 1;
  for (size_t r = 0; r < sr->nrows; r++)
    if (sr->rows[r] < 0 || sr->rows[r] >= height)
      return rill_kernel_error(ctx, "input X[%zu] (%s): row %lld outside [0, %lld)", i,
                               rill_kin_name(ctx, RILL_SUM_IN_X, i), (long long)sr->rows[r], (long long)height);
  rill_cuda_groups g;
  RILL_TRY(rill_cuda_groups_make(ctx, d, sr->rows, (int64_t)sr->nrows, NULL, &g));
  cudaError_t e =
      rill_cuda_add_groups_f32(rill_tensor_ptr(&sr->value), g.dev, g.ngroups, width, rill_tensor_ptr(out), d->stream);
  rill_cuda_groups_free(d, &g);
  return rill_cuda_kernel_check(ctx, e, "adding selected rows");
}

/* A dense Out: every input (dense, or selected rows added into their rows) in order,
 * starting from Out's own value when Out is a dense input (`alias`), or from `held`
 * (Out's former selected rows, when it was an input) at its position. */
static rill_status *sum_dense(rill_kernel_ctx *ctx, rill_variable *outv, size_t alias, const rill_selected_rows *held) {
  size_t n = ctx->nin[RILL_SUM_IN_X];
  /* Out's shape: the first input's (a selected-rows input's height as its rows). */
  rill_dims dims = {0};
  for (size_t i = 0; i < n; i++) {
    const rill_variable *v = ctx->in[RILL_SUM_IN_X][i];
    const rill_selected_rows *sr = v == outv && held ? held : NULL;
    if (!sr && !var_set(v)) continue;
    if (!sr && v->kind == RILL_VARKIND_TENSOR) {
      dims = v->u.tensor.dims;
    } else {
      if (!sr) sr = &v->u.rows;
      dims = sr->value.dims;
      if (dims.n) dims.d[0] = sr->height;
    }
    break;
  }
  rill_tensor *out = rill_variable_tensor(outv);
  if (!out) return rill_kernel_error(ctx, "output Out (%s) is not a dense tensor", rill_kout_name(ctx, 0, 0));
  rill_cuda_dev *d = NULL;
  const rill_tensor *place_of = NULL;
  for (size_t i = 0; i < n && !place_of; i++) {
    const rill_variable *v = ctx->in[RILL_SUM_IN_X][i];
    if (v == outv && held) place_of = &held->value;
    else if (var_set(v)) place_of = v->kind == RILL_VARKIND_TENSOR ? &v->u.tensor : &v->u.rows.value;
  }
  RILL_TRY(rill_cuda_kernel_dev(ctx, place_of, &d));
  int64_t numel = 1;
  for (int k = 0; k < dims.n; k++) numel *= dims.d[k];
  int64_t width = dims.n && dims.d[0] ? numel / dims.d[0] : numel;
  /* check every input against Out's shape */
  for (size_t i = 0; i < n; i++) {
    const rill_variable *v = ctx->in[RILL_SUM_IN_X][i];
    const rill_selected_rows *sr = v == outv && held ? held : NULL;
    if (!sr && (i == alias || !var_set(v))) continue;
    const rill_tensor *t = sr ? &sr->value : v->kind == RILL_VARKIND_TENSOR ? &v->u.tensor : &v->u.rows.value;
    RILL_TRY(f32_values(ctx, i, t));
    bool ok = sr || v->kind == RILL_VARKIND_SELECTED_ROWS
                  ? t->dims.n == dims.n && (t->dims.n == 0 || rill_dims_prod(&t->dims, 1, t->dims.n) == width)
                  : rill_dims_equal(&t->dims, &dims);
    if (!ok) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx, "input X[%zu] (%s) has shape %s, expected %s", i, rill_kin_name(ctx, 0, i),
                               rill_dims_str(&t->dims, a, sizeof a), rill_dims_str(&dims, b, sizeof b));
    }
  }
  cudaError_t e = cudaSuccess;
  if (alias == SIZE_MAX) {
    if (!rill_tensor_is_set(out) || out->dtype != RILL_DTYPE_FP32 || !rill_dims_equal(&out->dims, &dims))
      RILL_TRY(rill_cuda_kernel_status(ctx, rill_tensor_alloc_on(out, RILL_DTYPE_FP32, &dims, rill_tensor_place(place_of),
                                                                 &rill_cuda_backend.memory)));
    e = cudaMemsetAsync(rill_tensor_ptr(out), 0, (size_t)numel * sizeof(float), d->stream);
  }
  for (size_t i = 0; i < n && e == cudaSuccess; i++) {
    const rill_variable *v = ctx->in[RILL_SUM_IN_X][i];
    if (v == outv && held) {
      RILL_TRY(add_rows(ctx, d, i, held, out, width));
    } else if (i == alias || !var_set(v)) {
      continue;
    } else if (v == outv) { /* Out listed twice: double what it holds */
      e = rill_cuda_accumulate_f32(rill_tensor_ptr(out), rill_tensor_ptr(out), numel, d->stream);
    } else if (v->kind == RILL_VARKIND_TENSOR) {
      e = rill_cuda_accumulate_f32(rill_tensor_ptr(out), rill_tensor_ptr(&v->u.tensor), numel, d->stream);
    } else {
      RILL_TRY(add_rows(ctx, d, i, &v->u.rows, out, width));
    }
  }
  return rill_cuda_kernel_check(ctx, e, "sum launch");
}

rill_status *rill_cuda_sum_fp32(rill_kernel_ctx *ctx) {
  rill_variable *outv = ctx->nout[RILL_SUM_OUT_OUT] ? ctx->out[RILL_SUM_OUT_OUT][0] : NULL;
  if (!outv) return rill_kernel_error(ctx, "output Out is missing");
  size_t n = ctx->nin[RILL_SUM_IN_X], alias = SIZE_MAX;
  bool any = false, any_dense = false;
  for (size_t i = 0; i < n; i++) {
    rill_variable *v = ctx->in[RILL_SUM_IN_X][i];
    if (v == outv && alias == SIZE_MAX) alias = i;
    if (!var_set(v)) continue;
    any = true;
    any_dense |= v->kind == RILL_VARKIND_TENSOR;
  }
  if (!any) return rill_kernel_error(ctx, "every input X is uninitialized");
  if (!any_dense && (outv->kind == RILL_VARKIND_SELECTED_ROWS || outv->kind == RILL_VARKIND_EMPTY ||
                     (outv->kind == RILL_VARKIND_TENSOR && !rill_tensor_is_set(&outv->u.tensor))))
    return concat_rows(ctx, outv);
  if (outv->kind != RILL_VARKIND_SELECTED_ROWS) return sum_dense(ctx, outv, var_set(outv) ? alias : SIZE_MAX, NULL);
  /* Out held selected rows and becomes dense; when it is also an input, its rows are
   * held aside and added like any other selected-rows input. */
  rill_selected_rows held;
  rill_selected_rows_init(&held);
  bool holding = alias != SIZE_MAX && var_set(outv);
  if (holding) {
    held = outv->u.rows;
    rill_selected_rows_init(&outv->u.rows);
  }
  rill_variable_clear(outv);
  rill_status *st = sum_dense(ctx, outv, SIZE_MAX, holding ? &held : NULL);
  rill_selected_rows_clear(&held);
  return st;
}
