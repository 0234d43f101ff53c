/* flip, reverse, roll and roll_grad (every dtype): Out[c] = X[map(c)] where each dim
 * has its own map of coordinates (identity, reversed or shifted). */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"

/* dst[c] := src[maps(c)] over a tensor of dims d; maps[j] NULL is the identity. */
static void remap(const char *src, char *dst, const rill_dims *d, int64_t *const *maps, size_t es) {
  int r = d->n;
  int64_t n = rill_dims_prod(d, 0, r);
  if (n == 0) return;
  if (r == 0) {
    memcpy(dst, src, es);
    return;
  }
  int64_t stride[RILL_MAX_DIMS], c[RILL_MAX_DIMS] = {0}, last = d->d[r - 1];
  stride[r - 1] = 1;
  for (int j = r - 2; j >= 0; j--) stride[j] = stride[j + 1] * d->d[j + 1];
  const int64_t *m = maps[r - 1];
  for (int64_t o = 0; o < n; o += last) {
    int64_t base = 0;
    for (int j = 0; j < r - 1; j++) base += (maps[j] ? maps[j][c[j]] : c[j]) * stride[j];
    if (!m) {
      memcpy(dst + (size_t)o * es, src + (size_t)base * es, (size_t)last * es);
    } else {
      for (int64_t k = 0; k < last; k++)
        memcpy(dst + (size_t)(o + k) * es, src + (size_t)(base + m[k]) * es, es);
    }
    for (int j = r - 2; j >= 0; j--) {
      if (++c[j] < d->d[j]) break;
      c[j] = 0;
    }
  }
}

/* Out (slot 0) := X (input xslot) with coordinate maps built by `fill` per moved dim:
 * flip[j] reverses dim j, else shift[j] != 0 shifts it. Through scratch memory when
 * Out is X. */
static rill_status *moved(rill_kernel_ctx *ctx, size_t xslot, const rill_dims *d, const bool *flip,
                          const int64_t *shift) {
  rill_tensor *x = rill_kin(ctx, xslot, 0), *out = rill_kout(ctx, 0, 0);
  if (!out) return NULL;
  const char *slot_name = ctx->schema->inputs[xslot].name;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input %s (%s) is missing or holds no data", slot_name,
                             rill_kin_name(ctx, xslot, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  int64_t total = 0;
  for (int j = 0; j < d->n; total += d->d[j], j++) {}
  int64_t *store = rill_malloc((size_t)(total + 1) * sizeof *store), *maps[RILL_MAX_DIMS];
  if (!store) return rill_oom();
  int64_t *at = store;
  for (int j = 0; j < d->n; j++) {
    int64_t e = d->d[j];
    maps[j] = NULL;
    if (flip && flip[j]) {
      maps[j] = at;
      for (int64_t k = 0; k < e; k++) at[k] = e - 1 - k;
    } else if (shift && e > 0 && shift[j] % e) {
      int64_t s = shift[j] % e;
      maps[j] = at;
      for (int64_t k = 0; k < e; k++) at[k] = ((k - s) % e + e) % e;
    }
    at += e;
  }
  size_t bytes = rill_tensor_nbytes(x), es = rill_dtype_size(x->dtype);
  char *src = rill_tensor_ptr(x), *dst = rill_tensor_ptr(out), *tmp = dst;
  if (bytes && rill_overlaps(src, bytes, dst, rill_tensor_nbytes(out)) &&
      !(tmp = rill_aligned_alloc(bytes, RILL_TENSOR_ALIGN))) {
    rill_free(store);
    return rill_oom();
  }
  remap(src, tmp, d, maps, es);
  if (tmp != dst) {
    memcpy(dst, tmp, bytes);
    rill_free(tmp);
  }
  rill_free(store);
  return NULL;
}

static rill_status *flip_common(rill_kernel_ctx *ctx, const rill_attr_value *axes) {
  rill_tensor *x = rill_kin(ctx, 0, 0);
  if (!x) return rill_kernel_error(ctx, "input X (%s) is missing", rill_kin_name(ctx, 0, 0));
  bool flip[RILL_MAX_DIMS];
  char err[128];
  if (!rill_flip_axes(axes, x->dims.n, flip, err, sizeof err))
    return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), err);
  return moved(ctx, 0, &x->dims, flip, NULL);
}

rill_status *rill_cpu_flip(rill_kernel_ctx *ctx) {
  return flip_common(ctx, &ctx->attrs[RILL_FLIP_ATTR_DIMS]);
}
rill_status *rill_cpu_reverse(rill_kernel_ctx *ctx) {
  return flip_common(ctx, &ctx->attrs[RILL_REVERSE_ATTR_AXIS]);
}

/* roll (sign 1) and roll_grad (sign -1) of input xslot. */
static rill_status *roll_common(rill_kernel_ctx *ctx, size_t xslot, const rill_attr_value *shifts,
                                const rill_attr_value *dims, int64_t sign) {
  rill_tensor *x = rill_kin(ctx, xslot, 0);
  if (!x)
    return rill_kernel_error(ctx, "input %s (%s) is missing", ctx->schema->inputs[xslot].name,
                             rill_kin_name(ctx, xslot, 0));
  int64_t shift[RILL_MAX_DIMS];
  char err[128];
  if (!rill_roll_shifts(shifts, dims, &x->dims, shift, err, sizeof err))
    return rill_kernel_error(ctx, "input %s (%s): %s", ctx->schema->inputs[xslot].name,
                             rill_kin_name(ctx, xslot, 0), err);
  rill_dims d = x->dims;
  if (dims->n == 0) {
    d.n = 1;
    d.d[0] = rill_tensor_numel(x);
    shift[0] = shifts->list.longs[0];
  }
  for (int j = 0; j < d.n; j++) shift[j] = d.d[j] > 0 ? (shift[j] % d.d[j]) * sign : 0;
  return moved(ctx, xslot, &d, NULL, shift);
}

rill_status *rill_cpu_roll(rill_kernel_ctx *ctx) {
  return roll_common(ctx, 0, &ctx->attrs[RILL_ROLL_ATTR_SHIFTS], &ctx->attrs[RILL_ROLL_ATTR_DIMS], 1);
}
rill_status *rill_cpu_roll_grad(rill_kernel_ctx *ctx) {
  return roll_common(ctx, 1, &ctx->attrs[RILL_ROLL_GRAD_ATTR_SHIFTS],
                     &ctx->attrs[RILL_ROLL_GRAD_ATTR_DIMS], -1);
}
