/* Shared pieces of the tensor-manipulation kernels, and the gradient kernel of the view
 * ops (reshape2, flatten2, flatten_contiguous_range, squeeze2, unsqueeze2). */
#include "kernels/cpu/tensor_ops.h"

#include <string.h>

rill_status *rill_cpu_xshape(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *x) {
  rill_tensor *xs = rill_kout(ctx, slot, 0);
  if (!xs) return NULL;
  if (x->dims.n + 1 > RILL_MAX_DIMS)
    return rill_kernel_error(ctx, "input X (%s) has rank %d: output XShape needs rank %d, more "
                             "than %d", rill_kin_name(ctx, 0, 0), (int)x->dims.n,
                             (int)x->dims.n + 1, RILL_MAX_DIMS);
  rill_dims d;
  d.n = x->dims.n + 1;
  d.d[0] = 0;
  for (int i = 0; i < x->dims.n; i++) d.d[i + 1] = x->dims.d[i];
  if (xs == x) return rill_kernel_error(ctx, "output XShape is input X (%s)", rill_kin_name(ctx, 0, 0));
  rill_lod_clear(&xs->lod);
  return rill_tensor_alloc(xs, x->dtype, &d);
}

rill_status *rill_cpu_view(rill_kernel_ctx *ctx, size_t slot, rill_tensor *x, const rill_dims *d) {
  rill_tensor *out = rill_kout(ctx, slot, 0);
  if (!out)
    return rill_kernel_error(ctx, "output %s (%s) is missing or not a dense tensor",
                             ctx->schema->outputs[slot].name, rill_kout_name(ctx, slot, 0));
  int64_t a, b;
  if (!rill_dims_numel(d, INT64_MAX, &a) || !rill_dims_numel(&x->dims, INT64_MAX, &b) || a != b) {
    char s1[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "output %s (%s) of shape %s cannot view input of shape %s",
                             ctx->schema->outputs[slot].name, rill_kout_name(ctx, slot, 0),
                             rill_dims_str(d, s1, sizeof s1), rill_dims_str(&x->dims, s2, sizeof s2));
  }
  bool keep_lod = x->dims.n > 0 && d->n > 0 && x->dims.d[0] == d->d[0];
  if (out != x) RILL_TRY(rill_tensor_share(out, x));
  out->dims = *d;
  if (!keep_lod) rill_lod_clear(&out->lod);
  return NULL;
}

/* Copies a run of n elements of esize bytes with stride (in elements) sstride. */
#define STRIDED(T)                                                                        \
  do {                                                                                    \
    const T *s_ = (const T *)sp;                                                          \
    T *d_ = (T *)dp;                                                                      \
    for (int64_t k = 0; k < n; k++) d_[k] = s_[k * sstride];                              \
  } while (0)

static void strided_copy(const char *sp, int64_t sstride, char *dp, int64_t n, size_t esize) {
  switch (esize) {
  case 1: STRIDED(uint8_t); break;
  case 2: STRIDED(uint16_t); break;
  case 4: STRIDED(uint32_t); break;
  case 8: STRIDED(uint64_t); break;
  default:
    for (int64_t k = 0; k < n; k++) memcpy(dp + k * esize, sp + k * sstride * (int64_t)esize, esize);
  }
}

void rill_cpu_transpose_bytes(const void *src, const rill_dims *sd, const int *perm, void *dst,
                              size_t esize) {
  int r = sd->n;
  int64_t sstride[RILL_MAX_DIMS] = {0}, ostride[RILL_MAX_DIMS] = {0}, od[RILL_MAX_DIMS] = {0};
  int64_t idx[RILL_MAX_DIMS] = {0};
  int64_t acc = 1, total = 1;
  for (int i = r - 1; i >= 0; i--) {
    sstride[i] = acc;
    acc *= sd->d[i];
  }
  for (int i = 0; i < r; i++) {
    od[i] = sd->d[perm[i]];
    ostride[i] = sstride[perm[i]];
    total *= od[i];
    idx[i] = 0;
  }
  if (total == 0) return;
  if (r == 0) {
    memcpy(dst, src, esize);
    return;
  }
  int64_t inner = od[r - 1], istride = ostride[r - 1];
  const char *s = src;
  char *d = dst;
  for (int64_t done = 0; done < total; done += inner) {
    int64_t off = 0;
    for (int i = 0; i < r - 1; i++) off += idx[i] * ostride[i];
    strided_copy(s + off * (int64_t)esize, istride, d + done * (int64_t)esize, inner, esize);
    for (int i = r - 2; i >= 0; i--) {
      if (++idx[i] < od[i]) break;
      idx[i] = 0;
    }
  }
}

