/* DynamicRNN's CPU kernels (operators/lod_rank_table.c): the rank table, splitting a LoD
 * batch into per-step items and back, shrinking a state to the running sequences, and
 * putting per-sequence tensors into rank order and back. Rows are moved as bytes, so
 * every dtype works. A rank table is an int64 tensor [n, 2] of (index, length) rows in
 * rank order whose LoD is the coarse levels above the ranked one. */
#include <stdio.h>
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
  bool *seen = rill_calloc(t->n + 1, sizeof *seen);
  if (!seen) return rill_oom();
  size_t dup = t->n;
  for (size_t k = 0; k < t->n && dup == t->n; k++) {
    if (seen[rt_index(t, k)]) dup = k;
    seen[rt_index(t, k)] = true;
  }
  rill_free(seen);
  if (dup < t->n)
    return rill_kernel_error(ctx, "RankTable '%s' names sequence %lld twice (row %zu)", name,
                             (long long)rt_index(t, dup), dup);
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

/* X's LoD, checked; errors name the op and X. */
static rill_status *check_lod(rill_kernel_ctx *ctx, const rill_tensor *x, const char *slot,
                              const char *name) {
  rill_status *st = rill_lod_check(&x->lod, rows_of(x));
  if (st) return rill_status_wrap(st, "%s: %s '%s'", ctx->schema->type, slot, name);
  return NULL;
}

/* A LoD of `n` levels being built: level j may take `cap[j]` offsets; each starts as {0}. */
static rill_status *lod_begin(rill_lod *lod, size_t n, const size_t *cap) {
  lod->nlevels = 0;
  lod->levels = NULL;
  if (!n) return NULL;
  lod->levels = rill_calloc(n, sizeof *lod->levels);
  if (!lod->levels) return rill_oom();
  lod->nlevels = n;
  for (size_t j = 0; j < n; j++) {
    lod->levels[j].offsets = rill_malloc((cap[j] ? cap[j] : 1) * sizeof(uint64_t));
    if (!lod->levels[j].offsets) {
      rill_lod_clear(lod);
      return rill_oom();
    }
    lod->levels[j].offsets[0] = 0;
    lod->levels[j].n = 1;
  }
  return NULL;
}

/* Appends to the levels of `dst` the sub-tree of the entries [b, e) of `src`'s level
 * `from` (entries of level l are its sequences; past the last level, rows): their
 * lengths at `from`, their parts' lengths at `from` + 1, and so on through `src`'s last
 * level, so `dst` needs `src`'s level count minus `from` levels. The rows it spans go
 * to [*rb, *re). */
static void append_subtree(rill_lod *dst, const rill_lod *src, size_t from, uint64_t b,
                           uint64_t e, uint64_t *rb, uint64_t *re) {
  for (size_t l = from; l < src->nlevels; l++) {
    rill_lod_level *d = &dst->levels[l - from];
    const uint64_t *o = src->levels[l].offsets;
    for (uint64_t i = b; i < e; i++) {
      d->offsets[d->n] = d->offsets[d->n - 1] + (o[i + 1] - o[i]);
      d->n++;
    }
    b = o[b];
    e = o[e];
  }
  *rb = b;
  *re = e;
}

/* Where every sequence of the table starts, by sequence index, counted in entries of the
 * level below the ranked one (rows when that is X's last): X's ranked LoD level when it has
 * one, else the table's lengths laid end to end in index order (a gradient, which carries
 * no LoD). */
