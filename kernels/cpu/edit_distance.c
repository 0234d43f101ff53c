/* edit_distance CPU kernel: one dynamic-programming row at a time per pair. An empty
 * side gives the other's length. */
#include "kernels/cpu/kernels.h"

#include "framework/base/alloc.h"

static int64_t tok(const rill_tensor *t, int64_t i) {
  return t->dtype == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(t))[i]
                                      : ((const int64_t *)rill_tensor_ptr(t))[i];
}

/* Sequence i of input slot: its first element and length. */
static rill_status *seq(rill_kernel_ctx *ctx, size_t slot, size_t len_slot, int64_t i,
                        int64_t *start, int64_t *len) {
  const rill_tensor *t = rill_kin(ctx, slot, 0), *l = rill_kin(ctx, len_slot, 0);
  const char *name = rill_kin_name(ctx, slot, 0);
  int64_t numel = rill_tensor_numel(t);
  if (l) {
    int64_t width = t->dims.n >= 2 ? t->dims.d[1] : 1;
    *start = i * width;
    *len = tok(l, i);
    if (*len < 0 || *len > width || *start + *len > numel)
      return rill_kernel_error(ctx, "input %s (%s): length %lld of row %lld does not fit its "
                               "%lld columns", ctx->schema->inputs[slot].name, name,
                               (long long)*len, (long long)i, (long long)width);
    return NULL;
  }
  const rill_lod_level *lv = &t->lod.levels[0];
  *start = (int64_t)lv->offsets[i];
  *len = (int64_t)(lv->offsets[i + 1] - lv->offsets[i]);
  if (lv->offsets[i + 1] < lv->offsets[i] || (int64_t)lv->offsets[i + 1] > numel)
    return rill_kernel_error(ctx, "input %s (%s): LoD offsets %llu..%llu do not fit its %lld "
                             "tokens", ctx->schema->inputs[slot].name, name,
                             (unsigned long long)lv->offsets[i],
                             (unsigned long long)lv->offsets[i + 1], (long long)numel);
  return NULL;
}

rill_status *rill_cpu_edit_distance(rill_kernel_ctx *ctx) {
  rill_tensor *h = rill_kin(ctx, RILL_EDIT_DISTANCE_IN_HYPS, 0), *r = rill_kin(ctx, RILL_EDIT_DISTANCE_IN_REFS, 0);
  rill_tensor *hl = rill_kin(ctx, RILL_EDIT_DISTANCE_IN_HYPS_LENGTH, 0);
  rill_tensor *rl = rill_kin(ctx, RILL_EDIT_DISTANCE_IN_REFS_LENGTH, 0);
  rill_tensor *out = NULL, *num = NULL;
  for (size_t s = 0; s < 2; s++) {
    rill_tensor *t = s ? r : h;
    if (!t || !rill_tensor_is_set(t) || (t->dtype != RILL_DTYPE_INT64 && t->dtype != RILL_DTYPE_INT32))
      return rill_kernel_error(ctx, "input %s (%s) must be an int64 tensor with data",
                               ctx->schema->inputs[s].name, rill_kin_name(ctx, s, 0));
  }
  int64_t n;
  if (hl || rl) {
    if (!hl || !rl || rill_tensor_numel(hl) != rill_tensor_numel(rl) ||
        (hl->dtype != RILL_DTYPE_INT64 && hl->dtype != RILL_DTYPE_INT32) ||
        (rl->dtype != RILL_DTYPE_INT64 && rl->dtype != RILL_DTYPE_INT32))
      return rill_kernel_error(ctx, "inputs HypsLength and RefsLength must both be int64 "
                               "tensors of one length per row");
    n = rill_tensor_numel(hl);
  } else {
    if (h->lod.nlevels != 1 || r->lod.nlevels != 1)
      return rill_kernel_error(ctx, "inputs Hyps (%s) and Refs (%s) need one LoD level each "
                               "(or give HypsLength and RefsLength)",
                               rill_kin_name(ctx, RILL_EDIT_DISTANCE_IN_HYPS, 0),
                               rill_kin_name(ctx, RILL_EDIT_DISTANCE_IN_REFS, 0));
    if (h->lod.levels[0].n != r->lod.levels[0].n)
      return rill_kernel_error(ctx, "input Hyps (%s) has %zu sequences but Refs (%s) has %zu",
                               rill_kin_name(ctx, RILL_EDIT_DISTANCE_IN_HYPS, 0), h->lod.levels[0].n - 1,
                               rill_kin_name(ctx, RILL_EDIT_DISTANCE_IN_REFS, 0), r->lod.levels[0].n - 1);
    n = (int64_t)h->lod.levels[0].n - 1;
  }
  RILL_TRY(rill_kout_need(ctx, RILL_EDIT_DISTANCE_OUT_SEQUENCE_NUM, 0, RILL_DTYPE_INT64, &num));
  *(int64_t *)rill_tensor_ptr(num) = n;
  if (n == 0) return NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_EDIT_DISTANCE_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  if (rill_tensor_numel(out) != n)
    return rill_kernel_error(ctx, "output Out (%s) holds %lld values for %lld pairs",
                             rill_kout_name(ctx, RILL_EDIT_DISTANCE_OUT_OUT, 0),
                             (long long)rill_tensor_numel(out), (long long)n);
  bool normalized = ctx->attrs[RILL_EDIT_DISTANCE_ATTR_NORMALIZED].v.b;
  float *o = rill_tensor_ptr(out);
  int64_t *row = NULL;
  size_t cap = 0;
  rill_status *st = NULL;
  for (int64_t i = 0; i < n && !st; i++) {
    int64_t hs, hn, rs, rn;
    st = seq(ctx, RILL_EDIT_DISTANCE_IN_HYPS, RILL_EDIT_DISTANCE_IN_HYPS_LENGTH, i, &hs, &hn);
    if (!st) st = seq(ctx, RILL_EDIT_DISTANCE_IN_REFS, RILL_EDIT_DISTANCE_IN_REFS_LENGTH, i, &rs, &rn);
    if (st) break;
    if (normalized && rn == 0) {
      st = rill_kernel_error(ctx, "input Refs (%s): reference %lld is empty, which normalized "
                             "distances divide by", rill_kin_name(ctx, RILL_EDIT_DISTANCE_IN_REFS, 0),
                             (long long)i);
      break;
    }
    int64_t d;
    if (hn == 0 || rn == 0) {
      d = hn + rn;
    } else {
      if ((size_t)rn + 1 > cap) {
        int64_t *grown = rill_realloc(row, ((size_t)rn + 1) * sizeof *row);
        if (!grown) {
          st = rill_kernel_error(ctx, "out of memory for a reference of %lld tokens", (long long)rn);
          break;
        }
        row = grown;
        cap = (size_t)rn + 1;
      }
      for (int64_t j = 0; j <= rn; j++) row[j] = j;
      for (int64_t a = 1; a <= hn; a++) {
        int64_t diag = row[0], ha = tok(h, hs + a - 1);
        row[0] = a;
        for (int64_t j = 1; j <= rn; j++) {
          int64_t up = row[j], best = diag + (ha != tok(r, rs + j - 1));
          if (up + 1 < best) best = up + 1;
          if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
          diag = up;
          row[j] = best;
        }
      }
      d = row[rn];
    }
    o[i] = normalized ? (float)d / (float)rn : (float)d;
  }
  rill_free(row);
  return st;
}
