/* generate_proposals CPU kernels, Paddle's steps for each image:
 *  1. anchor p = (h * W + w) * A + a scores Scores[n, a, h, w] and moves by
 *     BboxDeltas[n, 4a + k, h, w]; the pre_nms_topN best (score descending, ties by p)
 *     are decoded: centre += var * delta * size, size *= exp(min(var * delta,
 *     log(1000 / 16))), with pixel widths (+1);
 *  2. clipped to [0, width - 1] x [0, height - 1] of ImInfo (not rescaled);
 *  3. kept when both sides, divided by ImInfo's scale, are >= max(min_size, 1) and the
 *     centre lies inside (height, width); an image left with none adds no row;
 *  4. greedy pixel NMS in score order (equal scores: the later candidate first, as
 *     Paddle's stable ascending sort read from its end), then the first post_nms_topN.
 * With nms_thresh <= 0 step 4 is skipped and the boxes stay in step 1's order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/nms.h"
#include "kernels/cpu/kernels.h"

typedef struct gp_rank {
  double score;
  int32_t idx;
} gp_rank;

/* Score descending, equal scores by index ascending. */
static int gp_rank_first_cmp(const void *pa, const void *pb) {
  const gp_rank *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Score descending, equal scores by index descending. */
static int gp_rank_nms_cmp(const void *pa, const void *pb) {
  const gp_rank *a = pa, *b = pb;
  if (a->score != b->score) return a->score > b->score ? -1 : 1;
  return a->idx > b->idx ? -1 : a->idx < b->idx;
}

#define GEN_PROPOSALS(T, DT, EXP, NAME)                                                        \
  /* One image: writes its proposals to rois / probs, returns their count. */                 \
  static int64_t NAME##_image(const rill_attr_value *at, const T *sc, const T *dl,             \
                              const T *anc, const T *var, const T *info, int64_t a_n,         \
                              int64_t hw, gp_rank *rank, T *box, T *score, int32_t *keep,     \
                              T *rois, T *probs) {                                             \
    int64_t m = a_n * hw;                                                                      \
    int32_t pre = at[RILL_GENERATE_PROPOSALS_ATTR_PRE_NMS_TOP_N].v.i;                           \
    int32_t post = at[RILL_GENERATE_PROPOSALS_ATTR_POST_NMS_TOP_N].v.i;                         \
    float nms_t = at[RILL_GENERATE_PROPOSALS_ATTR_NMS_THRESH].v.f;                             \
    float min_size = at[RILL_GENERATE_PROPOSALS_ATTR_MIN_SIZE].v.f;                            \
    float eta = at[RILL_GENERATE_PROPOSALS_ATTR_ETA].v.f;                                      \
    for (int64_t p = 0; p < m; p++) {                                                          \
      int64_t a = p % a_n, q = p / a_n;                                                        \
      rank[p] = (gp_rank){(double)sc[a * hw + q], (int32_t)p};                                 \
    }                                                                                          \
    qsort(rank, (size_t)m, sizeof *rank, gp_rank_first_cmp);                                   \
    int64_t n = pre <= 0 || pre >= m ? m : pre;                                                \
    T im_h = info[0], im_w = info[1], im_s = info[2];                                          \
    T clip_max = (T)log(1000.0 / 16.0);                                                        \
    min_size = min_size > 1.0f ? min_size : 1.0f;                                              \
    int64_t nk = 0;                                                                            \
    for (int64_t k = 0; k < n; k++) {                                                          \
      int64_t p = rank[k].idx, a = p % a_n, q = p / a_n;                                       \
      const T *an = anc + p * 4, *v = var + p * 4;                                             \
      T d[4];                                                                                  \
      for (int j = 0; j < 4; j++) d[j] = dl[(a * 4 + j) * hw + q];                             \
      T aw = an[2] - an[0] + 1, ah = an[3] - an[1] + 1;                                        \
      T acx = (T)(an[0] + 0.5 * aw), acy = (T)(an[1] + 0.5 * ah);                              \
      T cx = v[0] * d[0] * aw + acx, cy = v[1] * d[1] * ah + acy;                              \
      T ew = v[2] * d[2], eh = v[3] * d[3];                                                    \
      T w = EXP(ew < clip_max ? ew : clip_max) * aw, h = EXP(eh < clip_max ? eh : clip_max) * ah; \
      T b[4] = {cx - w / 2, cy - h / 2, cx + w / 2 - 1, cy + h / 2 - 1};                       \
      for (int j = 0; j < 4; j++) {                                                            \
        T hi = (j % 2 ? im_h : im_w) - 1;                                                      \
        b[j] = b[j] < hi ? b[j] : hi;                                                          \
        b[j] = b[j] > 0 ? b[j] : 0;                                                            \
      }                                                                                        \
      T ws = b[2] - b[0] + 1, hs = b[3] - b[1] + 1;                                            \
      T xc = b[0] + ws / 2, yc = b[1] + hs / 2;                                                \
      ws = (b[2] - b[0]) / im_s + 1;                                                           \
      hs = (b[3] - b[1]) / im_s + 1;                                                           \
      if (!(ws >= min_size && hs >= min_size && xc <= im_w && yc <= im_h)) continue;           \
      memcpy(box + nk * 4, b, sizeof b);                                                       \
      score[nk++] = sc[a * hw + q];                                                            \
    }                                                                                          \
    int64_t out = nk;                                                                          \
    if (nms_t <= 0) {                                                                          \
      for (int64_t k = 0; k < nk; k++) keep[k] = (int32_t)k;                                   \
    } else {                                                                                   \
      for (int64_t k = 0; k < nk; k++) rank[k] = (gp_rank){(double)score[k], (int32_t)k};      \
      qsort(rank, (size_t)nk, sizeof *rank, gp_rank_nms_cmp);                                  \
      for (int64_t k = 0; k < nk; k++) keep[k] = rank[k].idx;                                  \
      out = rill_nms_greedy(box, 4, keep, nk, (T)nms_t, (T)eta, false, keep);                 \
      if (post > 0 && post < out) out = post;                                                  \
    }                                                                                          \
    for (int64_t k = 0; k < out; k++) {                                                        \
      memcpy(rois + k * 4, box + (int64_t)keep[k] * 4, 4 * sizeof *rois);                      \
      probs[k] = score[keep[k]];                                                               \
    }                                                                                          \
    return out;                                                                                \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *in[5];                                                                        \
    for (size_t i = 0; i < 5; i++) RILL_TRY(rill_kin_need(ctx, i, 0, DT, &in[i]));             \
    rill_tensor *rois = rill_kout(ctx, 0, 0), *probs = rill_kout(ctx, 1, 0);                   \
    rill_tensor *lod_out = rill_kout(ctx, 2, 0);                                               \
    if (!rois || !probs)                                                                       \
      return rill_kernel_error(ctx, "outputs RpnRois (%s) and RpnRoiProbs (%s) must be dense " \
                               "tensors", rill_kout_name(ctx, 0, 0), rill_kout_name(ctx, 1, 0)); \
    const rill_dims *sd = &in[0]->dims, *dd = &in[1]->dims, *id = &in[2]->dims;                \
    char s[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];                                          \
    if (sd->n != 4)                                                                            \
      return rill_kernel_error(ctx, "input Scores (%s) has shape %s, expected [N, A, H, W]",   \
                               rill_kin_name(ctx, 0, 0), rill_dims_str(sd, s, sizeof s));      \
    int64_t nimg = sd->d[0], a_n = sd->d[1], hw = sd->d[2] * sd->d[3], m = a_n * hw;           \
    if (dd->n != 4 || dd->d[0] != nimg || dd->d[1] != 4 * a_n || dd->d[2] != sd->d[2] ||       \
        dd->d[3] != sd->d[3])                                                                  \
      return rill_kernel_error(ctx, "input BboxDeltas (%s) has shape %s, Scores (%s) %s: "     \
                               "expected [N, 4A, H, W] for [N, A, H, W]", rill_kin_name(ctx, 1, 0), \
                               rill_dims_str(dd, s, sizeof s), rill_kin_name(ctx, 0, 0),       \
                               rill_dims_str(sd, s2, sizeof s2));                              \
    if (id->n != 2 || id->d[0] != nimg || id->d[1] != 3)                                       \
      return rill_kernel_error(ctx, "input ImInfo (%s) has shape %s, expected [%lld, 3]",      \
                               rill_kin_name(ctx, 2, 0), rill_dims_str(id, s, sizeof s),       \
                               (long long)nimg);                                               \
    for (size_t i = 3; i < 5; i++)                                                             \
      if (rill_tensor_numel(in[i]) != m * 4)                                                   \
        return rill_kernel_error(ctx, "input %s (%s) has shape %s: expected %lld anchors "     \
                                 "(H * W * A) of 4 values", ctx->schema->inputs[i].name,       \
                                 rill_kin_name(ctx, i, 0), rill_dims_str(&in[i]->dims, s, sizeof s), \
                                 (long long)m);                                                \
    if (m > INT32_MAX / 4)                                                                     \
      return rill_kernel_error(ctx, "input Scores (%s) has %lld anchors per image, more than " \
                               "this kernel indexes", rill_kin_name(ctx, 0, 0), (long long)m); \
    int32_t pre = ctx->attrs[RILL_GENERATE_PROPOSALS_ATTR_PRE_NMS_TOP_N].v.i;                   \
    int64_t per = pre <= 0 || pre >= m ? m : pre;                                              \
    if (per < 1) per = 1; /* room for every image's candidates, never 0 bytes */               \
    gp_rank *rank = rill_malloc((size_t)(m > 0 ? m : 1) * sizeof *rank);                       \
    T *box = rill_malloc((size_t)per * 4 * sizeof *box), *score = rill_malloc((size_t)per * sizeof *score); \
    int32_t *keep = rill_malloc((size_t)per * sizeof *keep);                                   \
    T *all = rill_malloc((size_t)(nimg > 0 ? nimg : 1) * (size_t)per * 5 * sizeof *all);       \
    uint64_t *offs = rill_malloc((size_t)(nimg + 1) * sizeof *offs);                           \
    rill_status *st = NULL;                                                                    \
    if (!rank || !box || !score || !keep || !all || !offs) {                                   \
      st = rill_oom();                                                                         \
      goto done;                                                                               \
    }                                                                                          \
    T *all_probs = all + nimg * per * 4;                                                       \
    const T *sp = rill_tensor_ptr(in[0]), *dp = rill_tensor_ptr(in[1]), *ip = rill_tensor_ptr(in[2]); \
    offs[0] = 0;                                                                               \
    for (int64_t i = 0; i < nimg; i++) {                                                       \
      int64_t r = (int64_t)offs[i];                                                            \
      int64_t n = NAME##_image(ctx->attrs, sp + i * m, dp + i * m * 4, rill_tensor_ptr(in[3]), \
                               rill_tensor_ptr(in[4]), ip + i * 3, a_n, hw, rank, box, score,  \
                               keep, all + r * 4, all_probs + r);                              \
      offs[i + 1] = offs[i] + (uint64_t)n;                                                     \
    }                                                                                          \
    int64_t total = (int64_t)offs[nimg];                                                       \
    rill_dims rd = {.n = 2, .d = {total, 4}}, pd = {.n = 2, .d = {total, 1}};                  \
    size_t nl = (size_t)nimg + 1;                                                              \
    if ((st = rill_tensor_alloc(rois, DT, &rd)) || (st = rill_tensor_alloc(probs, DT, &pd)))   \
      goto done;                                                                               \
    if (total) {                                                                               \
      memcpy(rill_tensor_ptr(rois), all, (size_t)total * 4 * sizeof(T));                       \
      memcpy(rill_tensor_ptr(probs), all_probs, (size_t)total * sizeof(T));                    \
    }                                                                                          \
    if ((st = rill_tensor_set_lod(rois, 1, (const uint64_t *const[]){offs}, &nl)) ||           \
        (st = rill_tensor_set_lod(probs, 1, (const uint64_t *const[]){offs}, &nl)))            \
      goto done;                                                                               \
    if (lod_out) {                                                                             \
      rill_dims ld = {.n = 1, .d = {nimg}};                                                    \
      if ((st = rill_tensor_alloc(lod_out, RILL_DTYPE_INT64, &ld))) goto done;                 \
      int64_t *lp = rill_tensor_ptr(lod_out);                                                  \
      for (int64_t i = 0; i < nimg; i++) lp[i] = (int64_t)offs[i + 1];                         \
    }                                                                                          \
  done:                                                                                        \
    rill_free(rank);                                                                           \
    rill_free(box);                                                                            \
    rill_free(score);                                                                          \
    rill_free(keep);                                                                           \
    rill_free(all);                                                                            \
    rill_free(offs);                                                                           \
    return st;                                                                                 \
  }

GEN_PROPOSALS(float, RILL_DTYPE_FP32, expf, rill_cpu_generate_proposals_fp32)
GEN_PROPOSALS(double, RILL_DTYPE_FP64, exp, rill_cpu_generate_proposals_fp64)
