/* mine_hard_examples CPU kernels: per image, the candidates sorted by loss descending
 * (equal losses in prior order), the first k selected, then written in prior order. */
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

typedef struct mine_cand {
  double loss;
  int32_t prior;
} mine_cand;

static int mine_cand_cmp(const void *pa, const void *pb) {
  const mine_cand *a = pa, *b = pb;
  if (a->loss > b->loss) return -1;
  if (a->loss < b->loss) return 1;
  return (a->prior > b->prior) - (a->prior < b->prior);
}

#define MINE_HARD_EXAMPLES(T, DT, NAME)                                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *cls = NULL, *loc = rill_kin(ctx, 1, 0), *m = NULL, *d = NULL;                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &cls));                                              \
    if (loc) RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &loc));                                     \
    RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_INT32, &m));                                  \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &d));                                                \
    rill_tensor *neg = rill_kout(ctx, 0, 0), *um = rill_kout(ctx, 1, 0);                       \
    if (!neg || !um)                                                                           \
      return rill_kernel_error(ctx, "outputs NegIndices (%s) and UpdatedMatchIndices (%s) "    \
                               "must be dense tensors", rill_kout_name(ctx, 0, 0),             \
                               rill_kout_name(ctx, 1, 0));                                     \
    if (m->dims.n != 2 || !rill_dims_equal(&cls->dims, &m->dims) ||                            \
        !rill_dims_equal(&d->dims, &m->dims) || (loc && !rill_dims_equal(&loc->dims, &m->dims))) \
      return rill_kernel_error(ctx, "inputs ClsLoss (%s), LocLoss, MatchIndices (%s) and "     \
                               "MatchDist (%s) must all be [N, Np]", rill_kin_name(ctx, 0, 0), \
                               rill_kin_name(ctx, 2, 0), rill_kin_name(ctx, 3, 0));            \
    int64_t n = m->dims.d[0], np = m->dims.d[1], total = n * np;                               \
    const char *type = ctx->attrs[RILL_MINE_HARD_EXAMPLES_ATTR_MINING_TYPE].v.s;               \
    bool maxneg = type && strcmp(type, "max_negative") == 0;                                   \
    float ratio = ctx->attrs[RILL_MINE_HARD_EXAMPLES_ATTR_NEG_POS_RATIO].v.f;                  \
    T thr = (T)ctx->attrs[RILL_MINE_HARD_EXAMPLES_ATTR_NEG_DIST_THRESHOLD].v.f;                \
    int64_t sample = ctx->attrs[RILL_MINE_HARD_EXAMPLES_ATTR_SAMPLE_SIZE].v.i;                 \
    RILL_TRY(rill_tensor_alloc(um, RILL_DTYPE_INT32, &m->dims));                               \
    rill_lod_clear(&um->lod);                                                                  \
    int32_t *up = rill_tensor_ptr(um);                                                         \
    const int32_t *mp = rill_tensor_ptr(m);                                                    \
    if (total > 0) memcpy(up, mp, (size_t)total * sizeof *up);                                 \
    const T *cp = rill_tensor_ptr(cls), *lp = loc ? (const T *)rill_tensor_ptr(loc) : NULL;    \
    const T *dp = rill_tensor_ptr(d);                                                          \
    mine_cand *cand = rill_malloc((size_t)(np ? np : 1) * sizeof *cand);                       \
    unsigned char *sel = rill_malloc((size_t)(total > 0 ? total : 1));                         \
    uint64_t *starts = rill_malloc((size_t)(n + 1) * sizeof *starts);                          \
    rill_status *st = NULL;                                                                    \
    if (!cand || !sel || !starts) {                                                            \
      st = rill_oom();                                                                         \
      goto done;                                                                               \
    }                                                                                          \
    memset(sel, 0, (size_t)(total > 0 ? total : 1));                                           \
    starts[0] = 0;                                                                             \
    for (int64_t i = 0; i < n; i++) {                                                          \
      const int32_t *mi = mp + i * np;                                                         \
      int64_t nc = 0, pos = 0;                                                                 \
      for (int64_t j = 0; j < np; j++) {                                                       \
        if (mi[j] != -1) pos++;                                                                \
        if (maxneg ? mi[j] == -1 && dp[i * np + j] < thr : true)                               \
          cand[nc++] = (mine_cand){(double)(lp && !maxneg ? cp[i * np + j] + lp[i * np + j]    \
                                                          : cp[i * np + j]),                   \
                                   (int32_t)j};                                                \
      }                                                                                        \
      int64_t k = maxneg ? (int64_t)((float)pos * ratio) : sample;                             \
      if (k > nc) k = nc;                                                                      \
      qsort(cand, (size_t)nc, sizeof *cand, mine_cand_cmp);                                    \
      unsigned char *si = sel + i * np;                                                        \
      for (int64_t q = 0; q < k; q++) si[cand[q].prior] = 1;                                   \
      int64_t count = 0;                                                                       \
      for (int64_t j = 0; j < np; j++) {                                                       \
        if (!maxneg && mi[j] > -1) {                                                           \
          if (!si[j]) up[i * np + j] = -1;                                                     \
          si[j] = 0;                                                                           \
        }                                                                                      \
        count += si[j];                                                                        \
      }                                                                                        \
      starts[i + 1] = starts[i] + (uint64_t)count;                                             \
    }                                                                                          \
    rill_dims nd = {.n = 2, .d = {(int64_t)starts[n], 1}};                                     \
    if ((st = rill_tensor_alloc(neg, RILL_DTYPE_INT32, &nd))) goto done;                       \
    int32_t *out = rill_tensor_ptr(neg);                                                       \
    for (int64_t i = 0; i < total; i++)                                                        \
      if (sel[i]) *out++ = (int32_t)(i % np);                                                  \
    size_t nl = (size_t)n + 1;                                                                 \
    rill_lod_clear(&neg->lod);                                                                 \
    st = rill_tensor_set_lod(neg, 1, (const uint64_t *const[]){starts}, &nl);                  \
  done:                                                                                        \
    rill_free(cand);                                                                           \
    rill_free(sel);                                                                            \
    rill_free(starts);                                                                         \
    return st;                                                                                 \
  }

MINE_HARD_EXAMPLES(float, RILL_DTYPE_FP32, rill_cpu_mine_hard_examples_fp32)
MINE_HARD_EXAMPLES(double, RILL_DTYPE_FP64, rill_cpu_mine_hard_examples_fp64)
