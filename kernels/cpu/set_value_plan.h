/* set_value's plan, made on the host by each of its kernels (the CPU's,
 * kernels/cpu/set_value.c, and the device's, kernels/cuda/set_value.c). Slices are
 * normalised as Paddle's CheckAndUpdateSliceAttrs does (negative indices wrap, then
 * clamp; a negative step runs down to end, exclusive, with end -1 meaning "through index
 * 0"). The value is aligned to the slice's dims without the decrease_axes and with the
 * none_axes inserted, and broadcast numpy-style: the plan gives its stride along each
 * of Input's axes, 0 where it repeats. */
#ifndef RILL_KERNELS_CPU_SET_VALUE_PLAN_H
#define RILL_KERNELS_CPU_SET_VALUE_PLAN_H

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "operators/set_value.h"

typedef struct sv_plan {
  int rank;
  int64_t start[RILL_MAX_DIMS], step[RILL_MAX_DIMS], cnt[RILL_MAX_DIMS]; /* the slice, per axis */
  int64_t vstride[RILL_MAX_DIMS]; /* the value's element stride per axis of Input (0: repeated) */
  int64_t total;                  /* elements in the slice */
  rill_tensor *value;             /* ValueTensor, or NULL: the value is */
  void *attr_values;              /* the attribute list in Input's dtype, on the host (owned) */
  int64_t nvalues;                /* elements of the value */
} sv_plan;

static inline bool sv_read_long(const rill_tensor *t, int64_t *v) {
  if (!t || !rill_tensor_ptr(t) || rill_tensor_numel(t) < 1) return false;
  if (t->dtype == RILL_DTYPE_INT32) *v = *(const int32_t *)rill_tensor_ptr(t);
  else if (t->dtype == RILL_DTYPE_INT64) *v = *(const int64_t *)rill_tensor_ptr(t);
  else return false;
  return true;
}

/* Value i of slice parameter `which` (0 starts, 1 ends, 2 steps). */
static inline rill_status *sv_slice_param(rill_kernel_ctx *ctx, int which, size_t i, int64_t *v) {
  size_t slot = SV_IN_STARTS + (size_t)which;
  const rill_attr_value *a = &ctx->attrs[SV_A_STARTS + which];
  if (ctx->nin[slot] > 0) {
    if (!sv_read_long(rill_kin(ctx, slot, i), v))
      return rill_kernel_error(ctx, "input %s (%s) must hold one int32/int64 value",
                               ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, i));
    return NULL;
  }
  if (which == 2 && a->n == 0) {
    *v = 1;
    return NULL;
  }
  if (i >= a->n)
    return rill_kernel_error(ctx, "attribute %s has %zu values for %zu axes",
                             ctx->schema->attrs[SV_A_STARTS + which].name, a->n,
                             ctx->attrs[SV_A_AXES].n);
  *v = a->list.longs[i];
  return NULL;
}

