/* iou_similarity: the intersection over union of every box of X [N, 4] (LoD allowed)
 * with every box of Y [M, 4], as Out [N, M] with X's LoD. */
#include "operators/op_util.h"

enum { IN_X, IN_Y };
enum { OUT_OUT };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", RILL_SLOT_NO_GRAD, "[N, 4] boxes xmin, ymin, xmax, ymax (LoD allowed)"},
    [IN_Y] = {"Y", RILL_SLOT_NO_GRAD, "[M, 4] boxes"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUT] = {"Out", 0, "[N, M] IoU of X's row i and Y's row j; X's LoD"},
};
static const rill_attr_schema attrs[] = {
    {"box_normalized", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "false: boxes are in pixels and widths count both ends (+1)"},
};

static rill_status *iou_similarity_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *y = rill_infer_in(ctx, IN_Y, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0);
  if (!x || !y || !out) return rill_infer_error(ctx, "needs inputs X and Y and output Out");
  if (!x->known || !y->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  for (int k = 0; k < 2; k++) {
    const rill_tensor_meta *m = k ? y : x;
    const char *slot = k ? "Y" : "X", *name = rill_infer_in_name(ctx, k ? IN_Y : IN_X, 0);
    if (m->dtype != RILL_DTYPE_FP32 && m->dtype != RILL_DTYPE_FP64)
      return rill_infer_error(ctx, "input %s (%s) is %s, expected float32 or float64", slot, name,
                              rill_dtype_name(m->dtype));
    if (m->dims.n != 2 || (m->dims.d[1] >= 0 && m->dims.d[1] != 4))
      return rill_infer_error(ctx, "input %s (%s) has shape %s, expected [N, 4]", slot, name,
                              rill_dims_str(&m->dims, s, sizeof s));
  }
  if (y->dtype != x->dtype)
    return rill_infer_error(ctx, "input Y (%s) is %s, X (%s) %s: they must match",
                            rill_infer_in_name(ctx, IN_Y, 0), rill_dtype_name(y->dtype),
                            rill_infer_in_name(ctx, IN_X, 0), rill_dtype_name(x->dtype));
  rill_dims d = {.n = 2, .d = {x->dims.d[0], y->dims.d[0]}};
  rill_meta_set(out, x->dtype, &d, x->lod_level, IN_X, 0);
  return NULL;
}

const rill_op_schema rill_schema_iou_similarity = {
    .type = "iou_similarity",
    .doc = "Pairwise intersection over union of two sets of boxes.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = iou_similarity_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(iou_similarity);
