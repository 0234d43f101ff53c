/* collect_fpn_proposals: the post_nms_topN best-scoring regions of interest over all FPN
 * levels, grouped by image.
 *   MultiLevelRois (L tensors [R_l, 4]), MultiLevelScores (L tensors [R_l, 1]), each with
 *   one LoD level over the images -> FpnRois [K, 4] with a LoD level over the images,
 *   K = min(post_nms_topN, total rows)
 * At compile time FpnRois is [post_nms_topN, 4], as Paddle records it; the kernel sizes
 * it. */
#include "operators/op_util.h"

enum { IN_ROIS, IN_SCORES };

static const rill_slot_schema inputs[] = {
    [IN_ROIS] = {"MultiLevelRois", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD,
                 "one [R_l, 4] tensor of boxes per level, with a LoD level over the images"},
    [IN_SCORES] = {"MultiLevelScores", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD,
                   "one [R_l, 1] tensor of scores per level, with a LoD level over the images"},
};
static const rill_slot_schema outputs[] = {
    {"FpnRois", 0, "[K, 4]: the kept boxes, image by image, by score within an image"},
};
static const rill_attr_schema attrs[] = {
    {"post_nms_topN", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
     "how many boxes to keep over the whole batch"},
};

static rill_status *collect_fpn_proposals_infer(rill_infer_ctx *ctx) {
  size_t n = ctx->nin[IN_ROIS];
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (n == 0 || !out)
    return rill_infer_error(ctx, "needs inputs MultiLevelRois and MultiLevelScores and output "
                            "FpnRois");
  if (ctx->nin[IN_SCORES] != n)
    return rill_infer_error(ctx, "has %zu inputs MultiLevelRois (first %s) but %zu "
                            "MultiLevelScores: one scores tensor per level", n,
                            rill_infer_in_name(ctx, IN_ROIS, 0), ctx->nin[IN_SCORES]);
  int32_t top = ctx->attrs[0].v.i;
  if (top < 0)
    return rill_infer_error(ctx, "post_nms_topN is %d, expected 0 or more", top);
  rill_dtype dt = RILL_DTYPE_FP32;
  char s[RILL_DIMS_STR_MAX];
  for (size_t i = 0; i < n; i++) {
    const rill_tensor_meta *r = rill_infer_in(ctx, IN_ROIS, i), *sc = rill_infer_in(ctx, IN_SCORES, i);
    if (!r || !sc) return rill_infer_error(ctx, "input %zu of MultiLevelRois or MultiLevelScores "
                                           "is missing", i);
    if (!r->known || !sc->known) {
      rill_meta_unknown(out);
      return NULL;
    }
    const char *rn = rill_infer_in_name(ctx, IN_ROIS, i), *sn = rill_infer_in_name(ctx, IN_SCORES, i);
    if (r->dtype != RILL_DTYPE_FP32 && r->dtype != RILL_DTYPE_FP64)
      return rill_infer_error(ctx, "input MultiLevelRois (%s) is %s, expected float32 or "
                              "float64", rn, rill_dtype_name(r->dtype));
    if (i == 0) dt = r->dtype;
    if (r->dtype != dt || sc->dtype != dt)
      return rill_infer_error(ctx, "inputs MultiLevelRois (%s) and MultiLevelScores (%s) are "
                              "%s and %s, expected %s like the first level", rn, sn,
                              rill_dtype_name(r->dtype), rill_dtype_name(sc->dtype),
                              rill_dtype_name(dt));
    if (r->dims.n != 2 || (r->dims.d[1] >= 0 && r->dims.d[1] != 4))
      return rill_infer_error(ctx, "input MultiLevelRois (%s) has shape %s, expected [R, 4]",
                              rn, rill_dims_str(&r->dims, s, sizeof s));
    if (sc->dims.n != 2 || (sc->dims.d[1] >= 0 && sc->dims.d[1] != 1))
      return rill_infer_error(ctx, "input MultiLevelScores (%s) has shape %s, expected [R, 1]",
                              sn, rill_dims_str(&sc->dims, s, sizeof s));
  }
  rill_dims od = {.n = 2, .d = {top, 4}};
  rill_meta_set(out, dt, &od, 1, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_collect_fpn_proposals = {
    .type = "collect_fpn_proposals",
    .doc = "The best-scoring regions of interest over all FPN levels, grouped by image.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = collect_fpn_proposals_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_ROIS,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(collect_fpn_proposals);