/* Converts the attribute value list of `dtype` into n elements of dt at dst. */
static inline rill_status *sv_attr_values(rill_kernel_ctx *ctx, rill_dtype dt, void *dst, size_t n) {
  const rill_attr_value *a;
  switch (ctx->attrs[SV_A_DTYPE].v.i) {
  case RILL_DTYPE_BOOL: a = &ctx->attrs[SV_A_BOOL]; break;
  case RILL_DTYPE_FP32: a = &ctx->attrs[SV_A_FP32]; break;
  case RILL_DTYPE_INT32: a = &ctx->attrs[SV_A_INT32]; break;
  case RILL_DTYPE_INT64: a = &ctx->attrs[SV_A_INT64]; break;
  case RILL_DTYPE_FP64: a = &ctx->attrs[SV_A_FP64]; break;
  default: return rill_kernel_error(ctx, "attribute dtype %d has no value list", ctx->attrs[SV_A_DTYPE].v.i);
  }
  if (a->n != n)
    return rill_kernel_error(ctx, "attribute %s has %zu values, its shape needs %zu",
                             ctx->schema->attrs[a - ctx->attrs].name, a->n, n);
  int src = ctx->attrs[SV_A_DTYPE].v.i;
  for (size_t i = 0; i < n; i++) {
    double d = 0;
    int64_t l = 0;
    bool is_long = src == RILL_DTYPE_INT64 || src == RILL_DTYPE_INT32 || src == RILL_DTYPE_BOOL;
    if (src == RILL_DTYPE_FP32) d = a->list.floats[i];
    else if (src == RILL_DTYPE_FP64) d = a->list.float64s[i];
    else if (src == RILL_DTYPE_INT64) l = a->list.longs[i];
    else l = a->list.ints[i];
    if (is_long) d = (double)l;
    else l = (int64_t)d;
    switch (dt) {
    case RILL_DTYPE_BOOL: ((bool *)dst)[i] = is_long ? l != 0 : d != 0; break;
    case RILL_DTYPE_FP32: ((float *)dst)[i] = (float)d; break;
    case RILL_DTYPE_FP64: ((double *)dst)[i] = d; break;
    case RILL_DTYPE_INT32: ((int32_t *)dst)[i] = (int32_t)l; break;
    case RILL_DTYPE_INT64: ((int64_t *)dst)[i] = l; break;
    default: return rill_kernel_error(ctx, "input Input is %s: set_value takes bool, int32, "
                                      "int64, float32 or float64", rill_dtype_name(dt));
    }
  }
  return NULL;
}

static inline bool sv_in_list(const rill_attr_value *a, int v) {
  for (size_t i = 0; i < a->n; i++)
    if (a->list.ints[i] == v) return true;
  return false;
}


/* Fills p for Input x of dtype dt (checked by the caller): the slice from the bounds
 * (attributes or the bound tensors, on the host), the value (ValueTensor or the
 * attribute list) and its strides. The caller frees p with sv_plan_free. */
