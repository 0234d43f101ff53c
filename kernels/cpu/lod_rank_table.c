/* DynamicRNN's CPU kernels (operators/lod_rank_table.c): the rank table, splitting a LoD
 * batch into per-step items and back, shrinking a state to the running sequences, and
 * putting per-sequence tensors into rank order and back. Rows are moved as bytes, so
 * every dtype works. A rank table is an int64 tensor [n, 2] of (index, length) rows in
 * rank order whose LoD is the coarse levels above the ranked one. */
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_array.h"

typedef struct rank_table {
  const int64_t *rows; /* (index, length) pairs, longest first */
  size_t n;
  const rill_lod *coarse;
  size_t level; /* the ranked LoD level: the coarse level count */
} rank_table;

static int64_t rt_index(const rank_table *t, size_t k) { return t->rows[2 * k]; }
static int64_t rt_length(const rank_table *t, size_t k) { return t->rows[2 * k + 1]; }

/* The rank table of input `slot`, checked. */
static rill_status *read_table(rill_kernel_ctx *ctx, size_t slot, rank_table *t) {
  const char *name = rill_kin_name(ctx, slot, 0);
  rill_tensor *v = rill_kin(ctx, slot, 0);
  if (!v || !rill_tensor_is_set(v) || v->dtype != RILL_DTYPE_INT64 || v->dims.n != 2 ||
      v->dims.d[1] != 2)
    return rill_kernel_error(ctx, "RankTable '%s' holds no rank table (lod_rank_table's "
                             "int64 [n, 2] output)", name);
  t->rows = rill_tensor_ptr(v);
  t->n = (size_t)v->dims.d[0];
  t->coarse = &v->lod;
  t->level = v->lod.nlevels;
  for (size_t k = 0; k < t->n; k++)
    if (rt_index(t, k) < 0 || (size_t)rt_index(t, k) >= t->n || rt_length(t, k) < 0 ||
        (k && rt_length(t, k) > rt_length(t, k - 1)))
      return rill_kernel_error(ctx, "RankTable '%s' is malformed at row %zu", name, k);
  return NULL;
}

/* Rows of a tensor and the bytes of one row. */
static int64_t rows_of(const rill_tensor *x) { return x->dims.n ? x->dims.d[0] : 1; }
static size_t row_bytes(const rill_tensor *x) {
  int64_t r = rows_of(x);
  return r ? rill_tensor_nbytes(x) / (size_t)r : 0;
}

/* The dense tensor of input (slot, 0), of rank 1 or more. */
static rill_status *rows_input(rill_kernel_ctx *ctx, size_t slot, rill_tensor **x) {
  *x = rill_kin(ctx, slot, 0);
  if (!*x || !rill_tensor_is_set(*x) || (*x)->dims.n < 1)
    return rill_kernel_error(ctx, "%s '%s' holds no tensor of rank 1 or more",
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0));
  return NULL;
}

/* `dst` := dims of `like` with `rows` rows, `like`'s dtype. */
static rill_status *alloc_rows(rill_tensor *dst, const rill_tensor *like, int64_t rows) {
  rill_dims d = like->dims;
  if (d.n == 0) d.n = 1;
  d.d[0] = rows;
  rill_lod_clear(&dst->lod);
  return rill_tensor_alloc(dst, like->dtype, &d);
}

/* `dst` := the levels of `coarse` followed by one level of n + 1 offsets. */
static rill_status *set_lod(rill_lod *dst, const rill_lod *coarse, const uint64_t *last,
                            size_t n) {
  rill_lod tmp = {0, NULL};
  if (coarse) RILL_TRY(rill_lod_copy(&tmp, coarse));
  rill_lod_level *lv = rill_realloc(tmp.levels, (tmp.nlevels + 1) * sizeof *lv);
  if (!lv) {
    rill_lod_clear(&tmp);
    return rill_oom();
  }
  tmp.levels = lv;
  lv[tmp.nlevels].offsets = rill_malloc((n + 1) * sizeof(uint64_t));
  if (!lv[tmp.nlevels].offsets) {
    rill_lod_clear(&tmp);
    return rill_oom();
  }
  memcpy(lv[tmp.nlevels].offsets, last, (n + 1) * sizeof(uint64_t));
  lv[tmp.nlevels].n = n + 1;
  tmp.nlevels++;
  rill_lod_clear(dst);
  *dst = tmp;
  return NULL;
}

