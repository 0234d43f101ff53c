/* merge_selected_rows and get_tensor_from_selected_rows CPU kernels, and the selected
 * rows helpers of selected_rows.h (used by clip and elementwise_mul on sparse
 * gradients). */
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/selected_rows.h"

rill_selected_rows *rill_cpu_rows_in(rill_kernel_ctx *ctx, rill_dtype dt, rill_status **err) {
  *err = NULL;
  rill_variable *xv = ctx->nin[0] ? ctx->in[0][0] : NULL;
  if (!xv || xv->kind != RILL_VARKIND_SELECTED_ROWS) return NULL;
  rill_selected_rows *x = &xv->u.rows;
  if (!rill_tensor_is_set(&x->value) || x->value.dtype != dt) {
    *err = rill_kernel_error(ctx, "input X (%s) holds selected rows without %s values",
                             rill_kin_name(ctx, 0, 0), rill_dtype_name(dt));
    return NULL;
  }
  int64_t n = rill_tensor_numel(&x->value);
  if (x->value.dims.n < 1 || x->value.dims.d[0] != (int64_t)x->nrows ||
      (x->nrows == 0 && n != 0)) {
    *err = rill_kernel_error(ctx, "input X (%s): %zu rows but a value of %lld elements in %d "
                             "dimensions", rill_kin_name(ctx, 0, 0), x->nrows, (long long)n,
                             x->value.dims.n);
    return NULL;
  }
  return x;
}

/* Out as selected rows (an unset dense Out is turned into selected rows). */
static rill_status *rows_out(rill_kernel_ctx *ctx, rill_selected_rows **out) {
  rill_variable *ov = ctx->nout[0] ? ctx->out[0][0] : NULL;
  if (!ov) return rill_kernel_error(ctx, "output Out is missing");
  if (ov->kind == RILL_VARKIND_TENSOR) rill_variable_clear(ov);
  if (!(*out = rill_variable_selected_rows(ov)))
    return rill_kernel_error(ctx, "output Out (%s) holds a %s, not selected rows",
                             rill_kout_name(ctx, 0, 0), rill_var_kind_name(ov->kind));
  return NULL;
}

static int i64_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

rill_status *rill_cpu_rows_out_ids(rill_kernel_ctx *ctx, size_t slot, const int64_t *ids,
                                   int64_t n, int64_t height, int64_t width, rill_dtype dt,
                                   rill_selected_rows **out) {
  rill_variable *ov = slot < ctx->schema->noutputs && ctx->nout[slot] ? ctx->out[slot][0] : NULL;
  if (!ov) return rill_kernel_error(ctx, "output %s is missing", ctx->schema->outputs[slot].name);
  if (ov->kind == RILL_VARKIND_TENSOR) rill_variable_clear(ov);
  rill_selected_rows *o = rill_variable_selected_rows(ov);
  if (!o)
    return rill_kernel_error(ctx, "output %s (%s) holds a %s, not selected rows",
                             ctx->schema->outputs[slot].name, rill_kout_name(ctx, slot, 0),
                             rill_var_kind_name(ov->kind));
  int64_t *rows = rill_malloc((size_t)(n > 0 ? n : 1) * sizeof *rows);
  if (!rows) return rill_oom();
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++)
    if (ids[i] >= 0) rows[m++] = ids[i];
  qsort(rows, (size_t)m, sizeof *rows, i64_cmp);
  int64_t u = 0;
  for (int64_t i = 0; i < m; i++)
    if (!u || rows[u - 1] != rows[i]) rows[u++] = rows[i];
  rill_status *st = rill_selected_rows_set_rows(o, rows, (size_t)u);
  rill_free(rows);
  rill_dims vd = {.n = 2, .d = {u, width}};
  if (!st) st = rill_tensor_alloc(&o->value, dt, &vd);
  if (st) return st;
  o->height = height;
  rill_lod_clear(&o->value.lod);
  memset(rill_tensor_ptr(&o->value), 0, rill_tensor_nbytes(&o->value));
  *out = o;
  return NULL;
}

rill_status *rill_cpu_rows_out_like(rill_kernel_ctx *ctx, const rill_selected_rows *x,
                                    rill_tensor **value) {
  rill_selected_rows *o;
  RILL_TRY(rows_out(ctx, &o));
  if (o != x) {
    RILL_TRY(rill_selected_rows_set_rows(o, x->rows, x->nrows));
    o->height = x->height;
    RILL_TRY(rill_tensor_alloc(&o->value, x->value.dtype, &x->value.dims));
  }
  *value = &o->value;
  return NULL;
}

