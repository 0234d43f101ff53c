/* Helpers shared by the detection ops' schemas and kernels (prior_box,
 * density_prior_box, anchor_generator, box_coder, yolo_box, multiclass_nms,
 * generate_mask_labels). */
#ifndef RILL_OPERATORS_DETECTION_H
#define RILL_OPERATORS_DETECTION_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "operators/op_util.h"

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

/* generate_mask_labels' attributes: a positive num_classes and resolution whose
 * num_classes * resolution^2 mask row fits an int32. */
static inline bool rill_mask_labels_attrs_ok(int64_t num_classes, int64_t resolution) {
  return num_classes > 0 && resolution > 0 && resolution <= 46340 &&
         num_classes <= INT32_MAX / (resolution * resolution);
}

#endif
