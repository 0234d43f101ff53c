/* split_selected_rows CPU kernel (any dtype): X's rows in [off_i, off_i + h_i), with
 * off_i the sum of the earlier height_sections, go to Out i with their row numbers
 * made relative to off_i, in X's order (duplicates kept: the receiver merges them).
 * Out i's height is h_i. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

rill_status *rill_cpu_split_selected_rows(rill_kernel_ctx *ctx) {
  rill_variable *xv = ctx->nin[0] ? ctx->in[0][0] : NULL;
  if (!xv || xv->kind != RILL_VARKIND_SELECTED_ROWS)
    return rill_kernel_error(ctx, "input X (%s) holds a %s, not selected rows",
                             rill_kin_name(ctx, 0, 0),
                             xv ? rill_var_kind_name(xv->kind) : "nothing");
  const rill_selected_rows *x = &xv->u.rows;
  const rill_attr_value *hs = &ctx->attrs[RILL_SPLIT_SELECTED_ROWS_ATTR_HEIGHT_SECTIONS];
  size_t n = ctx->nout[0];
  if (hs->n != n)
    return rill_kernel_error(ctx, "%zu height_sections for %zu outputs Out", hs->n, n);
  int64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    if (hs->list.longs[i] < 0)
      return rill_kernel_error(ctx, "height_sections[%zu] is %lld", i, (long long)hs->list.longs[i]);
    total += hs->list.longs[i];
  }
  if (total != x->height)
    return rill_kernel_error(ctx, "height_sections add up to %lld but X (%s) has height %lld",
                             (long long)total, rill_kin_name(ctx, 0, 0), (long long)x->height);
  int64_t width = 1;
  for (int k = 1; k < x->value.dims.n; k++) width *= x->value.dims.d[k];
  size_t row_bytes = (size_t)width * rill_dtype_size(x->value.dtype);
  if (x->nrows && (size_t)rill_tensor_numel(&x->value) != x->nrows * (size_t)width)
    return rill_kernel_error(ctx, "input X (%s): %zu rows but a value of %lld elements",
                             rill_kin_name(ctx, 0, 0), x->nrows,
                             (long long)rill_tensor_numel(&x->value));
  int64_t *rows = rill_malloc((x->nrows ? x->nrows : 1) * sizeof *rows);
  if (!rows) return rill_oom();
  rill_status *st = NULL;
  int64_t off = 0;
  for (size_t i = 0; i < n && !st; i++) {
    int64_t h = hs->list.longs[i];
    rill_variable *ov = ctx->out[0][i];
    if (!ov) {
      off += h;
      continue;
    }
    if (ov == xv) {
      st = rill_kernel_error(ctx, "output Out (%s) is the input X", rill_kout_name(ctx, 0, i));
      break;
    }
    if (ov->kind == RILL_VARKIND_TENSOR) rill_variable_clear(ov);
    rill_selected_rows *o = rill_variable_selected_rows(ov);
    if (!o) {
      st = rill_kernel_error(ctx, "output Out (%s) holds a %s, not selected rows",
                             rill_kout_name(ctx, 0, i), rill_var_kind_name(ov->kind));
      break;
    }
    size_t m = 0;
    for (size_t r = 0; r < x->nrows; r++)
      if (x->rows[r] >= off && x->rows[r] < off + h) rows[m++] = x->rows[r] - off;
    if ((st = rill_selected_rows_set_rows(o, rows, m))) break;
    o->height = h;
    rill_dims vd = x->value.dims;
    if (vd.n < 1) vd.n = 1;
    vd.d[0] = (int64_t)m;
    if ((st = rill_tensor_alloc(&o->value, x->value.dtype, &vd))) break;
    rill_lod_clear(&o->value.lod);
    char *dst = rill_tensor_ptr(&o->value);
    const char *src = rill_tensor_ptr((rill_tensor *)&x->value);
    size_t j = 0;
    for (size_t r = 0; r < x->nrows; r++)
      if (x->rows[r] >= off && x->rows[r] < off + h)
        memcpy(dst + row_bytes * j++, src + row_bytes * r, row_bytes);
    off += h;
  }
  rill_free(rows);
  return st;
}
