/* concat, concat_grad and split CPU kernels (every dtype). Each tensor is viewed as
 * [outer, extent at axis * inner]; the pieces are copied row by row. The executor has
 * already sized the outputs from inference; the kernels check them. */
#include "kernels/cpu/tensor_ops.h"

#include <string.h>

#include "framework/base/alloc.h"

#define MAX_PIECES 64

/* The axis: AxisTensor (input `slot`) when bound, else attribute 0. */
static rill_status *kernel_axis(rill_kernel_ctx *ctx, size_t slot, int rank, int *axis) {
  int64_t a = ctx->attrs[RILL_CONCAT_ATTR_AXIS].v.i;
  const rill_tensor *t = rill_kin(ctx, slot, 0);
  if (t && !rill_int_tensor_at(t, 0, &a))
    return rill_kernel_error(ctx, "input AxisTensor (%s) must hold one int32/int64 value",
                             rill_kin_name(ctx, slot, 0));
  if (!rill_norm_axis(a, rank, axis))
    return rill_kernel_error(ctx, "axis %lld is out of range for rank %d", (long long)a, rank);
  return NULL;
}

/* Checks that piece i of dims pd fits whole dims wd outside axis. */
static bool fits(const rill_dims *pd, const rill_dims *wd, int axis) {
  if (pd->n != wd->n) return false;
  for (int k = 0; k < wd->n; k++)
    if (k != axis && pd->d[k] != wd->d[k]) return false;
  return true;
}

/* Moves data between `whole` and pieces (gather: pieces -> whole). pieces[i] may be
 * NULL only when scattering (an unwanted gradient); dims[i] gives each piece's shape. */
static rill_status *move(rill_kernel_ctx *ctx, rill_tensor *whole, const rill_dims *const *dims,
                         rill_tensor *const *pieces, size_t n, int axis, bool gather,
                         const char *what) {
  if (n > MAX_PIECES) return rill_kernel_error(ctx, "more than %d %s", MAX_PIECES, what);
  int64_t parts[MAX_PIECES], sum = 0;
  void *ptrs[MAX_PIECES];
  for (size_t i = 0; i < n; i++) {
    if (!fits(dims[i], &whole->dims, axis)) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx, "%s #%zu of shape %s does not fit shape %s at axis %d", what, i,
                               rill_dims_str(dims[i], a, sizeof a),
                               rill_dims_str(&whole->dims, b, sizeof b), axis);
    }
    if (pieces[i] && pieces[i]->dtype != whole->dtype)
      return rill_kernel_error(ctx, "%s #%zu is %s, expected %s", what, i,
                               rill_dtype_name(pieces[i]->dtype), rill_dtype_name(whole->dtype));
    parts[i] = dims[i]->d[axis];
    sum += parts[i];
    ptrs[i] = pieces[i] ? rill_tensor_ptr(pieces[i]) : NULL;
  }
  if (sum != whole->dims.d[axis])
    return rill_kernel_error(ctx, "%s add up to %lld at axis %d, the whole has %lld", what,
                             (long long)sum, axis, (long long)whole->dims.d[axis]);
  int64_t outer = rill_dims_prod(&whole->dims, 0, axis);
  int64_t inner = rill_dims_prod(&whole->dims, axis + 1, whole->dims.n);
  size_t es = rill_dtype_size(whole->dtype), wbytes = rill_tensor_nbytes(whole);
  void *w = rill_tensor_ptr(whole), *scratch = NULL;
  /* A piece sharing memory with the whole (in-place use) goes through scratch. */
  for (size_t i = 0; i < n && !scratch; i++)
    if (pieces[i] && rill_overlaps(ptrs[i], rill_tensor_nbytes(pieces[i]), w, wbytes)) {
      if (!(scratch = rill_aligned_alloc(wbytes, RILL_TENSOR_ALIGN))) return rill_oom();
      if (!gather) memcpy(scratch, w, wbytes);
    }
  rill_cpu_concat_bytes(scratch ? scratch : w, ptrs, parts, n, outer, inner, es, gather);
  if (scratch) {
    if (gather) memcpy(w, scratch, wbytes);
    rill_free(scratch);
  }
  return NULL;
}

rill_status *rill_cpu_concat(rill_kernel_ctx *ctx) {
  size_t n = ctx->nin[0];
  rill_tensor *out, *x0 = rill_kin(ctx, 0, 0);
  if (!x0 || !rill_tensor_is_set(x0))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x0->dtype, &out));
  if (n > MAX_PIECES) return rill_kernel_error(ctx, "more than %d inputs X", MAX_PIECES);
  int axis;
  RILL_TRY(kernel_axis(ctx, 1, out->dims.n, &axis));
  rill_tensor *xs[MAX_PIECES];
  const rill_dims *dims[MAX_PIECES];
  for (size_t i = 0; i < n; i++) {
    RILL_TRY(rill_kin_need(ctx, 0, i, x0->dtype, &xs[i]));
    dims[i] = &xs[i]->dims;
  }
  return move(ctx, out, dims, xs, n, axis, true, "input X");
}

