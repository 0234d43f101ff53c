/* generate_proposals: Faster R-CNN's region proposals. Per image: the anchors ranked by
 * Scores, the best pre_nms_topN decoded with BboxDeltas and Variances (pixel boxes,
 * log-size deltas capped at log(1000 / 16)), clipped to ImInfo's (height, width), those
 * narrower or shorter than max(min_size, 1) at the original scale or centred outside the
 * image dropped, greedy NMS (nms_thresh, adaptive eta; skipped when nms_thresh <= 0),
 * then the best post_nms_topN. An image left with no box adds no row. RpnRois and
 * RpnRoiProbs hold the images' rows one after another with one LoD level; their row
 * count depends on the data, so the kernel sizes them. */
#include "operators/op_util.h"

enum { IN_SCORES, IN_DELTAS, IN_IM_INFO, IN_ANCHORS, IN_VARIANCES };
enum { OUT_ROIS, OUT_PROBS, OUT_ROIS_LOD };

static const rill_slot_schema inputs[] = {
    [IN_SCORES] = {"Scores", RILL_SLOT_NO_GRAD, "[N, A, H, W] objectness of each anchor"},
    [IN_DELTAS] = {"BboxDeltas", RILL_SLOT_NO_GRAD, "[N, 4A, H, W] box regression deltas"},
    [IN_IM_INFO] = {"ImInfo", RILL_SLOT_NO_GRAD, "[N, 3]: height, width, scale per image"},
    [IN_ANCHORS] = {"Anchors", RILL_SLOT_NO_GRAD, "[H, W, A, 4] pixel anchors"},
    [IN_VARIANCES] = {"Variances", RILL_SLOT_NO_GRAD, "Anchors' shape: the deltas' scales"},
};
static const rill_slot_schema outputs[] = {
    [OUT_ROIS] = {"RpnRois", 0, "[R, 4] proposals, one LoD level (images)"},
    [OUT_PROBS] = {"RpnRoiProbs", 0, "[R, 1] their scores, the same LoD"},
    [OUT_ROIS_LOD] = {"RpnRoisLod", RILL_SLOT_DISPENSABLE,
                      "int64 [N]: rows up to the end of each image (RpnRois' LoD without its "
                      "leading 0)"},
};
static const rill_attr_schema attrs[] = {
    {"pre_nms_topN", RILL_ATTR_INT, 0, RILL_DEF_INT(6000),
     "best-scoring anchors decoded per image (<= 0: all)"},
    {"post_nms_topN", RILL_ATTR_INT, 0, RILL_DEF_INT(1000),
     "proposals kept per image after NMS (<= 0: all)"},
    {"nms_thresh", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f),
     "IoU above which a proposal is suppressed (<= 0: no NMS, no post_nms_topN)"},
    {"min_size", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.1f),
     "smallest width and height kept, at the original scale (at least 1)"},
    {"eta", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f),
     "adaptive NMS: the threshold is multiplied by it after each kept box while above 0.5"},
};

static rill_status *generate_proposals_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *in[5];
  for (size_t i = 0; i < 5; i++) in[i] = rill_infer_in(ctx, i, 0);
  rill_tensor_meta *rois = rill_infer_out(ctx, OUT_ROIS, 0), *probs = rill_infer_out(ctx, OUT_PROBS, 0);
  rill_tensor_meta *lod = rill_infer_out(ctx, OUT_ROIS_LOD, 0);
  if (!in[0] || !in[1] || !in[2] || !in[3] || !in[4] || !rois || !probs)
    return rill_infer_error(ctx, "needs inputs Scores, BboxDeltas, ImInfo, Anchors and Variances "
                            "and outputs RpnRois and RpnRoiProbs");
  bool known = true;
  for (size_t i = 0; i < 5; i++) known = known && in[i]->known;
  if (!known) {
    rill_meta_unknown(rois);
    rill_meta_unknown(probs);
    if (lod) rill_meta_unknown(lod);
    return NULL;
  }
  static const int32_t rank[5] = {4, 4, 2, 4, 4};
  static const char *const shape[5] = {"[N, A, H, W]", "[N, 4A, H, W]", "[N, 3]", "[H, W, A, 4]",
                                       "[H, W, A, 4]"};
  char s[RILL_DIMS_STR_MAX];
  rill_dtype dt = in[IN_ANCHORS]->dtype;
  if (dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Anchors (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, IN_ANCHORS, 0), rill_dtype_name(dt));
  for (size_t i = 0; i < 5; i++) {
    if (in[i]->dtype != dt)
      return rill_infer_error(ctx, "input %s (%s) is %s, Anchors %s: they must agree",
                              ctx->schema->inputs[i].name, rill_infer_in_name(ctx, i, 0),
                              rill_dtype_name(in[i]->dtype), rill_dtype_name(dt));
    if (in[i]->dims.n != rank[i])
      return rill_infer_error(ctx, "input %s (%s) has shape %s, expected %s",
                              ctx->schema->inputs[i].name, rill_infer_in_name(ctx, i, 0),
                              rill_dims_str(&in[i]->dims, s, sizeof s), shape[i]);
  }
  int32_t lvl = in[IN_SCORES]->lod_level > 1 ? in[IN_SCORES]->lod_level : 1;
  rill_dims rd = {.n = 2, .d = {-1, 4}}, pd = {.n = 2, .d = {-1, 1}};
  rill_meta_set(rois, dt, &rd, lvl, -1, -1);
  rill_meta_set(probs, dt, &pd, lvl, -1, -1);
  if (lod) {
    rill_dims ld = {.n = 1, .d = {in[IN_SCORES]->dims.d[0]}};
    rill_meta_set(lod, RILL_DTYPE_INT64, &ld, 0, -1, -1);
  }
  return NULL;
}

const rill_op_schema rill_schema_generate_proposals = {
    .type = "generate_proposals",
    .doc = "Faster R-CNN region proposals: decode, clip, filter, NMS per image.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = generate_proposals_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_ANCHORS,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(generate_proposals);
