/* Helpers shared by the detection ops' schemas and kernels (prior_box,
 * density_prior_box, anchor_generator, box_coder, yolo_box, the NMS ops multiclass_nms,
 * matrix_nms, locality_aware_nms, and the target-assignment ops rpn_target_assign,
 * retinanet_target_assign, generate_proposal_labels, generate_mask_labels, and the ROI
 * pooling ops). */
#ifndef RILL_OPERATORS_DETECTION_H
#define RILL_OPERATORS_DETECTION_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "operators/op_util.h"

/* The feature map and regions of the ROI ops, both described: input slot x_slot
 * float32 or float64 [N, C, H, W], input slot rois_slot of its dtype, [R, cols] (4 for
 * boxes, 8 for roi_perspective_transform's quadrilaterals). */
static inline rill_status *rill_roi_check_map(rill_infer_ctx *ctx, size_t x_slot,
                                              size_t rois_slot, int64_t cols) {
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
      (rois->dims.d[1] >= 0 && rois->dims.d[1] != cols))
    return rill_infer_error(ctx, "input %s (%s) is %s %s, expected %s [R, %lld]", rs, rn,
                            rill_dtype_name(rois->dtype), rill_dims_str(&rois->dims, s, sizeof s),
                            rill_dtype_name(x->dtype), (long long)cols);
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

/* Input `slot`'s dtype dt must be float32 or float64, the detection ops' box types. */
static inline rill_status *rill_detection_infer_float(rill_infer_ctx *ctx, size_t slot,
                                                      rill_dtype dt) {
  if (dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input %s (%s) is %s, expected float32 or float64",
                            ctx->schema->inputs[slot].name, rill_infer_in_name(ctx, slot, 0),
                            rill_dtype_name(dt));
  return NULL;
}

/* The NMS ops' BBoxes (input slot 0) and Scores (input slot 1): float32 or float64, the
 * same for both. */
static inline rill_status *rill_nms_infer_dtypes(rill_infer_ctx *ctx,
                                                 const rill_tensor_meta *boxes,
                                                 const rill_tensor_meta *scores) {
  const char *bn = rill_infer_in_name(ctx, 0, 0);
  RILL_TRY(rill_detection_infer_float(ctx, 0, boxes->dtype));
  if (scores->dtype != boxes->dtype)
    return rill_infer_error(ctx, "input Scores (%s) is %s, BBoxes (%s) %s: they must agree",
                            rill_infer_in_name(ctx, 1, 0), rill_dtype_name(scores->dtype), bn,
                            rill_dtype_name(boxes->dtype));
  return NULL;
}

/* BBoxes' last dim (unknown passes) must be 4: polygon boxes (8 to 32 coordinates) are
 * reported as unimplemented. */
static inline rill_status *rill_nms_infer_box_dim(rill_infer_ctx *ctx, const rill_dims *bd) {
  char a[RILL_DIMS_STR_MAX];
  int64_t last = bd->d[bd->n - 1];
  const char *bn = rill_infer_in_name(ctx, 0, 0);
  if (last == 8 || last == 16 || last == 24 || last == 32)
    return rill_error(RILL_UNIMPLEMENTED, "%s: input BBoxes (%s) has shape %s: polygon boxes "
                      "(%lld coordinates) are not supported, only [xmin, ymin, xmax, ymax]",
                      ctx->schema->type, bn, rill_dims_str(bd, a, sizeof a), (long long)last);
  if (last >= 0 && last != 4)
    return rill_infer_error(ctx, "input BBoxes (%s) has shape %s: the last dim must be 4", bn,
                            rill_dims_str(bd, a, sizeof a));
  return NULL;
}

/* matrix_nms's and locality_aware_nms's layout: BBoxes [N, M, 4] shared by the classes,
 * Scores [N, C, M] (unknown dims agree with anything), with the dtypes above. */
