/* What the ROI kernels (roi_pool, roi_align, roi_perspective_transform and their
 * gradients) share: the image of each region of interest. */
#ifndef RILL_KERNELS_CPU_ROI_H
#define RILL_KERNELS_CPU_ROI_H

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

/* No input slot splits the ROIs: only their LoD does. */
#define RILL_ROI_NO_SLOT ((size_t)-1)

/* ROIs (input slot `rois_slot`, [R, 4] or [R, 8]) are split into the `batch` images of X by input
 * slot `lod_slot` when it is given (not RILL_ROI_NO_SLOT) and fed, else by ROIs' last LoD
 * level. That input holds int64 offsets [batch + 1] (RoisLod), or with `counts` int64 ROI
 * counts [batch] (BatchRoINums). *ids receives a new array of R image indices (rill_free
 * it). */
static inline rill_status *rill_roi_image_ids(const rill_kernel_ctx *ctx, size_t rois_slot,
                                              size_t lod_slot, bool counts, int64_t batch,
                                              int32_t **ids) {
  const rill_tensor *rois = rill_kin(ctx, rois_slot, 0);
  const rill_tensor *lt = lod_slot == RILL_ROI_NO_SLOT ? NULL : rill_kin(ctx, lod_slot, 0);
  int64_t r = rois->dims.d[0];
  const uint64_t *offs = NULL;
  const int64_t *loffs = NULL;
  int64_t n, *summed = NULL;
  if (lt) {
    const char *slot = ctx->schema->inputs[lod_slot].name;
    if (!rill_tensor_is_set(lt) || lt->dtype != RILL_DTYPE_INT64)
      return rill_kernel_error(ctx, "input %s (%s) must hold int64 %s", slot,
                               rill_kin_name(ctx, lod_slot, 0), counts ? "counts" : "offsets");
    n = rill_tensor_numel(lt) - (counts ? 0 : 1);
    loffs = rill_tensor_ptr(lt);
    if (counts && n == batch) {
      summed = rill_malloc((size_t)(n + 1) * sizeof *summed);
      if (!summed) return rill_oom();
      summed[0] = 0;
      for (int64_t i = 0; i < n; i++) /* a count out of [0, R] fails the check below */
        summed[i + 1] = summed[i] + (loffs[i] >= 0 && loffs[i] <= r ? loffs[i] : r + 1);
      loffs = summed;
    }
  } else {
    if (rois->lod.nlevels == 0)
      return rill_kernel_error(ctx, "input ROIs (%s) has no LoD and there is no RoisLod: the "
                               "image of each ROI is unknown", rill_kin_name(ctx, rois_slot, 0));
    const rill_lod_level *lv = &rois->lod.levels[rois->lod.nlevels - 1];
    n = (int64_t)lv->n - 1;
    offs = lv->offsets;
  }
  if (n != batch)
    return rill_kernel_error(ctx, "input ROIs (%s) is split into %lld images, X has %lld",
                             rill_kin_name(ctx, rois_slot, 0), (long long)n, (long long)batch);
  int32_t *out = rill_malloc((size_t)(r > 0 ? r : 1) * sizeof *out);
  if (!out) {
    rill_free(summed);
    return rill_oom();
  }
  int64_t prev = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t lo = loffs ? loffs[i] : (int64_t)offs[i], hi = loffs ? loffs[i + 1] : (int64_t)offs[i + 1];
    if (lo != prev || hi < lo || hi > r) {
      rill_free(out);
      rill_free(summed);
      return rill_kernel_error(ctx, "input ROIs (%s): its image offsets do not cover its %lld "
                               "rows in order", rill_kin_name(ctx, rois_slot, 0), (long long)r);
    }
    for (int64_t k = lo; k < hi; k++) out[k] = (int32_t)i;
    prev = hi;
  }
  rill_free(summed);
  if (prev != r) {
    rill_free(out);
    return rill_kernel_error(ctx, "input ROIs (%s): its image offsets cover %lld of its %lld rows",
                             rill_kin_name(ctx, rois_slot, 0), (long long)prev, (long long)r);
  }
  *ids = out;
  return NULL;
}

#endif
