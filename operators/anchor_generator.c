/* anchor_generator: the Faster R-CNN anchors of one feature map. Every cell (h, w) of
 * Input [N, C, H, W] gets one anchor per (aspect ratio, size) pair, ratios outer, centred
 * at (w * stride_w + offset * (stride_w - 1), h * stride_h + offset * (stride_h - 1)) in
 * input-image pixels: Anchors and Variances are [H, W, ratios * sizes, 4]. */
#include "operators/detection.h"

enum { IN_INPUT };
enum { OUT_ANCHORS, OUT_VARS };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "feature map [N, C, H, W] (only its size is read)"},
};
static const rill_slot_schema outputs[] = {
    [OUT_ANCHORS] = {"Anchors", 0, "[H, W, num_anchors, 4]: xmin, ymin, xmax, ymax in pixels"},
    [OUT_VARS] = {"Variances", 0, "[H, W, num_anchors, 4]: `variances` repeated"},
};
static const rill_attr_schema attrs[] = {
    {"anchor_sizes", RILL_ATTR_FLOATS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
     "anchor sizes in pixels (the square root of the area)"},
    {"aspect_ratios", RILL_ATTR_FLOATS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
     "height / width ratios"},
    {"variances", RILL_ATTR_FLOATS, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
     "the 4 variances written to every anchor (empty: 0.1, 0.1, 0.2, 0.2)"},
    {"stride", RILL_ATTR_FLOATS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_FLOATS),
     "cell width and height in pixels"},
    {"offset", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f), "centre offset in cells"},
};

static rill_status *anchor_generator_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *in = rill_infer_in(ctx, IN_INPUT, 0);
  rill_tensor_meta *anchors = rill_infer_out(ctx, OUT_ANCHORS, 0), *vars = rill_infer_out(ctx, OUT_VARS, 0);
  if (!in || !anchors || !vars)
    return rill_infer_error(ctx, "needs input Input and outputs Anchors and Variances");
  const rill_attr_value *sizes = &ctx->attrs[RILL_ANCHOR_GENERATOR_ATTR_ANCHOR_SIZES];
  const rill_attr_value *ratios = &ctx->attrs[RILL_ANCHOR_GENERATOR_ATTR_ASPECT_RATIOS];
  const rill_attr_value *v = &ctx->attrs[RILL_ANCHOR_GENERATOR_ATTR_VARIANCES];
  const rill_attr_value *stride = &ctx->attrs[RILL_ANCHOR_GENERATOR_ATTR_STRIDE];
  if (sizes->n == 0 || ratios->n == 0)
    return rill_infer_error(ctx, "attributes anchor_sizes (%zu values) and aspect_ratios (%zu) "
                            "must not be empty", sizes->n, ratios->n);
  for (size_t i = 0; i < sizes->n; i++)
    if (!(sizes->list.floats[i] > 0))
      return rill_infer_error(ctx, "attribute anchor_sizes[%zu] is %g, must be positive", i,
                              (double)sizes->list.floats[i]);
  for (size_t i = 0; i < ratios->n; i++)
    if (!(ratios->list.floats[i] > 0))
      return rill_infer_error(ctx, "attribute aspect_ratios[%zu] is %g, must be positive", i,
                              (double)ratios->list.floats[i]);
  if (v->n != 0 && v->n != 4)
    return rill_infer_error(ctx, "attribute variances has %zu values, expected 4", v->n);
  if (stride->n != 2 || !(stride->list.floats[0] > 0) || !(stride->list.floats[1] > 0))
    return rill_infer_error(ctx, "attribute stride must be 2 positive values (width, height), "
                            "has %zu", stride->n);
  bool ready;
  RILL_TRY(rill_anchor_infer_inputs(ctx, false, &ready));
  if (!ready) return NULL;
  rill_dims d = {.n = 4, .d = {in->dims.d[2], in->dims.d[3], (int64_t)(sizes->n * ratios->n), 4}};
  rill_meta_set(anchors, in->dtype, &d, 0, -1, -1);
  rill_meta_set(vars, in->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_anchor_generator = {
    .type = "anchor_generator",
    .doc = "Faster R-CNN anchors for every cell of a feature map, in image pixels.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = anchor_generator_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(anchor_generator);
