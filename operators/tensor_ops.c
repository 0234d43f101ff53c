/* Shape functions shared by the tensor-manipulation ops' inference and kernels. */
#include "operators/tensor_ops.h"

#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "operators/math_grad.h"

int64_t rill_span_prod(const rill_dims *d, int b, int e) {
  int64_t p = 1;
  bool unknown = false;
  for (int i = b; i < e; i++) {
    if (d->d[i] < 0) {
      unknown = true;
      continue;
    }
    if (__builtin_mul_overflow(p, d->d[i], &p)) return -2;
  }
  return unknown ? -1 : p;
}

rill_status *rill_xshape_infer(rill_infer_ctx *ctx, size_t slot, const rill_tensor_meta *x) {
  rill_tensor_meta *xs = rill_infer_out(ctx, slot, 0);
  if (!xs) return NULL;
  if (x->dims.n + 1 > RILL_MAX_DIMS)
    return rill_infer_error(ctx, "input X (%s) has rank %d: output XShape (%s) would need rank "
                            "%d, more than %d", rill_infer_in_name(ctx, 0, 0), (int)x->dims.n,
                            rill_infer_out_name(ctx, slot, 0), (int)x->dims.n + 1, RILL_MAX_DIMS);
  rill_dims d;
  d.n = x->dims.n + 1;
  d.d[0] = 0;
  for (int i = 0; i < x->dims.n; i++) d.d[i + 1] = x->dims.d[i];
  rill_meta_set(xs, x->dtype, &d, 0, -1, -1);
  return NULL;
}

bool rill_xshape_dims(const rill_dims *xshape, rill_dims *x) {
  if (xshape->n < 1) return false;
  x->n = xshape->n - 1;
  for (int i = 0; i < x->n; i++) x->d[i] = xshape->d[i + 1];
  return true;
}