/* ------------------------------------------------------------- lod_rank_table --- */

static int by_length(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[1] != y[1]) return x[1] > y[1] ? -1 : 1;
  return x[0] < y[0] ? -1 : x[0] > y[0];
}

rill_status *rill_cpu_lod_rank_table(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0);
  int32_t level = ctx->attrs[RILL_LOD_RANK_TABLE_ATTR_LEVEL].v.i;
  const char *name = rill_kin_name(ctx, 0, 0);
  if (!x) return rill_kernel_error(ctx, "input X '%s' holds no tensor", name);
  if (level < 0 || (size_t)level >= x->lod.nlevels)
    return rill_kernel_error(ctx, "level %d is not a LoD level of X '%s' (%zu levels)",
                             (int)level, name, x->lod.nlevels);
  const rill_lod_level *lv = &x->lod.levels[level];
  size_t n = lv->n ? lv->n - 1 : 0;
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!out)
    return rill_kernel_error(ctx, "output Out '%s' cannot hold the rank table",
                             rill_kout_name(ctx, 0, 0));
  rill_dims d = {.n = 2, .d = {(int64_t)n, 2}};
  rill_lod_clear(&out->lod);
  RILL_TRY(rill_tensor_alloc(out, RILL_DTYPE_INT64, &d));
  int64_t *rows = rill_tensor_ptr(out);
  for (size_t i = 0; i < n; i++) {
    rows[2 * i] = (int64_t)i;
    rows[2 * i + 1] = (int64_t)(lv->offsets[i + 1] - lv->offsets[i]);
  }
  qsort(rows, n, 2 * sizeof *rows, by_length);
  rill_lod coarse = {.nlevels = (size_t)level, .levels = x->lod.levels};
  return rill_lod_copy(&out->lod, &coarse);
}

rill_status *rill_cpu_max_sequence_len(rill_kernel_ctx *ctx) {
  rank_table t;
  RILL_TRY(read_table(ctx, 0, &t));
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!out)
    return rill_kernel_error(ctx, "output Out '%s' cannot hold a tensor", rill_kout_name(ctx, 0, 0));
  rill_dims d = {.n = 1, .d = {1}};
  rill_lod_clear(&out->lod);
  RILL_TRY(rill_tensor_alloc(out, RILL_DTYPE_INT64, &d));
  *(int64_t *)rill_tensor_ptr(out) = t.n ? rt_length(&t, 0) : 0;
  return NULL;
}

/* The first row of every sequence of the table, by sequence index: X's ranked LoD level
 * when it has one (it must be X's last), else the table's lengths laid end to end in
 * index order (a gradient, which carries no LoD). */
static rill_status *seq_starts(rill_kernel_ctx *ctx, const rill_tensor *x, const char *name,
                               const rank_table *t, uint64_t *start) {
  if (x->lod.nlevels > t->level + 1)
    return rill_kernel_error(ctx, "X '%s' has %zu LoD levels; levels below the ranked one "
                             "(%zu) are not supported", name, x->lod.nlevels, t->level);
  if (x->lod.nlevels == t->level + 1) {
    const rill_lod_level *lv = &x->lod.levels[t->level];
    if (lv->n != t->n + 1)
      return rill_kernel_error(ctx, "X '%s' has %zu sequences at LoD level %zu, the rank "
                               "table %zu", name, lv->n ? lv->n - 1 : 0, t->level, t->n);
    for (size_t k = 0; k < t->n; k++) {
      size_t i = (size_t)rt_index(t, k);
      if (lv->offsets[i + 1] - lv->offsets[i] != (uint64_t)rt_length(t, k))
        return rill_kernel_error(ctx, "X '%s': sequence %zu has %llu rows, the rank table "
                                 "says %lld", name, i,
                                 (unsigned long long)(lv->offsets[i + 1] - lv->offsets[i]),
                                 (long long)rt_length(t, k));
    }
    memcpy(start, lv->offsets, (t->n + 1) * sizeof *start);
  } else {
    if (t->level)
      return rill_kernel_error(ctx, "X '%s' lacks the ranked LoD level %zu", name, t->level);
    uint64_t *len = start + 1;
    for (size_t k = 0; k < t->n; k++) len[rt_index(t, k)] = (uint64_t)rt_length(t, k);
    start[0] = 0;
    for (size_t i = 0; i < t->n; i++) start[i + 1] = start[i] + len[i];
  }
  if ((int64_t)start[t->n] != rows_of(x))
    return rill_kernel_error(ctx, "X '%s' has %lld rows, its sequences %llu", name,
                             (long long)rows_of(x), (unsigned long long)start[t->n]);
  return NULL;
}