typedef struct row_at {
  int64_t row;
  size_t at;
} row_at;

static int row_at_cmp(const void *a, const void *b) {
  const row_at *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

rill_status *rill_cpu_rows_out_merged(rill_kernel_ctx *ctx, const rill_selected_rows *x,
                                      rill_tensor **value) {
  rill_selected_rows *o;
  RILL_TRY(rows_out(ctx, &o));
  if (o == x)
    return rill_kernel_error(ctx, "output Out (%s) is the input X: merging is not in place",
                             rill_kout_name(ctx, 0, 0));
  size_t n = x->nrows;
  int64_t width = 1;
  for (int k = 1; k < x->value.dims.n; k++) width *= x->value.dims.d[k];
  row_at *ix = rill_malloc((n ? n : 1) * sizeof *ix);
  int64_t *rows = rill_malloc((n ? n : 1) * sizeof *rows);
  if (!ix || !rows) {
    rill_free(ix);
    rill_free(rows);
    return rill_oom();
  }
  for (size_t i = 0; i < n; i++) ix[i] = (row_at){x->rows[i], i};
  qsort(ix, n, sizeof *ix, row_at_cmp);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || rows[m - 1] != ix[i].row) rows[m++] = ix[i].row;
  rill_status *st = rill_selected_rows_set_rows(o, rows, m);
  rill_dims vd = x->value.dims;
  vd.d[0] = (int64_t)m;
  if (!st) st = rill_tensor_alloc(&o->value, x->value.dtype, &vd);
  if (!st) {
    o->height = x->height;
    rill_lod_clear(&o->value.lod);
    memset(rill_tensor_ptr(&o->value), 0, rill_tensor_nbytes(&o->value));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      if (i && ix[i].row != ix[i - 1].row) k++;
      size_t d = k * (size_t)width, s = ix[i].at * (size_t)width;
      if (x->value.dtype == RILL_DTYPE_FP32) {
        float *dp = (float *)rill_tensor_ptr(&o->value) + d;
        const float *sp = (const float *)rill_tensor_ptr((rill_tensor *)&x->value) + s;
        for (int64_t j = 0; j < width; j++) dp[j] += sp[j];
      } else {
        double *dp = (double *)rill_tensor_ptr(&o->value) + d;
        const double *sp = (const double *)rill_tensor_ptr((rill_tensor *)&x->value) + s;
        for (int64_t j = 0; j < width; j++) dp[j] += sp[j];
      }
    }
    *value = &o->value;
  }
  rill_free(ix);
  rill_free(rows);
  return st;
}

/* Input X as selected rows of a float dtype, or an error naming what it holds. */
static rill_status *float_rows_in(rill_kernel_ctx *ctx, rill_selected_rows **x) {
  rill_variable *xv = ctx->nin[0] ? ctx->in[0][0] : NULL;
  if (!xv || xv->kind != RILL_VARKIND_SELECTED_ROWS)
    return rill_kernel_error(ctx, "input X (%s) holds %s, not selected rows",
                             rill_kin_name(ctx, 0, 0),
                             xv ? rill_var_kind_name(xv->kind) : "nothing");
  rill_dtype dt = xv->u.rows.value.dtype;
  if (dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64)
    return rill_kernel_error(ctx, "input X (%s) holds %s values; float32 or float64 are taken",
                             rill_kin_name(ctx, 0, 0), rill_dtype_name(dt));
  rill_status *st;
  *x = rill_cpu_rows_in(ctx, dt, &st);
  return st;
}

rill_status *rill_cpu_merge_selected_rows(rill_kernel_ctx *ctx) {
  rill_selected_rows *x;
  RILL_TRY(float_rows_in(ctx, &x));
  rill_tensor *v;
  return rill_cpu_rows_out_merged(ctx, x, &v);
}

rill_status *rill_cpu_get_tensor_from_selected_rows(rill_kernel_ctx *ctx) {
  rill_selected_rows *x;
  RILL_TRY(float_rows_in(ctx, &x));
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  return rill_tensor_copy(out, &x->value);
}