static rill_status *seq_starts(rill_kernel_ctx *ctx, const rill_tensor *x, const char *name,
                               const rank_table *t, uint64_t *start) {
  if (x->lod.nlevels > t->level) {
    RILL_TRY(check_lod(ctx, x, "X", name));
    const rill_lod_level *lv = &x->lod.levels[t->level];
    if (lv->n != t->n + 1)
      return rill_kernel_error(ctx, "X '%s' has %zu sequences at LoD level %zu, the rank "
                               "table %zu", name, lv->n ? lv->n - 1 : 0, t->level, t->n);
    for (size_t k = 0; k < t->n; k++) {
      size_t i = (size_t)rt_index(t, k);
      if (lv->offsets[i + 1] - lv->offsets[i] != (uint64_t)rt_length(t, k))
        return rill_kernel_error(ctx, "X '%s': sequence %zu of LoD level %zu has %llu "
                                 "entries, the rank table says %lld", name, i, t->level,
                                 (unsigned long long)(lv->offsets[i + 1] - lv->offsets[i]),
                                 (long long)rt_length(t, k));
    }
    memcpy(start, lv->offsets, (t->n + 1) * sizeof *start);
    return NULL;
  }
  if (x->lod.nlevels || t->level)
    return rill_kernel_error(ctx, "X '%s' has %zu LoD levels and lacks the ranked level %zu",
                             name, x->lod.nlevels, t->level);
  uint64_t *len = start + 1;
  for (size_t k = 0; k < t->n; k++) len[rt_index(t, k)] = (uint64_t)rt_length(t, k);
  start[0] = 0;
  for (size_t i = 0; i < t->n; i++) start[i + 1] = start[i] + len[i];
  if ((int64_t)start[t->n] != rows_of(x))
    return rill_kernel_error(ctx, "X '%s' has %lld rows, the rank table's sequences %llu", name,
                             (long long)rows_of(x), (unsigned long long)start[t->n]);
  return NULL;
}

/* The number of sequences of the table longer than `s`: a prefix in rank order. */
static size_t running(const rank_table *t, size_t s) {
  size_t active = 0;
  while (active < t->n && (size_t)rt_length(t, active) > s) active++;
  return active;
}

/* Item s of lod_tensor_to_array: entry s of each running sequence with the levels below
 * it. `from` is the first level below the ranked one; `ranges` has room for the rows each
 * sequence's part spans. */
static rill_status *split_step(const rill_tensor *x, const rank_table *t, const uint64_t *start,
                               size_t from, size_t s, uint64_t *ranges, rill_tensor *item) {
  size_t active = running(t, s), nested = x->lod.nlevels > from ? x->lod.nlevels - from : 0;
  size_t *caps = rill_malloc((nested + 1) * sizeof *caps);
  if (!caps) return rill_oom();
  for (size_t j = 0; j < nested; j++) caps[j] = x->lod.levels[from + j].n;
  rill_lod lod;
  rill_status *st = lod_begin(&lod, nested, caps);
  rill_free(caps);
  if (st) return st;
  uint64_t rows = 0;
  for (size_t k = 0; k < active; k++) {
    uint64_t j = start[rt_index(t, k)] + s;
    append_subtree(&lod, &x->lod, from, j, j + 1, &ranges[2 * k], &ranges[2 * k + 1]);
    rows += ranges[2 * k + 1] - ranges[2 * k];
  }
  size_t rb = row_bytes(x);
  st = alloc_rows(item, x, (int64_t)rows);
  if (st) {
    rill_lod_clear(&lod);
    return st;
  }
  char *dst = rill_tensor_ptr(item);
  for (size_t k = 0; k < active; k++) {
    size_t n = (size_t)(ranges[2 * k + 1] - ranges[2 * k]) * rb;
    memcpy(dst, (const char *)rill_tensor_ptr(x) + ranges[2 * k] * rb, n);
    dst += n;
  }
  item->lod = lod;
  return NULL;
}

rill_status *rill_cpu_lod_tensor_to_array(rill_kernel_ctx *ctx) {
  rank_table t;
  RILL_TRY(read_table(ctx, RILL_LOD_TENSOR_TO_ARRAY_IN_RANK_TABLE, &t));
  rill_tensor *x;
  RILL_TRY(rows_input(ctx, RILL_LOD_TENSOR_TO_ARRAY_IN_X, &x));
  const char *name = rill_kin_name(ctx, RILL_LOD_TENSOR_TO_ARRAY_IN_X, 0);
  uint64_t *start = rill_malloc((3 * t.n + 1) * sizeof *start);
  if (!start) return rill_oom();
  uint64_t *ranges = start + t.n + 1;
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
  size_t steps = t.n ? (size_t)rt_length(&t, 0) : 0;
  if (!st) st = rill_tensor_array_resize(a, steps);
  for (size_t s = 0; s < steps && !st; s++)
    st = split_step(x, &t, start, t.level + 1, s, ranges, &a->items[s]);
  rill_free(start);
  return st;
}

/* One piece of array_to_lod_tensor's output: `rows` rows of item `item` from row `from`
 * (item SIZE_MAX: zeros). */