rill_status *rill_cpu_lod_tensor_to_array(rill_kernel_ctx *ctx) {
  rank_table t;
  RILL_TRY(read_table(ctx, RILL_LOD_TENSOR_TO_ARRAY_IN_RANK_TABLE, &t));
  rill_tensor *x;
  RILL_TRY(rows_input(ctx, RILL_LOD_TENSOR_TO_ARRAY_IN_X, &x));
  const char *name = rill_kin_name(ctx, RILL_LOD_TENSOR_TO_ARRAY_IN_X, 0);
  uint64_t *start = rill_malloc((t.n + 1) * sizeof *start);
  if (!start) return rill_oom();
  rill_status *st = seq_starts(ctx, x, name, &t, start);
  rill_variable *ov = ctx->out[RILL_LOD_TENSOR_TO_ARRAY_OUT_OUT][0];
  rill_tensor_array *a = NULL;
  if (!st) {
    rill_variable_clear(ov);
    a = rill_variable_array(ov);
    if (!a)
      st = rill_kernel_error(ctx, "Out '%s' cannot hold a tensor array",
                             rill_kout_name(ctx, RILL_LOD_TENSOR_TO_ARRAY_OUT_OUT, 0));
  }
  size_t steps = t.n ? (size_t)rt_length(&t, 0) : 0, rb = row_bytes(x);
  if (!st) st = rill_tensor_array_resize(a, steps);
  for (size_t s = 0; s < steps && !st; s++) {
    size_t active = 0;
    while (active < t.n && (size_t)rt_length(&t, active) > s) active++;
    st = alloc_rows(&a->items[s], x, (int64_t)active);
    for (size_t k = 0; k < active && !st; k++)
      memcpy((char *)rill_tensor_ptr(&a->items[s]) + k * rb,
             (const char *)rill_tensor_ptr(x) + (start[rt_index(&t, k)] + s) * rb, rb);
  }
  rill_free(start);
  return st;
}

