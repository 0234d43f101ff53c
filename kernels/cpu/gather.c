/* gather, gather_nd, scatter, scatter_nd_add, index_select, index_sample and their
 * gradient kernels (every dtype for
 * the copies; float32/64 and int32/64 where slices are added). All of them turn the
 * index tensor into element offsets of slices of X first, checking each coordinate. */
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"
#include "operators/index_plan.h"

typedef rill_index_slices slices;

/* Index input islot's values on the host, for rill_index_slices_of. */
static const void *index_vals(rill_kernel_ctx *ctx, size_t islot, bool *i64) {
  const rill_tensor *ix = rill_kin(ctx, islot, 0);
  *i64 = ix && ix->dtype == RILL_DTYPE_INT64;
  return ix ? rill_tensor_ptr(ix) : NULL;
}

static rill_status *slices_of(rill_kernel_ctx *ctx, size_t islot, const rill_dims *x, rill_index_mode mode,
                              int dim, const char *xname, slices *s) {
  bool i64;
  const void *vals = index_vals(ctx, islot, &i64);
  return rill_index_slices_of(ctx, islot, x, mode, dim, xname, vals, i64, s);
}

/* dst slice i (packed) := src at off[i]; gather's forward and the Updates gradients. */
static void gather_slices(const slices *s, const char *src, char *dst, size_t es) {
  size_t bytes = (size_t)s->len * es;
  for (int64_t i = 0; i < s->count; i++)
    memcpy(dst + (size_t)i * bytes, src + (size_t)s->off[i] * es, bytes);
}

/* dst at off[i] := (or +=) packed slice i of src. */
static rill_status *put_slices(rill_kernel_ctx *ctx, const slices *s, const char *src, char *dst,
                               rill_dtype dt, bool add) {
  size_t es = rill_dtype_size(dt), bytes = (size_t)s->len * es;
  for (int64_t i = 0; i < s->count; i++) {
    char *d = dst + (size_t)s->off[i] * es;
    const char *p = src + (size_t)i * bytes;
    if (!add) memcpy(d, p, bytes);
    else if (!rill_cpu_add_elems(d, p, s->len, dt))
      return rill_kernel_error(ctx, "adds no %s values (float32/64, int32/64 only)",
                               rill_dtype_name(dt));
  }
  return NULL;
}

static rill_status *index_slices(rill_kernel_ctx *ctx, rill_index_mode mode, int32_t dim_attr,
                                 const rill_dims *x, const rill_tensor *packed, const char *what,
                                 const char *packed_name, slices *s) {
  bool i64;
  const void *vals = index_vals(ctx, 1, &i64);
  return rill_index_slices_packed(ctx, mode, dim_attr, x, vals, i64, packed, what, packed_name, s);
}

static rill_status *gather_common(rill_kernel_ctx *ctx, rill_index_mode mode, int32_t dim_attr) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = rill_kout(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  slices s;
  RILL_TRY(index_slices(ctx, mode, dim_attr, &x->dims, out, "output Out", rill_kout_name(ctx, 0, 0), &s));
  gather_slices(&s, rill_tensor_ptr(x), rill_tensor_ptr(out), rill_dtype_size(x->dtype));
  rill_free(s.off);
  return NULL;
}

rill_status *rill_cpu_gather(rill_kernel_ctx *ctx) { return gather_common(ctx, RILL_INDEX_BY_ROWS, 0); }
rill_status *rill_cpu_gather_nd(rill_kernel_ctx *ctx) { return gather_common(ctx, RILL_INDEX_BY_TUPLES, 0); }
rill_status *rill_cpu_index_select(rill_kernel_ctx *ctx) {
  return gather_common(ctx, RILL_INDEX_BY_DIM, ctx->attrs[RILL_INDEX_SELECT_ATTR_DIM].v.i);
}
rill_status *rill_cpu_index_sample(rill_kernel_ctx *ctx) {
  return gather_common(ctx, RILL_INDEX_BY_ROW_SAMPLE, 0);
}

static rill_status *gather_grad_common(rill_kernel_ctx *ctx, rill_index_mode mode, int32_t dim_attr,
                                       bool overwrite) {
  rill_tensor *x, *dout, *dx;
  RILL_TRY(rill_cpu_grad_like_input(ctx, 0, 2, &x, &dout, &dx));
  if (!dx) return NULL;
  slices s;
  RILL_TRY(index_slices(ctx, mode, dim_attr, &x->dims, dout, "input Out@GRAD",
                        rill_kin_name(ctx, 2, 0), &s));
  memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));
  rill_status *st = put_slices(ctx, &s, rill_tensor_ptr(dout), rill_tensor_ptr(dx), dout->dtype,
                               !overwrite);
  rill_free(s.off);
  return st;
}

