/* deformable_psroi_pooling (fluid.layers.deformable_roi_pooling): each region of interest
 * of Input [N, C, H, W] (ROIs [R, 4], split into images by their LoD) is pooled to
 * pooled_height x pooled_width bins, each bin the mean of sample_per_part^2 bilinear
 * samples, the bin shifted by Trans (unless no_trans): bin (i, j) of output channel c moves
 * by trans_std * Trans[n, 2 k, pi, pj] * roi_width across and Trans[n, 2 k + 1, pi, pj] *
 * roi_height down, k = c / (output_dim / (Trans' channels / 2)), (pi, pj) the part of the
 * part_size grid holding the bin. Samples read input channel (c * group_h + gi) *
 * group_w + gj, (gi, gj) the bin's cell of the group_size grid (position-sensitive when it
 * is the pooled grid; group_size [1, 1] reads channel c). Output and TopCount (the
 * samples that fell on the map) are [R, output_dim, ph, pw]. The gradient reaches Input
 * and Trans. */
#include "operators/detection.h"

enum { IN_INPUT, IN_ROIS, IN_TRANS };
enum { OUT_OUTPUT, OUT_TOP_COUNT };
enum { A_NO_TRANS, A_SCALE, A_OUTPUT_DIM, A_GROUP, A_PH, A_PW, A_PART, A_SAMPLES, A_STD };

#define DPS_INTS2(a, b) {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){a, b}}

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", 0, "feature map [N, C, H, W]"},
    [IN_ROIS] = {"ROIs", RILL_SLOT_NO_GRAD, "[R, 4] regions, one LoD level (images)"},
    [IN_TRANS] = {"Trans", 0, "[R, 2 * classes, part_h, part_w] bin shifts (x, y)"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUTPUT] = {"Output", 0, "[R, output_dim, pooled_height, pooled_width]"},
    [OUT_TOP_COUNT] = {"TopCount", RILL_SLOT_INTERMEDIATE, "Output's shape: samples on the map"},
};
static const rill_attr_schema attrs[] = {
    [A_NO_TRANS] = {"no_trans", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "ignore Trans"},
    [A_SCALE] = {"spatial_scale", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f),
                 "map extent / image extent"},
    [A_OUTPUT_DIM] = {"output_dim", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "channels of Output"},
    [A_GROUP] = {"group_size", RILL_ATTR_INTS, 0, DPS_INTS2(1, 1),
                 "(height, width) of the position-sensitive channel grid"},
    [A_PH] = {"pooled_height", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output height"},
    [A_PW] = {"pooled_width", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output width"},
    [A_PART] = {"part_size", RILL_ATTR_INTS, 0, DPS_INTS2(1, 1), "(height, width) of Trans' grid"},
    [A_SAMPLES] = {"sample_per_part", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "samples per bin side"},
    [A_STD] = {"trans_std", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.1f), "scale of Trans"},
};

/* Checks the inputs and attributes; *dims receives Output's shape; false in *known while
 * an input has no description. */