typedef struct piece {
  size_t item;
  uint64_t from, rows;
} piece;

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
  size_t rb = row_bytes(like), nested = like->lod.nlevels;
  size_t *cap = rill_calloc(nested + 1, sizeof *cap);
  if (!cap) return rill_oom();
  rill_status *st = NULL;
  for (size_t s = 0; s < steps && !st; s++) {
    const rill_tensor *it = &a->items[s];
    size_t active = running(&t, s);
    if (!rill_tensor_is_set(it)) {
      if (nested)
        st = rill_kernel_error(ctx, "item %zu of X '%s' is unset while the items carry %zu "
                               "LoD levels: its rows are unknown", s, name, nested);
      continue;
    }
    if (it->dtype != like->dtype || row_bytes(it) != rb || it->lod.nlevels != nested) {
      st = rill_kernel_error(ctx, "item %zu of X '%s' differs from the first item in dtype, "
                             "row size or LoD levels (%zu, the first %zu)", s, name,
                             it->lod.nlevels, nested);
      continue;
    }
    if (nested) {
      char what[64];
      snprintf(what, sizeof what, "X (item %zu)", s);
      if ((st = check_lod(ctx, it, what, name))) continue;
    }
    size_t have = nested ? it->lod.levels[0].n - 1 : (size_t)rows_of(it);
    if (have < active)
      st = rill_kernel_error(ctx, "item %zu of X '%s' holds %zu %s; the %zu running "
                             "sequences need one each", s, name, have,
                             nested ? "sequences" : "rows", active);
    for (size_t j = 0; j < nested; j++) cap[j] += it->lod.levels[j].n;
  }
  if (st) {
    rill_free(cap);
    return st;
  }
  uint64_t *off = rill_malloc((2 * t.n + 1) * sizeof *off);
  if (!off) {
    rill_free(cap);
    return rill_oom();
  }
  uint64_t *rank_of = off + t.n + 1; /* sequence index -> rank position */
  for (size_t k = 0; k < t.n; k++) rank_of[rt_index(&t, k)] = k;
  off[0] = 0;
  for (size_t i = 0; i < t.n; i++) off[i + 1] = off[i] + (uint64_t)rt_length(&t, rank_of[i]);
  piece *pieces = rill_malloc((off[t.n] ? off[t.n] : 1) * sizeof *pieces);
  rill_lod sub = {0, NULL};
  st = pieces ? lod_begin(&sub, nested, cap) : rill_oom();
  rill_free(cap);
  uint64_t rows = 0;
  for (size_t i = 0, p = 0; i < t.n && !st; i++) {
    size_t k = rank_of[i];
    for (size_t s = 0; s < (size_t)rt_length(&t, k); s++, p++) {
      const rill_tensor *it = &a->items[s];
      pieces[p].item = s;
      if (!rill_tensor_is_set(it)) {
        pieces[p] = (piece){SIZE_MAX, 0, 1};
      } else {
        uint64_t b, e;
        append_subtree(&sub, &it->lod, 0, k, k + 1, &b, &e);
        pieces[p].from = b;
        pieces[p].rows = e - b;
      }
      rows += pieces[p].rows;
    }
  }
  rill_tensor *out = rill_kout(ctx, RILL_ARRAY_TO_LOD_TENSOR_OUT_OUT, 0);
  if (!st && !out)
    st = rill_kernel_error(ctx, "Out '%s' cannot hold a tensor", rill_kout_name(ctx, 0, 0));
  if (!st) st = alloc_rows(out, like, (int64_t)rows);
  if (!st) {
    char *dst = rill_tensor_ptr(out);
    for (size_t p = 0; p < off[t.n]; p++) {
      size_t n = (size_t)pieces[p].rows * rb;
      if (pieces[p].item == SIZE_MAX) memset(dst, 0, n);
      else memcpy(dst, (const char *)rill_tensor_ptr(&a->items[pieces[p].item]) +
                  pieces[p].from * rb, n);
      dst += n;
    }
    st = set_lod(&out->lod, t.coarse, off, t.n);
  }
  if (!st && nested) {
    /* the ranked level, then the items' levels below it */
    rill_lod_level *lv = rill_realloc(out->lod.levels, (out->lod.nlevels + nested) * sizeof *lv);
    if (!lv) {
      st = rill_oom();
    } else {
      out->lod.levels = lv;
      memcpy(lv + out->lod.nlevels, sub.levels, nested * sizeof *lv);
      out->lod.nlevels += nested;
      rill_free(sub.levels);
      sub = (rill_lod){0, NULL};
    }
  }
  rill_lod_clear(&sub);
  rill_free(pieces);
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
  size_t keep = running(&t, step);
  uint64_t height = keep;
  rill_lod lod = {0, NULL};
  if (x->lod.nlevels) RILL_TRY(check_lod(ctx, x, "X", name));
  if (x->lod.nlevels && x->lod.levels[0].n > keep) {
    /* the first `keep` top-level sequences with every level below them */
    size_t *cap = rill_malloc(x->lod.nlevels * sizeof *cap);
    if (!cap) return rill_oom();
    for (size_t j = 0; j < x->lod.nlevels; j++) cap[j] = x->lod.levels[j].n;
    rill_status *st = lod_begin(&lod, x->lod.nlevels, cap);
    rill_free(cap);
    if (st) return st;
    uint64_t b;
    append_subtree(&lod, &x->lod, 0, 0, keep, &b, &height);
  }
  if ((int64_t)height > rows_of(x)) {
    rill_lod_clear(&lod);
    return rill_kernel_error(ctx, "X '%s' has %lld rows; the %zu running sequences need %llu",
                             name, (long long)rows_of(x), keep, (unsigned long long)height);
  }
  rill_tensor *out = rill_kout(ctx, RILL_SHRINK_RNN_MEMORY_OUT_OUT, 0);
  rill_status *st = out ? alloc_rows(out, x, (int64_t)height)
                        : rill_kernel_error(ctx, "Out '%s' cannot hold a tensor",
                                            rill_kout_name(ctx, 0, 0));
  if (st) {
    rill_lod_clear(&lod);
    return st;
  }
  memcpy(rill_tensor_ptr(out), rill_tensor_ptr(x), (size_t)height * row_bytes(x));
  out->lod = lod;
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
 * index order (gradient). A block is one row without LoD, else a top-level sequence of X
 * with every level below it. */
