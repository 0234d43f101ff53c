/* pool2d (NCHW or NHWC): max or average pooling with Paddle's ksize / strides / paddings /
 * padding_algorithm / global_pooling / adaptive / ceil_mode / exclusive rules, and
 * pool2d_grad. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {{"X", 0, "[N, C, H, W] (or [N, H, W, C] with NHWC)"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "[N, C, OH, OW] (or [N, OH, OW, C])"}};

static const rill_attr_schema attrs[] = {
    {"pooling_type", RILL_ATTR_STRING, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_STRING), "max or avg"},
    {"ksize", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "window extent (the output extent when adaptive)"},
    {"global_pooling", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "pool the whole image"},
    {"strides", RILL_ATTR_INTS, 0, {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){1, 1}},
     "stride per spatial dim"},
    {"paddings", RILL_ATTR_INTS, 0, {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){0, 0}},
     "2 values (per dim) or 4 (top, bottom, left, right)"},
    {"exclusive", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true), "avg: divide by the unpadded window size"},
    {"adaptive", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "ksize is the output extent"},
    {"ceil_mode", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "round the output extent up"},
    {"data_format", RILL_ATTR_STRING, 0, RILL_DEF_STRING("NCHW"), "NCHW (or AnyLayout) or NHWC (channels last)"},
    {"padding_algorithm", RILL_ATTR_STRING, 0, RILL_DEF_STRING("EXPLICIT"), "EXPLICIT, SAME or VALID"},
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_quantizer", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"is_test", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *geom_error(rill_infer_ctx *ctx, const rill_dims *x, const char *err) {
  char xs[RILL_DIMS_STR_MAX];
  return rill_infer_error(ctx, "input X (%s) %s: %s", rill_infer_in_name(ctx, 0, 0),
                          rill_dims_str(x, xs, sizeof xs), err);
}

static rill_status *pool_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_pool_geom g;
  char err[256];
  if (!rill_nn_pool_geom(ctx->attrs, &x->dims, &g, err, sizeof err)) return geom_error(ctx, &x->dims, err);
  rill_dims od = rill_nn_pool_dims(&g, g.oh, g.ow);
  rill_meta_set(out, x->dtype, &od, x->lod_level, -1, -1);
  return NULL;
}

static rill_status *pool_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Out"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "pool2d_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_pool2d = {
    .type = "pool2d",
    .doc = "2-D max / average pooling (NCHW or NHWC).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = pool_infer,
    .grad = pool_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Out", 0, "forward Out (max pooling finds the window's maximum by it)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"}};

static rill_status *pool_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "needs inputs X, Out and Out@GRAD");
  if (x->known) {
    rill_pool_geom g;
    char err[256];
    if (!rill_nn_pool_geom(ctx->attrs, &x->dims, &g, err, sizeof err)) return geom_error(ctx, &x->dims, err);
  }
  rill_nn_same_meta(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_pool2d_grad = {
    .type = "pool2d_grad",
    .doc = "Gradient of pool2d: max sends each output gradient to the first maximum of its "
           "window, avg spreads it over the window.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = pool_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(pool2d);
