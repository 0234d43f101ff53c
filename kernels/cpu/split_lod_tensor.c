/* split_lod_tensor and merge_lod_tensor CPU kernels: whole sequences (their rows, any
 * element type) are copied between X and the two branches by the bool mask; the LoD of
 * each output is built as the sequences are taken, one level per level below `level`. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

_Static_assert(RILL_SAME_POS(RILL_SPLIT_LOD_TENSOR_IN_X, RILL_MERGE_LOD_TENSOR_IN_X) &&
                   RILL_SAME_POS(RILL_SPLIT_LOD_TENSOR_ATTR_LEVEL, RILL_MERGE_LOD_TENSOR_ATTR_LEVEL),
               "split and merge read X and level alike");

enum { MAX_LEVELS = 8 }; /* LoD levels an output may have */

/* The mask's elements: a bool tensor [N] or [N, 1]. */
static rill_status *mask_of(rill_kernel_ctx *ctx, size_t slot, const bool **m, int64_t *n) {
  rill_tensor *t = NULL;
  RILL_TRY(rill_kin_need(ctx, slot, 0, RILL_DTYPE_BOOL, &t));
  if (t->dims.n < 1 || t->dims.n > 2 || (t->dims.n == 2 && t->dims.d[1] != 1)) {
    char s[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input Mask (%s) has shape %s, expected [N] or [N, 1]",
                             rill_kin_name(ctx, slot, 0), rill_dims_str(&t->dims, s, sizeof s));
  }
  *m = rill_tensor_ptr(t);
  *n = t->dims.d[0];
  return NULL;
}

/* An output LoD of `nlevels` levels, level k with room for cap[k] offsets, each level
 * holding the offset 0. */
static rill_status *lod_start(rill_lod *lod, size_t nlevels, const size_t *cap) {
  lod->nlevels = 0;
  lod->levels = NULL;
  if (!nlevels) return NULL;
  lod->levels = rill_calloc(nlevels, sizeof *lod->levels);
  if (!lod->levels) return rill_oom();
  lod->nlevels = nlevels;
  for (size_t k = 0; k < nlevels; k++) {
    lod->levels[k].offsets = rill_malloc((cap[k] + 1) * sizeof(uint64_t));
    if (!lod->levels[k].offsets) {
      rill_lod_clear(lod);
      return rill_oom();
    }
    lod->levels[k].offsets[0] = 0;
    lod->levels[k].n = 1;
  }
  return NULL;
}

/* Rows [*a, *b) of sequence `i` of `lod` from level `level` down (row i when `lod` has no
 * level there); with `out`, appends the lengths of its sub-sequences to out's levels. */
static void sequence_rows(const rill_lod *lod, size_t level, uint64_t i, rill_lod *out,
                          uint64_t *a, uint64_t *b) {
  uint64_t lo = i, hi = i + 1;
  for (size_t l = level, k = 0; l < lod->nlevels; l++, k++) {
    const uint64_t *off = lod->levels[l].offsets;
    if (out)
      for (uint64_t j = lo; j < hi; j++) {
        rill_lod_level *ol = &out->levels[k];
        ol->offsets[ol->n] = ol->offsets[ol->n - 1] + (off[j + 1] - off[j]);
        ol->n++;
      }
    lo = off[lo];
    hi = off[hi];
  }
  *a = lo;
  *b = hi;
}

/* How many sequences `t` has at `level` (its rows without LoD), its LoD checked. */
static rill_status *sequence_count(rill_kernel_ctx *ctx, const char *what, const char *name,
                                   const rill_tensor *t, size_t level, int64_t *n) {
  int64_t rows = t->dims.n ? t->dims.d[0] : 1;
  if (t->lod.nlevels == 0) {
    *n = rows;
    return NULL;
  }
  rill_status *st = rill_lod_check(&t->lod, rows);
  if (st) return rill_status_wrap(st, "%s: input %s (%s)", ctx->schema->type, what, name);
  if (level >= t->lod.nlevels)
    return rill_kernel_error(ctx, "input %s (%s) has %zu LoD levels: no level %zu", what, name,
                             t->lod.nlevels, level);
  *n = (int64_t)t->lod.levels[level].n - 1;
  return NULL;
}

/* Copies rows [a, b) of src after the `*at` rows already in dst. */
static void copy_rows(rill_tensor *dst, int64_t *at, const rill_tensor *src, uint64_t a, uint64_t b,
                      size_t row_bytes) {
  if (b > a)
    memcpy((char *)rill_tensor_ptr(dst) + (size_t)*at * row_bytes,
           (const char *)rill_tensor_ptr(src) + a * row_bytes, (size_t)(b - a) * row_bytes);
  *at += (int64_t)(b - a);
}