static rill_status *dps_check(rill_infer_ctx *ctx, rill_dims *dims, bool *known) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0), *rois = rill_infer_in(ctx, IN_ROIS, 0);
  const rill_tensor_meta *tr = rill_infer_in(ctx, IN_TRANS, 0);
  if (!x || !rois || !tr) return rill_infer_error(ctx, "needs inputs Input, ROIs and Trans");
  const rill_attr_value *a = ctx->attrs;
  if (a[A_GROUP].n != 2 || a[A_PART].n != 2)
    return rill_infer_error(ctx, "attributes group_size and part_size must hold 2 values");
  int32_t od = a[A_OUTPUT_DIM].v.i, gh = a[A_GROUP].list.ints[0], gw = a[A_GROUP].list.ints[1];
  int32_t pth = a[A_PART].list.ints[0], ptw = a[A_PART].list.ints[1];
  if (od <= 0 || gh <= 0 || gw <= 0 || pth <= 0 || ptw <= 0 || a[A_PH].v.i <= 0 ||
      a[A_PW].v.i <= 0 || a[A_SAMPLES].v.i <= 0 || !(a[A_STD].v.f >= 0))
    return rill_infer_error(ctx, "attributes output_dim, group_size, part_size, pooled_height, "
                            "pooled_width and sample_per_part must be positive, trans_std not "
                            "negative");
  *known = x->known && rois->known && tr->known;
  if (!*known) return NULL;
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_INPUT, 0);
  const char *tn = rill_infer_in_name(ctx, IN_TRANS, 0);
  RILL_TRY(rill_roi_check_map(ctx, IN_INPUT, IN_ROIS, 4));
  if (x->dims.d[1] >= 0 && x->dims.d[1] < (int64_t)od * gh * gw)
    return rill_infer_error(ctx, "input Input (%s) has %lld channels, output_dim * group_size "
                            "reads %lld", xn, (long long)x->dims.d[1], (long long)od * gh * gw);
  if (!a[A_NO_TRANS].v.b) {
    int64_t tc = tr->dims.n == 4 ? tr->dims.d[1] : -1;
    if (tr->dtype != x->dtype || tr->dims.n != 4 || (tc >= 0 && (tc < 2 || tc % 2 || od % (tc / 2))) ||
        (tr->dims.d[2] >= 0 && tr->dims.d[2] < pth) || (tr->dims.d[3] >= 0 && tr->dims.d[3] < ptw))
      return rill_infer_error(ctx, "input Trans (%s) is %s %s, expected %s [R, 2 * classes, "
                              ">= %d, >= %d] with output_dim (%d) a multiple of classes", tn,
                              rill_dtype_name(tr->dtype), rill_dims_str(&tr->dims, s, sizeof s),
                              rill_dtype_name(x->dtype), (int)pth, (int)ptw, (int)od);
  }
  *dims = (rill_dims){.n = 4, .d = {rois->dims.d[0], od, a[A_PH].v.i, a[A_PW].v.i}};
  return NULL;
}

static rill_status *dps_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUTPUT, 0), *cnt = rill_infer_out(ctx, OUT_TOP_COUNT, 0);
  if (!out) return rill_infer_error(ctx, "needs output Output");
  rill_dims d;
  bool known;
  RILL_TRY(dps_check(ctx, &d, &known));
  rill_tensor_meta *m[] = {out, cnt};
  for (int k = 0; k < 2; k++) {
    if (!m[k]) continue;
    if (known)
      rill_meta_set(m[k], rill_infer_in(ctx, IN_INPUT, 0)->dtype, &d, 0, -1, -1);
    else
      rill_meta_unknown(m[k]);
  }
  return NULL;
}

static rill_status *dps_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Input", "ROIs", "Trans", "TopCount"};
  static const char *const gout[] = {"Output"};
  static const char *const gin[] = {"Input", "Trans"};
  return rill_grad_emit(ctx, "deformable_psroi_pooling_grad", fwd, RILL_COUNTOF(fwd), gout,
                        RILL_COUNTOF(gout), gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_deformable_psroi_pooling = {
    .type = "deformable_psroi_pooling",
    .doc = "Deformable (position-sensitive) average pooling of each region of interest.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = dps_infer,
    .grad = dps_grad_maker,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

/* The gradient: Input, ROIs, Trans, TopCount, Output@GRAD -> Input@GRAD, Trans@GRAD. */
static const rill_slot_schema grad_inputs[] = {
    {"Input", 0, "forward Input"},
    {"ROIs", 0, "forward ROIs"},
    {"Trans", 0, "forward Trans"},
    {"TopCount", RILL_SLOT_DISPENSABLE, "forward TopCount"},
    {"Output@GRAD", 0, "gradient of Output"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Input"},
    {"Trans@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Trans"},
};

static rill_status *dps_grad_infer(rill_infer_ctx *ctx) {
  rill_dims d;
  bool known;
  RILL_TRY(dps_check(ctx, &d, &known));
  for (size_t k = 0; k < 2; k++) {
    rill_tensor_meta *g = rill_infer_out(ctx, k, 0);
    if (!g) continue;
    const rill_tensor_meta *in = rill_infer_in(ctx, k == 0 ? IN_INPUT : IN_TRANS, 0);
    if (!known)
      rill_meta_unknown(g);
    else
      rill_meta_set(g, in->dtype, &in->dims, 0, -1, -1);
  }
  return NULL;
}

const rill_op_schema rill_schema_deformable_psroi_pooling_grad = {
    .type = "deformable_psroi_pooling_grad",
    .doc = "Gradient of deformable_psroi_pooling with respect to Input and Trans.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = dps_grad_infer,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(deformable_psroi_pooling);