void rill_cpu_box_copy(void *full, const rill_dims *fd, const int64_t *start, const int64_t *len,
                       void *packed, size_t esize, bool to_packed) {
  int r = fd->n;
  int64_t total = 1, stride[RILL_MAX_DIMS] = {0}, idx[RILL_MAX_DIMS] = {0};
  int64_t acc = 1;
  for (int i = r - 1; i >= 0; i--) {
    stride[i] = acc;
    acc *= fd->d[i];
  }
  for (int i = 0; i < r; i++) {
    total *= len[i];
    idx[i] = 0;
  }
  if (total == 0) return;
  if (r == 0) {
    memcpy(to_packed ? packed : full, to_packed ? full : packed, esize);
    return;
  }
  /* Merge trailing dims copied whole into the contiguous run. */
  int last = r - 1;
  int64_t run = len[last];
  while (last > 0 && len[last] == fd->d[last] && start[last] == 0) {
    last--;
    run *= len[last];
  }
  size_t run_bytes = (size_t)run * esize;
  char *f = full, *p = packed;
  for (int64_t done = 0; done < total; done += run) {
    int64_t off = 0;
    for (int i = 0; i <= last; i++) off += (start[i] + idx[i]) * stride[i];
    if (to_packed) memcpy(p + done * (int64_t)esize, f + off * (int64_t)esize, run_bytes);
    else memcpy(f + off * (int64_t)esize, p + done * (int64_t)esize, run_bytes);
    for (int i = last - 1; i >= 0; i--) {
      if (++idx[i] < len[i]) break;
      idx[i] = 0;
    }
  }
}

void rill_cpu_concat_bytes(void *whole, void *const *pieces, const int64_t *parts, size_t n,
                           int64_t outer, int64_t inner, size_t esize, bool gather) {
  int64_t row = 0;
  for (size_t i = 0; i < n; i++) row += parts[i];
  size_t row_bytes = (size_t)(row * inner) * esize;
  char *w = whole;
  size_t at = 0;
  for (size_t i = 0; i < n; i++) {
    size_t chunk = (size_t)(parts[i] * inner) * esize;
    char *p = pieces[i];
    if (p && chunk)
      for (int64_t o = 0; o < outer; o++) {
        if (gather) memcpy(w + (size_t)o * row_bytes + at, p + (size_t)o * chunk, chunk);
        else memcpy(p + (size_t)o * chunk, w + (size_t)o * row_bytes + at, chunk);
      }
    at += chunk;
  }
}

