/* roi_align and roi_pool: pool each region of interest of a feature map to a fixed
 * pooled_height x pooled_width grid. ROIs [R, 4] (xmin, ymin, xmax, ymax in input-image
 * pixels, times spatial_scale on the map) are split into X's images by RoisLod (int64
 * offsets [N + 1]) or else by ROIs' LoD; Out is [R, C, pooled_height, pooled_width].
 *   roi_align: each bin averages roi_bin_grid_h x roi_bin_grid_w bilinear samples
 *     (sampling_ratio, or ceil(roi extent / pooled extent) when it is <= 0).
 *   roi_pool: each bin is the maximum over its pixels (rounded ROI corners, inclusive),
 *     0 for an empty bin; Argmax (int64) keeps the flat h * W + w of the maximum, -1 none.
 * Their gradients scatter Out@GRAD back: through the bilinear weights / count, or to the
 * argmax pixel. */
#include "operators/detection.h"

enum { IN_X, IN_ROIS, IN_ROIS_LOD };
enum { OUT_OUT, OUT_ARGMAX };

static const rill_slot_schema align_inputs[] = {
    [IN_X] = {"X", 0, "feature map [N, C, H, W]"},
    [IN_ROIS] = {"ROIs", RILL_SLOT_NO_GRAD, "[R, 4] regions, one LoD level (images) unless RoisLod"},
    [IN_ROIS_LOD] = {"RoisLod", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                     "int64 [N + 1]: each image's first ROI, then R"},
};
static const rill_slot_schema align_outputs[] = {
    [OUT_OUT] = {"Out", 0, "[R, C, pooled_height, pooled_width]"},
};
static const rill_slot_schema pool_outputs[] = {
    [OUT_OUT] = {"Out", 0, "[R, C, pooled_height, pooled_width]"},
    [OUT_ARGMAX] = {"Argmax", RILL_SLOT_INTERMEDIATE, "int64, Out's shape: h * W + w of each maximum, -1 none"},
};
static const rill_attr_schema align_attrs[] = {
    {"pooled_height", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output height"},
    {"pooled_width", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output width"},
    {"spatial_scale", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "map extent / image extent"},
    {"sampling_ratio", RILL_ATTR_INT, 0, RILL_DEF_INT(-1),
     "samples per bin side; <= 0: ceil(roi extent / pooled extent)"},
};
static const rill_attr_schema pool_attrs[] = {
    {"pooled_height", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output height"},
    {"pooled_width", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output width"},
    {"spatial_scale", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "map extent / image extent"},
};

/* Checks X, ROIs, RoisLod and the pooled size (attributes 0 and 1, shared by both ops);
 * *dims receives Out's shape; false in *known while an input has no description. */
static rill_status *roi_check(rill_infer_ctx *ctx, rill_dims *dims, bool *known) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *rois = rill_infer_in(ctx, IN_ROIS, 0);
  const rill_tensor_meta *lod = rill_infer_in(ctx, IN_ROIS_LOD, 0);
  if (!x || !rois) return rill_infer_error(ctx, "needs inputs X and ROIs");
  int32_t ph = ctx->attrs[0].v.i, pw = ctx->attrs[1].v.i;
  if (ph <= 0 || pw <= 0)
    return rill_infer_error(ctx, "attributes pooled_height (%d) and pooled_width (%d) must be "
                            "positive", (int)ph, (int)pw);
  *known = x->known && rois->known && (!lod || lod->known);
  if (!*known) return NULL;
  char s[RILL_DIMS_STR_MAX];
  RILL_TRY(rill_roi_check_map(ctx, IN_X, IN_ROIS, 4));
  if (lod && (lod->dtype != RILL_DTYPE_INT64 || lod->dims.n != 1))
    return rill_infer_error(ctx, "input RoisLod (%s) is %s %s, expected int64 [N + 1]",
                            rill_infer_in_name(ctx, IN_ROIS_LOD, 0), rill_dtype_name(lod->dtype),
                            rill_dims_str(&lod->dims, s, sizeof s));
  *dims = (rill_dims){.n = 4, .d = {rois->dims.d[0], x->dims.d[1], ph, pw}};
  return NULL;
}

static rill_status *roi_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0);
  rill_tensor_meta *argmax = ctx->schema->noutputs > OUT_ARGMAX ? rill_infer_out(ctx, OUT_ARGMAX, 0) : NULL;
  if (!out) return rill_infer_error(ctx, "needs output Out");
  rill_dims d;
  bool known;
  RILL_TRY(roi_check(ctx, &d, &known));
  if (!known) {
    rill_meta_unknown(out);
    if (argmax) rill_meta_unknown(argmax);
    return NULL;
  }
  rill_meta_set(out, rill_infer_in(ctx, IN_X, 0)->dtype, &d, 0, -1, -1);
  if (argmax) rill_meta_set(argmax, RILL_DTYPE_INT64, &d, 0, -1, -1);
  return NULL;
}

static rill_status *roi_align_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "ROIs", "RoisLod"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "roi_align_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout),
                        gin, RILL_COUNTOF(gin));
}

