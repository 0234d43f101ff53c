/* density_prior_box: prior boxes laid densely over each cell of a feature map. For each
 * fixed size s (with density d_s) and fixed ratio r, a d_s x d_s grid of boxes of width
 * size * sqrt(r) and height size / sqrt(r) spread over the cell; coordinates normalised
 * by Image's width and height and clamped to [0, 1]. Boxes and Variances are
 * [H, W, num_priors, 4], num_priors = len(ratios) * sum(d_s^2), or [H * W * num_priors,
 * 4] with flatten_to_2d. */
#include "operators/detection.h"

enum { IN_INPUT, IN_IMAGE };
enum { OUT_BOXES, OUT_VARS };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "feature map [N, C, H, W] (only its size is read)"},
    [IN_IMAGE] = {"Image", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "image [N, C, IH, IW] (only its size is read)"},
};
static const rill_slot_schema outputs[] = {
    [OUT_BOXES] = {"Boxes", 0, "[H, W, num_priors, 4] (or 2-D): xmin, ymin, xmax, ymax / image size"},
    [OUT_VARS] = {"Variances", 0, "Boxes' shape: `variances` repeated"},
};
static const rill_attr_schema attrs[] = {
    {"variances", RILL_ATTR_FLOATS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
     "the 4 variances written to every prior"},
    {"clip", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true), "clamp boxes to [0, 1]"},
    {"flatten_to_2d", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "outputs [H * W * num_priors, 4]"},
    {"step_w", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
     "cell width in pixels; 0 (or step_h 0): image width / W"},
    {"step_h", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
     "cell height in pixels; 0 (or step_w 0): image height / H"},
    {"offset", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f), "centre offset in cells"},
    {"fixed_sizes", RILL_ATTR_FLOATS, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOATS), "box sizes in pixels"},
    {"fixed_ratios", RILL_ATTR_FLOATS, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
     "width / height ratios"},
    {"densities", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "grid side per fixed size"},
};

static rill_status *density_prior_box_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *in = rill_infer_in(ctx, IN_INPUT, 0), *img = rill_infer_in(ctx, IN_IMAGE, 0);
  rill_tensor_meta *boxes = rill_infer_out(ctx, OUT_BOXES, 0), *vars = rill_infer_out(ctx, OUT_VARS, 0);
  if (!in || !img || !boxes || !vars)
    return rill_infer_error(ctx, "needs inputs Input and Image and outputs Boxes and Variances");
  const rill_attr_value *sizes = &ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_FIXED_SIZES];
  const rill_attr_value *ratios = &ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_FIXED_RATIOS];
  const rill_attr_value *dens = &ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_DENSITIES];
  const rill_attr_value *v = &ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_VARIANCES];
  if (sizes->n != dens->n)
    return rill_infer_error(ctx, "attributes fixed_sizes (%zu values) and densities (%zu) must "
                            "be equal in number", sizes->n, dens->n);
  int64_t np = 0;
  for (size_t i = 0; i < dens->n; i++) {
    if (dens->list.ints[i] <= 0)
      return rill_infer_error(ctx, "attribute densities[%zu] is %d, must be positive", i,
                              (int)dens->list.ints[i]);
    if (!(sizes->list.floats[i] > 0))
      return rill_infer_error(ctx, "attribute fixed_sizes[%zu] is %g, must be positive", i,
                              (double)sizes->list.floats[i]);
    np += (int64_t)dens->list.ints[i] * dens->list.ints[i];
  }
  for (size_t i = 0; i < ratios->n; i++)
    if (!(ratios->list.floats[i] > 0))
      return rill_infer_error(ctx, "attribute fixed_ratios[%zu] is %g, must be positive", i,
                              (double)ratios->list.floats[i]);
  np *= (int64_t)ratios->n;
  if (v->n != 4) return rill_infer_error(ctx, "attribute variances has %zu values, expected 4", v->n);
  if (ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_STEP_W].v.f < 0 || ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_STEP_H].v.f < 0)
    return rill_infer_error(ctx, "attributes step_w and step_h must not be negative");
  bool ready;
  RILL_TRY(rill_anchor_infer_inputs(ctx, true, &ready));
  if (!ready) return NULL;
  int64_t h = in->dims.d[2], w = in->dims.d[3];
  rill_dims d = {.n = 4, .d = {h, w, np, 4}};
  if (ctx->attrs[RILL_DENSITY_PRIOR_BOX_ATTR_FLATTEN_TO_2D].v.b)
    d = (rill_dims){.n = 2, .d = {h >= 0 && w >= 0 ? h * w * np : -1, 4}};
  rill_meta_set(boxes, in->dtype, &d, 0, -1, -1);
  rill_meta_set(vars, in->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_density_prior_box = {
    .type = "density_prior_box",
    .doc = "Dense grids of fixed-size prior boxes for every cell of a feature map.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = density_prior_box_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(density_prior_box);