rill_status *rill_cpu_gather_grad(rill_kernel_ctx *ctx) {
  return gather_grad_common(ctx, RILL_INDEX_BY_ROWS, 0, ctx->attrs[RILL_GATHER_GRAD_ATTR_OVERWRITE].v.b);
}
rill_status *rill_cpu_gather_nd_grad(rill_kernel_ctx *ctx) {
  return gather_grad_common(ctx, RILL_INDEX_BY_TUPLES, 0, false);
}
rill_status *rill_cpu_index_select_grad(rill_kernel_ctx *ctx) {
  return gather_grad_common(ctx, RILL_INDEX_BY_DIM, ctx->attrs[RILL_INDEX_SELECT_GRAD_ATTR_DIM].v.i, false);
}
rill_status *rill_cpu_index_sample_grad(rill_kernel_ctx *ctx) {
  return gather_grad_common(ctx, RILL_INDEX_BY_ROW_SAMPLE, 0, false);
}

static rill_status *scatter_common(rill_kernel_ctx *ctx, bool nd, bool overwrite) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *up = rill_kin(ctx, 2, 0), *out = rill_kout(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x) || !up || !rill_tensor_is_set(up))
    return rill_kernel_error(ctx, "inputs X (%s) and Updates (%s) must be dense tensors with data",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 2, 0));
  if (up->dtype != x->dtype)
    return rill_kernel_error(ctx, "input Updates (%s) is %s; it must be X's dtype %s",
                             rill_kin_name(ctx, 2, 0), rill_dtype_name(up->dtype),
                             rill_dtype_name(x->dtype));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  slices s;
  RILL_TRY(slices_of(ctx, 1, &x->dims, nd ? RILL_INDEX_BY_TUPLES : RILL_INDEX_BY_ROWS, 0, rill_kin_name(ctx, 0, 0), &s));
  rill_status *st = NULL;
  size_t es = rill_dtype_size(x->dtype);
  if (rill_tensor_numel(up) != s.count * s.len) {
    st = rill_kernel_error(ctx, "input Updates (%s) holds %lld elements, expected %lld",
                           rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(up),
                           (long long)(s.count * s.len));
  } else {
    char *op = rill_tensor_ptr(out);
    if (op != rill_tensor_ptr(x)) memcpy(op, rill_tensor_ptr(x), rill_tensor_nbytes(x));
    if (!overwrite && !nd)
      for (int64_t i = 0; i < s.count; i++) memset(op + s.off[i] * (int64_t)es, 0, (size_t)s.len * es);
    st = put_slices(ctx, &s, rill_tensor_ptr(up), op, x->dtype, !overwrite);
  }
  rill_free(s.off);
  return st;
}

rill_status *rill_cpu_scatter(rill_kernel_ctx *ctx) {
  return scatter_common(ctx, false, ctx->attrs[RILL_SCATTER_ATTR_OVERWRITE].v.b);
}
rill_status *rill_cpu_scatter_nd_add(rill_kernel_ctx *ctx) { return scatter_common(ctx, true, false); }

static rill_status *scatter_grad_common(rill_kernel_ctx *ctx, bool nd) {
  rill_tensor *dout = rill_kin(ctx, 2, 0), *dx = rill_kout(ctx, 0, 0), *dup = rill_kout(ctx, 1, 0);
  if (!dx && !dup) return NULL;
  if (!dout || !rill_tensor_is_set(dout))
    return rill_kernel_error(ctx, "input Out@GRAD (%s) must be a dense tensor with data",
                             rill_kin_name(ctx, 2, 0));
  slices s;
  RILL_TRY(slices_of(ctx, 0, &dout->dims, nd ? RILL_INDEX_BY_TUPLES : RILL_INDEX_BY_ROWS, 0, rill_kin_name(ctx, 2, 0), &s));
  size_t es = rill_dtype_size(dout->dtype);
  rill_status *st = NULL;
  /* Updates@GRAD first: X@GRAD may share Out@GRAD's buffer. */
  if (dup) {
    st = rill_kout_need(ctx, 1, 0, dout->dtype, &dup);
    if (!st && rill_tensor_numel(dup) != s.count * s.len)
      st = rill_kernel_error(ctx, "output Updates@GRAD (%s) holds %lld elements, expected %lld",
                             rill_kout_name(ctx, 1, 0), (long long)rill_tensor_numel(dup),
                             (long long)(s.count * s.len));
    if (!st) gather_slices(&s, rill_tensor_ptr(dout), rill_tensor_ptr(dup), es);
  }
  if (dx && !st) {
    st = rill_kout_need(ctx, 0, 0, dout->dtype, &dx);
    if (!st) st = rill_kout_check_dims(ctx, 0, 0, dx, &dout->dims);
    if (!st) {
      char *p = rill_tensor_ptr(dx);
      if (p != rill_tensor_ptr(dout)) memcpy(p, rill_tensor_ptr(dout), rill_tensor_nbytes(dout));
      if (!nd)
        for (int64_t i = 0; i < s.count; i++) memset(p + s.off[i] * (int64_t)es, 0, (size_t)s.len * es);
    }
  }
  rill_free(s.off);
  return st;
}

rill_status *rill_cpu_scatter_grad(rill_kernel_ctx *ctx) { return scatter_grad_common(ctx, false); }
rill_status *rill_cpu_scatter_nd_add_grad(rill_kernel_ctx *ctx) {
  return scatter_grad_common(ctx, true);
}
