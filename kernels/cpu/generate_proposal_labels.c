/* generate_proposal_labels CPU kernels, Paddle's SampleRoisForOneImage for each image:
 *  1. proposals = the image's GtBoxes, then its RpnRois divided by ImInfo's scale;
 *  2. each proposal's best pixel IoU with the boxes (0 with no box; -1 for a crowd
 *     box's own row): foreground when >= fg_thresh, matched to the first box within
 *     1e-5 of the best, else background when in [bg_thresh_lo, bg_thresh_hi);
 *  3. at most floor(batch * fg_fraction) foregrounds kept, then at most batch minus
 *     those backgrounds; with use_random by reservoir sampling (a draw
 *     r = floor(u * i) < k swaps items r and i) from one generator seeded per run,
 *     else the first ones;
 *  4. BoxToDelta of the foregrounds at the original scale (pixel sizes, divided by
 *     bbox_reg_weights), placed at the class's four columns with weights 1; Rois are
 *     the kept proposals times the scale. */
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/random.h"
#include "kernels/cpu/box.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/tensor_ops.h"

/* Keeps the first k of list[0..n) (and of its companion list, when given), after
 * reservoir sampling when rng is given. */
static int64_t gpl_sample(int32_t *list, int32_t *comp, int64_t n, int64_t k, rill_rng *rng) {
  if (n <= k) return n;
  if (rng)
    for (int64_t i = k; i < n; i++) {
      int64_t r = (int64_t)floor(rill_rng_uniform(rng) * (double)i);
      if (r >= k) continue;
      int32_t t = list[r];
      list[r] = list[i], list[i] = t;
      if (comp) t = comp[r], comp[r] = comp[i], comp[i] = t;
    }
  return k;
}

/* Image i's rows [lo, hi) of a one-level-LoD input, or an error naming it. */
static rill_status *gpl_rows(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *t,
                             int64_t nimg, int64_t i, int64_t *lo, int64_t *hi) {
  const rill_lod_level *lv = &t->lod.levels[0];
  if (t->lod.nlevels != 1 || (int64_t)lv->n != nimg + 1)
    return rill_kernel_error(ctx, "input %s (%s) needs one LoD level over the %lld images of "
                             "RpnRois", ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0),
                             (long long)nimg);
  *lo = (int64_t)lv->offsets[i];
  *hi = (int64_t)lv->offsets[i + 1];
  int64_t rows = t->dims.n ? t->dims.d[0] : 0;
  if (*lo > *hi || *hi > rows)
    return rill_kernel_error(ctx, "input %s (%s): its LoD does not fit its %lld rows",
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0),
                             (long long)rows);
  return NULL;
}

