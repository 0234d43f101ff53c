/* bipartite_match CPU kernels: Paddle's greedy matching. Each round takes the largest
 * distance between a free column and a free row (columns scanned in order, rows in
 * order, the first of equal distances kept) and matches them, until none is left;
 * distances under 1e-6 never match. With 130 rows or more, as Paddle, all pairs are
 * sorted by distance once and taken in that order (equal distances by row, then
 * column), skipping only distances <= 0. per_prediction then gives each unmatched column
 * its largest distance >= dist_threshold (and >= 1e-6). */
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

typedef struct bm_pair {
  double d;
  int64_t at; /* row * cols + column: the tie order */
} bm_pair;

static int bm_pair_cmp(const void *pa, const void *pb) {
  const bm_pair *a = pa, *b = pb;
  if (a->d > b->d) return -1;
  if (a->d < b->d) return 1;
  return (a->at > b->at) - (a->at < b->at);
}

#define BIPARTITE_MATCH(T, DT, NAME)                                                           \
  /* Paddle's variant for 130 rows or more: every positive pair in descending order. */      \
  static rill_status *NAME##_sorted(const T *d, int64_t rows, int64_t cols,                    \
                                    unsigned char *row_used, int32_t *idx, T *dist) {          \
    bm_pair *pairs = rill_malloc((size_t)(rows * cols) * sizeof *pairs);                       \
    if (!pairs) return rill_oom();                                                             \
    int64_t np = 0;                                                                            \
    for (int64_t k = 0; k < rows * cols; k++)                                                  \
      if (d[k] > 0) pairs[np++] = (bm_pair){(double)d[k], k};                                  \
    qsort(pairs, (size_t)np, sizeof *pairs, bm_pair_cmp);                                      \
    for (int64_t k = 0, matched = 0; k < np && matched < rows; k++) {                          \
      int64_t i = pairs[k].at / cols, j = pairs[k].at % cols;                                  \
      if (idx[j] != -1 || row_used[i]) continue;                                               \
      idx[j] = (int32_t)i;                                                                     \
      dist[j] = d[pairs[k].at];                                                                \
      row_used[i] = 1;                                                                         \
      matched++;                                                                               \
    }                                                                                          \
    rill_free(pairs);                                                                          \
    return NULL;                                                                               \
  }                                                                                            \
  static rill_status *NAME##_one(const T *d, int64_t rows, int64_t cols, bool per_pred,        \
                                 T thresh, unsigned char *row_used, int32_t *idx, T *dist) {   \
    const T eps = (T)1e-6;                                                                     \
    memset(row_used, 0, (size_t)rows);                                                         \
    if (rows >= 130) RILL_TRY(NAME##_sorted(d, rows, cols, row_used, idx, dist));              \
    for (int64_t left = rows >= 130 ? 0 : rows; left > 0; left--) {                            \
      int64_t bj = -1, bi = -1;                                                                \
      T best = -1;                                                                             \
      for (int64_t j = 0; j < cols; j++) {                                                     \
        if (idx[j] != -1) continue;                                                            \
        for (int64_t i = 0; i < rows; i++) {                                                   \
          if (row_used[i]) continue;                                                           \
          T v = d[i * cols + j];                                                               \
          if (v < eps) continue;                                                               \
          if (v > best) {                                                                      \
            best = v;                                                                          \
            bi = i;                                                                            \
            bj = j;                                                                            \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
      if (bj < 0) break;                                                                       \
      idx[bj] = (int32_t)bi;                                                                   \
      dist[bj] = best;                                                                         \
      row_used[bi] = 1;                                                                        \
    }                                                                                          \
    if (!per_pred) return NULL;                                                                \
    for (int64_t j = 0; j < cols; j++) {                                                       \
      if (idx[j] != -1) continue;                                                              \
      int64_t bi = -1;                                                                         \
      T best = -1;                                                                             \
      for (int64_t i = 0; i < rows; i++) {                                                     \
        T v = d[i * cols + j];                                                                 \
        if (v < eps) continue;                                                                 \
        if (v >= thresh && v > best) {                                                         \
          best = v;                                                                            \
          bi = i;                                                                              \
        }                                                                                      \
      }                                                                                        \
      if (bi >= 0) {                                                                           \
        idx[j] = (int32_t)bi;                                                                  \
        dist[j] = best;                                                                        \
      }                                                                                        \
    }                                                                                          \
    return NULL;                                                                               \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *d = NULL, *io = rill_kout(ctx, 0, 0), *dout = rill_kout(ctx, 1, 0);           \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &d));                                                \
    if (!io || !dout)                                                                          \
      return rill_kernel_error(ctx, "outputs ColToRowMatchIndices (%s) and ColToRowMatchDist " \
                               "(%s) must be dense tensors", rill_kout_name(ctx, 0, 0),        \
                               rill_kout_name(ctx, 1, 0));                                     \
    if (d->dims.n != 2)                                                                        \
      return rill_kernel_error(ctx, "input DistMat (%s) must be 2-D", rill_kin_name(ctx, 0, 0)); \
    if (d->lod.nlevels > 1)                                                                    \
      return rill_kernel_error(ctx, "input DistMat (%s) has %zu LoD levels, at most 1 is "     \
                               "supported", rill_kin_name(ctx, 0, 0), d->lod.nlevels);         \
    int64_t rows = d->dims.d[0], cols = d->dims.d[1];                                          \
    const uint64_t *offs = NULL;                                                               \
    uint64_t whole[2] = {0, (uint64_t)rows};                                                   \
    int64_t n = 1;                                                                             \
    if (d->lod.nlevels) {                                                                      \
      offs = d->lod.levels[0].offsets;                                                         \
      n = (int64_t)d->lod.levels[0].n - 1;                                                     \
      if (n < 0 || offs[n] != (uint64_t)rows)                                                  \
        return rill_kernel_error(ctx, "input DistMat (%s) has a LoD that does not cover its "  \
                                 "%lld rows", rill_kin_name(ctx, 0, 0), (long long)rows);      \
    } else {                                                                                   \
      offs = whole;                                                                            \
    }                                                                                          \
    rill_dims od = {.n = 2, .d = {n, cols}};                                                   \
    RILL_TRY(rill_tensor_alloc(io, RILL_DTYPE_INT32, &od));                                    \
    RILL_TRY(rill_tensor_alloc(dout, DT, &od));                                                \
    rill_lod_clear(&io->lod);                                                                  \
    rill_lod_clear(&dout->lod);                                                                \
    int32_t *ip = rill_tensor_ptr(io);                                                         \
    T *dp = rill_tensor_ptr(dout);                                                             \
    for (int64_t k = 0; k < n * cols; k++) {                                                   \
      ip[k] = -1;                                                                              \
      dp[k] = 0;                                                                               \
    }                                                                                          \
    unsigned char *used = rill_malloc(rows ? (size_t)rows : 1);                                \
    if (!used) return rill_oom();                                                              \
    const char *type = ctx->attrs[RILL_BIPARTITE_MATCH_ATTR_MATCH_TYPE].v.s;                   \
    bool per_pred = type && strcmp(type, "per_prediction") == 0;                               \
    T thresh = (T)ctx->attrs[RILL_BIPARTITE_MATCH_ATTR_DIST_THRESHOLD].v.f;                    \
    const T *dd = rill_tensor_ptr(d);                                                          \
    for (int64_t i = 0; i < n; i++) {                                                          \
      int64_t lo = (int64_t)offs[i], hi = (int64_t)offs[i + 1];                                \
      rill_status *st = hi > lo ? NAME##_one(dd + lo * cols, hi - lo, cols, per_pred, thresh,  \
                                             used, ip + i * cols, dp + i * cols)               \
                                : NULL;                                                        \
      if (st) {                                                                                \
        rill_free(used);                                                                       \
        return st;                                                                             \
      }                                                                                        \
    }                                                                                          \
    rill_free(used);                                                                           \
    return NULL;                                                                               \
  }

BIPARTITE_MATCH(float, RILL_DTYPE_FP32, rill_cpu_bipartite_match_fp32)
BIPARTITE_MATCH(double, RILL_DTYPE_FP64, rill_cpu_bipartite_match_fp64)
