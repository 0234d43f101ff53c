/* psroi_pool and prroi_pool: pool each region of interest of a feature map to a fixed
 * pooled_height x pooled_width grid, taking ROIs [R, 4] (xmin, ymin, xmax, ymax in
 * input-image pixels, times spatial_scale on the map) split into X's images by ROIs' LoD.
 *   psroi_pool (position-sensitive): bin (i, j) of output channel c averages the pixels of
 *     input channel (c * pooled_height + i) * pooled_width + j over the bin, the ROI's
 *     corners rounded and its far edges made inclusive; X has output_channels *
 *     pooled_height * pooled_width channels, Out is [R, output_channels, ph, pw].
 *   prroi_pool (precise): each bin is the exact integral of the bilinear interpolation of
 *     X (zero outside the map) over the bin, divided by its area; Out is [R, C, ph, pw].
 *     BatchRoINums (int64 [N], the ROIs of each image) replaces ROIs' LoD when given.
 * psroi_pool's gradient spreads Out@GRAD evenly over each bin; prroi_pool's gives X@GRAD
 * through the same integrals and ROIs@GRAD through the moving bin edges. */
#include "operators/detection.h"

enum { IN_X, IN_ROIS, IN_NUMS };

static const rill_slot_schema ps_inputs[] = {
    [IN_X] = {"X", 0, "feature map [N, output_channels * ph * pw, H, W]"},
    [IN_ROIS] = {"ROIs", RILL_SLOT_NO_GRAD, "[R, 4] regions, one LoD level (images)"},
};
static const rill_slot_schema pr_inputs[] = {
    [IN_X] = {"X", 0, "feature map [N, C, H, W]"},
    [IN_ROIS] = {"ROIs", 0, "[R, 4] regions, one LoD level (images) unless BatchRoINums"},
    [IN_NUMS] = {"BatchRoINums", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                 "int64 [N]: how many ROIs each image has"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "[R, channels, pooled_height, pooled_width]"},
};
static const rill_attr_schema ps_attrs[] = {
    {"pooled_height", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output height"},
    {"pooled_width", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output width"},
    {"spatial_scale", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "map extent / image extent"},
    {"output_channels", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "channels of Out"},
};
static const rill_attr_schema pr_attrs[] = {
    {"pooled_height", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output height"},
    {"pooled_width", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "output width"},
    {"spatial_scale", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "map extent / image extent"},
};

/* Checks X, ROIs, BatchRoINums and the attributes (pooled sizes first, output_channels
 * fourth for psroi_pool); *dims receives Out's shape; false in *known while an input has
 * no description. */
static rill_status *pool_check(rill_infer_ctx *ctx, rill_dims *dims, bool *known) {
  bool ps = ctx->schema->nattrs > 3;
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *rois = rill_infer_in(ctx, IN_ROIS, 0);
  const rill_tensor_meta *nums = ps ? NULL : rill_infer_in(ctx, IN_NUMS, 0);
  if (!x || !rois) return rill_infer_error(ctx, "needs inputs X and ROIs");
  int32_t ph = ctx->attrs[0].v.i, pw = ctx->attrs[1].v.i, oc = ps ? ctx->attrs[3].v.i : 1;
  if (ph <= 0 || pw <= 0 || oc <= 0)
    return rill_infer_error(ctx, "attributes pooled_height (%d), pooled_width (%d)%s must be "
                            "positive", (int)ph, (int)pw, ps ? " and output_channels" : "");
  *known = x->known && rois->known && (!nums || nums->known);
  if (!*known) return NULL;
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_X, 0);
  RILL_TRY(rill_roi_check_map(ctx, IN_X, IN_ROIS, 4));
  int64_t c = x->dims.d[1];
  if (ps && c >= 0 && c != (int64_t)oc * ph * pw)
    return rill_infer_error(ctx, "input X (%s) has %lld channels, expected output_channels * "
                            "pooled_height * pooled_width = %lld", xn, (long long)c,
                            (long long)oc * ph * pw);
  if (nums && (nums->dtype != RILL_DTYPE_INT64 || nums->dims.n != 1))
    return rill_infer_error(ctx, "input BatchRoINums (%s) is %s %s, expected int64 [N]",
                            rill_infer_in_name(ctx, IN_NUMS, 0), rill_dtype_name(nums->dtype),
                            rill_dims_str(&nums->dims, s, sizeof s));
  *dims = (rill_dims){.n = 4, .d = {rois->dims.d[0], ps ? oc : c, ph, pw}};
  return NULL;
}

static rill_status *pool_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  rill_dims d;
  bool known;
  RILL_TRY(pool_check(ctx, &d, &known));
  if (!known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_meta_set(out, rill_infer_in(ctx, IN_X, 0)->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *psroi_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "ROIs"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "psroi_pool_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout),
                        gin, RILL_COUNTOF(gin));
}

static rill_status *prroi_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "ROIs", "BatchRoINums", "Out"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X", "ROIs"};
  return rill_grad_emit(ctx, "prroi_pool_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout),
                        gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_psroi_pool = {
    .type = "psroi_pool",
    .doc = "Position-sensitive average pooling of each region of interest to a fixed grid.",
    .inputs = ps_inputs,
    .ninputs = RILL_COUNTOF(ps_inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = ps_attrs,
    .nattrs = RILL_COUNTOF(ps_attrs),
    .infer = pool_infer,
    .grad = psroi_grad_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_prroi_pool = {
    .type = "prroi_pool",
    .doc = "Precise (integral) average pooling of each region of interest to a fixed grid.",
    .inputs = pr_inputs,
    .ninputs = RILL_COUNTOF(pr_inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = pr_attrs,
    .nattrs = RILL_COUNTOF(pr_attrs),
    .infer = pool_infer,
    .grad = prroi_grad_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

/* The gradients. psroi_pool_grad: X, ROIs, Out@GRAD -> X@GRAD. prroi_pool_grad: X, ROIs,
 * BatchRoINums, Out, Out@GRAD -> X@GRAD, ROIs@GRAD. */
static const rill_slot_schema ps_grad_inputs[] = {
    {"X", 0, "forward X"},
    {"ROIs", 0, "forward ROIs"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema pr_grad_inputs[] = {
    {"X", 0, "forward X"},
    {"ROIs", 0, "forward ROIs"},
    {"BatchRoINums", RILL_SLOT_DISPENSABLE, "forward BatchRoINums"},
    {"Out", 0, "forward Out"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema ps_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
};
static const rill_slot_schema pr_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
    {"ROIs@GRAD", RILL_SLOT_DISPENSABLE, "gradient of ROIs"},
};

static rill_status *pool_grad_infer(rill_infer_ctx *ctx) {
  rill_dims d;
  bool known;
  RILL_TRY(pool_check(ctx, &d, &known));
  for (size_t k = 0; k < ctx->schema->noutputs; k++) {
    rill_tensor_meta *g = rill_infer_out(ctx, k, 0);
    if (!g) continue;
    const rill_tensor_meta *in = rill_infer_in(ctx, k == 0 ? IN_X : IN_ROIS, 0);
    if (!known)
      rill_meta_unknown(g);
    else
      rill_meta_set(g, in->dtype, &in->dims, 0, -1, -1);
  }
  return NULL;
}

const rill_op_schema rill_schema_psroi_pool_grad = {
    .type = "psroi_pool_grad",
    .doc = "Gradient of psroi_pool with respect to X.",
    .inputs = ps_grad_inputs,
    .ninputs = RILL_COUNTOF(ps_grad_inputs),
    .outputs = ps_grad_outputs,
    .noutputs = RILL_COUNTOF(ps_grad_outputs),
    .attrs = ps_attrs,
    .nattrs = RILL_COUNTOF(ps_attrs),
    .infer = pool_grad_infer,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_prroi_pool_grad = {
    .type = "prroi_pool_grad",
    .doc = "Gradient of prroi_pool with respect to X and ROIs.",
    .inputs = pr_grad_inputs,
    .ninputs = RILL_COUNTOF(pr_grad_inputs),
    .outputs = pr_grad_outputs,
    .noutputs = RILL_COUNTOF(pr_grad_outputs),
    .attrs = pr_attrs,
    .nattrs = RILL_COUNTOF(pr_attrs),
    .infer = pool_grad_infer,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(psroi_pool);
