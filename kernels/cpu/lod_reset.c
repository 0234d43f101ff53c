/* lod_reset, lod_reset_grad and is_empty CPU kernels (any element type). lod_reset's Out
 * is a view of X (rill_tensor_share) whose LoD is then replaced. */
#include <stdio.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

/* A new LoD: the first `keep` levels of `base` and then `level` (copied by rill_lod_copy
 * from a borrowed view). */
static rill_status *with_level(const rill_lod *base, size_t keep, const uint64_t *level, size_t n,
                               rill_lod *out) {
  rill_lod_level *lv = rill_calloc(keep + 1, sizeof *lv);
  if (!lv) return rill_oom();
  for (size_t i = 0; i < keep; i++) lv[i] = base->levels[i];
  lv[keep].n = n;
  lv[keep].offsets = (uint64_t *)level;
  rill_lod view = {keep + 1, lv};
  rill_status *st = rill_lod_copy(out, &view);
  rill_free(lv);
  return st;
}

/* The level the op sets from Y's int32 values or target_lod, checked against X's rows. */
static rill_status *new_level(rill_kernel_ctx *ctx, const rill_tensor *y, int64_t rows,
                              uint64_t **out, size_t *n) {
  const int32_t *v;
  size_t cnt;
  const char *what;
  char buf[160];
  if (y) {
    if (!rill_tensor_is_set(y) || y->dtype != RILL_DTYPE_INT32)
      return rill_kernel_error(ctx, "input Y (%s) has no LoD, so it must hold int32 offsets",
                               rill_kin_name(ctx, RILL_LOD_RESET_IN_Y, 0));
    v = rill_tensor_ptr(y);
    cnt = (size_t)rill_tensor_numel(y);
    snprintf(buf, sizeof buf, "input Y (%s)", rill_kin_name(ctx, RILL_LOD_RESET_IN_Y, 0));
    what = buf;
  } else {
    v = ctx->attrs[RILL_LOD_RESET_ATTR_TARGET_LOD].list.ints;
    cnt = ctx->attrs[RILL_LOD_RESET_ATTR_TARGET_LOD].n;
    what = "attribute target_lod";
  }
  if (cnt < 2 || v[0] != 0 || v[cnt - 1] != rows)
    return rill_kernel_error(ctx, "%s must hold at least two offsets from 0 to the %lld rows "
                             "of input X (%s)", what, (long long)rows,
                             rill_kin_name(ctx, RILL_LOD_RESET_IN_X, 0));
  uint64_t *l = rill_malloc(cnt * sizeof *l);
  if (!l) return rill_oom();
  for (size_t i = 0; i < cnt; i++) {
    if (i && v[i] < v[i - 1]) {
      rill_free(l);
      return rill_kernel_error(ctx, "%s decreases at position %zu (%d after %d)", what, i,
                               (int)v[i], (int)v[i - 1]);
    }
    l[i] = (uint64_t)v[i];
  }
  *out = l;
  *n = cnt;
  return NULL;
}

rill_status *rill_cpu_lod_reset(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_LOD_RESET_IN_X, 0), *y = rill_kin(ctx, RILL_LOD_RESET_IN_Y, 0);
  rill_tensor *out = rill_kout(ctx, 0, 0);
  const char *xn = rill_kin_name(ctx, RILL_LOD_RESET_IN_X, 0);
  if (!x) return rill_kernel_error(ctx, "input X (%s) is missing or not a dense tensor", xn);
  if (!out) return rill_kernel_error(ctx, "output Out (%s) is missing", rill_kout_name(ctx, 0, 0));
  int64_t rows = x->dims.n ? x->dims.d[0] : 0;
  rill_lod lod = {0, NULL};
  rill_status *st = NULL;
  if (y && y->lod.nlevels) {
    RILL_TRY(rill_lod_copy(&lod, &y->lod));
  } else {
    uint64_t *level = NULL;
    size_t n = 0;
    RILL_TRY(new_level(ctx, y, rows, &level, &n));
    bool append = ctx->attrs[RILL_LOD_RESET_ATTR_APPEND].v.b;
    st = with_level(&x->lod, append ? x->lod.nlevels : 0, level, n, &lod);
    rill_free(level);
    if (st) return st;
  }
  if ((st = rill_lod_check(&lod, rows))) {
    rill_status *e = rill_kernel_error(ctx, "the new LoD of input X (%s) (%s) does not fit: %s", xn,
                                       y ? "from input Y" : "from target_lod", rill_status_message(st));
    rill_status_destroy(st);
    rill_lod_clear(&lod);
    return e;
  }
  if (out != x && (st = rill_tensor_share(out, x))) {
    rill_lod_clear(&lod);
    return st;
  }
  rill_lod_clear(&out->lod);
  out->lod = lod;
  return NULL;
}

rill_status *rill_cpu_lod_reset_grad(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *dout = rill_kin(ctx, 1, 0), *dx = rill_kout(ctx, 0, 0);
  if (!dx) return NULL;
  if (!x || !dout)
    return rill_kernel_error(ctx, "inputs X (%s) and Out@GRAD (%s) must be dense tensors",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
  rill_lod lod = {0, NULL};
  RILL_TRY(rill_lod_copy(&lod, &x->lod));
  rill_status *st = dx != dout ? rill_tensor_share(dx, dout) : NULL;
  if (st) {
    rill_lod_clear(&lod);
    return st;
  }
  rill_lod_clear(&dx->lod);
  dx->lod = lod;
  return NULL;
}

rill_status *rill_cpu_is_empty(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = NULL;
  if (!x)
    return rill_kernel_error(ctx, "input X (%s) is missing or not a dense tensor",
                             rill_kin_name(ctx, 0, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_BOOL, &out));
  *(bool *)rill_tensor_ptr(out) = rill_tensor_numel(x) == 0;
  return NULL;
}
