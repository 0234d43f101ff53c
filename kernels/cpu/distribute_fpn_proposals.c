/* distribute_fpn_proposals CPU kernels, Paddle's arithmetic in the boxes' type: the
 * level is floor(log2(sqrt(area) / refer_scale) + refer_level), area (w + 1) * (h + 1)
 * (0 for an inverted box, which goes to min_level), clamped to [min_level, max_level].
 * Each level keeps its rows in input order, with a LoD over the images. */
#include <math.h>

#include "kernels/cpu/nms.h"

#define DFP_KERNEL(T, DT, NAME, SQRT, LOG2, FLOOR)                                             \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *rois = NULL, *restore = NULL;                                                 \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &rois));                                             \
    restore = rill_kout(ctx, 1, 0);                                                            \
    int32_t lo = ctx->attrs[RILL_DISTRIBUTE_FPN_PROPOSALS_ATTR_MIN_LEVEL].v.i;                 \
    int32_t hi = ctx->attrs[RILL_DISTRIBUTE_FPN_PROPOSALS_ATTR_MAX_LEVEL].v.i;                 \
    int32_t rl = ctx->attrs[RILL_DISTRIBUTE_FPN_PROPOSALS_ATTR_REFER_LEVEL].v.i;               \
    int32_t rs = ctx->attrs[RILL_DISTRIBUTE_FPN_PROPOSALS_ATTR_REFER_SCALE].v.i;               \
    size_t nl = ctx->nout[0];                                                                  \
    if (!restore || hi < lo || (int64_t)hi - lo + 1 != (int64_t)nl || rs <= 0)                 \
      return rill_kernel_error(ctx, "needs output RestoreIndex and max_level - min_level + 1 " \
                               "outputs MultiFpnRois (has %zu for levels %d to %d) and a "     \
                               "positive refer_scale (%d)", nl, lo, hi, rs);                   \
    if (rois->dims.n != 2 || rois->dims.d[1] != 4)                                             \
      return rill_kernel_error(ctx, "input FpnRois (%s) must be [R, 4] boxes",                 \
                               rill_kin_name(ctx, 0, 0));                                      \
    if (rois->lod.nlevels != 1)                                                                \
      return rill_kernel_error(ctx, "input FpnRois (%s) needs one LoD level (the images), "    \
                               "has %zu", rill_kin_name(ctx, 0, 0), rois->lod.nlevels);        \
    const rill_lod_level *lv = &rois->lod.levels[0];                                           \
    int64_t r = rois->dims.d[0];                                                               \
    if (lv->n < 1 || lv->offsets[lv->n - 1] != (uint64_t)r)                                    \
      return rill_kernel_error(ctx, "input FpnRois (%s): its LoD does not end at its %lld "    \
                               "rows", rill_kin_name(ctx, 0, 0), (long long)r);                \
    for (size_t i = 0; i < nl; i++)                                                            \
      if (!rill_kout(ctx, 0, i))                                                               \
        return rill_kernel_error(ctx, "output MultiFpnRois (%s) is missing",                   \
                                 rill_kout_name(ctx, 0, i));                                   \
    size_t nimg = lv->n - 1;                                                                   \
    int32_t *level = rill_malloc((size_t)(r > 0 ? r : 1) * sizeof *level);                     \
    int64_t *count = rill_calloc(nl, sizeof *count);                                           \
    uint64_t *offs = rill_malloc(nl * (nimg + 1) * sizeof *offs);                              \
    rill_status *st = NULL;                                                                    \
    if (!level || !count || !offs) {                                                           \
      st = rill_oom();                                                                         \
      goto done;                                                                               \
    }                                                                                          \
    const T *b = rill_tensor_ptr(rois);                                                        \
    for (int64_t i = 0; i < r; i++) {                                                          \
      T scale = SQRT(rill_nms_area(b + i * 4, false));                                         \
      T v = FLOOR(LOG2(scale / (T)rs) + (T)rl);                                                \
      int32_t l = !(v >= (T)lo) ? lo : v > (T)hi ? hi : (int32_t)v;                            \
      level[i] = l - lo;                                                                       \
      count[l - lo]++;                                                                         \
    }                                                                                          \
    T *dst[64];                                                                                \
    if (nl > 64) {                                                                             \
      st = rill_kernel_error(ctx, "has %zu levels, more than 64", nl);                         \
      goto done;                                                                               \
    }                                                                                          \
    int64_t base[65];                                                                          \
    base[0] = 0;                                                                               \
    for (size_t l = 0; l < nl; l++) {                                                          \
      rill_dims d = {.n = 2, .d = {count[l], 4}};                                              \
      rill_tensor *o = rill_kout(ctx, 0, l);                                                   \
      if ((st = rill_tensor_alloc(o, DT, &d))) goto done;                                      \
      dst[l] = rill_tensor_ptr(o);                                                             \
      base[l + 1] = base[l] + count[l];                                                        \
      offs[l * (nimg + 1)] = 0;                                                                \
      count[l] = 0;                                                                            \
    }                                                                                          \
    rill_dims rd = {.n = 2, .d = {r, 1}};                                                      \
    if ((st = rill_tensor_alloc(restore, RILL_DTYPE_INT32, &rd))) goto done;                   \
    rill_lod_clear(&restore->lod);                                                             \
    int32_t *ri = rill_tensor_ptr(restore);                                                    \
    for (size_t im = 0; im < nimg; im++) {                                                     \
      for (uint64_t i = lv->offsets[im]; i < lv->offsets[im + 1]; i++) {                       \
        int32_t l = level[i];                                                                  \
        memcpy(dst[l] + count[l] * 4, b + i * 4, 4 * sizeof(T));                               \
        ri[i] = (int32_t)(base[l] + count[l]);                                                 \
        count[l]++;                                                                            \
      }                                                                                        \
      for (size_t l = 0; l < nl; l++) offs[l * (nimg + 1) + im + 1] = (uint64_t)count[l];      \
    }                                                                                          \
    size_t nstarts = nimg + 1;                                                                 \
    for (size_t l = 0; l < nl; l++) {                                                          \
      const uint64_t *lod[] = {offs + l * nstarts};                                            \
      if ((st = rill_tensor_set_lod(rill_kout(ctx, 0, l), 1, lod, &nstarts))) goto done;       \
    }                                                                                          \
  done:                                                                                        \
    rill_free(level);                                                                          \
    rill_free(count);                                                                          \
    rill_free(offs);                                                                           \
    return st;                                                                                 \
  }

DFP_KERNEL(float, RILL_DTYPE_FP32, rill_cpu_distribute_fpn_proposals_fp32, sqrtf, log2f, floorf)
DFP_KERNEL(double, RILL_DTYPE_FP64, rill_cpu_distribute_fpn_proposals_fp64, sqrt, log2, floor)