rill_status *rill_cpu_concat_grad(rill_kernel_ctx *ctx) {
  size_t n = ctx->nin[0];
  rill_tensor *dout;
  rill_tensor *d0 = rill_kin(ctx, 1, 0);
  if (!d0) return rill_kernel_error(ctx, "input Out@GRAD (%s) is missing", rill_kin_name(ctx, 1, 0));
  RILL_TRY(rill_kin_need(ctx, 1, 0, d0->dtype, &dout));
  if (n != ctx->nout[0] || n > MAX_PIECES)
    return rill_kernel_error(ctx, "has %zu inputs X and %zu outputs X@GRAD", n, ctx->nout[0]);
  int axis;
  RILL_TRY(kernel_axis(ctx, 2, dout->dims.n, &axis));
  rill_tensor *dxs[MAX_PIECES];
  const rill_dims *dims[MAX_PIECES];
  for (size_t i = 0; i < n; i++) {
    rill_tensor *x = rill_kin(ctx, 0, i);
    if (!x) return rill_kernel_error(ctx, "input X (%s) is missing", rill_kin_name(ctx, 0, i));
    dims[i] = &x->dims;
    dxs[i] = rill_kout(ctx, 0, i);
    if (dxs[i]) {
      RILL_TRY(rill_kout_need(ctx, 0, i, dout->dtype, &dxs[i]));
      RILL_TRY(rill_kout_check_dims(ctx, 0, i, dxs[i], &x->dims));
    }
  }
  return move(ctx, dout, dims, dxs, n, axis, false, "input X");
}

rill_status *rill_cpu_split(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  size_t n = ctx->nout[0];
  if (n > MAX_PIECES) return rill_kernel_error(ctx, "more than %d outputs Out", MAX_PIECES);
  int axis;
  RILL_TRY(kernel_axis(ctx, 1, x->dims.n, &axis));
  rill_tensor *outs[MAX_PIECES];
  const rill_dims *dims[MAX_PIECES];
  for (size_t i = 0; i < n; i++) {
    RILL_TRY(rill_kout_need(ctx, 0, i, x->dtype, &outs[i]));
    dims[i] = &outs[i]->dims;
  }
  return move(ctx, x, dims, outs, n, axis, false, "output Out");
}

/* split_byref: the row blocks of a gradient for the pservers. Along axis 0 each block of
 * a tensor without LoD is a view sharing X's buffer at its first row (when that keeps
 * the buffer's alignment), so cutting a gradient copies nothing: send frames the
 * view's bytes directly. Views are safe because a buffer is written in place only by
 * its sole user: the op that writes X next finds it shared and takes a new buffer
 * (rill_tensor_alloc), and the views keep the old bytes. Other axes, a LoD, or an
 * unaligned row offset: copied blocks, as split. The op is KERNEL_SHAPES: the executor
 * leaves its outputs to this kernel. */
rill_status *rill_cpu_split_byref(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_SPLIT_IN_X, 0);
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  size_t n = ctx->nout[0];
  if (n == 0 || n > MAX_PIECES)
    return rill_kernel_error(ctx, "has %zu outputs Out (1 to %d)", n, MAX_PIECES);
  if (ctx->nin[RILL_SPLIT_IN_SECTIONS_TENSOR_LIST])
    return rill_kernel_error(ctx, "SectionsTensorList is not read by split_byref; set sections");
  int axis;
  RILL_TRY(kernel_axis(ctx, RILL_SPLIT_IN_AXIS_TENSOR, x->dims.n, &axis));
  int64_t dim = x->dims.d[axis], parts[MAX_PIECES], sum = 0;
  int32_t num = ctx->attrs[RILL_SPLIT_ATTR_NUM].v.i;
  const rill_attr_value *sec = &ctx->attrs[RILL_SPLIT_ATTR_SECTIONS];
  int rest = -1;
  if (num > 0) {
    if ((size_t)num != n || dim % num)
      return rill_kernel_error(ctx, "num %d does not cut extent %lld into %zu outputs Out",
                               (int)num, (long long)dim, n);
    for (size_t i = 0; i < n; i++) parts[i] = dim / num;
    sum = dim;
  } else {
    if (sec->n != n)
      return rill_kernel_error(ctx, "%zu sections for %zu outputs Out", sec->n, n);
    for (size_t i = 0; i < n; i++) {
      parts[i] = sec->list.ints[i];
      if (parts[i] == -1 && rest < 0) rest = (int)i;
      else if (parts[i] < 0)
        return rill_kernel_error(ctx, "section %zu is %lld", i, (long long)parts[i]);
      else sum += parts[i];
    }
    if (rest >= 0 && sum <= dim) parts[rest] = dim - sum, sum = dim;
  }
  if (sum != dim)
    return rill_kernel_error(ctx, "sections add up to %lld but input X (%s) has %lld at axis %d",
                             (long long)sum, rill_kin_name(ctx, 0, 0), (long long)dim, axis);
  size_t es = rill_dtype_size(x->dtype);
  size_t row = es;
  for (int k = 1; k < x->dims.n; k++) row *= (size_t)x->dims.d[k];
  bool views = axis == 0 && x->lod.nlevels == 0;
  for (size_t i = 0, at = 0; i < n && views; at += (size_t)parts[i] * row, i++)
    if ((x->offset + at) % RILL_TENSOR_ALIGN) views = false;
  rill_tensor *outs[MAX_PIECES];
  const rill_dims *dims[MAX_PIECES];
  size_t at = x->offset;
  for (size_t i = 0; i < n; i++) {
    rill_tensor *o = rill_kout(ctx, 0, i);
    if (!o) return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                                     rill_kout_name(ctx, 0, i));
    if (o == x) return rill_kernel_error(ctx, "output Out (%s) is the input X", rill_kout_name(ctx, 0, i));
    rill_dims d = x->dims;
    d.d[axis] = parts[i];
    if (views) {
      rill_tensor_clear(o);
      rill_buffer_retain(x->buf);
      o->buf = x->buf;
      o->offset = at;
      o->dtype = x->dtype;
      o->dims = d;
      at += (size_t)parts[i] * row;
    } else {
      rill_lod_clear(&o->lod);
      RILL_TRY(rill_tensor_alloc(o, x->dtype, &d));
    }
    outs[i] = o;
    dims[i] = &o->dims;
  }
  return views ? NULL : move(ctx, x, dims, outs, n, axis, false, "output Out");
}