static void list_str(const int64_t *v, size_t n, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = 0;
  at += (size_t)snprintf(buf, len, "[");
  for (size_t i = 0; i < n && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (at < len) snprintf(buf + at, len - at, "]");
}

bool rill_reshape_dims(const int64_t *shape, size_t n, const rill_dims *in, rill_dims *out,
                       char *err, size_t errlen) {
  char ss[RILL_DIMS_STR_MAX], is[RILL_DIMS_STR_MAX];
  list_str(shape, n, ss, sizeof ss);
  rill_dims_str(in, is, sizeof is);
  if (n > RILL_MAX_DIMS) {
    snprintf(err, errlen, "shape %s has more than %d dims", ss, RILL_MAX_DIMS);
    return false;
  }
  int unk = -1;
  bool any_unknown = false;
  int64_t prod = 1;
  out->n = (int32_t)n;
  for (size_t i = 0; i < n; i++) {
    int64_t s = shape[i];
    if (s == -1) {
      if (unk >= 0) {
        snprintf(err, errlen, "shape %s has more than one -1", ss);
        return false;
      }
      unk = (int)i;
      out->d[i] = -1;
      continue;
    }
    if (s == 0) {
      if ((int)i >= in->n) {
        snprintf(err, errlen, "shape %s copies dim %zu (0) but the input has shape %s", ss, i, is);
        return false;
      }
      out->d[i] = in->d[i];
    } else if (s < 0) {
      snprintf(err, errlen, "shape %s has the negative extent %lld (only -1 and 0 are special)",
               ss, (long long)s);
      return false;
    } else {
      out->d[i] = s;
    }
    if (out->d[i] < 0) any_unknown = true;
    else if (__builtin_mul_overflow(prod, out->d[i], &prod)) {
      snprintf(err, errlen, "shape %s overflows", ss);
      return false;
    }
  }
  int64_t in_numel = rill_span_prod(in, 0, in->n);
  if (in_numel == -2) {
    snprintf(err, errlen, "input shape %s overflows", is);
    return false;
  }
  if (in_numel < 0 || any_unknown) return true; /* compile time: nothing more to check */
  if (unk >= 0) {
    if (prod == 0 || in_numel % prod) {
      snprintf(err, errlen, "shape %s cannot hold the %lld elements of the input of shape %s", ss,
               (long long)in_numel, is);
      return false;
    }
    out->d[unk] = in_numel / prod;
  } else if (prod != in_numel) {
    snprintf(err, errlen, "shape %s has %lld elements but the input of shape %s has %lld", ss,
             (long long)prod, is, (long long)in_numel);
    return false;
  }
  return true;
}

bool rill_squeeze_dims(const int32_t *axes, size_t n, const rill_dims *in, bool runtime,
                       rill_dims *out, char *err, size_t errlen) {
  bool drop[RILL_MAX_DIMS] = {false};
  int r = in->n;
  if (n == 0) {
    for (int i = 0; i < r; i++) drop[i] = in->d[i] == 1;
  } else {
    for (size_t i = 0; i < n; i++) {
      int a;
      if (!rill_norm_axis(axes[i], r, &a)) {
        snprintf(err, errlen, "axis %d is out of range for an input of rank %d", (int)axes[i], r);
        return false;
      }
      if (in->d[a] == 1 || (!runtime && in->d[a] < 0)) drop[a] = true;
    }
  }
  out->n = 0;
  for (int i = 0; i < r; i++)
    if (!drop[i]) out->d[out->n++] = in->d[i];
  return true;
}

bool rill_unsqueeze_dims(const int64_t *axes, size_t n, const rill_dims *in, rill_dims *out,
                         char *err, size_t errlen) {
  if ((size_t)in->n + n > RILL_MAX_DIMS) {
    snprintf(err, errlen, "rank %d plus %zu new axes is more than %d dims", (int)in->n, n,
             RILL_MAX_DIMS);
    return false;
  }
  bool added[RILL_MAX_DIMS + 2] = {false};
  int size = in->n;
  for (size_t k = 0; k < n; k++) {
    int64_t cur = axes[k] < 0 ? axes[k] + size + 1 : axes[k];
    if (cur < 0 || cur > size) {
      snprintf(err, errlen, "axis %lld is out of range when the shape has rank %d",
               (long long)axes[k], size);
      return false;
    }
    for (int i = size; i >= (int)cur; i--)
      if (added[i]) {
        added[i + 1] = true;
        added[i] = false;
      }
    added[cur] = true;
    size++;
  }
  out->n = size;
  for (int i = 0, j = 0; i < size; i++) out->d[i] = added[i] ? 1 : in->d[j++];
  return true;
}

bool rill_flatten_range_dims(int start, int stop, const rill_dims *in, rill_dims *out,
                             char *err, size_t errlen) {
  int r = in->n;
  if (r == 0) {
    out->n = 1;
    out->d[0] = 1;
    return true;
  }
  int s, e;
  if (!rill_norm_axis(start, r, &s) || !rill_norm_axis(stop, r, &e) || s > e) {
    snprintf(err, errlen, "start_axis %d and stop_axis %d do not name a range of rank %d", start,
             stop, r);
    return false;
  }
  int64_t p = rill_span_prod(in, s, e + 1);
  if (p == -2) {
    snprintf(err, errlen, "flattened extent overflows");
    return false;
  }
  out->n = 0;
  for (int i = 0; i < s; i++) out->d[out->n++] = in->d[i];
  out->d[out->n++] = p;
  for (int i = e + 1; i < r; i++) out->d[out->n++] = in->d[i];
  return true;
}

bool rill_flatten2_dims(int axis, const rill_dims *in, rill_dims *out, char *err, size_t errlen) {
  if (axis < 0 || axis > in->n) {
    snprintf(err, errlen, "axis %d is out of range [0, %d]", axis, (int)in->n);
    return false;
  }
  int64_t a = rill_span_prod(in, 0, axis), b = rill_span_prod(in, axis, in->n);
  if (a == -2 || b == -2) {
    snprintf(err, errlen, "flattened extent overflows");
    return false;
  }
  out->n = 2;
  out->d[0] = a;
  out->d[1] = b;
  return true;
}

rill_status *rill_shape_from_inputs(rill_infer_ctx *ctx, size_t st_slot, size_t list_slot,
                                    const rill_attr_value *shape, rill_dims *d, bool *known) {
  *known = true;
  d->n = 0;
  const rill_tensor_meta *st = rill_infer_in(ctx, st_slot, 0);
  if (st) {
    const rill_tensor *t = rill_infer_tensor(ctx, st_slot, 0);
    const char *name = rill_infer_in_name(ctx, st_slot, 0);
    if (t) {
      int64_t n = rill_tensor_numel(t);
      if (n > RILL_MAX_DIMS || (t->dtype != RILL_DTYPE_INT32 && t->dtype != RILL_DTYPE_INT64))
        return rill_infer_error(ctx, "input ShapeTensor (%s) must be a 1-D int32/int64 tensor "
                                "of at most %d elements", name, RILL_MAX_DIMS);
      d->n = (int32_t)n;
      for (int64_t i = 0; i < n; i++) rill_int_tensor_at(t, i, &d->d[i]);
    } else if (st->known && st->dims.n == 1 && st->dims.d[0] >= 0 &&
               st->dims.d[0] <= RILL_MAX_DIMS) {
      d->n = (int32_t)st->dims.d[0];
      for (int i = 0; i < d->n; i++) d->d[i] = -1;
    } else {
      *known = false;
    }
    return NULL;
  }
  if (ctx->nin[list_slot] > 0) {
    size_t n = ctx->nin[list_slot];
    if (n > RILL_MAX_DIMS)
      return rill_infer_error(ctx, "input ShapeTensorList has %zu tensors, more than %d dims", n,
                              RILL_MAX_DIMS);
    d->n = (int32_t)n;
    for (size_t i = 0; i < n; i++) {
      const rill_tensor *t = rill_infer_tensor(ctx, list_slot, i);
      d->d[i] = -1;
      if (t && !rill_int_tensor_at(t, 0, &d->d[i]))
        return rill_infer_error(ctx, "input ShapeTensorList (%s) must hold one int32/int64 value",
                                rill_infer_in_name(ctx, list_slot, i));
    }
    return NULL;
  }
  if (shape->n > RILL_MAX_DIMS)
    return rill_infer_error(ctx, "attribute shape has %zu dims, more than %d", shape->n,
                            RILL_MAX_DIMS);
  d->n = (int32_t)shape->n;
  for (size_t i = 0; i < shape->n; i++) d->d[i] = shape->list.longs[i];
  bool runtime = ctx->in_tensors != NULL;
  for (int i = 0; i < d->n; i++)
    if (d->d[i] < (runtime ? 0 : -1)) {
      char b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "output Out (%s) would have shape %s: negative extent",
                              rill_infer_out_name(ctx, 0, 0), rill_dims_str(d, b, sizeof b));
    }
  return NULL;
}

