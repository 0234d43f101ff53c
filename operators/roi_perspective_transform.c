/* roi_perspective_transform: warp each quadrilateral region of interest of a feature map
 * onto a transformed_height x transformed_width grid. ROIs [R, 8] hold the corners
 * (x0, y0) top left, (x1, y1) top right, (x2, y2) bottom right, (x3, y3) bottom left in
 * input-image pixels (times spatial_scale on the map) and are split into X's images by
 * their LoD. Out is [R, C, th, tw]: the bilinear sample of X at the source point of each
 * output pixel under the ROI's homography (0 outside the quadrilateral or the map); Mask
 * (int32 [R, 1, th, tw]) is 1 where a sample was taken; TransformMatrix [R, 9] is the
 * row-major homography from output (w, h, 1) to source points.
 * Out2InIdx and Out2InWeights are declared as in Paddle 1.8.5, whose CPU kernel leaves
 * them unwritten: here they take Out's shape and are zero-filled, and the gradient, like
 * Paddle's, recomputes the source points from X and ROIs. */
#include "operators/detection.h"

enum { IN_X, IN_ROIS };
enum { OUT_OUT, OUT_MASK, OUT_MATRIX, OUT_IDX, OUT_WEIGHTS };

static const rill_slot_schema persp_inputs[] = {
    [IN_X] = {"X", 0, "feature map [N, C, H, W]"},
    [IN_ROIS] = {"ROIs", RILL_SLOT_NO_GRAD, "[R, 8] quadrilaterals, one LoD level (images)"},
};
static const rill_slot_schema persp_outputs[] = {
    [OUT_OUT] = {"Out", 0, "[R, C, transformed_height, transformed_width]"},
    [OUT_MASK] = {"Mask", RILL_SLOT_DISPENSABLE, "int32 [R, 1, th, tw]: 1 where sampled"},
    [OUT_MATRIX] = {"TransformMatrix", RILL_SLOT_DISPENSABLE, "[R, 9] homography per ROI"},
    [OUT_IDX] = {"Out2InIdx", RILL_SLOT_INTERMEDIATE | RILL_SLOT_DISPENSABLE,
                 "int32, Out's shape, zero-filled (the gradient does not read it)"},
    [OUT_WEIGHTS] = {"Out2InWeights", RILL_SLOT_INTERMEDIATE | RILL_SLOT_DISPENSABLE,
                     "Out's shape and dtype, zero-filled (the gradient does not read it)"},
};
static const rill_attr_schema persp_attrs[] = {
    {"transformed_height", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output height"},
    {"transformed_width", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output width"},
    {"spatial_scale", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "map extent / image extent"},
};

/* Checks X, ROIs and the attributes; *dims receives Out's shape; false in *known while an
 * input has no description. */
static rill_status *persp_check(rill_infer_ctx *ctx, rill_dims *dims, bool *known) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *rois = rill_infer_in(ctx, IN_ROIS, 0);
  if (!x || !rois) return rill_infer_error(ctx, "needs inputs X and ROIs");
  int32_t th = ctx->attrs[0].v.i, tw = ctx->attrs[1].v.i;
  float scale = ctx->attrs[2].v.f;
  if (th <= 0 || tw <= 0)
    return rill_infer_error(ctx, "attributes transformed_height (%d) and transformed_width (%d) "
                            "must be positive", (int)th, (int)tw);
  if (!(scale > 0.0f))
    return rill_infer_error(ctx, "attribute spatial_scale (%g) must be positive", (double)scale);
  *known = x->known && rois->known;
  if (!*known) return NULL;
  RILL_TRY(rill_roi_check_map(ctx, IN_X, IN_ROIS, 8));
  *dims = (rill_dims){.n = 4, .d = {rois->dims.d[0], x->dims.d[1], th, tw}};
  return NULL;
}

static rill_status *persp_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *o[5];
  for (size_t i = 0; i < 5; i++) o[i] = rill_infer_out(ctx, i, 0);
  if (!o[OUT_OUT]) return rill_infer_error(ctx, "needs output Out");
  rill_dims d;
  bool known;
  RILL_TRY(persp_check(ctx, &d, &known));
  if (!known) {
    for (size_t i = 0; i < 5; i++)
      if (o[i]) rill_meta_unknown(o[i]);
    return NULL;
  }
  rill_dtype dt = rill_infer_in(ctx, IN_X, 0)->dtype;
  rill_dims md = {.n = 4, .d = {d.d[0], 1, d.d[2], d.d[3]}}, td = {.n = 2, .d = {d.d[0], 9}};
  rill_meta_set(o[OUT_OUT], dt, &d, 0, -1, -1);
  if (o[OUT_MASK]) rill_meta_set(o[OUT_MASK], RILL_DTYPE_INT32, &md, 0, -1, -1);
  if (o[OUT_MATRIX]) rill_meta_set(o[OUT_MATRIX], dt, &td, 0, -1, -1);
  if (o[OUT_IDX]) rill_meta_set(o[OUT_IDX], RILL_DTYPE_INT32, &d, 0, -1, -1);
  if (o[OUT_WEIGHTS]) rill_meta_set(o[OUT_WEIGHTS], dt, &d, 0, -1, -1);
  return NULL;
}

static rill_status *persp_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "ROIs", "Out2InIdx", "Out2InWeights"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "roi_perspective_transform_grad", fwd, RILL_COUNTOF(fwd), gout,
                        RILL_COUNTOF(gout), gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_roi_perspective_transform = {
    .type = "roi_perspective_transform",
    .doc = "Perspective warp of each quadrilateral region of interest to a fixed grid.",
    .inputs = persp_inputs,
    .ninputs = RILL_COUNTOF(persp_inputs),
    .outputs = persp_outputs,
    .noutputs = RILL_COUNTOF(persp_outputs),
    .attrs = persp_attrs,
    .nattrs = RILL_COUNTOF(persp_attrs),
    .infer = persp_infer,
    .grad = persp_grad_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

/* The gradient: X, ROIs, Out2InIdx, Out2InWeights (unread), Out@GRAD -> X@GRAD. */
static const rill_slot_schema persp_grad_inputs[] = {
    {"X", 0, "forward X"},
    {"ROIs", 0, "forward ROIs"},
    {"Out2InIdx", RILL_SLOT_DISPENSABLE, "forward Out2InIdx (not read)"},
    {"Out2InWeights", RILL_SLOT_DISPENSABLE, "forward Out2InWeights (not read)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema persp_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
};

static rill_status *persp_grad_infer(rill_infer_ctx *ctx) {
  rill_dims d;
  bool known;
  RILL_TRY(persp_check(ctx, &d, &known));
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!dx) return NULL;
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  if (!known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_meta_set(dx, x->dtype, &x->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_roi_perspective_transform_grad = {
    .type = "roi_perspective_transform_grad",
    .doc = "Gradient of roi_perspective_transform with respect to X.",
    .inputs = persp_grad_inputs,
    .ninputs = RILL_COUNTOF(persp_grad_inputs),
    .outputs = persp_grad_outputs,
    .noutputs = RILL_COUNTOF(persp_grad_outputs),
    .attrs = persp_attrs,
    .nattrs = RILL_COUNTOF(persp_attrs),
    .infer = persp_grad_infer,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(roi_perspective_transform);
