/* What the ROI schemas (roi_align, roi_pool, roi_perspective_transform) share: the checks
 * of the feature map X and the ROIs. */
#ifndef RILL_OPERATORS_ROI_H
#define RILL_OPERATORS_ROI_H

#include "operators/op_util.h"

/* X (input slot `x_slot`) must be float32 or float64 [N, C, H, W] and ROIs (`rois_slot`)
 * of X's dtype with `cols` columns. */
static inline rill_status *rill_roi_check_inputs(rill_infer_ctx *ctx, size_t x_slot,
                                                 size_t rois_slot, int64_t cols) {
  const rill_tensor_meta *x = rill_infer_in(ctx, x_slot, 0), *rois = rill_infer_in(ctx, rois_slot, 0);
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, x_slot, 0), *rn = rill_infer_in_name(ctx, rois_slot, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 4)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, C, H, W]", xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  if (rois->dtype != x->dtype || rois->dims.n != 2 ||
      (rois->dims.d[1] >= 0 && rois->dims.d[1] != cols))
    return rill_infer_error(ctx, "input ROIs (%s) is %s %s, expected %s [R, %lld]", rn,
                            rill_dtype_name(rois->dtype), rill_dims_str(&rois->dims, s, sizeof s),
                            rill_dtype_name(x->dtype), (long long)cols);
  return NULL;
}

#endif
