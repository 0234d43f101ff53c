/* gather, gather_nd, scatter, scatter_nd_add, index_select, index_sample and their
 * gradient kernels (every dtype for
 * the copies; float32/64 and int32/64 where slices are added). All of them turn the
 * index tensor into element offsets of slices of X first, checking each coordinate. */
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"

/* The slices addressed by an index tensor. */
typedef struct slices {
  int64_t *off;  /* element offset of each slice in X */
  int64_t count; /* number of slices */
  int64_t len;   /* elements per slice */
} slices;

/* How an index tensor addresses X: one row coordinate per index (gather, scatter),
 * tuples of Index's last extent (the nd ops), one coordinate along a dim per index for
 * each outer slice (index_select), one per element of a 2-D Index along X's rows
 * (index_sample). */
typedef enum { BY_ROWS, BY_TUPLES, BY_DIM, BY_ROW_SAMPLE } index_mode;

static int64_t index_at(const rill_tensor *ix, int64_t i) {
  return ix->dtype == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(ix))[i]
                                       : ((const int64_t *)rill_tensor_ptr(ix))[i];
}

/* Offsets of the slices of a tensor of dims x that input (islot) addresses; dim is the
 * normalized dim of BY_DIM. */
static rill_status *slices_of(rill_kernel_ctx *ctx, size_t islot, const rill_dims *x,
                              index_mode mode, int dim, const char *xname, slices *s) {
  const char *slot_name = ctx->schema->inputs[islot].name, *iname = rill_kin_name(ctx, islot, 0);
  rill_tensor *ix = rill_kin(ctx, islot, 0);
  s->off = NULL;
  if (!ix || !rill_tensor_is_set(ix) ||
      (ix->dtype != RILL_DTYPE_INT32 && ix->dtype != RILL_DTYPE_INT64))
    return rill_kernel_error(ctx, "input %s (%s) must be an int32/int64 tensor with data",
                             slot_name, iname);
  int64_t k = 1, outer = 1, per = 1; /* per: indices per outer slice */
  if (mode == BY_TUPLES) {
    if (ix->dims.n < 1)
      return rill_kernel_error(ctx, "input %s (%s) must have rank >= 1", slot_name, iname);
    k = ix->dims.d[ix->dims.n - 1];
    per = rill_dims_prod(&ix->dims, 0, ix->dims.n - 1);
  } else if (mode == BY_ROW_SAMPLE) {
    if (ix->dims.n != 2 || x->n != 2 || ix->dims.d[0] != x->d[0])
      return rill_kernel_error(ctx, "input %s (%s) and input X (%s) must be 2-D with the same "
                               "first extent", slot_name, iname, xname);
    outer = x->d[0];
    per = ix->dims.d[1];
  } else {
    if (ix->dims.n != 1 && !(ix->dims.n == 2 && ix->dims.d[1] == 1))
      return rill_kernel_error(ctx, "input %s (%s) must be [N] or [N, 1]", slot_name, iname);
    per = ix->dims.d[0];
    if (mode == BY_DIM) outer = rill_dims_prod(x, 0, dim);
  }
  int first = mode == BY_DIM ? dim : mode == BY_ROW_SAMPLE ? 1 : 0;
  if (first + k > x->n)
    return rill_kernel_error(ctx, "input %s (%s) addresses %lld dims of a rank-%d input X (%s)",
                             slot_name, iname, (long long)k, (int)x->n, xname);
  s->len = rill_dims_prod(x, first + (int)k, x->n);
  s->count = outer * per;
  if (!(s->off = rill_malloc(((size_t)s->count + 1) * sizeof *s->off))) return rill_oom();
  /* Elements of X from one outer slice to the next. */
  int64_t outer_stride = rill_dims_prod(x, first, x->n);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < per; i++) {
      int64_t at = mode == BY_ROW_SAMPLE ? o * per + i : i, c0 = 0;
      for (int64_t j = 0; j < k; j++) {
        int64_t c = index_at(ix, at * k + j), e = x->d[first + j];
        if (c < 0 || c >= e) {
          rill_free(s->off);
          s->off = NULL;
          return rill_kernel_error(ctx, "input %s (%s) holds %lld at position %lld, outside [0, "
                                   "%lld) of dim %lld of input X (%s)", slot_name, iname,
                                   (long long)c, (long long)(at * k + j), (long long)e,
                                   (long long)(first + j), xname);
        }
        c0 = c0 * e + c;
      }
      s->off[o * per + i] = o * outer_stride + c0 * s->len;
    }
  return NULL;
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

