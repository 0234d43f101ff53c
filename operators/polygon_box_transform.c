/* polygon_box_transform: turns EAST-style geometry maps [N, G, H, W] (G even: x, y
 * offsets of the polygon vertices from each pixel, in units of a quarter pixel of the
 * 4x downsampled map) into absolute coordinates: 4 * w - v on even channels, 4 * h - v
 * on odd ones. */
#include "operators/op_util.h"

enum { IN_INPUT };
enum { OUT_OUTPUT };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", RILL_SLOT_NO_GRAD, "[N, G, H, W] geometry offsets, G even"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUTPUT] = {"Output", 0, "[N, G, H, W] coordinates"},
};

static rill_status *polygon_box_transform_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *in = NULL;
  rill_tensor_meta *out = NULL;
  RILL_TRY(rill_infer_unary_begin(ctx, &in, &out));
  if (!in) return NULL;
  char s[RILL_DIMS_STR_MAX];
  const char *name = rill_infer_in_name(ctx, IN_INPUT, 0);
  if (in->dtype != RILL_DTYPE_FP32 && in->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64", name,
                            rill_dtype_name(in->dtype));
  if (in->dims.n != 4 || (in->dims.d[1] >= 0 && in->dims.d[1] % 2))
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [N, G, H, W] with G "
                            "even", name, rill_dims_str(&in->dims, s, sizeof s));
  rill_meta_set(out, in->dtype, &in->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_polygon_box_transform = {
    .type = "polygon_box_transform",
    .doc = "Geometry offsets of a text detector to absolute polygon coordinates.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = polygon_box_transform_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(polygon_box_transform);