static inline rill_status *rill_nms_infer_batched(rill_infer_ctx *ctx,
                                                  const rill_tensor_meta *boxes,
                                                  const rill_tensor_meta *scores) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *bn = rill_infer_in_name(ctx, 0, 0), *sn = rill_infer_in_name(ctx, 1, 0);
  const rill_dims *bd = &boxes->dims, *sd = &scores->dims;
  RILL_TRY(rill_nms_infer_dtypes(ctx, boxes, scores));
  if (bd->n != 3)
    return rill_infer_error(ctx, "input BBoxes (%s) has shape %s, expected [N, M, 4]", bn,
                            rill_dims_str(bd, a, sizeof a));
  RILL_TRY(rill_nms_infer_box_dim(ctx, bd));
  if (sd->n != 3 || (sd->d[2] >= 0 && bd->d[1] >= 0 && sd->d[2] != bd->d[1]) ||
      (sd->d[0] >= 0 && bd->d[0] >= 0 && sd->d[0] != bd->d[0]))
    return rill_infer_error(ctx, "input Scores (%s) has shape %s, BBoxes (%s) %s: expected "
                            "[N, C, M] scores for [N, M, 4] boxes", sn,
                            rill_dims_str(sd, a, sizeof a), bn, rill_dims_str(bd, b, sizeof b));
  return NULL;
}

/* The inputs of the target-assignment ops (rpn_target_assign, retinanet_target_assign,
 * generate_proposal_labels): every slot bound; the slots whose bit is set in int_slots
 * int32, the others rank 2 of input 0's dtype, float32 or float64 (*dt). While an input
 * has no description every output is marked unknown and *ready is false. */
static inline rill_status *rill_target_infer_inputs(rill_infer_ctx *ctx, unsigned int_slots,
                                                    rill_dtype *dt, bool *ready) {
  const rill_op_schema *sc = ctx->schema;
  bool known = true;
  *ready = false;
  for (size_t i = 0; i < sc->ninputs; i++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, i, 0);
    if (!m) return rill_infer_error(ctx, "needs input %s", sc->inputs[i].name);
    known = known && m->known;
  }
  for (size_t i = 0; i < sc->noutputs; i++)
    if (!rill_infer_out(ctx, i, 0)) return rill_infer_error(ctx, "needs output %s", sc->outputs[i].name);
  if (!known) {
    for (size_t i = 0; i < sc->noutputs; i++) rill_meta_unknown(rill_infer_out(ctx, i, 0));
    return NULL;
  }
  *dt = rill_infer_in(ctx, 0, 0)->dtype;
  RILL_TRY(rill_detection_infer_float(ctx, 0, *dt));
  char s[RILL_DIMS_STR_MAX];
  for (size_t i = 0; i < sc->ninputs; i++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, i, 0);
    bool ints = (int_slots >> i) & 1u;
    rill_dtype want = ints ? RILL_DTYPE_INT32 : *dt;
    if (m->dtype != want)
      return rill_infer_error(ctx, "input %s (%s) is %s, expected %s", sc->inputs[i].name,
                              rill_infer_in_name(ctx, i, 0), rill_dtype_name(m->dtype),
                              rill_dtype_name(want));
    if (!ints && m->dims.n != 2)
      return rill_infer_error(ctx, "input %s (%s) has shape %s, expected rank 2",
                              sc->inputs[i].name, rill_infer_in_name(ctx, i, 0),
                              rill_dims_str(&m->dims, s, sizeof s));
  }
  *ready = true;
  return NULL;
}

/* The first five outputs of rpn_target_assign and retinanet_target_assign, one LoD level
 * each: LocationIndex and ScoreIndex int32 [-1], TargetBBox [-1, 4] of dt, TargetLabel
 * int32 [-1, 1], BBoxInsideWeight [-1, 4] of dt. */
static inline void rill_anchor_target_outputs(rill_infer_ctx *ctx, rill_dtype dt) {
  rill_dims d1 = {.n = 1, .d = {-1}}, d4 = {.n = 2, .d = {-1, 4}}, dl = {.n = 2, .d = {-1, 1}};
  const rill_dims *dims[5] = {&d1, &d1, &d4, &dl, &d4};
  const rill_dtype dts[5] = {RILL_DTYPE_INT32, RILL_DTYPE_INT32, dt, RILL_DTYPE_INT32, dt};
  for (size_t i = 0; i < 5; i++) rill_meta_set(rill_infer_out(ctx, i, 0), dts[i], dims[i], 1, -1, -1);
}

/* generate_mask_labels' attributes: a positive num_classes and resolution whose
 * num_classes * resolution^2 mask row fits an int32. */
static inline bool rill_mask_labels_attrs_ok(int64_t num_classes, int64_t resolution) {
  return num_classes > 0 && resolution > 0 && resolution <= 46340 &&
         num_classes <= INT32_MAX / (resolution * resolution);
}

#endif
