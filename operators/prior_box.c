/* prior_box: the SSD anchor boxes of one feature map. Every cell (h, w) of Input
 * [N, C, H, W] gets num_priors boxes centred at ((w + offset) * step_w,
 * (h + offset) * step_h) in Image pixels, normalised by Image's width and height:
 * Boxes and Variances are [H, W, num_priors, 4]. */
#include "operators/detection.h"
#include "operators/op_util.h"

#include "framework/base/alloc.h"

enum { IN_INPUT, IN_IMAGE };
enum { OUT_BOXES, OUT_VARS };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "feature map [N, C, H, W] (only its size is read)"},
    [IN_IMAGE] = {"Image", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "image [N, C, IH, IW] (only its size is read)"},
};
static const rill_slot_schema outputs[] = {
    [OUT_BOXES] = {"Boxes", 0, "[H, W, num_priors, 4]: xmin, ymin, xmax, ymax / image size"},
    [OUT_VARS] = {"Variances", 0, "[H, W, num_priors, 4]: `variances` repeated"},
};
static const rill_attr_schema attrs[] = {
    {"min_sizes", RILL_ATTR_FLOATS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
               "box sizes in pixels, one group of priors each"},
    {"max_sizes", RILL_ATTR_FLOATS, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
               "empty, or one per min size: adds a sqrt(min * max) square prior"},
    {"aspect_ratios", RILL_ATTR_FLOATS, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
                  "width / height ratios besides 1"},
    {"variances", RILL_ATTR_FLOATS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
                "the 4 variances written to every prior"},
    {"flip", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true), "also use 1 / ratio"},
    {"clip", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true), "clamp boxes to [0, 1]"},
    {"step_w", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
                  "cell width in pixels; 0 (or step_h 0): image width / W"},
    {"step_h", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
                  "cell height in pixels; 0 (or step_w 0): image height / H"},
    {"offset", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f), "centre offset in cells"},
    {"min_max_aspect_ratios_order", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                 "order priors min, max, ratios (Caffe's) instead of ratios, max"},
};

static rill_status *prior_box_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *in = rill_infer_in(ctx, IN_INPUT, 0), *img = rill_infer_in(ctx, IN_IMAGE, 0);
  rill_tensor_meta *boxes = rill_infer_out(ctx, OUT_BOXES, 0), *vars = rill_infer_out(ctx, OUT_VARS, 0);
  if (!in || !img || !boxes || !vars)
    return rill_infer_error(ctx, "needs inputs Input and Image and outputs Boxes and Variances");
  const rill_attr_value *mins = &ctx->attrs[RILL_PRIOR_BOX_ATTR_MIN_SIZES], *maxs = &ctx->attrs[RILL_PRIOR_BOX_ATTR_MAX_SIZES];
  const rill_attr_value *ratios = &ctx->attrs[RILL_PRIOR_BOX_ATTR_ASPECT_RATIOS], *v = &ctx->attrs[RILL_PRIOR_BOX_ATTR_VARIANCES];
  if (mins->n == 0) return rill_infer_error(ctx, "attribute min_sizes is empty");
  for (size_t i = 0; i < mins->n; i++)
    if (!(mins->list.floats[i] > 0))
      return rill_infer_error(ctx, "attribute min_sizes[%zu] is %g, must be positive", i,
                              (double)mins->list.floats[i]);
  if (maxs->n && maxs->n != mins->n)
    return rill_infer_error(ctx, "attribute max_sizes has %zu values, min_sizes %zu: they must "
                            "be equal in number", maxs->n, mins->n);
  for (size_t i = 0; i < maxs->n; i++)
    if (!(maxs->list.floats[i] > mins->list.floats[i]))
      return rill_infer_error(ctx, "attribute max_sizes[%zu] (%g) must be greater than "
                              "min_sizes[%zu] (%g)", i, (double)maxs->list.floats[i], i,
                              (double)mins->list.floats[i]);
  if (v->n != 4) return rill_infer_error(ctx, "attribute variances has %zu values, expected 4", v->n);
  for (size_t i = 0; i < ratios->n; i++)
    if (!(ratios->list.floats[i] > 0))
      return rill_infer_error(ctx, "attribute aspect_ratios[%zu] is %g, must be positive", i,
                              (double)ratios->list.floats[i]);
  if (ctx->attrs[RILL_PRIOR_BOX_ATTR_STEP_W].v.f < 0 || ctx->attrs[RILL_PRIOR_BOX_ATTR_STEP_H].v.f < 0)
    return rill_infer_error(ctx, "attributes step_w (%g) and step_h (%g) must not be negative",
                            (double)ctx->attrs[RILL_PRIOR_BOX_ATTR_STEP_W].v.f, (double)ctx->attrs[RILL_PRIOR_BOX_ATTR_STEP_H].v.f);
  bool ready;
  RILL_TRY(rill_anchor_infer_inputs(ctx, true, &ready));
  if (!ready) return NULL;
  float *r = rill_malloc((1 + 2 * ratios->n) * sizeof *r);
  if (!r) return rill_oom();
  size_t nr = rill_prior_box_ratios(ratios->list.floats, ratios->n, ctx->attrs[RILL_PRIOR_BOX_ATTR_FLIP].v.b, r);
  rill_free(r);
  int64_t np = (int64_t)(nr * mins->n + maxs->n);
  rill_dims d = {.n = 4, .d = {in->dims.d[2], in->dims.d[3], np, 4}};
  rill_meta_set(boxes, in->dtype, &d, 0, -1, -1);
  rill_meta_set(vars, in->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_prior_box = {
    .type = "prior_box",
    .doc = "SSD prior (anchor) boxes for every cell of a feature map, normalised to the image.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = prior_box_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(prior_box);
