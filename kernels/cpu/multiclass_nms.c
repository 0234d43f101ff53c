/* multiclass_nms{,2,3} CPU kernels, Paddle's algorithm step by step:
 *  1. per image and class (background_label skipped): candidates with score >
 *     score_threshold, sorted by score descending (ties keep box order), the first
 *     nms_top_k of them; greedy NMS keeps a candidate when its IoU with every box kept so
 *     far is <= the threshold, which nms_eta < 1 lowers after each kept box while it is
 *     above 0.5. With [M, C] scores the kept indices of a class are put in box order.
 *  2. when more than keep_top_k boxes survive in an image, all are sorted by score
 *     (stable, classes in ascending order) and the first keep_top_k kept; they are
 *     regrouped by class in that order (box order again with [M, C] scores).
 *  3. output rows image by image, class by class.
 * Sorting is stable everywhere, so equal scores come out in a fixed order. */
#include "kernels/cpu/nms.h"

/* What one image's NMS needs: scores of class c for local box j at
 * s[c * cstride + j * jstride], its box at b + (c * cbox + j) * 4 ... as strides. */
typedef struct nms_view {
  int64_t m, classes;
  int64_t s_cstride, s_jstride; /* score(c, j) = s[c * s_cstride + j * s_jstride] */
  int64_t b_cstride, b_jstride; /* box(c, j) = b + c * b_cstride + j * b_jstride */
  bool index_order;             /* [M, C] scores: a class's kept boxes in box order */
} nms_view;

