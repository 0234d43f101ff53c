/* Helpers shared by the detection ops' schemas and kernels (prior_box,
 * density_prior_box, anchor_generator, box_coder, yolo_box, multiclass_nms, the ROI
 * pooling ops). */
#ifndef RILL_OPERATORS_DETECTION_H
#define RILL_OPERATORS_DETECTION_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "operators/op_util.h"

/* The feature map and regions of the ROI pooling ops, both described: input slot x_slot
 * float32 or float64 [N, C, H, W], input slot rois_slot of its dtype, [R, 4]. */
static inline rill_status *rill_roi_check_map(rill_infer_ctx *ctx, size_t x_slot,
                                              size_t rois_slot) {
  const rill_tensor_meta *x = rill_infer_in(ctx, x_slot, 0), *rois = rill_infer_in(ctx, rois_slot, 0);
  const char *xs = ctx->schema->inputs[x_slot].name, *rs = ctx->schema->inputs[rois_slot].name;
  const char *xn = rill_infer_in_name(ctx, x_slot, 0), *rn = rill_infer_in_name(ctx, rois_slot, 0);
  char s[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input %s (%s) is %s, expected float32 or float64", xs, xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 4)
    return rill_infer_error(ctx, "input %s (%s) has shape %s, expected [N, C, H, W]", xs, xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  if (rois->dtype != x->dtype || rois->dims.n != 2 ||
      (rois->dims.d[1] >= 0 && rois->dims.d[1] != 4))
    return rill_infer_error(ctx, "input %s (%s) is %s %s, expected %s [R, 4]", rs, rn,
                            rill_dtype_name(rois->dtype), rill_dims_str(&rois->dims, s, sizeof s),
                            rill_dtype_name(x->dtype));
  return NULL;
}

/* prior_box's aspect ratios as Paddle expands them: 1 first, then each given ratio not
 * already present (within 1e-6), followed by its inverse when `flip`. `out` has room for
 * 1 + 2 * n values; returns how many were written. */
static inline size_t rill_prior_box_ratios(const float *in, size_t n, bool flip, float *out) {
  size_t k = 0;
  out[k++] = 1.0f;
  for (size_t i = 0; i < n; i++) {
    bool seen = false;
    for (size_t j = 0; j < k && !seen; j++) seen = fabsf(in[i] - out[j]) < 1e-6f;
    if (seen) continue;
    out[k++] = in[i];
    if (flip) out[k++] = 1.0f / in[i];
  }
  return k;
}

/* The common part of the anchor ops' inference (prior_box, density_prior_box,
 * anchor_generator): the feature map Input (input slot 0) is a float32 or float64
 * [N, C, H, W] and, with `has_image`, Image (input slot 1) is 4-D. While an input has no
 * description both outputs (slots 0 and 1) are marked unknown and *ready is false. */
static inline rill_status *rill_anchor_infer_inputs(rill_infer_ctx *ctx, bool has_image,
                                                    bool *ready) {
  const rill_tensor_meta *in = rill_infer_in(ctx, 0, 0);
  const rill_tensor_meta *img = has_image ? rill_infer_in(ctx, 1, 0) : NULL;
  rill_tensor_meta *o0 = rill_infer_out(ctx, 0, 0), *o1 = rill_infer_out(ctx, 1, 0);
  *ready = false;
  if (!in || (has_image && !img) || !o0 || !o1)
    return rill_infer_error(ctx, "needs input Input%s and outputs %s and %s",
                            has_image ? " and Image" : "", ctx->schema->outputs[0].name,
                            ctx->schema->outputs[1].name);
  if (!in->known || (img && !img->known)) {
    rill_meta_unknown(o0);
    rill_meta_unknown(o1);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  if (in->dims.n != 4)
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [N, C, H, W]",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&in->dims, s, sizeof s));
  if (img && img->dims.n != 4)
    return rill_infer_error(ctx, "input Image (%s) has shape %s, expected [N, C, H, W]",
                            rill_infer_in_name(ctx, 1, 0), rill_dims_str(&img->dims, s, sizeof s));
  if (in->dtype != RILL_DTYPE_FP32 && in->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(in->dtype));
  *ready = true;
  return NULL;
}

#endif
