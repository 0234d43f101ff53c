/* retinanet_detection_output CPU kernels, Paddle's algorithm step by step, per image:
 *  1. per level l, the flattened (anchor, class) scores above score_threshold (above 0
 *     on the last level), sorted by score (as float, stable), the first nms_top_k;
 *  2. each is decoded against its anchor a (pixel extents aw = a2 - a0 + 1, centre
 *     a0 + aw / 2): centre d0 * aw + cx, width exp(d2) * aw, corners centre -/+ width / 2
 *     (the far one - 1), divided by the image scale and clamped to [0, round(size /
 *     scale) - 1];
 *  3. per class, the decoded boxes of all levels (in the order found), sorted by score
 *     (as float, stable), go through nms.h's greedy NMS on pixel IoU with nms_threshold
 *     and nms_eta;
 *  4. the image's kept boxes, classes in ascending order, are sorted by score (as float,
 *     stable) and the first keep_top_k kept (-1: all); rows are (class + 1, score, box). */
#include <math.h>

#include "kernels/cpu/nms.h"

#define RDO_KERNEL(T, DT, NAME, EXP)                                                           \
  typedef struct NAME##_pred {                                                                 \
    T score;                                                                                   \
    int32_t cls;                                                                               \
  } NAME##_pred;                                                                               \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    size_t nl = ctx->nin[0];                                                                   \
    rill_tensor *info = NULL, *out = rill_kout(ctx, 0, 0);                                     \
    if (!out || nl == 0 || ctx->nin[1] != nl || ctx->nin[2] != nl)                             \
      return rill_kernel_error(ctx, "needs one BBoxes, Scores and Anchors per level (has %zu, " \
                               "%zu and %zu) and output Out", nl, ctx->nin[1], ctx->nin[2]);   \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &info));                                             \
    int64_t nimg = -1, classes = -1, cap = 0;                                                  \
    for (size_t l = 0; l < nl; l++) {                                                          \
      rill_tensor *bx = NULL, *sc = NULL, *an = NULL;                                          \
      RILL_TRY(rill_kin_need(ctx, 0, l, DT, &bx));                                             \
      RILL_TRY(rill_kin_need(ctx, 1, l, DT, &sc));                                             \
      RILL_TRY(rill_kin_need(ctx, 2, l, DT, &an));                                             \
      if (l == 0) {                                                                            \
        nimg = bx->dims.n == 3 ? bx->dims.d[0] : -1;                                           \
        classes = sc->dims.n == 3 ? sc->dims.d[2] : -1;                                        \
      }                                                                                        \
      if (bx->dims.n != 3 || bx->dims.d[2] != 4 || bx->dims.d[0] != nimg || sc->dims.n != 3 || \
          sc->dims.d[0] != nimg || sc->dims.d[1] != bx->dims.d[1] || sc->dims.d[2] != classes || \
          an->dims.n != 2 || an->dims.d[0] != bx->dims.d[1] || an->dims.d[1] != 4)             \
        return rill_kernel_error(ctx, "inputs BBoxes (%s), Scores (%s) and Anchors (%s) must "  \
                                 "be [N, M, 4], [N, M, C] and [M, 4], with the first level's " \
                                 "N and C", rill_kin_name(ctx, 0, l), rill_kin_name(ctx, 1, l), \
                                 rill_kin_name(ctx, 2, l));                                    \
      cap += bx->dims.d[1] * classes;                                                          \
    }                                                                                          \
    if (info->dims.n != 2 || info->dims.d[0] != nimg || info->dims.d[1] != 3)                  \
      return rill_kernel_error(ctx, "input ImInfo (%s) must be [N, 3] for the %lld images",    \
                               rill_kin_name(ctx, 3, 0), (long long)nimg);                     \
    float score_t = ctx->attrs[RILL_RETINANET_DETECTION_OUTPUT_ATTR_SCORE_THRESHOLD].v.f;      \
    int32_t top_k = ctx->attrs[RILL_RETINANET_DETECTION_OUTPUT_ATTR_NMS_TOP_K].v.i;            \
    int32_t keep_top_k = ctx->attrs[RILL_RETINANET_DETECTION_OUTPUT_ATTR_KEEP_TOP_K].v.i;      \
    T nms_t = (T)ctx->attrs[RILL_RETINANET_DETECTION_OUTPUT_ATTR_NMS_THRESHOLD].v.f;           \
    T eta = (T)ctx->attrs[RILL_RETINANET_DETECTION_OUTPUT_ATTR_NMS_ETA].v.f;                   \
    size_t c1 = (size_t)(cap > 0 ? cap : 1);                                                   \
    NAME##_pred *pred = rill_malloc(c1 * sizeof *pred);                                        \
    T *box = rill_malloc(c1 * 4 * sizeof *box); /* pred[p]'s box at box + p * 4 */             \
    rill_nms_cand *cand = rill_malloc(c1 * sizeof *cand);                                      \
    int32_t *sel = rill_malloc(c1 * sizeof *sel);                                              \
    T *rows = rill_malloc(c1 * (size_t)(nimg > 0 ? nimg : 1) * 6 * sizeof *rows);              \
    uint64_t *starts = rill_malloc((size_t)(nimg + 1) * sizeof *starts);                       \
    rill_status *st = NULL;                                                                    \
    if (!pred || !box || !cand || !sel || !rows || !starts) {                                  \
      st = rill_oom();                                                                         \
      goto done;                                                                               \
    }                                                                                          \
    starts[0] = 0;                                                                             \
    const T *ip = rill_tensor_ptr(info);                                                       \
    for (int64_t i = 0; i < nimg; i++) {                                                       \
      T scale = ip[i * 3 + 2];                                                                 \
      T im_h = (T)round((double)(ip[i * 3] / scale)), im_w = (T)round((double)(ip[i * 3 + 1] / scale)); \
      int64_t np = 0;                                                                          \
      for (size_t l = 0; l < nl; l++) { /* steps 1 and 2 */                                    \
        const rill_tensor *bx = rill_kin(ctx, 0, l), *sc = rill_kin(ctx, 1, l);                \
        int64_t m = bx->dims.d[1], mc = m * classes;                                           \
        const T *s = (const T *)rill_tensor_ptr(sc) + i * mc;                                  \
        const T *d = (const T *)rill_tensor_ptr(bx) + i * m * 4;                               \
        const T *a = rill_tensor_ptr(rill_kin(ctx, 2, l));                                     \
        T thr = l + 1 < nl ? (T)score_t : (T)0;                                                \
        int64_t n = 0;                                                                         \
        for (int64_t j = 0; j < mc; j++)                                                       \
          if (s[j] > thr) cand[n++] = (rill_nms_cand){(double)(float)s[j], 0, (int32_t)j, j};  \
        qsort(cand, (size_t)n, sizeof *cand, rill_nms_cand_cmp);                               \
        if (top_k > -1 && top_k < n) n = top_k;                                                \
        for (int64_t k = 0; k < n; k++) {                                                      \
          int64_t j = cand[k].idx, an = j / classes;                                           \
          const T *ab = a + an * 4, *db = d + an * 4;                                          \
          T aw = ab[2] - ab[0] + 1, ah = ab[3] - ab[1] + 1;                                    \
          T acx = ab[0] + aw / 2, acy = ab[1] + ah / 2;                                        \
          T cx = db[0] * aw + acx, cy = db[1] * ah + acy;                                      \
          T w = EXP(db[2]) * aw, h = EXP(db[3]) * ah;                                          \
          T bb[4] = {(cx - w / 2) / scale, (cy - h / 2) / scale, (cx + w / 2 - 1) / scale,     \
                     (cy + h / 2 - 1) / scale};                                                \
          for (int q = 0; q < 4; q++) {                                                        \
            T lim = (q % 2 ? im_h : im_w) - 1;                                                 \
            T v = bb[q] < lim ? bb[q] : lim;                                                   \
            bb[q] = v > 0 ? v : 0;                                                             \
          }                                                                                    \
          memcpy(box + np * 4, bb, sizeof bb);                                                 \
          pred[np++] = (NAME##_pred){s[j], (int32_t)(j % classes)};                            \
        }                                                                                      \
      }                                                                                        \
      int64_t nk = 0;                                                                          \
      for (int64_t c = 0; c < classes; c++) { /* step 3 */                                     \
        int64_t nm = 0;                                                                        \
        for (int64_t p = 0; p < np; p++)                                                       \
          if (pred[p].cls == c) {                                                              \
            cand[nm] = (rill_nms_cand){(double)(float)pred[p].score, (int32_t)c, (int32_t)p, nm}; \
            nm++;                                                                              \
          }                                                                                    \
        qsort(cand, (size_t)nm, sizeof *cand, rill_nms_cand_cmp);                              \
        for (int64_t k = 0; k < nm; k++) sel[nk + k] = cand[k].idx;                            \
        nk += rill_nms_greedy(box, 4, sel + nk, nm, nms_t, eta, false, sel + nk);              \
      }                                                                                        \
      for (int64_t k = 0; k < nk; k++) /* step 4 */                                            \
        cand[k] = (rill_nms_cand){(double)(float)pred[sel[k]].score, 0, sel[k], k};            \
      qsort(cand, (size_t)nk, sizeof *cand, rill_nms_cand_cmp);                                \
      if (keep_top_k > -1 && nk > keep_top_k) nk = keep_top_k;                                 \
      T *o = rows + starts[i] * 6;                                                             \
      for (int64_t k = 0; k < nk; k++) {                                                       \
        const NAME##_pred *p = &pred[cand[k].idx];                                             \
        o[k * 6] = (T)(p->cls + 1);                                                            \
        o[k * 6 + 1] = p->score;                                                               \
        memcpy(o + k * 6 + 2, box + cand[k].idx * 4, 4 * sizeof(T));                           \
      }                                                                                        \
      starts[i + 1] = starts[i] + (uint64_t)nk;                                                \
    }                                                                                          \
    rill_dims od = {.n = 2, .d = {(int64_t)starts[nimg], 6}};                                  \
    if ((st = rill_tensor_alloc(out, DT, &od))) goto done;                                     \
    if (starts[nimg]) memcpy(rill_tensor_ptr(out), rows, starts[nimg] * 6 * sizeof(T));        \
    st = rill_tensor_set_lod(out, 1, (const uint64_t *const[]){starts},                        \
                             (const size_t[]){(size_t)nimg + 1});                              \
  done:                                                                                        \
    rill_free(pred);                                                                           \
    rill_free(box);                                                                            \
    rill_free(cand);                                                                           \
    rill_free(sel);                                                                            \
    rill_free(rows);                                                                           \
    rill_free(starts);                                                                         \
    return st;                                                                                 \
  }

RDO_KERNEL(float, RILL_DTYPE_FP32, rill_cpu_retinanet_detection_output_fp32, expf)
RDO_KERNEL(double, RILL_DTYPE_FP64, rill_cpu_retinanet_detection_output_fp64, exp)