/* The index mode of the op and, for index_select, the normalized dim. */
static rill_status *mode_dim(rill_kernel_ctx *ctx, index_mode mode, int32_t dim_attr,
                             const rill_dims *x, int *dim) {
  *dim = 0;
  if (mode == BY_DIM && !rill_norm_axis(dim_attr, x->n, dim))
    return rill_kernel_error(ctx, "dim %d is out of range for input X (%s) of rank %d",
                             (int)dim_attr, rill_kin_name(ctx, 0, 0), (int)x->n);
  return NULL;
}

/* The slices of X (dims x) that Index (input 1) addresses, checked against `packed`,
 * the tensor holding them one after another (Out, or Out@GRAD), called `what`. */
static rill_status *index_slices(rill_kernel_ctx *ctx, index_mode mode, int32_t dim_attr,
                                 const rill_dims *x, const rill_tensor *packed, const char *what,
                                 const char *packed_name, slices *s) {
  int dim;
  RILL_TRY(mode_dim(ctx, mode, dim_attr, x, &dim));
  RILL_TRY(slices_of(ctx, 1, x, mode, dim, rill_kin_name(ctx, 0, 0), s));
  if (rill_tensor_numel(packed) == s->count * s->len) return NULL;
  rill_free(s->off);
  s->off = NULL;
  return rill_kernel_error(ctx, "%s (%s) holds %lld elements, expected %lld", what, packed_name,
                           (long long)rill_tensor_numel(packed), (long long)(s->count * s->len));
}

static rill_status *gather_common(rill_kernel_ctx *ctx, index_mode mode, int32_t dim_attr) {
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

rill_status *rill_cpu_gather(rill_kernel_ctx *ctx) { return gather_common(ctx, BY_ROWS, 0); }
rill_status *rill_cpu_gather_nd(rill_kernel_ctx *ctx) { return gather_common(ctx, BY_TUPLES, 0); }
rill_status *rill_cpu_index_select(rill_kernel_ctx *ctx) {
  return gather_common(ctx, BY_DIM, ctx->attrs[RILL_INDEX_SELECT_ATTR_DIM].v.i);
}
rill_status *rill_cpu_index_sample(rill_kernel_ctx *ctx) {
  return gather_common(ctx, BY_ROW_SAMPLE, 0);
}

static rill_status *gather_grad_common(rill_kernel_ctx *ctx, index_mode mode, int32_t dim_attr,
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
  return gather_grad_common(ctx, BY_ROWS, 0, ctx->attrs[RILL_GATHER_GRAD_ATTR_OVERWRITE].v.b);
}
rill_status *rill_cpu_gather_nd_grad(rill_kernel_ctx *ctx) {
  return gather_grad_common(ctx, BY_TUPLES, 0, false);
}
rill_status *rill_cpu_index_select_grad(rill_kernel_ctx *ctx) {
  return gather_grad_common(ctx, BY_DIM, ctx->attrs[RILL_INDEX_SELECT_GRAD_ATTR_DIM].v.i, false);
}
rill_status *rill_cpu_index_sample_grad(rill_kernel_ctx *ctx) {
  return gather_grad_common(ctx, BY_ROW_SAMPLE, 0, false);
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
  RILL_TRY(slices_of(ctx, 1, &x->dims, nd ? BY_TUPLES : BY_ROWS, 0, rill_kin_name(ctx, 0, 0), &s));
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
  RILL_TRY(slices_of(ctx, 0, &dout->dims, nd ? BY_TUPLES : BY_ROWS, 0, rill_kin_name(ctx, 2, 0), &s));
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
