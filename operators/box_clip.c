/* box_clip: clamps the boxes of each image (Input's LoD gives its rows) to that image's
 * original size, ImInfo's (height, width, scale) row: x to [0, round(width / scale) - 1],
 * y to [0, round(height / scale) - 1]. */
#include "operators/op_util.h"

enum { IN_INPUT, IN_IM_INFO };
enum { OUT_OUTPUT };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", RILL_SLOT_NO_GRAD, "[R, ..., 4] boxes with one LoD level (images)"},
    [IN_IM_INFO] = {"ImInfo", RILL_SLOT_NO_GRAD, "[N, 3]: height, width, scale per image"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUTPUT] = {"Output", 0, "Input's shape and LoD, clipped"},
};

static rill_status *box_clip_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *in = rill_infer_in(ctx, IN_INPUT, 0), *info = rill_infer_in(ctx, IN_IM_INFO, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUTPUT, 0);
  if (!in || !info || !out) return rill_infer_error(ctx, "needs inputs Input and ImInfo and output Output");
  if (!in->known || !info->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  const char *iname = rill_infer_in_name(ctx, IN_INPUT, 0);
  if (in->dtype != RILL_DTYPE_FP32 && in->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64", iname,
                            rill_dtype_name(in->dtype));
  if (in->dims.n < 2 || (in->dims.d[in->dims.n - 1] >= 0 && in->dims.d[in->dims.n - 1] != 4))
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [R, ..., 4]", iname,
                            rill_dims_str(&in->dims, s, sizeof s));
  if (info->dtype != in->dtype || info->dims.n != 2 || (info->dims.d[1] >= 0 && info->dims.d[1] != 3))
    return rill_infer_error(ctx, "input ImInfo (%s) is %s %s, expected %s [N, 3]",
                            rill_infer_in_name(ctx, IN_IM_INFO, 0), rill_dtype_name(info->dtype),
                            rill_dims_str(&info->dims, s, sizeof s), rill_dtype_name(in->dtype));
  rill_meta_set(out, in->dtype, &in->dims, in->lod_level, IN_INPUT, 0);
  return NULL;
}

const rill_op_schema rill_schema_box_clip = {
    .type = "box_clip",
    .doc = "Clamps each image's boxes to the image's original size.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = box_clip_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(box_clip);