rill_status *rill_cpu_array_to_lod_tensor(rill_kernel_ctx *ctx) {
  rank_table t;
  RILL_TRY(read_table(ctx, RILL_ARRAY_TO_LOD_TENSOR_IN_RANK_TABLE, &t));
  rill_variable *xv = ctx->in[RILL_ARRAY_TO_LOD_TENSOR_IN_X][0];
  const char *name = rill_kin_name(ctx, RILL_ARRAY_TO_LOD_TENSOR_IN_X, 0);
  if (!xv || xv->kind != RILL_VARKIND_TENSOR_ARRAY)
    return rill_kernel_error(ctx, "X '%s' holds no tensor array", name);
  const rill_tensor_array *a = &xv->u.array;
  const rill_tensor *like = NULL;
  for (size_t s = 0; s < a->n && !like; s++)
    if (rill_tensor_is_set(&a->items[s]) && a->items[s].dims.n >= 1) like = &a->items[s];
  if (!like) return rill_kernel_error(ctx, "no item of X '%s' holds a tensor", name);
  size_t steps = t.n ? (size_t)rt_length(&t, 0) : 0;
  if (a->n < steps)
    return rill_kernel_error(ctx, "X '%s' has %zu items, the longest sequence %zu steps", name,
                             a->n, steps);
  size_t rb = row_bytes(like);
  for (size_t s = 0; s < steps; s++) {
    const rill_tensor *it = &a->items[s];
    if (!rill_tensor_is_set(it)) continue;
    size_t active = 0;
    while (active < t.n && (size_t)rt_length(&t, active) > s) active++;
    if (it->dtype != like->dtype || row_bytes(it) != rb || rows_of(it) < (int64_t)active ||
        it->lod.nlevels)
      return rill_kernel_error(ctx, "item %zu of X '%s' must hold %zu rows like item 0's, "
                               "without LoD", s, name, active);
  }
  uint64_t *off = rill_malloc((2 * t.n + 1) * sizeof *off);
  if (!off) return rill_oom();
  uint64_t *rank_of = off + t.n + 1; /* sequence index -> rank position */
  for (size_t k = 0; k < t.n; k++) rank_of[rt_index(&t, k)] = k;
  off[0] = 0;
  for (size_t i = 0; i < t.n; i++) off[i + 1] = off[i] + (uint64_t)rt_length(&t, rank_of[i]);
  rill_tensor *out = rill_kout(ctx, RILL_ARRAY_TO_LOD_TENSOR_OUT_OUT, 0);
  rill_status *st = out ? alloc_rows(out, like, (int64_t)off[t.n])
                        : rill_kernel_error(ctx, "Out '%s' cannot hold a tensor",
                                            rill_kout_name(ctx, 0, 0));
  for (size_t i = 0; i < t.n && !st; i++) {
    size_t k = rank_of[i];
    for (size_t s = 0; s < (size_t)rt_length(&t, k); s++) {
      char *dst = (char *)rill_tensor_ptr(out) + (off[i] + s) * rb;
      const rill_tensor *it = &a->items[s];
      if (rill_tensor_is_set(it)) memcpy(dst, (const char *)rill_tensor_ptr(it) + k * rb, rb);
      else memset(dst, 0, rb);
    }
  }
  if (!st) st = set_lod(&out->lod, t.coarse, off, t.n);
  rill_free(off);
  return st;
}

/* ---------------------------------------------------------- shrink_rnn_memory --- */

rill_status *rill_cpu_shrink_rnn_memory(rill_kernel_ctx *ctx) {
  rank_table t;
  RILL_TRY(read_table(ctx, RILL_SHRINK_RNN_MEMORY_IN_RANK_TABLE, &t));
  size_t step;
  RILL_TRY(rill_cpu_array_index(ctx, RILL_SHRINK_RNN_MEMORY_IN_I, &step));
  rill_tensor *x;
  RILL_TRY(rows_input(ctx, RILL_SHRINK_RNN_MEMORY_IN_X, &x));
  const char *name = rill_kin_name(ctx, RILL_SHRINK_RNN_MEMORY_IN_X, 0);
  size_t keep = 0;
  while (keep < t.n && (size_t)rt_length(&t, keep) > step) keep++;
  int64_t height = (int64_t)keep;
  const rill_lod_level *top = x->lod.nlevels ? &x->lod.levels[0] : NULL;
  if (x->lod.nlevels > 1)
    return rill_kernel_error(ctx, "X '%s' has %zu LoD levels; at most one is supported", name,
                             x->lod.nlevels);
  if (top && top->n > keep) height = (int64_t)top->offsets[keep];
  if (height > rows_of(x))
    return rill_kernel_error(ctx, "X '%s' has %lld rows; the %zu running sequences need %lld",
                             name, (long long)rows_of(x), keep, (long long)height);
  rill_tensor *out = rill_kout(ctx, RILL_SHRINK_RNN_MEMORY_OUT_OUT, 0);
  if (!out)
    return rill_kernel_error(ctx, "Out '%s' cannot hold a tensor", rill_kout_name(ctx, 0, 0));
  RILL_TRY(alloc_rows(out, x, height));
  memcpy(rill_tensor_ptr(out), rill_tensor_ptr(x), (size_t)height * row_bytes(x));
  if (top && top->n > keep) return set_lod(&out->lod, NULL, top->offsets, keep);
  return NULL;
}