#define GEN_PROPOSAL_LABELS(T, DT, NAME)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *rois = NULL, *cls = NULL, *crowd = NULL, *gtb = NULL, *info = NULL, *out[5];  \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &rois));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT32, &cls));                                \
    RILL_TRY(rill_kin_need(ctx, 2, 0, RILL_DTYPE_INT32, &crowd));                              \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &gtb));                                              \
    RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &info));                                             \
    for (size_t i = 0; i < 5; i++)                                                             \
      if (!(out[i] = rill_kout(ctx, i, 0)))                                                    \
        return rill_kernel_error(ctx, "output %s (%s) is missing or not a dense tensor",       \
                                 ctx->schema->outputs[i].name, rill_kout_name(ctx, i, 0));     \
    const rill_attr_value *at = ctx->attrs;                                                    \
    int32_t batch = at[RILL_GENERATE_PROPOSAL_LABELS_ATTR_BATCH_SIZE_PER_IM].v.i;              \
    float frac = at[RILL_GENERATE_PROPOSAL_LABELS_ATTR_FG_FRACTION].v.f;                       \
    float fg_t = at[RILL_GENERATE_PROPOSAL_LABELS_ATTR_FG_THRESH].v.f;                         \
    float bg_hi = at[RILL_GENERATE_PROPOSAL_LABELS_ATTR_BG_THRESH_HI].v.f;                     \
    float bg_lo = at[RILL_GENERATE_PROPOSAL_LABELS_ATTR_BG_THRESH_LO].v.f;                     \
    const rill_attr_value *wv = &at[RILL_GENERATE_PROPOSAL_LABELS_ATTR_BBOX_REG_WEIGHTS];      \
    const float *wts = wv->n == 4 ? wv->list.floats : NULL;                                    \
    int64_t classes = at[RILL_GENERATE_PROPOSAL_LABELS_ATTR_CLASS_NUMS].v.i;                   \
    bool agnostic = at[RILL_GENERATE_PROPOSAL_LABELS_ATTR_IS_CLS_AGNOSTIC].v.b;                \
    char s[RILL_DIMS_STR_MAX];                                                                 \
    if (rois->dims.n != 2 || rois->dims.d[1] != 4)                                             \
      return rill_kernel_error(ctx, "input RpnRois (%s) has shape %s, expected [R, 4]",        \
                               rill_kin_name(ctx, 0, 0), rill_dims_str(&rois->dims, s, sizeof s)); \
    if (gtb->dims.n != 2 || gtb->dims.d[1] != 4)                                               \
      return rill_kernel_error(ctx, "input GtBoxes (%s) has shape %s, expected [G, 4]",        \
                               rill_kin_name(ctx, 3, 0), rill_dims_str(&gtb->dims, s, sizeof s)); \
    if (rois->lod.nlevels != 1)                                                                \
      return rill_kernel_error(ctx, "input RpnRois (%s) needs one LoD level giving each "      \
                               "image's proposals", rill_kin_name(ctx, 0, 0));                 \
    int64_t nimg = (int64_t)rois->lod.levels[0].n - 1, g = gtb->dims.d[0];                     \
    if (rill_tensor_numel(cls) != g || rill_tensor_numel(crowd) != g)                          \
      return rill_kernel_error(ctx, "inputs GtClasses (%s) and IsCrowd (%s) need one value "   \
                               "per row of GtBoxes (%s), %lld", rill_kin_name(ctx, 1, 0),      \
                               rill_kin_name(ctx, 2, 0), rill_kin_name(ctx, 3, 0), (long long)g); \
    if (info->dims.n != 2 || info->dims.d[1] != 3 || info->dims.d[0] != nimg)                  \
      return rill_kernel_error(ctx, "input ImInfo (%s) has shape %s, RpnRois (%s) %lld images " \
                               "in its LoD: expected [%lld, 3]", rill_kin_name(ctx, 4, 0),     \
                               rill_dims_str(&info->dims, s, sizeof s), rill_kin_name(ctx, 0, 0), \
                               (long long)nimg, (long long)nimg);                              \
    int64_t r_all = rois->dims.d[0];                                                           \
    if (r_all + g > INT32_MAX)                                                                 \
      return rill_kernel_error(ctx, "input RpnRois (%s): too many proposals", rill_kin_name(ctx, 0, 0)); \
    bool use_random = at[RILL_GENERATE_PROPOSAL_LABELS_ATTR_USE_RANDOM].v.b;                   \
    rill_rng rng;                                                                              \
    if (use_random) rill_rng_seed(&rng, rill_random_run_seed(ctx));                            \
    size_t cap = (size_t)(r_all + g > 0 ? r_all + g : 1), width = (size_t)(4 * classes);       \
    T *box = rill_malloc(cap * 4 * sizeof *box);                                               \
    int32_t *fg = rill_malloc(cap * sizeof *fg), *fg_gt = rill_malloc(cap * sizeof *fg_gt);    \
    int32_t *bg = rill_malloc(cap * sizeof *bg);                                               \
    T *o_rois = rill_malloc(cap * 4 * sizeof *o_rois);                                         \
    int32_t *o_lab = rill_malloc(cap * sizeof *o_lab);                                         \
    T *o_tgt = rill_calloc(cap * width, sizeof *o_tgt), *o_w = rill_calloc(cap * width, sizeof *o_w); \
    uint64_t *offs = rill_malloc((size_t)(nimg + 1) * sizeof *offs);                           \
    rill_status *st = NULL;                                                                    \
    if (!box || !fg || !fg_gt || !bg || !o_rois || !o_lab || !o_tgt || !o_w || !offs) {        \
      st = rill_oom();                                                                         \
      goto done;                                                                               \
    }                                                                                          \
    const T *rp = rill_tensor_ptr(rois), *gp = rill_tensor_ptr(gtb), *ip = rill_tensor_ptr(info); \
    const int32_t *cp = rill_tensor_ptr(cls), *crp = rill_tensor_ptr(crowd);                   \
    offs[0] = 0;                                                                               \
    for (int64_t i = 0; i < nimg; i++) {                                                       \
      int64_t r0, r1, g0, g1, c0, c1, k0, k1;                                                  \
      if ((st = gpl_rows(ctx, 0, rois, nimg, i, &r0, &r1)) ||                                  \
          (st = gpl_rows(ctx, 3, gtb, nimg, i, &g0, &g1)) ||                                   \
          (st = gpl_rows(ctx, 1, cls, nimg, i, &c0, &c1)) ||                                   \
          (st = gpl_rows(ctx, 2, crowd, nimg, i, &k0, &k1)))                                   \
        goto done;                                                                             \
      if (c1 - c0 != g1 - g0 || k1 - k0 != g1 - g0) {                                          \
        st = rill_kernel_error(ctx, "inputs GtClasses (%s), IsCrowd (%s) and GtBoxes (%s) "    \
                               "differ in image %lld's rows", rill_kin_name(ctx, 1, 0),        \
                               rill_kin_name(ctx, 2, 0), rill_kin_name(ctx, 3, 0), (long long)i); \
        goto done;                                                                             \
      }                                                                                        \
      T scale = ip[i * 3 + 2];                                                                 \
      int64_t ng = g1 - g0, np = ng + (r1 - r0), nfg = 0, nbg = 0;                             \
      const T *gt = gp + g0 * 4;                                                               \
      memcpy(box, gt, (size_t)ng * 4 * sizeof *box);                                           \
      for (int64_t k = 0; k < (r1 - r0) * 4; k++) box[ng * 4 + k] = rp[r0 * 4 + k] / scale;    \
      for (int64_t p = 0; p < np; p++) {                                                       \
        T best = ng ? -INFINITY : 0;                                                           \
        for (int64_t j = 0; j < ng; j++) {                                                     \
          T v = rill_box_overlap_px(box + p * 4, gt + j * 4);                                  \
          if (v > best) best = v;                                                              \
        }                                                                                      \
        if (p < ng && crp[k0 + p]) best = -1;                                                  \
        if (best >= fg_t) {                                                                    \
          for (int64_t j = 0; j < ng; j++)                                                     \
            if (fabs((double)(best - rill_box_overlap_px(box + p * 4, gt + j * 4))) < 1e-5) {  \
              fg[nfg] = (int32_t)p, fg_gt[nfg++] = (int32_t)j;                                 \
              break;                                                                           \
            }                                                                                  \
        } else if (best >= bg_lo && best < bg_hi) {                                            \
          bg[nbg++] = (int32_t)p;                                                              \
        }                                                                                      \
      }                                                                                        \
      int64_t fg_quota = (int64_t)floorf((float)batch * frac);                                 \
      nfg = gpl_sample(fg, fg_gt, nfg, fg_quota < nfg ? fg_quota : nfg, use_random ? &rng : NULL); \
      int64_t bg_quota = batch - nfg;                                                          \
      nbg = gpl_sample(bg, NULL, nbg, bg_quota < nbg ? (bg_quota > 0 ? bg_quota : 0) : nbg,   \
                       use_random ? &rng : NULL);                                              \
      int64_t o0 = (int64_t)offs[i];                                                           \
      for (int64_t k = 0; k < nfg + nbg; k++) {                                                \
        int64_t row = o0 + k;                                                                  \
        bool is_fg = k < nfg;                                                                  \
        const T *b = box + (int64_t)(is_fg ? fg[k] : bg[k - nfg]) * 4;                         \
        for (int q = 0; q < 4; q++) o_rois[row * 4 + q] = b[q] * scale;                        \
        int32_t label = is_fg ? cp[c0 + fg_gt[k]] : 0;                                         \
        o_lab[row] = label;                                                                    \
        if (label <= 0) continue;                                                              \
        int64_t col = agnostic ? 1 : label;                                                    \
        if (col >= classes) {                                                                  \
          st = rill_kernel_error(ctx, "input GtClasses (%s) holds class %d, beyond class_nums " \
                                 "%lld", rill_kin_name(ctx, 1, 0), label, (long long)classes); \
          goto done;                                                                           \
        }                                                                                      \
        T *t = o_tgt + row * (int64_t)width + col * 4;                                         \
        rill_box_delta(b, gt + (int64_t)fg_gt[k] * 4, wts, false, t);                          \
        for (int q = 0; q < 4; q++) o_w[row * (int64_t)width + col * 4 + q] = 1;               \
      }                                                                                        \
      offs[i + 1] = offs[i] + (uint64_t)(nfg + nbg);                                           \
    }                                                                                          \
    {                                                                                          \
      int64_t n = (int64_t)offs[nimg];                                                         \
      rill_dims d4 = {.n = 2, .d = {n, 4}}, d1 = {.n = 2, .d = {n, 1}};                        \
      rill_dims dc = {.n = 2, .d = {n, (int64_t)width}};                                       \
      const rill_dims *dims[5] = {&d4, &d1, &dc, &dc, &dc};                                    \
      const rill_dtype dts[5] = {DT, RILL_DTYPE_INT32, DT, DT, DT};                            \
      const void *src[5] = {o_rois, o_lab, o_tgt, o_w, o_w};                                   \
      size_t nl = (size_t)nimg + 1;                                                            \
      for (size_t q = 0; q < 5; q++) {                                                         \
        if ((st = rill_tensor_alloc(out[q], dts[q], dims[q]))) goto done;                      \
        size_t bytes = (size_t)rill_tensor_numel(out[q]) * rill_dtype_size(dts[q]);            \
        if (bytes) memcpy(rill_tensor_ptr(out[q]), src[q], bytes);                             \
        if ((st = rill_tensor_set_lod(out[q], 1, (const uint64_t *const[]){offs}, &nl)))       \
          goto done;                                                                           \
      }                                                                                        \
    }                                                                                          \
  done:                                                                                        \
    rill_free(box), rill_free(fg), rill_free(fg_gt), rill_free(bg), rill_free(o_rois);         \
    rill_free(o_lab), rill_free(o_tgt), rill_free(o_w), rill_free(offs);                       \
    return st;                                                                                 \
  }

GEN_PROPOSAL_LABELS(float, RILL_DTYPE_FP32, rill_cpu_generate_proposal_labels_fp32)
GEN_PROPOSAL_LABELS(double, RILL_DTYPE_FP64, rill_cpu_generate_proposal_labels_fp64)