static size_t row_bytes_of(const rill_tensor *t) {
  return rill_dtype_size(t->dtype) * (size_t)(t->dims.n ? rill_dims_prod(&t->dims, 1, t->dims.n) : 1);
}

rill_status *rill_cpu_split_lod_tensor(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_SPLIT_LOD_TENSOR_IN_X, 0);
  const char *xn = rill_kin_name(ctx, RILL_SPLIT_LOD_TENSOR_IN_X, 0);
  if (!x || !rill_tensor_is_set(x) || x->dims.n < 1)
    return rill_kernel_error(ctx, "input X (%s) must be a tensor with data and a row dimension", xn);
  const bool *mask;
  int64_t n, nseq;
  RILL_TRY(mask_of(ctx, RILL_SPLIT_LOD_TENSOR_IN_MASK, &mask, &n));
  size_t level = (size_t)ctx->attrs[RILL_SPLIT_LOD_TENSOR_ATTR_LEVEL].v.i;
  RILL_TRY(sequence_count(ctx, "X", xn, x, level, &nseq));
  if (nseq != n)
    return rill_kernel_error(ctx, "input Mask (%s) has %lld elements but input X (%s) has %lld "
                             "sequences at level %zu", rill_kin_name(ctx, RILL_SPLIT_LOD_TENSOR_IN_MASK, 0),
                             (long long)n, xn, (long long)nseq, level);
  size_t nlev = x->lod.nlevels > level ? x->lod.nlevels - level : 0;
  size_t cap[MAX_LEVELS];
  if (nlev > MAX_LEVELS)
    return rill_kernel_error(ctx, "input X (%s) has %zu LoD levels below level %zu, at most %d "
                             "are supported", xn, nlev, level, MAX_LEVELS);
  for (size_t k = 0; k < nlev; k++) cap[k] = x->lod.levels[level + k].n;
  size_t rb = row_bytes_of(x);
  for (int side = 0; side < 2; side++) { /* OutTrue, then OutFalse */
    size_t slot = side == 0 ? RILL_SPLIT_LOD_TENSOR_OUT_OUT_TRUE : RILL_SPLIT_LOD_TENSOR_OUT_OUT_FALSE;
    rill_tensor *out = rill_kout(ctx, slot, 0);
    if (!out) continue; /* not wanted */
    bool want = side == 0;
    rill_dims d = x->dims;
    d.d[0] = 0;
    for (int64_t i = 0; i < n; i++) {
      if (mask[i] != want) continue;
      uint64_t a, b;
      sequence_rows(&x->lod, level, (uint64_t)i, NULL, &a, &b);
      d.d[0] += (int64_t)(b - a);
    }
    rill_lod lod;
    RILL_TRY(lod_start(&lod, nlev, cap));
    rill_status *st = rill_tensor_alloc(out, x->dtype, &d);
    if (st) {
      rill_lod_clear(&lod);
      return st;
    }
    int64_t at = 0;
    for (int64_t i = 0; i < n; i++) {
      if (mask[i] != want) continue;
      uint64_t a, b;
      sequence_rows(&x->lod, level, (uint64_t)i, &lod, &a, &b);
      copy_rows(out, &at, x, a, b, rb);
    }
    rill_lod_clear(&out->lod);
    out->lod = lod;
  }
  return NULL;
}

/* One branch of merge_lod_tensor: its tensor (NULL when absent or unset) and the next
 * sequence to take. */
typedef struct branch {
  const rill_tensor *t;
  const char *slot, *name;
  int64_t nseq, next;
} branch;

static rill_status *branch_of(rill_kernel_ctx *ctx, size_t slot, const char *what, branch *b) {
  b->t = NULL, b->slot = what, b->nseq = 0, b->next = 0;
  b->name = ctx->nin[slot] ? rill_kin_name(ctx, slot, 0) : "(none)";
  rill_tensor *t = ctx->nin[slot] ? rill_kin(ctx, slot, 0) : NULL;
  if (!t || !rill_tensor_is_set(t) || t->dims.n < 1) return NULL;
  b->t = t;
  return sequence_count(ctx, what, b->name, t, 0, &b->nseq);
}

