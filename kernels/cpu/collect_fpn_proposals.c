/* collect_fpn_proposals CPU kernels, Paddle's order: all levels' rows sorted by score,
 * highest first, with equal scores in reverse input order (Paddle's stable sort with a
 * >= comparison), the first post_nms_topN kept, then stably regrouped by image. A row's
 * image comes from its scores' LoD, advancing by at most one image per row as Paddle's
 * does; the output LoD starts a new image wherever the image changes. */
#include "kernels/cpu/nms.h"

typedef struct fpn_row {
  double score;
  int32_t image, level;
  int64_t index, order;
} fpn_row;

static int fpn_by_score(const void *pa, const void *pb) {
  const fpn_row *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return a->order > b->order ? -1 : a->order < b->order; /* later first */
}

static int fpn_by_image(const void *pa, const void *pb) {
  const fpn_row *a = pa, *b = pb;
  if (a->image != b->image) return a->image < b->image ? -1 : 1;
  return a->order < b->order ? -1 : a->order > b->order;
}

#define CFP_KERNEL(T, DT, NAME)                                                                \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    size_t nl = ctx->nin[0];                                                                   \
    rill_tensor *out = rill_kout(ctx, 0, 0);                                                   \
    if (!out || nl == 0 || ctx->nin[1] != nl)                                                  \
      return rill_kernel_error(ctx, "needs as many MultiLevelRois as MultiLevelScores (has "   \
                               "%zu and %zu) and output FpnRois", nl, ctx->nin[1]);            \
    int64_t total = 0;                                                                         \
    for (size_t l = 0; l < nl; l++) {                                                          \
      rill_tensor *r = NULL, *s = NULL;                                                        \
      RILL_TRY(rill_kin_need(ctx, 0, l, DT, &r));                                              \
      RILL_TRY(rill_kin_need(ctx, 1, l, DT, &s));                                              \
      if (r->dims.n != 2 || r->dims.d[1] != 4 || rill_tensor_numel(s) != r->dims.d[0])         \
        return rill_kernel_error(ctx, "inputs MultiLevelRois (%s) and MultiLevelScores (%s) "  \
                                 "must be [R, 4] boxes and their R scores",                    \
                                 rill_kin_name(ctx, 0, l), rill_kin_name(ctx, 1, l));          \
      if (s->lod.nlevels < 1)                                                                  \
        return rill_kernel_error(ctx, "input MultiLevelScores (%s) has no LoD: the image of "  \
                                 "each score is unknown", rill_kin_name(ctx, 1, l));           \
      const rill_lod_level *lv = &s->lod.levels[s->lod.nlevels - 1];                           \
      if (lv->n < 1 || lv->offsets[lv->n - 1] != (uint64_t)r->dims.d[0])                       \
        return rill_kernel_error(ctx, "input MultiLevelScores (%s): its LoD does not end at "  \
                                 "the %lld rows of MultiLevelRois (%s)",                       \
                                 rill_kin_name(ctx, 1, l), (long long)r->dims.d[0],            \
                                 rill_kin_name(ctx, 0, l));                                    \
      total += r->dims.d[0];                                                                   \
    }                                                                                          \
    fpn_row *rows = rill_malloc((size_t)(total > 0 ? total : 1) * sizeof *rows);               \
    if (!rows) return rill_oom();                                                              \
    int64_t at = 0;                                                                            \
    for (size_t l = 0; l < nl; l++) {                                                          \
      const rill_tensor *s = rill_kin(ctx, 1, l);                                              \
      const rill_lod_level *lv = &s->lod.levels[s->lod.nlevels - 1];                           \
      const T *sp = rill_tensor_ptr(s);                                                        \
      int32_t image = 0;                                                                       \
      for (int64_t j = 0; j < s->dims.d[0]; j++, at++) {                                       \
        if ((size_t)image + 1 < lv->n && (uint64_t)j >= lv->offsets[image + 1]) image++;       \
        rows[at] = (fpn_row){(double)sp[j], image, (int32_t)l, j, at};                         \
      }                                                                                        \
    }                                                                                          \
    qsort(rows, (size_t)total, sizeof *rows, fpn_by_score);                                    \
    int64_t k = ctx->attrs[RILL_COLLECT_FPN_PROPOSALS_ATTR_POST_NMS_TOP_N].v.i;                \
    if (k < 0) k = 0;                                                                          \
    if (k > total) k = total;                                                                  \
    for (int64_t i = 0; i < k; i++) rows[i].order = i;                                         \
    qsort(rows, (size_t)k, sizeof *rows, fpn_by_image);                                        \
    rill_dims od = {.n = 2, .d = {k, 4}};                                                      \
    uint64_t *offs = rill_malloc((size_t)(k + 2) * sizeof *offs);                              \
    rill_status *st = offs ? rill_tensor_alloc(out, DT, &od) : rill_oom();                     \
    if (!st) {                                                                                 \
      T *o = rill_tensor_ptr(out);                                                             \
      size_t no = 1;                                                                           \
      offs[0] = 0;                                                                             \
      int32_t cur = 0;                                                                         \
      for (int64_t i = 0; i < k; i++) {                                                        \
        const T *src = (const T *)rill_tensor_ptr(rill_kin(ctx, 0, (size_t)rows[i].level)) +   \
                       rows[i].index * 4;                                                      \
        memcpy(o + i * 4, src, 4 * sizeof(T));                                                 \
        if (rows[i].image != cur) {                                                            \
          cur = rows[i].image;                                                                 \
          offs[no++] = (uint64_t)i;                                                            \
        }                                                                                      \
      }                                                                                        \
      offs[no++] = (uint64_t)k;                                                                \
      st = rill_tensor_set_lod(out, 1, (const uint64_t *const[]){offs}, &no);                  \
    }                                                                                          \
    rill_free(offs);                                                                           \
    rill_free(rows);                                                                           \
    return st;                                                                                 \
  }

CFP_KERNEL(float, RILL_DTYPE_FP32, rill_cpu_collect_fpn_proposals_fp32)
CFP_KERNEL(double, RILL_DTYPE_FP64, rill_cpu_collect_fpn_proposals_fp64)