/* <view op>_grad: X@GRAD is Out@GRAD viewed with X's dims (from XShape), sharing it. */
rill_status *rill_cpu_xshape_grad(rill_kernel_ctx *ctx) {
  rill_tensor *xs = rill_kin(ctx, 0, 0), *dout = rill_kin(ctx, 1, 0);
  if (!rill_kout(ctx, 0, 0)) return NULL; /* X@GRAD not wanted */
  if (!xs || !dout || !rill_tensor_is_set(dout))
    return rill_kernel_error(ctx, "inputs XShape (%s) and Out@GRAD (%s) must be dense tensors "
                             "with data", rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  rill_dims d;
  if (!rill_xshape_dims(&xs->dims, &d))
    return rill_kernel_error(ctx, "input XShape (%s) has rank 0", rill_kin_name(ctx, 0, 0));
  return rill_cpu_view(ctx, 0, dout, &d);
}

/* reshape2_grad_grad: DDOut is DDX viewed with DOut's dims, sharing it. */
rill_status *rill_cpu_reshape2_grad_grad(rill_kernel_ctx *ctx) {
  rill_tensor *dout = rill_kin(ctx, 0, 0), *ddx = rill_kin(ctx, 1, 0);
  if (!rill_kout(ctx, 0, 0)) return NULL;
  if (!dout || !ddx || !rill_tensor_is_set(ddx))
    return rill_kernel_error(ctx, "inputs DOut (%s) and DDX (%s) must be dense tensors, DDX "
                             "with data", rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  if (rill_tensor_numel(ddx) != rill_tensor_numel(dout))
    return rill_kernel_error(ctx, "input DDX (%s) does not have the elements of DOut (%s)",
                             rill_kin_name(ctx, 1, 0), rill_kin_name(ctx, 0, 0));
  return rill_cpu_view(ctx, 0, ddx, &dout->dims);
}

/* Integers add with wraparound (through the unsigned type U), as Paddle's int kernels. */
#define ADD_ELEMS(T, U)                                                                   \
  do {                                                                                    \
    T *d_ = dst;                                                                          \
    const T *s_ = src;                                                                    \
    for (int64_t i = 0; i < n; i++) d_[i] = (T)((U)d_[i] + (U)s_[i]);                     \
  } while (0)

bool rill_cpu_add_elems(void *dst, const void *src, int64_t n, rill_dtype dt) {
  switch (dt) {
  case RILL_DTYPE_FP32: ADD_ELEMS(float, float); return true;
  case RILL_DTYPE_FP64: ADD_ELEMS(double, double); return true;
  case RILL_DTYPE_INT32: ADD_ELEMS(int32_t, uint32_t); return true;
  case RILL_DTYPE_INT64: ADD_ELEMS(int64_t, uint64_t); return true;
  default: return false;
  }
}

rill_status *rill_cpu_grad_like_input(rill_kernel_ctx *ctx, size_t xslot, size_t gslot,
                                      rill_tensor **x, rill_tensor **g, rill_tensor **dx) {
  *x = rill_kin(ctx, xslot, 0);
  *g = rill_kin(ctx, gslot, 0);
  if (!(*dx = rill_kout(ctx, 0, 0))) return NULL;
  if (!*x || !*g || !rill_tensor_is_set(*g))
    return rill_kernel_error(ctx, "inputs %s (%s) and %s (%s) must be dense tensors with data",
                             ctx->schema->inputs[xslot].name, rill_kin_name(ctx, xslot, 0),
                             ctx->schema->inputs[gslot].name, rill_kin_name(ctx, gslot, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, (*g)->dtype, dx));
  return rill_kout_check_dims(ctx, 0, 0, *dx, &(*x)->dims);
}

bool rill_cpu_fill_elems(void *p, int64_t n, rill_dtype dt, double v) {
  switch (dt) {
#define FILL_CASE(DT, T)                                                                  \
  case DT: {                                                                              \
    T x = (T)v, *q = p;                                                                   \
    for (int64_t i = 0; i < n; i++) q[i] = x;                                             \
    return true;                                                                          \
  }
    FILL_CASE(RILL_DTYPE_FP32, float)
    FILL_CASE(RILL_DTYPE_FP64, double)
    FILL_CASE(RILL_DTYPE_INT32, int32_t)
    FILL_CASE(RILL_DTYPE_INT64, int64_t)
    FILL_CASE(RILL_DTYPE_INT16, int16_t)
    FILL_CASE(RILL_DTYPE_INT8, int8_t)
    FILL_CASE(RILL_DTYPE_UINT8, uint8_t)
#undef FILL_CASE
  case RILL_DTYPE_BOOL: {
    bool x = v != 0, *q = p;
    for (int64_t i = 0; i < n; i++) q[i] = x;
    return true;
  }
  default: return false;
  }
}