rill_status *rill_cpu_merge_lod_tensor(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_MERGE_LOD_TENSOR_IN_X, 0);
  const char *xn = rill_kin_name(ctx, RILL_MERGE_LOD_TENSOR_IN_X, 0);
  if (!x)
    return rill_kernel_error(ctx, "input X (%s) is missing or not a dense tensor", xn);
  const bool *mask;
  int64_t n;
  RILL_TRY(mask_of(ctx, RILL_MERGE_LOD_TENSOR_IN_MASK, &mask, &n));
  size_t level = (size_t)ctx->attrs[RILL_MERGE_LOD_TENSOR_ATTR_LEVEL].v.i;
  if (level > x->lod.nlevels)
    return rill_kernel_error(ctx, "input X (%s) has %zu LoD levels: no level %zu", xn,
                             x->lod.nlevels, level);
  branch br[2];
  RILL_TRY(branch_of(ctx, RILL_MERGE_LOD_TENSOR_IN_IN_TRUE, "InTrue", &br[0]));
  RILL_TRY(branch_of(ctx, RILL_MERGE_LOD_TENSOR_IN_IN_FALSE, "InFalse", &br[1]));
  int64_t picks[2] = {0, 0};
  for (int64_t i = 0; i < n; i++) picks[mask[i] ? 0 : 1]++;
  const rill_tensor *like = NULL;
  for (int s = 0; s < 2; s++) {
    if (picks[s] > br[s].nseq)
      return rill_kernel_error(ctx, "input Mask (%s) picks %lld sequences of input %s (%s), which "
                               "holds %lld", rill_kin_name(ctx, RILL_MERGE_LOD_TENSOR_IN_MASK, 0),
                               (long long)picks[s], br[s].slot, br[s].name, (long long)br[s].nseq);
    if (br[s].t && (picks[s] > 0 || !like)) like = br[s].t;
  }
  if (!like)
    return rill_kernel_error(ctx, "inputs InTrue (%s) and InFalse (%s) hold no tensor",
                             br[0].name, br[1].name);
  for (int s = 0; s < 2; s++) {
    const rill_tensor *t = br[s].t;
    if (!t || !picks[s] || t == like) continue;
    bool same = t->dtype == like->dtype && t->dims.n == like->dims.n &&
                t->lod.nlevels == like->lod.nlevels;
    for (int k = 1; same && k < t->dims.n; k++) same = t->dims.d[k] == like->dims.d[k];
    if (!same) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx, "input InTrue (%s) is %s %s with %zu LoD levels but input "
                               "InFalse (%s) is %s %s with %zu", br[0].name,
                               rill_dtype_name(br[0].t->dtype), rill_dims_str(&br[0].t->dims, a, sizeof a),
                               br[0].t->lod.nlevels, br[1].name, rill_dtype_name(br[1].t->dtype),
                               rill_dims_str(&br[1].t->dims, b, sizeof b), br[1].t->lod.nlevels);
    }
  }
  size_t inner = like->lod.nlevels, nlev = level + inner;
  if (nlev > MAX_LEVELS)
    return rill_kernel_error(ctx, "Out would have %zu LoD levels, at most %d are supported", nlev,
                             MAX_LEVELS);
  size_t cap[MAX_LEVELS];
  for (size_t k = 0; k < level; k++) cap[k] = x->lod.levels[k].n;
  for (size_t k = 0; k < inner; k++) {
    cap[level + k] = 0;
    for (int s = 0; s < 2; s++)
      if (br[s].t && picks[s]) cap[level + k] += br[s].t->lod.levels[k].n;
  }
  rill_dims d = like->dims;
  d.d[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    branch *b = &br[mask[i] ? 0 : 1];
    uint64_t lo, hi;
    sequence_rows(&b->t->lod, 0, (uint64_t)b->next++, NULL, &lo, &hi);
    d.d[0] += (int64_t)(hi - lo);
  }
  rill_tensor *out = rill_kout(ctx, RILL_MERGE_LOD_TENSOR_OUT_OUT, 0);
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, RILL_MERGE_LOD_TENSOR_OUT_OUT, 0));
  rill_lod lod, inner_lod = {0, NULL};
  RILL_TRY(lod_start(&lod, nlev, cap));
  rill_status *st = rill_tensor_alloc(out, like->dtype, &d);
  if (st) {
    rill_lod_clear(&lod);
    return st;
  }
  for (size_t k = 0; k < level; k++) { /* X's levels above `level`, as they are */
    memcpy(lod.levels[k].offsets, x->lod.levels[k].offsets, x->lod.levels[k].n * sizeof(uint64_t));
    lod.levels[k].n = x->lod.levels[k].n;
  }
  inner_lod.nlevels = inner;
  inner_lod.levels = lod.levels + level;
  size_t rb = row_bytes_of(like);
  int64_t at = 0;
  br[0].next = br[1].next = 0;
  for (int64_t i = 0; i < n; i++) {
    branch *b = &br[mask[i] ? 0 : 1];
    uint64_t lo, hi;
    sequence_rows(&b->t->lod, 0, (uint64_t)b->next++, &inner_lod, &lo, &hi);
    copy_rows(out, &at, b->t, lo, hi, rb);
  }
  rill_lod_clear(&out->lod);
  out->lod = lod;
  return NULL;
}
