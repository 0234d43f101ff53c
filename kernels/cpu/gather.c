/* gather, gather_nd, scatter, scatter_nd_add and their gradient kernels (every dtype for
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

/* Offsets of the slices of a tensor of dims x that input (islot) addresses: one row
 * coordinate per index (nd false), or tuples of Index's last extent (nd true). */
static rill_status *slices_of(rill_kernel_ctx *ctx, size_t islot, const rill_dims *x, bool nd,
                              const char *xname, slices *s) {
  const char *slot_name = ctx->schema->inputs[islot].name, *iname = rill_kin_name(ctx, islot, 0);
  rill_tensor *ix = rill_kin(ctx, islot, 0);
  s->off = NULL;
  if (!ix || !rill_tensor_is_set(ix) ||
      (ix->dtype != RILL_DTYPE_INT32 && ix->dtype != RILL_DTYPE_INT64))
    return rill_kernel_error(ctx, "input %s (%s) must be an int32/int64 tensor with data",
                             slot_name, iname);
  int64_t k = 1;
  if (nd) {
    if (ix->dims.n < 1)
      return rill_kernel_error(ctx, "input %s (%s) must have rank >= 1", slot_name, iname);
    k = ix->dims.d[ix->dims.n - 1];
    s->count = rill_dims_prod(&ix->dims, 0, ix->dims.n - 1);
  } else {
    if (ix->dims.n != 1 && !(ix->dims.n == 2 && ix->dims.d[1] == 1))
      return rill_kernel_error(ctx, "input %s (%s) must be [N] or [N, 1]", slot_name, iname);
    s->count = ix->dims.d[0];
  }
  if (k > x->n)
    return rill_kernel_error(ctx, "input %s (%s) addresses %lld dims of a rank-%d input X (%s)",
                             slot_name, iname, (long long)k, (int)x->n, xname);
  s->len = rill_dims_prod(x, (int)k, x->n);
  if (!(s->off = rill_malloc(((size_t)s->count + 1) * sizeof *s->off))) return rill_oom();
  const void *p = rill_tensor_ptr(ix);
  bool i32 = ix->dtype == RILL_DTYPE_INT32;
  for (int64_t i = 0; i < s->count; i++) {
    int64_t o = 0;
    for (int64_t j = 0; j < k; j++) {
      int64_t c = i32 ? ((const int32_t *)p)[i * k + j] : ((const int64_t *)p)[i * k + j];
      if (c < 0 || c >= x->d[j]) {
        rill_free(s->off);
        s->off = NULL;
        return rill_kernel_error(ctx, "input %s (%s) holds %lld at position %lld, outside [0, %lld) "
                                 "of dim %lld of input X (%s)", slot_name, iname, (long long)c,
                                 (long long)(i * k + j), (long long)x->d[j], (long long)j, xname);
      }
      o = o * x->d[j] + c;
    }
    s->off[i] = o * s->len;
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

static rill_status *gather_common(rill_kernel_ctx *ctx, bool nd) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = rill_kout(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  slices s;
  RILL_TRY(slices_of(ctx, 1, &x->dims, nd, rill_kin_name(ctx, 0, 0), &s));
  rill_status *st = NULL;
  if (rill_tensor_numel(out) != s.count * s.len)
    st = rill_kernel_error(ctx, "output Out (%s) holds %lld elements, expected %lld",
                           rill_kout_name(ctx, 0, 0), (long long)rill_tensor_numel(out),
                           (long long)(s.count * s.len));
  else
    gather_slices(&s, rill_tensor_ptr(x), rill_tensor_ptr(out), rill_dtype_size(x->dtype));
  rill_free(s.off);
  return st;
}

rill_status *rill_cpu_gather(rill_kernel_ctx *ctx) { return gather_common(ctx, false); }
rill_status *rill_cpu_gather_nd(rill_kernel_ctx *ctx) { return gather_common(ctx, true); }

static rill_status *gather_grad_common(rill_kernel_ctx *ctx, bool nd, bool overwrite) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *dout = rill_kin(ctx, 2, 0), *dx = rill_kout(ctx, 0, 0);
  if (!dx) return NULL;
  if (!x || !dout || !rill_tensor_is_set(dout))
    return rill_kernel_error(ctx, "inputs X (%s) and Out@GRAD (%s) must be dense tensors",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 2, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dout->dtype, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));
  slices s;
  RILL_TRY(slices_of(ctx, 1, &x->dims, nd, rill_kin_name(ctx, 0, 0), &s));
  rill_status *st = NULL;
  if (rill_tensor_numel(dout) != s.count * s.len)
    st = rill_kernel_error(ctx, "input Out@GRAD (%s) holds %lld elements, expected %lld",
                           rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(dout),
                           (long long)(s.count * s.len));
  if (!st) {
    memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));
    st = put_slices(ctx, &s, rill_tensor_ptr(dout), rill_tensor_ptr(dx), dout->dtype, !overwrite);
  }
  rill_free(s.off);
  return st;
}

rill_status *rill_cpu_gather_grad(rill_kernel_ctx *ctx) {
  return gather_grad_common(ctx, false, ctx->attrs[RILL_GATHER_GRAD_ATTR_OVERWRITE].v.b);
}
rill_status *rill_cpu_gather_nd_grad(rill_kernel_ctx *ctx) {
  return gather_grad_common(ctx, true, false);
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
  RILL_TRY(slices_of(ctx, 1, &x->dims, nd, rill_kin_name(ctx, 0, 0), &s));
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
  RILL_TRY(slices_of(ctx, 0, &dout->dims, nd, rill_kin_name(ctx, 2, 0), &s));
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