rill_status *rill_cpu_shrink_rnn_memory_grad(rill_kernel_ctx *ctx) {
  size_t xi = RILL_SHRINK_RNN_MEMORY_GRAD_IN_X, gi = RILL_SHRINK_RNN_MEMORY_GRAD_IN_OUT_GRAD;
  rill_tensor *x;
  RILL_TRY(rows_input(ctx, xi, &x));
  rill_tensor *g = ctx->nin[gi] ? rill_kin(ctx, gi, 0) : NULL;
  if (g && !rill_tensor_is_set(g)) g = NULL;
  rill_tensor *dx = rill_kout(ctx, 0, 0);
  if (!dx)
    return rill_kernel_error(ctx, "X@GRAD '%s' cannot hold a tensor", rill_kout_name(ctx, 0, 0));
  size_t rb = row_bytes(x);
  int64_t h = g ? rows_of(g) : 0;
  if (g && (g->dtype != x->dtype || row_bytes(g) != rb || h > rows_of(x)))
    return rill_kernel_error(ctx, "Out@GRAD '%s' does not fit in the first rows of X '%s'",
                             rill_kin_name(ctx, gi, 0), rill_kin_name(ctx, xi, 0));
  RILL_TRY(alloc_rows(dx, x, rows_of(x)));
  char *d = rill_tensor_ptr(dx);
  if (h) memcpy(d, rill_tensor_ptr(g), (size_t)h * rb);
  memset(d + (size_t)h * rb, 0, (size_t)(rows_of(x) - h) * rb);
  return rill_lod_copy(&dx->lod, &x->lod);
}

/* ------------------------------------------------- reorder_lod_tensor_by_rank --- */

/* Moves X's per-sequence blocks: to rank order (forward), or from rank order back to
 * index order (gradient). A block is one row without LoD, a sequence of X's one level with
 * it. */
static rill_status *reorder(rill_kernel_ctx *ctx, bool to_rank) {
  rank_table t;
  RILL_TRY(read_table(ctx, 1, &t));
  rill_tensor *x;
  RILL_TRY(rows_input(ctx, 0, &x));
  const char *name = rill_kin_name(ctx, 0, 0);
  if (x->lod.nlevels > 1 || (x->lod.nlevels && t.level))
    return rill_kernel_error(ctx, "X '%s' has %zu LoD levels (table level %zu); rows, or one "
                             "level of sequences ranked at level 0, are supported", name,
                             x->lod.nlevels, t.level);
  const uint64_t *lv = x->lod.nlevels ? x->lod.levels[0].offsets : NULL;
  size_t nblocks = lv ? x->lod.levels[0].n - 1 : (size_t)rows_of(x);
  if (nblocks != t.n)
    return rill_kernel_error(ctx, "X '%s' has %zu %s, the rank table %zu sequences", name,
                             nblocks, lv ? "sequences" : "rows", t.n);
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!out)
    return rill_kernel_error(ctx, "Out '%s' cannot hold a tensor", rill_kout_name(ctx, 0, 0));
  uint64_t *off = rill_malloc((t.n + 1) * sizeof *off);
  if (!off) return rill_oom();
  size_t rb = row_bytes(x);
  int64_t rows = lv ? (int64_t)lv[t.n] : (int64_t)t.n;
  rill_status *st = alloc_rows(out, x, rows);
  /* output block j comes from input block src(j) */
  off[0] = 0;
  for (size_t j = 0; j < t.n && !st; j++) {
    size_t from = j;
    if (to_rank) {
      from = (size_t)rt_index(&t, j);
    } else {
      for (size_t k = 0; k < t.n; k++)
        if ((size_t)rt_index(&t, k) == j) from = k;
    }
    uint64_t b = lv ? lv[from] : from, e = lv ? lv[from + 1] : from + 1;
    memcpy((char *)rill_tensor_ptr(out) + off[j] * rb, (const char *)rill_tensor_ptr(x) + b * rb,
           (size_t)(e - b) * rb);
    off[j + 1] = off[j] + (e - b);
  }
  if (!st && lv) st = set_lod(&out->lod, NULL, off, t.n);
  rill_free(off);
  return st;
}

rill_status *rill_cpu_reorder_lod_tensor_by_rank(rill_kernel_ctx *ctx) {
  return reorder(ctx, true);
}

rill_status *rill_cpu_reorder_lod_tensor_by_rank_grad(rill_kernel_ctx *ctx) {
  return reorder(ctx, false);
}
