/* matrix_nms CPU kernels, Paddle's algorithm: per image and class (background_label
 * skipped), candidates with score > score_threshold sorted by score descending, the
 * first nms_top_k of them. With iou(i, j) the overlap of candidates i and j (j ranked
 * higher) and max_iou(j) candidate j's largest overlap with any higher-ranked candidate,
 * candidate i's score is multiplied by the smallest of 1 and, over every j ranked higher,
 *   linear:   (1 - iou(i, j)) / (1 - max_iou(j))
 *   gaussian: exp((max_iou(j)^2 - iou(i, j)^2) * gaussian_sigma)
 * and the candidate is kept when the result is > post_threshold. An image's kept
 * candidates (classes in ascending order) are then sorted by decayed score, the first
 * keep_top_k kept. Sorting is stable: equal scores keep their earlier order. */
#include <math.h>

#include "kernels/cpu/nms.h"

#define MATRIX_NMS_KERNEL(T, DT, NAME)                                                         \
  /* One class of one image: appends the kept candidates to kept (score = decayed). */         \
  static int64_t NAME##_class(const rill_attr_value *attrs, const T *s, const T *b, int64_t m, \
                              int32_t label, rill_nms_cand *cand, T *iou, T *max_iou,          \
                              rill_nms_cand *kept) {                                           \
    T score_t = (T)attrs[RILL_MATRIX_NMS_ATTR_SCORE_THRESHOLD].v.f;                            \
    T post_t = (T)attrs[RILL_MATRIX_NMS_ATTR_POST_THRESHOLD].v.f;                              \
    T sigma = (T)attrs[RILL_MATRIX_NMS_ATTR_GAUSSIAN_SIGMA].v.f;                               \
    int32_t top_k = attrs[RILL_MATRIX_NMS_ATTR_NMS_TOP_K].v.i;                                 \
    bool normalized = attrs[RILL_MATRIX_NMS_ATTR_NORMALIZED].v.b;                              \
    bool gaussian = attrs[RILL_MATRIX_NMS_ATTR_USE_GAUSSIAN].v.b;                              \
    int64_t n = 0, nk = 0;                                                                     \
    for (int64_t j = 0; j < m; j++)                                                            \
      if (s[j] > score_t) cand[n++] = (rill_nms_cand){(double)s[j], label, (int32_t)j, j};     \
    if (n == 0) return 0;                                                                      \
    qsort(cand, (size_t)n, sizeof *cand, rill_nms_cand_cmp);                                   \
    if (top_k > -1 && n > top_k) n = top_k;                                                    \
    for (int64_t i = 0; i < n; i++) {                                                          \
      T mx = 0;                                                                                \
      for (int64_t j = 0; j < i; j++) {                                                        \
        T v = rill_nms_iou(b + (int64_t)cand[i].idx * 4, b + (int64_t)cand[j].idx * 4,         \
                           normalized);                                                        \
        iou[i * (i - 1) / 2 + j] = v;                                                          \
        if (v > mx) mx = v;                                                                    \
      }                                                                                        \
      max_iou[i] = mx;                                                                         \
    }                                                                                          \
    for (int64_t i = 0; i < n; i++) {                                                          \
      T decay = 1;                                                                             \
      for (int64_t j = 0; j < i; j++) {                                                        \
        T v = iou[i * (i - 1) / 2 + j], mj = max_iou[j];                                       \
        T d = gaussian ? (T)exp((double)((mj * mj - v * v) * sigma))                          \
                       : (T)((1.0 - v) / (1.0 - mj));                                      \
        if (d < decay) decay = d;                                                              \
      }                                                                                        \
      T ds = decay * s[cand[i].idx];                                                           \
      if (ds <= post_t) continue;                                                              \
      kept[nk] = (rill_nms_cand){(double)ds, label, cand[i].idx, 0};                           \
      nk++;                                                                                    \
    }                                                                                          \
    return nk;                                                                                 \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *boxes = NULL, *scores = NULL, *out = NULL, *index = NULL;                     \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &boxes));                                            \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &scores));                                           \
    out = rill_kout(ctx, 0, 0);                                                                \
    if (!out)                                                                                  \
      return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",        \
                               rill_kout_name(ctx, 0, 0));                                     \
    index = rill_kout(ctx, 1, 0);                                                              \
    const rill_dims *bd = &boxes->dims, *sd = &scores->dims;                                   \
    if (bd->n != 3 || bd->d[2] != 4 || sd->n != 3 || sd->d[0] != bd->d[0] ||                   \
        sd->d[2] != bd->d[1])                                                                  \
      return rill_kernel_error(ctx, "inputs BBoxes (%s) and Scores (%s) must be [N, M, 4] and " \
                               "[N, C, M]", rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0)); \
    int64_t nimg = bd->d[0], m = bd->d[1], classes = sd->d[1];                                 \
    int32_t bg = ctx->attrs[RILL_MATRIX_NMS_ATTR_BACKGROUND_LABEL].v.i;                        \
    int32_t keep_top_k = ctx->attrs[RILL_MATRIX_NMS_ATTR_KEEP_TOP_K].v.i;                      \
    size_t mm = (size_t)(m > 0 ? m : 1), all = (size_t)(nimg * classes * m > 0 ? nimg * classes * m : 1); \
    rill_nms_cand *cand = rill_malloc(mm * sizeof *cand);                                      \
    T *iou = rill_malloc((mm * (mm - 1) / 2 + 1) * sizeof *iou);                               \
    T *max_iou = rill_malloc(mm * sizeof *max_iou);                                            \
    rill_nms_cand *kept = rill_malloc(all * sizeof *kept);                                     \
    uint64_t *starts = rill_malloc((size_t)(nimg + 1) * sizeof *starts);                       \
    rill_status *st = NULL;                                                                    \
    if (!cand || !iou || !max_iou || !kept || !starts) {                                       \
      st = rill_oom();                                                                         \
      goto done;                                                                               \
    }                                                                                          \
    const T *sp = rill_tensor_ptr(scores), *bp = rill_tensor_ptr(boxes);                       \
    starts[0] = 0;                                                                             \
    for (int64_t i = 0; i < nimg; i++) {                                                       \
      rill_nms_cand *ki = kept + starts[i];                                                    \
      int64_t n = 0;                                                                           \
      for (int64_t c = 0; c < classes; c++) {                                                  \
        if (c == bg) continue;                                                                 \
        n += NAME##_class(ctx->attrs, sp + (i * classes + c) * m, bp + i * m * 4, m,           \
                          (int32_t)c, cand, iou, max_iou, ki + n);                             \
      }                                                                                        \
      for (int64_t k = 0; k < n; k++) ki[k].order = k;                                         \
      qsort(ki, (size_t)n, sizeof *ki, rill_nms_cand_cmp);                                     \
      if (keep_top_k > -1 && n > keep_top_k) n = keep_top_k;                                   \
      starts[i + 1] = starts[i] + (uint64_t)n;                                                 \
    }                                                                                          \
    int64_t total = (int64_t)starts[nimg];                                                     \
    rill_dims od = {.n = 2, .d = {total, 6}};                                                  \
    if ((st = rill_tensor_alloc(out, DT, &od))) goto done;                                     \
    T *o = rill_tensor_ptr(out);                                                               \
    for (int64_t i = 0, r = 0; i < nimg; i++)                                                  \
      for (; r < (int64_t)starts[i + 1]; r++) {                                                \
        o[r * 6] = (T)kept[r].label;                                                           \
        o[r * 6 + 1] = (T)kept[r].score;                                                       \
        memcpy(o + r * 6 + 2, bp + (i * m + kept[r].idx) * 4, 4 * sizeof(T));                 \
      }                                                                                        \
    size_t nstarts = (size_t)nimg + 1;                                                         \
    if ((st = rill_tensor_set_lod(out, 1, (const uint64_t *const[]){starts}, &nstarts)))       \
      goto done;                                                                               \
    if (index) {                                                                               \
      rill_dims id = {.n = 2, .d = {total, 1}};                                                \
      if ((st = rill_tensor_alloc(index, RILL_DTYPE_INT32, &id))) goto done;                   \
      int32_t *ip = rill_tensor_ptr(index);                                                    \
      for (int64_t i = 0, r = 0; i < nimg; i++)                                                \
        for (; r < (int64_t)starts[i + 1]; r++) ip[r] = (int32_t)(i * m + kept[r].idx);        \
      if ((st = rill_tensor_set_lod(index, 1, (const uint64_t *const[]){starts}, &nstarts)))   \
        goto done;                                                                             \
    }                                                                                          \
  done:                                                                                        \
    rill_free(cand);                                                                           \
    rill_free(iou);                                                                            \
    rill_free(max_iou);                                                                        \
    rill_free(kept);                                                                           \
    rill_free(starts);                                                                         \
    return st;                                                                                 \
  }

MATRIX_NMS_KERNEL(float, RILL_DTYPE_FP32, rill_cpu_matrix_nms_fp32)
MATRIX_NMS_KERNEL(double, RILL_DTYPE_FP64, rill_cpu_matrix_nms_fp64)