static rill_status *reorder(rill_kernel_ctx *ctx, bool to_rank) {
  rank_table t;
  RILL_TRY(read_table(ctx, 1, &t));
  rill_tensor *x;
  RILL_TRY(rows_input(ctx, 0, &x));
  const char *name = rill_kin_name(ctx, 0, 0);
  size_t nlev = x->lod.nlevels;
  if (nlev) RILL_TRY(check_lod(ctx, x, "X", name));
  size_t nblocks = nlev ? x->lod.levels[0].n - 1 : (size_t)rows_of(x);
  if (nblocks != t.n)
    return rill_kernel_error(ctx, "X '%s' has %zu %s, the rank table %zu sequences", name,
                             nblocks, nlev ? "top-level sequences" : "rows", t.n);
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!out)
    return rill_kernel_error(ctx, "Out '%s' cannot hold a tensor", rill_kout_name(ctx, 0, 0));
  size_t *cap = rill_malloc((nlev + 1) * sizeof *cap);
  if (!cap) return rill_oom();
  for (size_t j = 0; j < nlev; j++) cap[j] = x->lod.levels[j].n;
  rill_lod lod;
  rill_status *st = lod_begin(&lod, nlev, cap);
  rill_free(cap);
  if (st) return st;
  size_t *from = rill_malloc((t.n + 1) * sizeof *from); /* output block j <- input block */
  st = from ? alloc_rows(out, x, rows_of(x)) : rill_oom();
  size_t rb = row_bytes(x);
  if (!st) {
    for (size_t k = 0; k < t.n; k++) {
      size_t i = (size_t)rt_index(&t, k);
      if (to_rank) from[k] = i;
      else from[i] = k;
    }
    char *dst = rill_tensor_ptr(out);
    for (size_t j = 0; j < t.n; j++) {
      uint64_t b, e;
      append_subtree(&lod, &x->lod, 0, from[j], from[j] + 1, &b, &e);
      memcpy(dst, (const char *)rill_tensor_ptr(x) + b * rb, (size_t)(e - b) * rb);
      dst += (size_t)(e - b) * rb;
    }
    out->lod = lod;
    lod = (rill_lod){0, NULL};
  }
  rill_lod_clear(&lod);
  rill_free(from);
  return st;
}

rill_status *rill_cpu_reorder_lod_tensor_by_rank(rill_kernel_ctx *ctx) {
  return reorder(ctx, true);
}

rill_status *rill_cpu_reorder_lod_tensor_by_rank_grad(rill_kernel_ctx *ctx) {
  return reorder(ctx, false);
}