rill_status *rill_xshape_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *xs = rill_infer_in(ctx, 0, 0), *dout = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!xs || !dout) return rill_infer_error(ctx, "needs inputs XShape and Out@GRAD");
  if (!dx) return NULL;
  if (!xs->known || !dout->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_dims d;
  if (!rill_xshape_dims(&xs->dims, &d))
    return rill_infer_error(ctx, "input XShape (%s) has rank 0; it must be [0] + the shape of X",
                            rill_infer_in_name(ctx, 0, 0));
  int64_t a = rill_span_prod(&d, 0, d.n), b = rill_span_prod(&dout->dims, 0, dout->dims.n);
  if (a >= 0 && b >= 0 && a != b) {
    char s1[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input Out@GRAD (%s) of shape %s does not have the %lld elements "
                            "of X's shape %s (from XShape %s)", rill_infer_in_name(ctx, 1, 0),
                            rill_dims_str(&dout->dims, s1, sizeof s1), (long long)a,
                            rill_dims_str(&d, s2, sizeof s2), rill_infer_in_name(ctx, 0, 0));
  }
  rill_meta_set(dx, dout->dtype, &d, dout->lod_level, 1, 0);
  return NULL;
}

rill_status *rill_xshape_grad_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  if (!rill_op_output(ctx->fwd, "XShape"))
    return rill_error(RILL_INVALID_ARGUMENT, "%s: the gradient needs output XShape, which the op "
                      "does not have", ctx->schema->type);
  char type[128];
  snprintf(type, sizeof type, "%s_grad", ctx->schema->type);
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, type, &op));
  RILL_TRY(rill_grad_forward(ctx, op, "XShape"));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_of_input(ctx, op, "X"));
  return NULL;
}

bool rill_reshape_target(const rill_tensor *const *list, size_t nlist, const rill_tensor *shape,
                         const rill_attr_value *attr, int64_t *out, size_t *n, char *err,
                         size_t errlen) {
  if (nlist > 0) {
    if (nlist > RILL_MAX_DIMS) {
      snprintf(err, errlen, "input ShapeTensor has %zu tensors, more than %d dims", nlist,
               RILL_MAX_DIMS);
      return false;
    }
    for (size_t i = 0; i < nlist; i++)
      if (!rill_int_tensor_at(list[i], 0, &out[i])) {
        snprintf(err, errlen, "input ShapeTensor #%zu must hold one int32/int64 value", i);
        return false;
      }
    *n = nlist;
    return true;
  }
  if (shape) {
    int64_t k = rill_tensor_numel(shape);
    if (k > RILL_MAX_DIMS || (shape->dtype != RILL_DTYPE_INT32 && shape->dtype != RILL_DTYPE_INT64)) {
      snprintf(err, errlen, "input Shape must be a 1-D int32/int64 tensor of at most %d elements",
               RILL_MAX_DIMS);
      return false;
    }
    for (int64_t i = 0; i < k; i++) rill_int_tensor_at(shape, i, &out[i]);
    *n = (size_t)k;
    return true;
  }
  if (attr->n > RILL_MAX_DIMS) {
    snprintf(err, errlen, "attribute shape has %zu dims, more than %d", attr->n, RILL_MAX_DIMS);
    return false;
  }
  for (size_t i = 0; i < attr->n; i++) out[i] = attr->list.ints[i];
  *n = attr->n;
  return true;
}