static rill_status *roi_pool_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "ROIs", "RoisLod", "Argmax"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "roi_pool_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout),
                        gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_roi_align = {
    .type = "roi_align",
    .doc = "Bilinear average pooling of each region of interest to a fixed grid.",
    .inputs = align_inputs,
    .ninputs = RILL_COUNTOF(align_inputs),
    .outputs = align_outputs,
    .noutputs = RILL_COUNTOF(align_outputs),
    .attrs = align_attrs,
    .nattrs = RILL_COUNTOF(align_attrs),
    .infer = roi_infer,
    .grad = roi_align_grad_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_roi_pool = {
    .type = "roi_pool",
    .doc = "Max pooling of each region of interest to a fixed grid.",
    .inputs = align_inputs,
    .ninputs = RILL_COUNTOF(align_inputs),
    .outputs = pool_outputs,
    .noutputs = RILL_COUNTOF(pool_outputs),
    .attrs = pool_attrs,
    .nattrs = RILL_COUNTOF(pool_attrs),
    .infer = roi_infer,
    .grad = roi_pool_grad_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

/* The gradients: X, ROIs, RoisLod (, Argmax), Out@GRAD -> X@GRAD, X's meta. */
enum { GIN_X, GIN_ROIS, GIN_ROIS_LOD, GIN_OUT_GRAD_ALIGN, GIN_ARGMAX = 3, GIN_OUT_GRAD_POOL };

static const rill_slot_schema align_grad_inputs[] = {
    {"X", 0, "forward X"},
    {"ROIs", 0, "forward ROIs"},
    {"RoisLod", RILL_SLOT_DISPENSABLE, "forward RoisLod"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema pool_grad_inputs[] = {
    {"X", 0, "forward X"},
    {"ROIs", 0, "forward ROIs"},
    {"RoisLod", RILL_SLOT_DISPENSABLE, "forward RoisLod"},
    {"Argmax", 0, "forward Argmax"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
};

static rill_status *roi_grad_infer(rill_infer_ctx *ctx) {
  rill_dims d;
  bool known;
  RILL_TRY(roi_check(ctx, &d, &known));
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!dx) return NULL;
  const rill_tensor_meta *x = rill_infer_in(ctx, GIN_X, 0);
  if (!known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_meta_set(dx, x->dtype, &x->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_roi_align_grad = {
    .type = "roi_align_grad",
    .doc = "Gradient of roi_align with respect to X.",
    .inputs = align_grad_inputs,
    .ninputs = RILL_COUNTOF(align_grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = align_attrs,
    .nattrs = RILL_COUNTOF(align_attrs),
    .infer = roi_grad_infer,
    .kernel_dtype_slot = GIN_X,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_roi_pool_grad = {
    .type = "roi_pool_grad",
    .doc = "Gradient of roi_pool with respect to X.",
    .inputs = pool_grad_inputs,
    .ninputs = RILL_COUNTOF(pool_grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = pool_attrs,
    .nattrs = RILL_COUNTOF(pool_attrs),
    .infer = roi_grad_infer,
    .kernel_dtype_slot = GIN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(roi_align);