#define NMS_KERNEL(T, DT, NAME)                                                                \
  /* NMS of one image: kept (label, idx) pairs appended to *out in output order. */            \
  static int64_t NAME##_image(const rill_attr_value *attrs, const T *s, const T *b,            \
                              const nms_view *v, rill_nms_cand *cand, int32_t *sel,                 \
                              int64_t *nsel, rill_nms_cand *out) {                                  \
    int32_t bg = attrs[RILL_MULTICLASS_NMS_ATTR_BACKGROUND_LABEL].v.i, top_k = attrs[RILL_MULTICLASS_NMS_ATTR_NMS_TOP_K].v.i;                              \
    int32_t keep_top_k = attrs[RILL_MULTICLASS_NMS_ATTR_KEEP_TOP_K].v.i;                       \
    T score_t = (T)attrs[RILL_MULTICLASS_NMS_ATTR_SCORE_THRESHOLD].v.f, nms_t = (T)attrs[RILL_MULTICLASS_NMS_ATTR_NMS_THRESHOLD].v.f;                        \
    T eta = (T)attrs[RILL_MULTICLASS_NMS_ATTR_NMS_ETA].v.f;                                    \
    bool normalized = attrs[RILL_MULTICLASS_NMS_ATTR_NORMALIZED].v.b;                          \
    int64_t total = 0;                                                                         \
    for (int64_t c = 0; c < v->classes; c++) {                                                 \
      int32_t *cs = sel + c * v->m;                                                            \
      nsel[c] = 0;                                                                             \
      if (c == bg) continue;                                                                   \
      const T *sc = s + c * v->s_cstride;                                                      \
      int64_t nc = 0;                                                                          \
      for (int64_t j = 0; j < v->m; j++)                                                       \
        if (sc[j * v->s_jstride] > score_t)                                                    \
          cand[nc++] = (rill_nms_cand){(double)sc[j * v->s_jstride], (int32_t)c, (int32_t)j, j};    \
      qsort(cand, (size_t)nc, sizeof *cand, rill_nms_cand_cmp);                                     \
      if (top_k > -1 && top_k < nc) nc = top_k;                                                \
      for (int64_t k = 0; k < nc; k++) cs[k] = cand[k].idx;                                   \
      nsel[c] = rill_nms_greedy(b + c * v->b_cstride, v->b_jstride, cs, nc, nms_t, eta,           \
                             normalized, cs);                                                  \
      if (v->index_order) qsort(cs, (size_t)nsel[c], sizeof *cs, rill_nms_int_cmp);              \
      total += nsel[c];                                                                        \
    }                                                                                          \
    int64_t n = 0;                                                                             \
    if (keep_top_k > -1 && total > keep_top_k) {                                               \
      for (int64_t c = 0; c < v->classes; c++)                                                 \
        for (int64_t q = 0; q < nsel[c]; q++) {                                                \
          int32_t j = sel[c * v->m + q];                                                       \
          /* Paddle ranks these by the score cast to float */                                  \
          cand[n] = (rill_nms_cand){(double)(float)s[c * v->s_cstride + j * v->s_jstride],          \
                               (int32_t)c, j, n};                                              \
          n++;                                                                                 \
        }                                                                                      \
      qsort(cand, (size_t)n, sizeof *cand, rill_nms_cand_cmp);                                      \
      n = keep_top_k;                                                                          \
      for (int64_t c = 0; c < v->classes; c++) nsel[c] = 0;                                    \
      for (int64_t k = 0; k < n; k++) sel[cand[k].label * v->m + nsel[cand[k].label]++] =      \
                                          cand[k].idx;                                         \
      if (v->index_order)                                                                      \
        for (int64_t c = 0; c < v->classes; c++)                                               \
          qsort(sel + c * v->m, (size_t)nsel[c], sizeof *sel, rill_nms_int_cmp);                    \
    }                                                                                          \
    n = 0;                                                                                     \
    for (int64_t c = 0; c < v->classes; c++)                                                   \
      for (int64_t q = 0; q < nsel[c]; q++)                                                    \
        out[n++] = (rill_nms_cand){0, (int32_t)c, sel[c * v->m + q], 0};                            \
    return n;                                                                                  \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *boxes = NULL, *scores = NULL, *rois = NULL, *out = NULL, *index = NULL;       \
    rill_tensor *nums = NULL;                                                                  \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &boxes));                                            \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &scores));                                           \
    if (ctx->schema->ninputs > 2 && rill_kin(ctx, 2, 0)) {                                     \
      rois = rill_kin(ctx, 2, 0);                                                              \
      if (!rill_tensor_is_set(rois) ||                                                         \
          (rois->dtype != RILL_DTYPE_INT32 && rois->dtype != RILL_DTYPE_INT64))                \
        return rill_kernel_error(ctx, "input RoisNum (%s) must hold int32 or int64 counts",    \
                                 rill_kin_name(ctx, 2, 0));                                    \
    }                                                                                          \
    out = rill_kout(ctx, 0, 0);                                                                \
    if (!out)                                                                                  \
      return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",        \
                               rill_kout_name(ctx, 0, 0));                                     \
    if (ctx->schema->noutputs > 1) index = rill_kout(ctx, 1, 0);                               \
    if (ctx->schema->noutputs > 2) nums = rill_kout(ctx, 2, 0);                                \
    const rill_dims *bd = &boxes->dims, *sd = &scores->dims;                                   \
    bool per_class = sd->n == 2;                                                               \
    if (bd->n != 3 || bd->d[2] != 4 || (sd->n != 2 && sd->n != 3) ||                           \
        (per_class ? sd->d[0] != bd->d[0] || sd->d[1] != bd->d[1]                              \
                   : sd->d[0] != bd->d[0] || sd->d[2] != bd->d[1]))                            \
      return rill_kernel_error(ctx, "inputs BBoxes (%s) and Scores (%s) must be [N, M, 4] and " \
                               "[N, C, M], or [M, C, 4] and [M, C]",                           \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));            \
    int64_t nimg, classes = sd->d[1];                                   \
    uint64_t *rows_at = NULL; /* per-class: each image's first row, nimg + 1 of them */        \
    if (per_class) {                                                                           \
      if (rois) {                                                                              \
        nimg = rill_tensor_numel(rois);                                                        \
        rows_at = rill_malloc((size_t)(nimg + 1) * sizeof *rows_at);                           \
        if (!rows_at) return rill_oom();                                                       \
        rows_at[0] = 0;                                                                        \
        bool bad = false;                                                                      \
        for (int64_t i = 0; i < nimg; i++) {                                                   \
          int64_t r = rois->dtype == RILL_DTYPE_INT32                                          \
                          ? ((const int32_t *)rill_tensor_ptr(rois))[i]                        \
                          : ((const int64_t *)rill_tensor_ptr(rois))[i];                       \
          bad = bad || r < 0 || (uint64_t)r > (uint64_t)bd->d[0] - rows_at[i];                 \
          rows_at[i + 1] = bad ? rows_at[i] : rows_at[i] + (uint64_t)r;                        \
        }                                                                                      \
        if (bad || rows_at[nimg] != (uint64_t)bd->d[0]) {                                      \
          rill_free(rows_at);                                                                  \
          return rill_kernel_error(ctx, "input RoisNum (%s) must hold counts that add up to "  \
                                   "the %lld rows of BBoxes (%s)", rill_kin_name(ctx, 2, 0),   \
                                   (long long)bd->d[0], rill_kin_name(ctx, 0, 0));             \
        }                                                                                      \
      } else {                                                                                 \
        if (!boxes->lod.nlevels)                                                               \
          return rill_kernel_error(ctx, "input BBoxes (%s) has [M, C, 4] boxes but no LoD "    \
                                   "(nor RoisNum) saying which rows belong to which image",    \
                                   rill_kin_name(ctx, 0, 0));                                  \
        const rill_lod_level *lv = &boxes->lod.levels[boxes->lod.nlevels - 1];                 \
        if (lv->n < 1 || lv->offsets[lv->n - 1] != (uint64_t)bd->d[0])                         \
          return rill_kernel_error(ctx, "input BBoxes (%s): its LoD does not end at its %lld " \
                                   "rows", rill_kin_name(ctx, 0, 0), (long long)bd->d[0]);     \
        nimg = (int64_t)lv->n - 1;                                                             \
        rows_at = rill_malloc(lv->n * sizeof *rows_at);                                        \
        if (!rows_at) return rill_oom();                                                       \
        memcpy(rows_at, lv->offsets, lv->n * sizeof *rows_at);                                 \
      }                                                                                        \
    } else {                                                                                   \
      nimg = bd->d[0];                                                                         \
    }                                                                                          \
    int64_t m_max = per_class ? 0 : bd->d[1];                                                  \
    for (int64_t i = 0; per_class && i < nimg; i++)                                            \
      if ((int64_t)(rows_at[i + 1] - rows_at[i]) > m_max) m_max = (int64_t)(rows_at[i + 1] - rows_at[i]); \
    int64_t cap = m_max * (classes > 0 ? classes : 1);                                         \
    rill_nms_cand *cand = rill_malloc((size_t)(cap > 0 ? cap : 1) * sizeof *cand);                  \
    int32_t *sel = rill_malloc((size_t)(cap > 0 ? cap : 1) * sizeof *sel);                    \
    int64_t *nsel = rill_malloc((size_t)(classes > 0 ? classes : 1) * sizeof *nsel);           \
    uint64_t *starts = rill_malloc((size_t)(nimg + 2) * sizeof *starts);                       \
    int64_t kept_cap = rill_tensor_numel(scores);                                            \
    rill_nms_cand *kept = rill_malloc((size_t)(kept_cap > 0 ? kept_cap : 1) * sizeof *kept);        \
    rill_status *st = NULL;                                                                    \
    if (!cand || !sel || !nsel || !starts || !kept) {                                          \
      st = rill_oom();                                                                         \
      goto done;                                                                               \
    }                                                                                          \
    const T *sp = rill_tensor_ptr(scores), *bp = rill_tensor_ptr(boxes);                       \
    starts[0] = 0;                                                                             \
    for (int64_t i = 0; i < nimg; i++) {                                                       \
      nms_view v;                                                                              \
      const T *s, *b;                                                                          \
      if (per_class) {                                                                         \
        v = (nms_view){(int64_t)(rows_at[i + 1] - rows_at[i]), classes, 1, classes, 4,         \
                       classes * 4, true};                                                     \
        s = sp + (int64_t)rows_at[i] * classes;                                                \
        b = bp + (int64_t)rows_at[i] * classes * 4;                                            \
      } else {                                                                                 \
        v = (nms_view){bd->d[1], classes, bd->d[1], 1, 0, 4, false};                           \
        s = sp + i * classes * bd->d[1];                                                       \
        b = bp + i * bd->d[1] * 4;                                                             \
      }                                                                                        \
      int64_t n = v.m ? NAME##_image(ctx->attrs, s, b, &v, cand, sel, nsel,                    \
                                     kept + (int64_t)starts[i])                                \
                      : 0;                                                                     \
      for (int64_t k = 0; k < n; k++) { /* global row of the box, as Index reports it */       \
        rill_nms_cand *e = &kept[(int64_t)starts[i] + k];                                           \
        e->order = per_class ? ((int64_t)rows_at[i] + e->idx) * classes + e->label             \
                             : i * bd->d[1] + e->idx;                                          \
      }                                                                                        \
      starts[i + 1] = starts[i] + (uint64_t)n;                                                 \
    }                                                                                          \
    int64_t total = (int64_t)starts[nimg];                                                     \
    size_t nstarts = (size_t)nimg + 1;                                                         \
    if (total == 0 && !index) { /* Paddle's marker for "nothing detected" */                   \
      if ((st = rill_nms_empty_marker(out, DT, starts, &nstarts))) goto done;                  \
    } else {                                                                                   \
      rill_dims od = {.n = 2, .d = {total, 6}};                                                \
      if ((st = rill_tensor_alloc(out, DT, &od))) goto done;                                   \
      T *o = rill_tensor_ptr(out);                                                             \
      for (int64_t i = 0, r = 0; i < nimg; i++)                                                \
        for (; r < (int64_t)starts[i + 1]; r++) {                                              \
          const rill_nms_cand *e = &kept[r];                                                        \
          const T *box, *score;                                                                \
          if (per_class) {                                                                     \
            int64_t row = (int64_t)rows_at[i] + e->idx;                                        \
            box = bp + (row * classes + e->label) * 4;                                         \
            score = sp + row * classes + e->label;                                             \
          } else {                                                                             \
            box = bp + (i * bd->d[1] + e->idx) * 4;                                            \
            score = sp + (i * classes + e->label) * bd->d[1] + e->idx;                         \
          }                                                                                    \
          T *row_out = o + r * 6;                                                              \
          row_out[0] = (T)e->label;                                                            \
          row_out[1] = *score;                                                                 \
          memcpy(row_out + 2, box, 4 * sizeof(T));                                             \
        }                                                                                      \
      if (index) {                                                                             \
        rill_dims id = {.n = 2, .d = {total, 1}};                                              \
        if ((st = rill_tensor_alloc(index, RILL_DTYPE_INT32, &id))) goto done;                 \
        int32_t *ip = rill_tensor_ptr(index);                                                  \
        for (int64_t r = 0; r < total; r++) ip[r] = (int32_t)kept[r].order;                    \
      }                                                                                        \
    }                                                                                          \
    const uint64_t *const lod[] = {starts};                                                    \
    if ((st = rill_tensor_set_lod(out, 1, lod, &nstarts))) goto done;                          \
    if (index && (st = rill_tensor_set_lod(index, 1, lod, &nstarts))) goto done;               \
    if (nums) {                                                                                \
      rill_dims nd = {.n = 1, .d = {nimg}};                                                    \
      if ((st = rill_tensor_alloc(nums, RILL_DTYPE_INT32, &nd))) goto done;                    \
      rill_lod_clear(&nums->lod);                                                              \
      int32_t *np = rill_tensor_ptr(nums);                                                     \
      for (int64_t i = 0; i < nimg; i++)                                                       \
        np[i] = total == 0 ? 0 : (int32_t)(starts[i + 1] - starts[i]);                         \
    }                                                                                          \
  done:                                                                                        \
    rill_free(rows_at);                                                                        \
    rill_free(cand);                                                                           \
    rill_free(sel);                                                                            \
    rill_free(nsel);                                                                           \
    rill_free(starts);                                                                         \
    rill_free(kept);                                                                           \
    return st;                                                                                 \
  }

NMS_KERNEL(float, RILL_DTYPE_FP32, rill_cpu_multiclass_nms_fp32)
NMS_KERNEL(double, RILL_DTYPE_FP64, rill_cpu_multiclass_nms_fp64)