const rill_slot_schema rill_xshape_grad_inputs[2] = {
    {"XShape", RILL_SLOT_ANY_PLACE, "[0] + the shape of the forward input X"},
    {"Out@GRAD", RILL_SLOT_ANY_PLACE, "gradient of the forward output (X@GRAD views its buffer)"},
};
const rill_slot_schema rill_xshape_grad_outputs[1] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X: Out@GRAD with X's shape"},
};

rill_status *rill_grad_like_input_infer(rill_infer_ctx *ctx) {
  if (!rill_infer_in(ctx, 0, 0))
    return rill_infer_error(ctx, "needs input %s", ctx->schema->inputs[0].name);
  if (rill_infer_out(ctx, 0, 0)) rill_grad_infer_like(ctx, 0, 0);
  return NULL;
}

rill_status *rill_batch_size_like_dims(rill_infer_ctx *ctx, size_t slot, const rill_attr_value *s,
                                       int32_t ii, int32_t oi, rill_dims *d) {
  const rill_tensor_meta *in = rill_infer_in(ctx, slot, 0);
  if (s->n < 1 || s->n > RILL_MAX_DIMS)
    return rill_infer_error(ctx, "attribute shape has %zu dims: must have 1 to %d", s->n, RILL_MAX_DIMS);
  if (oi < 0 || (size_t)oi >= s->n)
    return rill_infer_error(ctx, "attribute output_dim_idx %d is outside shape's %zu dims", (int)oi, s->n);
  d->n = (int32_t)s->n;
  for (size_t i = 0; i < s->n; i++) d->d[i] = s->list.ints[i];
  int64_t batch = -1;
  if (in->known) {
    if (ii < 0 || ii >= in->dims.n)
      return rill_infer_error(ctx, "attribute input_dim_idx %d is outside input Input (%s)'s rank %d",
                              (int)ii, rill_infer_in_name(ctx, slot, 0), (int)in->dims.n);
    batch = in->dims.d[ii];
  }
  const rill_tensor *t = rill_infer_tensor(ctx, slot, 0);
  if (t && ii == 0 && t->lod.nlevels > 0) {
    const rill_lod_level *last = &t->lod.levels[t->lod.nlevels - 1];
    batch = last->n > 0 ? (int64_t)last->n - 1 : 0;
  }
  d->d[oi] = batch;
  bool runtime = ctx->in_tensors != NULL;
  for (int i = 0; i < d->n; i++)
    if (d->d[i] < (runtime ? 0 : -1))
      return rill_infer_error(ctx, "output Out (%s) would have a negative extent at dim %d",
                              rill_infer_out_name(ctx, 0, 0), i);
  return NULL;
}

rill_status *rill_slice_grad_meta(rill_infer_ctx *ctx, size_t x_slot, size_t dout_slot,
                                  const rill_dims *slice, bool keep_lod) {
  const rill_tensor_meta *x = rill_infer_in(ctx, x_slot, 0);
  const rill_tensor_meta *dout = rill_infer_in(ctx, dout_slot, 0);
  int64_t a = rill_span_prod(slice, 0, slice->n), b = rill_span_prod(&dout->dims, 0, dout->dims.n);
  if (a >= 0 && b >= 0 && a != b) {
    char s1[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input Out@GRAD (%s) has shape %s but the slice has shape %s",
                            rill_infer_in_name(ctx, dout_slot, 0),
                            rill_dims_str(&dout->dims, s1, sizeof s1),
                            rill_dims_str(slice, s2, sizeof s2));
  }
  if (keep_lod) rill_meta_set(rill_infer_out(ctx, 0, 0), dout->dtype, &x->dims, x->lod_level,
                              (int)x_slot, 0);
  else rill_meta_set(rill_infer_out(ctx, 0, 0), dout->dtype, &x->dims, 0, -1, -1);
  return NULL;
}