static inline rill_status *sv_plan_make(rill_kernel_ctx *ctx, const rill_tensor *x, rill_dtype dt, sv_plan *p) {
  memset(p, 0, sizeof *p);
  const rill_dims *xd = &x->dims;
  int r = xd->n;
  int64_t *start = p->start, *step = p->step, *cnt = p->cnt;
  for (int i = 0; i < r; i++) {
    start[i] = 0;
    step[i] = 1;
    cnt[i] = xd->d[i];
  }
  const rill_attr_value *axes = &ctx->attrs[SV_A_AXES];
  for (size_t i = 0; i < axes->n; i++) {
    int ax = axes->list.ints[i];
    if (ax < 0 || ax >= r)
      return rill_kernel_error(ctx, "attribute axes holds %d, outside input Input (%s)'s rank %d",
                               ax, rill_kin_name(ctx, 0, 0), r);
    int64_t s, e, st, dim = xd->d[ax];
    RILL_TRY(sv_slice_param(ctx, 0, i, &s));
    RILL_TRY(sv_slice_param(ctx, 1, i, &e));
    RILL_TRY(sv_slice_param(ctx, 2, i, &st));
    if (st == 0) return rill_kernel_error(ctx, "step of axis %d is 0", ax);
    int64_t n;
    if (st > 0) {
      if (s < 0) s += dim;
      if (e < 0) e += dim;
      s = s < 0 ? 0 : s > dim ? dim : s;
      e = e < 0 ? 0 : e > dim ? dim : e;
      n = e > s ? (e - s + st - 1) / st : 0;
    } else {
      if (s < 0) s += dim;
      if (e < -1) e += dim;
      s = s > dim - 1 ? dim - 1 : s;
      e = e < -1 ? -1 : e;
      n = s > e ? (s - e + (-st) - 1) / (-st) : 0;
    }
    start[ax] = s;
    step[ax] = st;
    cnt[ax] = n;
  }
  /* the value's alignment dims: slice dims minus decrease_axes, with none_axes inserted */
  const rill_attr_value *dec = &ctx->attrs[SV_A_DECREASE], *none = &ctx->attrs[SV_A_NONE];
  int64_t adim[2 * RILL_MAX_DIMS];
  int amap[2 * RILL_MAX_DIMS]; /* input axis of each alignment dim, -1 for an inserted one */
  int na = 0;
  for (int i = 0; i < r; i++) {
    if (sv_in_list(dec, i)) continue;
    while (sv_in_list(none, na) && na < 2 * RILL_MAX_DIMS - 1) {
      adim[na] = 1;
      amap[na++] = -1;
    }
    adim[na] = cnt[i];
    amap[na++] = i;
  }
  while (sv_in_list(none, na) && na < 2 * RILL_MAX_DIMS - 1) {
    adim[na] = 1;
    amap[na++] = -1;
  }
  /* the value */
  rill_tensor *vt = rill_kin(ctx, SV_IN_VALUE, 0);
  rill_dims vd;
  void *vbuf = NULL;
  size_t es = rill_dtype_size(dt);
  if (vt) {
    if (vt->dtype != dt || !rill_tensor_is_set(vt))
      return rill_kernel_error(ctx, "input ValueTensor (%s) must be a %s tensor with data",
                               rill_kin_name(ctx, SV_IN_VALUE, 0), rill_dtype_name(dt));
    vd = vt->dims;
  } else {
    const rill_attr_value *sh = &ctx->attrs[SV_A_SHAPE];
    int64_t n = 1;
    if (sh->n > RILL_MAX_DIMS) return rill_kernel_error(ctx, "attribute shape has too many dims");
    vd.n = (int32_t)sh->n;
    for (size_t i = 0; i < sh->n; i++) {
      if (sh->list.longs[i] < 0 || sh->list.longs[i] > (int64_t)1 << 31)
        return rill_kernel_error(ctx, "attribute shape holds %lld", (long long)sh->list.longs[i]);
      vd.d[i] = sh->list.longs[i];
      n *= vd.d[i];
    }
    if (n > (int64_t)1 << 31) return rill_kernel_error(ctx, "attribute shape is too large");
    vbuf = rill_malloc((size_t)(n > 0 ? n : 1) * es);
    if (!vbuf) return rill_oom();
    rill_status *st = sv_attr_values(ctx, dt, vbuf, (size_t)n);
    if (st) {
      rill_free(vbuf);
      return st;
    }
  }
  /* value strides per input axis (value aligned trailing to the alignment dims) */
  int64_t *vstride = p->vstride;
  int64_t acc = 1;
  rill_status *err = NULL;
  if (vd.n > na) {
    /* leading value dims of 1 beyond the slice rank are harmless */
    for (int i = 0; i < vd.n - na; i++)
      if (vd.d[i] != 1) err = rill_kernel_error(ctx, "the value's rank %d exceeds the slice's %d", vd.n, na);
  }
  for (int k = 0; !err && k < na && k < vd.n; k++) {
    int a = na - 1 - k, v = vd.n - 1 - k;
    int64_t ve = vd.d[v];
    if (ve != 1 && ve != adim[a]) {
      char b[RILL_DIMS_STR_MAX];
      err = rill_kernel_error(ctx, "value of shape %s does not broadcast to the slice of input "
                              "Input (%s): dim %d has %lld, the slice %lld",
                              rill_dims_str(&vd, b, sizeof b), rill_kin_name(ctx, 0, 0), v,
                              (long long)ve, (long long)adim[a]);
      break;
    }
    if (amap[a] >= 0) vstride[amap[a]] = ve == 1 ? 0 : acc;
    acc *= ve;
  }
  if (err) {
    rill_free(vbuf);
    return err;
  }
  p->rank = r;
  p->total = 1;
  for (int i = 0; i < r; i++) p->total *= cnt[i];
  p->value = vt;
  p->attr_values = vbuf;
  p->nvalues = 1;
  for (int i = 0; i < vd.n; i++) p->nvalues *= vd.d[i];
  return NULL;
}

static inline void sv_plan_free(sv_plan *p) {
  rill_free(p->attr_values);
  p->attr_values = NULL;
}

#endif
