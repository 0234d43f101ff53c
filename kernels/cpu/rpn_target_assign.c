/* rpn_target_assign and retinanet_target_assign CPU kernels, Paddle's ScoreAssign step by
 * step for each image (retinanet_target_assign: every anchor inside, no sampling, each
 * foreground labelled with its box's GtLabels value, ForegroundNumber the image's
 * LocationIndex rows + 1):
 *  1. inside anchors (kept in index order), non-crowd boxes times the image's scale, the
 *     pixel IoU of each pair; per anchor its best IoU and first best box, per box its
 *     best IoU over the inside anchors (no box: every anchor's best IoU is -inf);
 *  2. foreground candidates: anchors within 1e-5 of some box's best, or whose best IoU
 *     reaches rpn_positive_overlap; at most (int)(fraction * batch) of them kept;
 *  3. background candidates: best IoU below rpn_negative_overlap; at most batch minus
 *     the kept foregrounds of them kept;
 *  4. a kept background that was a kept foreground is relabelled background: it adds a
 *     LocationIndex row holding the first kept foreground with BBoxInsideWeight 0 (the
 *     regression target of that first foreground);
 *  5. LocationIndex: those rows, then the foregrounds in index order (weight 1);
 *     ScoreIndex: the foregrounds then the backgrounds, in index order, labels 1 and 0.
 * Keeping at most k of a list: with use_random, reservoir sampling (for i >= k, a draw
 * r = floor(u * i) < k swaps items r and i) from one generator seeded per run; else the
 * first k. */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/random.h"
#include "kernels/cpu/box.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/tensor_ops.h"

/* Keeps at most k of list[0..*n). */
static void rpn_sample(int32_t *list, int64_t *n, int64_t k, rill_rng *rng) {
  if (*n <= k) return;
  if (rng)
    for (int64_t i = k; i < *n; i++) {
      int64_t r = (int64_t)floor(rill_rng_uniform(rng) * (double)i);
      if (r < k) {
        int32_t t = list[r];
        list[r] = list[i];
        list[i] = t;
      }
    }
  *n = k;
}

typedef struct rpn_params {
  int32_t batch;        /* rpn_batch_size_per_im; -1: no sampling */
  float straddle;       /* < 0: every anchor is inside */
  float pos, neg, frac; /* frac -1: no sampling */
} rpn_params;

typedef struct rpn_out {
  int32_t *loc, *score, *label; /* image-local inside-anchor positions until mapped */
  int32_t *loc_gt;
  int64_t nloc, nscore;
  int64_t nfake; /* the first nfake loc rows have weight 0 */
} rpn_out;

