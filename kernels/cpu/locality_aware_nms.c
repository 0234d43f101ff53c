/* locality_aware_nms CPU kernels, Paddle's algorithm step by step. Per image, on a copy
 * of its boxes and scores, for each class (background_label skipped) in ascending order:
 *  1. walk the boxes in input order keeping a current survivor; a box overlapping it by
 *     more than nms_threshold is merged into it (each coordinate averaged with the two
 *     scores as weights, then the scores added), otherwise it becomes the survivor;
 *  2. survivors with merged score > score_threshold, sorted by score descending (stable),
 *     the first nms_top_k, go through greedy NMS (nms_eta lowering the threshold after
 *     each kept box while above 0.5);
 *  3. when more than keep_top_k survive in the image, the best keep_top_k by score (cast
 *     to float, stable) stay, regrouped by class.
 * Merged boxes stay merged for the classes after (the boxes are shared by the classes),
 * and the output holds the merged boxes and scores, class by class. */
#include "kernels/cpu/nms.h"

#define LANMS_KERNEL(T, DT, NAME)                                                              \
  /* Steps 1 and 2 for one class: s and b are the image's copies, modified; the kept box     \
   * indices go to sel, their count is returned. */                                           \
  static int64_t NAME##_class(const rill_attr_value *attrs, T *s, T *b, int64_t m,             \
                              bool *survivor, rill_nms_cand *cand, int32_t *sel) {             \
    T score_t = (T)attrs[RILL_LOCALITY_AWARE_NMS_ATTR_SCORE_THRESHOLD].v.f;                    \
    T nms_t = (T)attrs[RILL_LOCALITY_AWARE_NMS_ATTR_NMS_THRESHOLD].v.f;                        \
    T eta = (T)attrs[RILL_LOCALITY_AWARE_NMS_ATTR_NMS_ETA].v.f;                                \
    int32_t top_k = attrs[RILL_LOCALITY_AWARE_NMS_ATTR_NMS_TOP_K].v.i;                         \
    bool normalized = attrs[RILL_LOCALITY_AWARE_NMS_ATTR_NORMALIZED].v.b;                      \
    int64_t cur = -1;                                                                          \
    for (int64_t i = 0; i < m; i++) {                                                          \
      survivor[i] = false;                                                                     \
      if (cur < 0) {                                                                           \
        cur = i;                                                                               \
        continue;                                                                              \
      }                                                                                        \
      T *kb = b + cur * 4;                                                                     \
      const T *ib = b + i * 4;                                                                 \
      if (rill_nms_iou(ib, kb, normalized) > nms_t) {                                          \
        for (int k = 0; k < 4; k++) kb[k] = (ib[k] * s[i] + kb[k] * s[cur]) / (s[i] + s[cur]); \
        s[cur] += s[i];                                                                        \
      } else {                                                                                 \
        survivor[cur] = true;                                                                  \
        cur = i;                                                                               \
      }                                                                                        \
    }                                                                                          \
    if (cur >= 0) survivor[cur] = true;                                                        \
    int64_t n = 0;                                                                             \
    for (int64_t i = 0; i < m; i++)                                                            \
      if (survivor[i] && s[i] > score_t)                                                       \
        cand[n++] = (rill_nms_cand){(double)s[i], 0, (int32_t)i, i};                           \
    qsort(cand, (size_t)n, sizeof *cand, rill_nms_cand_cmp);                                   \
    if (top_k > -1 && top_k < n) n = top_k;                                                    \
    for (int64_t k = 0; k < n; k++) sel[k] = cand[k].idx;                                      \
    return rill_nms_greedy(b, 4, sel, n, nms_t, eta, normalized, sel);                         \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *boxes = NULL, *scores = NULL, *out = NULL;                                    \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &boxes));                                            \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &scores));                                           \
    out = rill_kout(ctx, 0, 0);                                                                \
    if (!out)                                                                                  \
      return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",        \
                               rill_kout_name(ctx, 0, 0));                                     \
    const rill_dims *bd = &boxes->dims, *sd = &scores->dims;                                   \
    if (bd->n != 3 || bd->d[2] != 4 || sd->n != 3 || sd->d[0] != bd->d[0] ||                   \
        sd->d[2] != bd->d[1])                                                                  \
      return rill_kernel_error(ctx, "inputs BBoxes (%s) and Scores (%s) must be [N, M, 4] and " \
                               "[N, C, M]", rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0)); \
    int64_t nimg = bd->d[0], m = bd->d[1], classes = sd->d[1];                                 \
    int32_t bg = ctx->attrs[RILL_LOCALITY_AWARE_NMS_ATTR_BACKGROUND_LABEL].v.i;                \
    int32_t keep_top_k = ctx->attrs[RILL_LOCALITY_AWARE_NMS_ATTR_KEEP_TOP_K].v.i;              \
    size_t mm = (size_t)(m > 0 ? m : 1), cm = mm * (size_t)(classes > 0 ? classes : 1);        \
    size_t all = cm * (size_t)(nimg > 0 ? nimg : 1);                                           \
    T *s = rill_malloc(all * sizeof *s), *b = rill_malloc(mm * 4 * (size_t)(nimg > 0 ? nimg : 1) * sizeof *b); \
    bool *survivor = rill_malloc(mm * sizeof *survivor);                                       \
    rill_nms_cand *cand = rill_malloc(cm * sizeof *cand);                                      \
    rill_nms_cand *kept = rill_malloc(all * sizeof *kept);                                     \
    int32_t *sel = rill_malloc(cm * sizeof *sel);                                              \
    int64_t *nsel = rill_malloc((size_t)(classes > 0 ? classes : 1) * sizeof *nsel);          \
    uint64_t *starts = rill_malloc((size_t)(nimg + 2) * sizeof *starts);                       \
    rill_status *st = NULL;                                                                    \
    if (!s || !b || !survivor || !cand || !kept || !sel || !nsel || !starts) {                 \
      st = rill_oom();                                                                         \
      goto done;                                                                               \
    }                                                                                          \
    memcpy(s, rill_tensor_ptr(scores), (size_t)rill_tensor_numel(scores) * sizeof *s);         \
    memcpy(b, rill_tensor_ptr(boxes), (size_t)rill_tensor_numel(boxes) * sizeof *b);           \
    starts[0] = 0;                                                                             \
    for (int64_t i = 0; i < nimg; i++) {                                                       \
      T *si = s + i * classes * m, *bi = b + i * m * 4;                                        \
      int64_t total = 0;                                                                       \
      for (int64_t c = 0; c < classes; c++) {                                                  \
        nsel[c] = c == bg ? 0                                                                  \
                          : NAME##_class(ctx->attrs, si + c * m, bi, m, survivor, cand,        \
                                         sel + c * m);                                         \
        total += nsel[c];                                                                      \
      }                                                                                        \
      if (keep_top_k > -1 && total > keep_top_k) {                                             \
        int64_t n = 0;                                                                         \
        for (int64_t c = 0; c < classes; c++)                                                  \
          for (int64_t q = 0; q < nsel[c]; q++, n++) {                                         \
            int32_t j = sel[c * m + q];                                                        \
            cand[n] = (rill_nms_cand){(double)(float)si[c * m + j], (int32_t)c, j, n};         \
          }                                                                                    \
        qsort(cand, (size_t)n, sizeof *cand, rill_nms_cand_cmp);                               \
        for (int64_t c = 0; c < classes; c++) nsel[c] = 0;                                     \
        for (int64_t k = 0; k < keep_top_k; k++)                                               \
          sel[cand[k].label * m + nsel[cand[k].label]++] = cand[k].idx;                        \
        total = keep_top_k;                                                                    \
      }                                                                                        \
      rill_nms_cand *ki = kept + starts[i];                                                    \
      int64_t r = 0;                                                                           \
      for (int64_t c = 0; c < classes; c++)                                                    \
        for (int64_t q = 0; q < nsel[c]; q++)                                                  \
          ki[r++] = (rill_nms_cand){(double)si[c * m + sel[c * m + q]], (int32_t)c,            \
                                   sel[c * m + q], i};                                         \
      starts[i + 1] = starts[i] + (uint64_t)total;                                             \
    }                                                                                          \
    int64_t total = (int64_t)starts[nimg];                                                     \
    size_t nstarts = (size_t)nimg + 1;                                                         \
    if (total == 0) { /* Paddle's marker for "nothing detected" */                             \
      if ((st = rill_nms_empty_marker(out, DT, starts, &nstarts))) goto done;                  \
    } else {                                                                                   \
      rill_dims od = {.n = 2, .d = {total, 6}};                                                \
      if ((st = rill_tensor_alloc(out, DT, &od))) goto done;                                   \
      T *o = rill_tensor_ptr(out);                                                             \
      for (int64_t r = 0; r < total; r++) {                                                    \
        const rill_nms_cand *e = &kept[r];                                                     \
        o[r * 6] = (T)e->label;                                                                \
        o[r * 6 + 1] = (T)e->score;                                                            \
        memcpy(o + r * 6 + 2, b + (e->order * m + e->idx) * 4, 4 * sizeof(T));                 \
      }                                                                                        \
    }                                                                                          \
    st = rill_tensor_set_lod(out, 1, (const uint64_t *const[]){starts}, &nstarts);             \
  done:                                                                                        \
    rill_free(s);                                                                              \
    rill_free(b);                                                                              \
    rill_free(survivor);                                                                       \
    rill_free(cand);                                                                           \
    rill_free(kept);                                                                           \
    rill_free(sel);                                                                            \
    rill_free(nsel);                                                                           \
    rill_free(starts);                                                                         \
    return st;                                                                                 \
  }

LANMS_KERNEL(float, RILL_DTYPE_FP32, rill_cpu_locality_aware_nms_fp32)
LANMS_KERNEL(double, RILL_DTYPE_FP64, rill_cpu_locality_aware_nms_fp64)
