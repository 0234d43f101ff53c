/* ctc_align CPU kernel (operators/ctc_align.c): one pass over each sequence, Paddle
 * 1.8's ctc_align_op.h order (a token is kept when it is not blank and, with
 * merge_repeated, differs from the token before it, blank or not). */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

static int64_t ca_get(const rill_tensor *t, int64_t i) {
  return t->dtype == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(t))[i]
                                      : ((const int64_t *)rill_tensor_ptr(t))[i];
}

static void ca_put(rill_tensor *t, int64_t i, int64_t v) {
  if (t->dtype == RILL_DTYPE_INT32)
    ((int32_t *)rill_tensor_ptr(t))[i] = (int32_t)v;
  else
    ((int64_t *)rill_tensor_ptr(t))[i] = v;
}

/* Aligns x[start, start + len) into out from index `at` (out NULL: only counts); returns
 * the tokens kept. */
static int64_t ca_align(const rill_tensor *x, int64_t start, int64_t len, rill_tensor *out,
                        int64_t at, int64_t blank, bool merge) {
  int64_t n = 0, prev = -1;
  bool first = true;
  for (int64_t i = start; i < start + len; i++) {
    int64_t v = ca_get(x, i);
    if (v != blank && !(merge && !first && v == prev)) {
      if (out) ca_put(out, at + n, v);
      n++;
    }
    prev = v;
    first = false;
  }
  return n;
}

static rill_status *ca_padded(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *len,
                              int64_t blank, bool merge) {
  char s[RILL_DIMS_STR_MAX];
  int64_t N = x->dims.d[0], T = x->dims.d[1];
  if (len->dtype != x->dtype || rill_tensor_numel(len) != N)
    return rill_kernel_error(ctx, "input InputLength (%s) is %s %s, expected %s [%lld, 1] (one "
                             "length per row of Input (%s), Input's dtype)",
                             rill_kin_name(ctx, RILL_CTC_ALIGN_IN_INPUT_LENGTH, 0),
                             rill_dtype_name(len->dtype), rill_dims_str(&len->dims, s, sizeof s),
                             rill_dtype_name(x->dtype), (long long)N,
                             rill_kin_name(ctx, RILL_CTC_ALIGN_IN_INPUT, 0));
  rill_tensor *out = rill_kout(ctx, RILL_CTC_ALIGN_OUT_OUTPUT, 0);
  rill_tensor *olen = rill_kout(ctx, RILL_CTC_ALIGN_OUT_OUTPUT_LENGTH, 0);
  if (!out || !olen)
    return rill_kernel_error(ctx, "the padded form (InputLength given) needs outputs Output and "
                             "OutputLength");
  for (int64_t n = 0; n < N; n++) {
    int64_t l = ca_get(len, n);
    if (l < 0 || l > T)
      return rill_kernel_error(ctx, "input InputLength (%s): length %lld of row %lld is outside "
                               "[0, %lld], the columns of Input (%s)",
                               rill_kin_name(ctx, RILL_CTC_ALIGN_IN_INPUT_LENGTH, 0), (long long)l,
                               (long long)n, (long long)T, rill_kin_name(ctx, RILL_CTC_ALIGN_IN_INPUT, 0));
  }
  rill_dims ld = {.n = 2, .d = {N, 1}};
  RILL_TRY(rill_tensor_alloc(out, x->dtype, &x->dims));
  RILL_TRY(rill_tensor_alloc(olen, x->dtype, &ld));
  rill_lod_clear(&out->lod);
  rill_lod_clear(&olen->lod);
  int64_t pad = ctx->attrs[RILL_CTC_ALIGN_ATTR_PADDING_VALUE].v.i;
  for (int64_t n = 0; n < N; n++) {
    int64_t k = ca_align(x, n * T, ca_get(len, n), out, n * T, blank, merge);
    ca_put(olen, n, k);
    for (int64_t j = k; j < T; j++) ca_put(out, n * T + j, pad);
  }
  return NULL;
}

rill_status *rill_cpu_ctc_align(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_CTC_ALIGN_IN_INPUT, 0);
  const char *xn = rill_kin_name(ctx, RILL_CTC_ALIGN_IN_INPUT, 0);
  if (!x || !rill_tensor_is_set(x) || (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64))
    return rill_kernel_error(ctx, "input Input (%s) must be an int32 or int64 tensor with data", xn);
  char s[RILL_DIMS_STR_MAX];
  if (x->dims.n != 2)
    return rill_kernel_error(ctx, "input Input (%s) has shape %s, expected [T, 1] (LoD) or [N, T] "
                             "(padded)", xn, rill_dims_str(&x->dims, s, sizeof s));
  int64_t blank = ctx->attrs[RILL_CTC_ALIGN_ATTR_BLANK].v.i;
  bool merge = ctx->attrs[RILL_CTC_ALIGN_ATTR_MERGE_REPEATED].v.b;
  rill_tensor *len = rill_kin(ctx, RILL_CTC_ALIGN_IN_INPUT_LENGTH, 0);
  if (len) {
    if (!rill_tensor_is_set(len))
      return rill_kernel_error(ctx, "input InputLength (%s) holds no data",
                               rill_kin_name(ctx, RILL_CTC_ALIGN_IN_INPUT_LENGTH, 0));
    return ca_padded(ctx, x, len, blank, merge);
  }
  if (x->lod.nlevels == 0)
    return rill_kernel_error(ctx, "input Input (%s) has no LoD: give its sequences as LoD, or "
                             "give InputLength for padded rows", xn);
  if (x->dims.d[1] != 1)
    return rill_kernel_error(ctx, "input Input (%s) has shape %s, expected [T, 1] with LoD", xn,
                             rill_dims_str(&x->dims, s, sizeof s));
  RILL_TRY(rill_lod_check(&x->lod, x->dims.d[0]));
  const rill_lod_level *lv = &x->lod.levels[x->lod.nlevels - 1];
  rill_tensor *out = rill_kout(ctx, RILL_CTC_ALIGN_OUT_OUTPUT, 0);
  if (!out) return rill_kernel_error(ctx, "needs output Output");
  uint64_t *offs = rill_malloc(lv->n * sizeof *offs);
  if (!offs) return rill_oom();
  offs[0] = 0;
  for (size_t i = 0; i + 1 < lv->n; i++) {
    int64_t a = (int64_t)lv->offsets[i], b = (int64_t)lv->offsets[i + 1];
    offs[i + 1] = offs[i] + (uint64_t)ca_align(x, a, b - a, NULL, 0, blank, merge);
  }
  int64_t total = (int64_t)offs[lv->n - 1];
  /* nothing kept: the one row [-1] */
  rill_dims d = {.n = 2, .d = {total > 0 ? total : 1, 1}};
  rill_status *st = rill_tensor_alloc(out, x->dtype, &d);
  for (size_t i = 0; !st && i + 1 < lv->n; i++) {
    int64_t a = (int64_t)lv->offsets[i], b = (int64_t)lv->offsets[i + 1];
    ca_align(x, a, b - a, out, (int64_t)offs[i], blank, merge);
  }
  if (!st && total == 0) ca_put(out, 0, -1);
  if (!st) {
    rill_lod_level nl = {lv->n, offs};
    rill_lod src = {1, &nl}, lod = {0, NULL};
    st = rill_lod_copy(&lod, &src);
    if (!st) {
      rill_lod_clear(&out->lod);
      out->lod = lod;
    }
  }
  rill_free(offs);
  return st;
}