#define RPN_TARGET_ASSIGN(T, DT, NAME, RETINA)                                                         \
  /* Labels one image's inside anchors (ins, ni) against its boxes (gt, ng). Scratch:         \
   * ov [ni * ng], amax / label [ni], aarg / fgl / bgl [ni], gmax [ng]. */                    \
  static void NAME##_image(const rpn_params *pr, const T *anchor, const int32_t *ins,          \
                           int64_t ni, const T *gt, const int32_t *gt_label, int64_t ng,       \
                           rill_rng *rng, T *ov, T *amax, int32_t *aarg, T *gmax,              \
                           int32_t *label, int32_t *fgl, int32_t *bgl, rpn_out *o) {           \
    int32_t batch = pr->batch;                                                                 \
    float pos = pr->pos, neg = pr->neg, frac = pr->frac;                                       \
    bool sampled = frac > 0 && batch > 0;                                                      \
    for (int64_t j = 0; j < ng; j++) gmax[j] = -INFINITY;                                      \
    for (int64_t i = 0; i < ni; i++) {                                                         \
      amax[i] = -INFINITY;                                                                     \
      aarg[i] = 0;                                                                             \
      for (int64_t j = 0; j < ng; j++) {                                                       \
        T v = rill_box_overlap_px(anchor + (int64_t)ins[i] * 4, gt + j * 4);                   \
        ov[i * ng + j] = v;                                                                    \
        if (v > amax[i]) amax[i] = v, aarg[i] = (int32_t)j;                                    \
        if (v > gmax[j]) gmax[j] = v;                                                          \
      }                                                                                        \
    }                                                                                          \
    int64_t nfg = 0, nbg = 0;                                                                  \
    for (int64_t i = 0; i < ni; i++) {                                                         \
      bool best = false;                                                                       \
      for (int64_t j = 0; j < ng && !best; j++) best = fabs((double)(ov[i * ng + j] - gmax[j])) < 1e-5; \
      if (best || amax[i] >= pos) fgl[nfg++] = (int32_t)i;                                     \
      label[i] = -1;                                                                           \
    }                                                                                          \
    if (sampled) rpn_sample(fgl, &nfg, (int64_t)(int)(frac * (float)batch), rng);              \
    for (int64_t k = 0; k < nfg; k++) label[fgl[k]] = 1;                                       \
    for (int64_t i = 0; i < ni; i++)                                                           \
      if (amax[i] < neg) bgl[nbg++] = (int32_t)i;                                              \
    if (sampled) rpn_sample(bgl, &nbg, batch - nfg, rng);                                      \
    o->nloc = o->nfake = 0;                                                                    \
    for (int64_t k = 0; k < nbg; k++) {                                                        \
      if (label[bgl[k]] == 1) o->loc[o->nloc++] = fgl[0];                                      \
      label[bgl[k]] = 0;                                                                       \
    }                                                                                          \
    o->nfake = o->nloc;                                                                        \
    o->nscore = 0;                                                                             \
    for (int64_t i = 0; i < ni; i++)                                                           \
      if (label[i] == 1) o->loc[o->nloc++] = (int32_t)i, o->score[o->nscore++] = (int32_t)i;   \
    int64_t nf = o->nscore;                                                                    \
    for (int64_t i = 0; i < ni; i++)                                                           \
      if (label[i] == 0) o->score[o->nscore++] = (int32_t)i;                                   \
    for (int64_t k = 0; k < o->nscore; k++)                                                    \
      o->label[k] = k >= nf ? 0 : gt_label ? gt_label[aarg[o->score[k]]] : 1;                  \
    for (int64_t k = 0; k < o->nloc; k++) o->loc_gt[k] = aarg[o->loc[k]];                      \
  }                                                                                            \
  /* Both ops: retinanet_target_assign has GtLabels at input 2 and ForegroundNumber at       \
   * output 5. */                                                                              \
  static rill_status *NAME##_run(rill_kernel_ctx *ctx, const rpn_params *pr, bool retina) {    \
    rill_tensor *anc = NULL, *gtb = NULL, *gtl = NULL, *crowd = NULL, *info = NULL, *out[6];   \
    size_t ic = retina ? 3 : 2, ii = ic + 1, nout = retina ? 6 : 5;                            \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &anc));                                              \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &gtb));                                              \
    if (retina) RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_INT32, &gtl));                    \
    RILL_TRY(rill_kin_need(ctx, ic, 0, RILL_DTYPE_INT32, &crowd));                             \
    RILL_TRY(rill_kin_need(ctx, ii, 0, DT, &info));                                            \
    for (size_t i = 0; i < nout; i++)                                                          \
      if (!(out[i] = rill_kout(ctx, i, 0)))                                                    \
        return rill_kernel_error(ctx, "output %s (%s) is missing or not a dense tensor",       \
                                 ctx->schema->outputs[i].name, rill_kout_name(ctx, i, 0));     \
    char s[RILL_DIMS_STR_MAX];                                                                 \
    if (anc->dims.n != 2 || anc->dims.d[1] != 4)                                               \
      return rill_kernel_error(ctx, "input Anchor (%s) has shape %s, expected [M, 4]",         \
                               rill_kin_name(ctx, 0, 0), rill_dims_str(&anc->dims, s, sizeof s)); \
    if (gtb->dims.n != 2 || gtb->dims.d[1] != 4)                                               \
      return rill_kernel_error(ctx, "input GtBoxes (%s) has shape %s, expected [G, 4]",        \
                               rill_kin_name(ctx, 1, 0), rill_dims_str(&gtb->dims, s, sizeof s)); \
    int64_t m = anc->dims.d[0], g = gtb->dims.d[0];                                            \
    if (gtb->lod.nlevels != 1)                                                                 \
      return rill_kernel_error(ctx, "input GtBoxes (%s) needs one LoD level giving each "      \
                               "image's boxes, it has %zu", rill_kin_name(ctx, 1, 0),          \
                               gtb->lod.nlevels);                                              \
    const rill_lod_level *lv = &gtb->lod.levels[0];                                            \
    int64_t nimg = lv->n ? (int64_t)lv->n - 1 : 0;                                             \
    if (rill_tensor_numel(crowd) != g)                                                         \
      return rill_kernel_error(ctx, "input IsCrowd (%s) has shape %s, GtBoxes (%s) %lld rows: " \
                               "one flag per box", rill_kin_name(ctx, ic, 0),                  \
                               rill_dims_str(&crowd->dims, s, sizeof s), rill_kin_name(ctx, 1, 0), \
                               (long long)g);                                                  \
    if (gtl && rill_tensor_numel(gtl) != g)                                                    \
      return rill_kernel_error(ctx, "input GtLabels (%s) has shape %s, GtBoxes (%s) %lld rows: " \
                               "one label per box", rill_kin_name(ctx, 2, 0),                  \
                               rill_dims_str(&gtl->dims, s, sizeof s), rill_kin_name(ctx, 1, 0), \
                               (long long)g);                                                  \
    if (info->dims.n != 2 || info->dims.d[1] != 3 || info->dims.d[0] != nimg)                  \
      return rill_kernel_error(ctx, "input ImInfo (%s) has shape %s, GtBoxes (%s) %lld images " \
                               "in its LoD: expected [%lld, 3]", rill_kin_name(ctx, ii, 0),    \
                               rill_dims_str(&info->dims, s, sizeof s), rill_kin_name(ctx, 1, 0), \
                               (long long)nimg, (long long)nimg);                              \
    if (m > INT32_MAX / (nimg > 0 ? nimg : 1))                                                 \
      return rill_kernel_error(ctx, "input Anchor (%s): %lld anchors over %lld images overflow " \
                               "the int32 indexes", rill_kin_name(ctx, 0, 0), (long long)m,    \
                               (long long)nimg);                                               \
    bool use_random = !retina && ctx->attrs[RILL_RPN_TARGET_ASSIGN_ATTR_USE_RANDOM].v.b;       \
    float straddle = pr->straddle;                                                             \
    rill_rng rng;                                                                              \
    if (use_random) rill_rng_seed(&rng, rill_random_run_seed(ctx));                            \
    size_t m1 = (size_t)(m > 0 ? m : 1), g1 = (size_t)(g > 0 ? g : 1);                         \
    size_t all = m1 * (size_t)(nimg > 0 ? nimg : 1);                                           \
    int32_t *ins = rill_malloc(m1 * sizeof *ins), *aarg = rill_malloc(m1 * sizeof *aarg);      \
    int32_t *label = rill_malloc(m1 * sizeof *label), *fgl = rill_malloc(m1 * sizeof *fgl);    \
    int32_t *bgl = rill_malloc(m1 * sizeof *bgl);                                              \
    T *ov = rill_malloc(m1 * g1 * sizeof *ov), *amax = rill_malloc(m1 * sizeof *amax);         \
    T *gmax = rill_malloc(g1 * sizeof *gmax), *gt = rill_malloc(g1 * 4 * sizeof *gt);          \
    int32_t *glab = rill_malloc(g1 * sizeof *glab);                                            \
    int32_t *fg_all = rill_malloc((size_t)(nimg > 0 ? nimg : 1) * sizeof *fg_all);             \
    rpn_out o = {rill_malloc(m1 * sizeof(int32_t)), rill_malloc(m1 * sizeof(int32_t)),         \
                 rill_malloc(m1 * sizeof(int32_t)), rill_malloc(m1 * sizeof(int32_t)), 0, 0, 0}; \
    int32_t *loc_all = rill_malloc(all * sizeof *loc_all), *score_all = rill_malloc(all * sizeof *score_all); \
    int32_t *label_all = rill_malloc(all * sizeof *label_all);                                 \
    T *bbox_all = rill_malloc(all * 4 * sizeof *bbox_all), *w_all = rill_malloc(all * 4 * sizeof *w_all); \
    /* loc_off: the location LoD, then room for ForegroundNumber's [0, 1, ..., N] */          \
    uint64_t *loc_off = rill_malloc((size_t)(nimg + 1) * 2 * sizeof *loc_off);                 \
    uint64_t *score_off = rill_malloc((size_t)(nimg + 1) * sizeof *score_off);                 \
    rill_status *st = NULL;                                                                    \
    if (!ins || !aarg || !label || !fgl || !bgl || !ov || !amax || !gmax || !gt || !o.loc ||   \
        !o.score || !o.label || !o.loc_gt || !loc_all || !score_all || !label_all ||           \
        !bbox_all || !w_all || !loc_off || !score_off || !glab || !fg_all) {                   \
      st = rill_oom();                                                                         \
      goto done;                                                                               \
    }                                                                                          \
    const T *ap = rill_tensor_ptr(anc), *gp = rill_tensor_ptr(gtb), *ip = rill_tensor_ptr(info); \
    const int32_t *cp = rill_tensor_ptr(crowd), *lp = gtl ? rill_tensor_ptr(gtl) : NULL;       \
    loc_off[0] = score_off[0] = 0;                                                             \
    for (int64_t i = 0; i < nimg; i++) {                                                       \
      T im_h = ip[i * 3], im_w = ip[i * 3 + 1], im_s = ip[i * 3 + 2];                          \
      int64_t ni = 0, ng = 0;                                                                  \
      for (int64_t a = 0; a < m; a++) {                                                        \
        const T *b = ap + a * 4;                                                               \
        if (straddle < 0 || (b[0] >= -straddle && b[1] >= -straddle &&                         \
                             b[2] < im_w + straddle && b[3] < im_h + straddle))                \
          ins[ni++] = (int32_t)a;                                                              \
      }                                                                                        \
      if (lv->offsets[i] > lv->offsets[i + 1] || lv->offsets[i + 1] > (uint64_t)g) {           \
        st = rill_kernel_error(ctx, "input GtBoxes (%s): its LoD does not fit its %lld rows",  \
                               rill_kin_name(ctx, 1, 0), (long long)g);                        \
        goto done;                                                                             \
      }                                                                                        \
      for (uint64_t r = lv->offsets[i]; r < lv->offsets[i + 1]; r++) {                         \
        if (cp[r] != 0) continue;                                                              \
        for (int k = 0; k < 4; k++) gt[ng * 4 + k] = gp[r * 4 + k] * im_s;                     \
        if (lp) glab[ng] = lp[r];                                                              \
        ng++;                                                                                  \
      }                                                                                        \
      NAME##_image(pr, ap, ins, ni, gt, lp ? glab : NULL, ng, use_random ? &rng : NULL, ov,    \
                   amax, aarg, gmax, label, fgl, bgl, &o);                                     \
      fg_all[i] = (int32_t)(o.nloc + 1);                                                       \
      int64_t l0 = (int64_t)loc_off[i], s0 = (int64_t)score_off[i];                            \
      for (int64_t k = 0; k < o.nloc; k++) {                                                   \
        int32_t a = ins[o.loc[k]];                                                             \
        loc_all[l0 + k] = a + (int32_t)(i * m);                                                \
        rill_box_delta(ap + (int64_t)a * 4, gt + (int64_t)o.loc_gt[k] * 4, NULL, false,        \
                       bbox_all + (l0 + k) * 4);                                               \
        for (int q = 0; q < 4; q++) w_all[(l0 + k) * 4 + q] = k < o.nfake ? 0 : 1;             \
      }                                                                                        \
      for (int64_t k = 0; k < o.nscore; k++) {                                                 \
        score_all[s0 + k] = ins[o.score[k]] + (int32_t)(i * m);                                \
        label_all[s0 + k] = o.label[k];                                                        \
      }                                                                                        \
      loc_off[i + 1] = loc_off[i] + (uint64_t)o.nloc;                                          \
      score_off[i + 1] = score_off[i] + (uint64_t)o.nscore;                                    \
    }                                                                                          \
    int64_t nl = (int64_t)loc_off[nimg], ns = (int64_t)score_off[nimg];                        \
    {                                                                                          \
      rill_dims dl = {.n = 1, .d = {nl}}, ds = {.n = 1, .d = {ns}};                            \
      rill_dims db = {.n = 2, .d = {nl, 4}}, dlab = {.n = 2, .d = {ns, 1}};                    \
      rill_dims dfg = {.n = 2, .d = {nimg, 1}};                                                \
      for (int64_t i = 0; i <= nimg; i++) loc_off[nimg + 1 + i] = (uint64_t)i;                 \
      const rill_dims *dims[6] = {&dl, &ds, &db, &dlab, &db, &dfg};                            \
      const rill_dtype dts[6] = {RILL_DTYPE_INT32, RILL_DTYPE_INT32, DT, RILL_DTYPE_INT32, DT,  \
                                 RILL_DTYPE_INT32};                                            \
      const void *src[6] = {loc_all, score_all, bbox_all, label_all, w_all, fg_all};           \
      const uint64_t *offs[6] = {loc_off, score_off, loc_off, score_off, loc_off,              \
                                 loc_off + nimg + 1};                                          \
      size_t nlv = (size_t)nimg + 1;                                                           \
      for (size_t q = 0; q < nout; q++) {                                                      \
        if ((st = rill_tensor_alloc(out[q], dts[q], dims[q]))) goto done;                      \
        size_t bytes = (size_t)rill_tensor_numel(out[q]) * rill_dtype_size(dts[q]);            \
        if (bytes) memcpy(rill_tensor_ptr(out[q]), src[q], bytes);                             \
        if ((st = rill_tensor_set_lod(out[q], 1, (const uint64_t *const[]){offs[q]}, &nlv)))   \
          goto done;                                                                           \
      }                                                                                        \
    }                                                                                          \
  done:                                                                                        \
    rill_free(ins), rill_free(aarg), rill_free(label), rill_free(fgl), rill_free(bgl);         \
    rill_free(ov), rill_free(amax), rill_free(gmax), rill_free(gt);                            \
    rill_free(o.loc), rill_free(o.score), rill_free(o.label), rill_free(o.loc_gt);             \
    rill_free(loc_all), rill_free(score_all), rill_free(label_all), rill_free(bbox_all);       \
    rill_free(w_all), rill_free(loc_off), rill_free(score_off), rill_free(glab);               \
    rill_free(fg_all);                                                                         \
    return st;                                                                                 \
  }                                                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    const rill_attr_value *at = ctx->attrs;                                                    \
    rpn_params pr = {at[RILL_RPN_TARGET_ASSIGN_ATTR_RPN_BATCH_SIZE_PER_IM].v.i,                \
                     at[RILL_RPN_TARGET_ASSIGN_ATTR_RPN_STRADDLE_THRESH].v.f,                  \
                     at[RILL_RPN_TARGET_ASSIGN_ATTR_RPN_POSITIVE_OVERLAP].v.f,                 \
                     at[RILL_RPN_TARGET_ASSIGN_ATTR_RPN_NEGATIVE_OVERLAP].v.f,                 \
                     at[RILL_RPN_TARGET_ASSIGN_ATTR_RPN_FG_FRACTION].v.f};                     \
    return NAME##_run(ctx, &pr, false);                                                        \
  }                                                                                            \
  rill_status *RETINA(rill_kernel_ctx *ctx) {                                                  \
    const rill_attr_value *at = ctx->attrs;                                                    \
    rpn_params pr = {-1, -1.0f, at[RILL_RETINANET_TARGET_ASSIGN_ATTR_POSITIVE_OVERLAP].v.f,    \
                     at[RILL_RETINANET_TARGET_ASSIGN_ATTR_NEGATIVE_OVERLAP].v.f, -1.0f};       \
    return NAME##_run(ctx, &pr, true);                                                         \
  }

RPN_TARGET_ASSIGN(float, RILL_DTYPE_FP32, rill_cpu_rpn_target_assign_fp32,
                  rill_cpu_retinanet_target_assign_fp32)
RPN_TARGET_ASSIGN(double, RILL_DTYPE_FP64, rill_cpu_rpn_target_assign_fp64,
                  rill_cpu_retinanet_target_assign_fp64)
