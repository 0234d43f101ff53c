/* pool3d (NCDHW or NDHWC): max or average pooling with Paddle's ksize / strides / paddings /
 * padding_algorithm / global_pooling / adaptive / ceil_mode / exclusive rules
 * (operators/pool3d.h), and pool3d_grad. */
#include "operators/op_util.h"
#include "operators/pool3d.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "[N, C, D, H, W] (or [N, D, H, W, C] with NDHWC)"}};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "[N, C, OD, OH, OW] (or [N, OD, OH, OW, C])"}};

#define INTS3(a, b, c) {.type = RILL_ATTR_INTS, .n = 3, .list.ints = (int32_t[]){a, b, c}}
static const rill_attr_schema attrs[] = {
    [POOL3D_A_TYPE] = {"pooling_type", RILL_ATTR_STRING, RILL_ATTR_REQUIRED,
                       RILL_DEF_EMPTY(RILL_ATTR_STRING), "max or avg"},
    [POOL3D_A_KSIZE] = {"ksize", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                        "window extent (the output extent when adaptive)"},
    [POOL3D_A_GLOBAL] = {"global_pooling", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                         "pool the whole volume"},
    [POOL3D_A_STRIDES] = {"strides", RILL_ATTR_INTS, 0, INTS3(1, 1, 1), "stride per spatial dim"},
    [POOL3D_A_PADDINGS] = {"paddings", RILL_ATTR_INTS, 0, INTS3(0, 0, 0),
                           "3 values (per dim) or 6 (front, back, top, bottom, left, right)"},
    [POOL3D_A_EXCLUSIVE] = {"exclusive", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
                            "avg: divide by the unpadded window size"},
    [POOL3D_A_ADAPTIVE] = {"adaptive", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                           "ksize is the output extent"},
    [POOL3D_A_CEIL] = {"ceil_mode", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                       "round the output extent up"},
    [POOL3D_A_FORMAT] = {"data_format", RILL_ATTR_STRING, 0, RILL_DEF_STRING("NCDHW"),
                         "NCDHW (or AnyLayout) or NDHWC (channels last)"},
    [POOL3D_A_PADALG] = {"padding_algorithm", RILL_ATTR_STRING, 0, RILL_DEF_STRING("EXPLICIT"),
                         "EXPLICIT, SAME or VALID"},
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_quantizer", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"is_test", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *pool3d_geom_check(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                                      pool3d_geom *g) {
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  const char *err = pool3d_geom_get(ctx->attrs, &x->dims, g);
  if (!err) return NULL;
  char xs[RILL_DIMS_STR_MAX];
  return rill_infer_error(ctx, "input X (%s) %s: %s", rill_infer_in_name(ctx, 0, 0),
                          rill_dims_str(&x->dims, xs, sizeof xs), err);
}

static rill_status *pool3d_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  pool3d_geom g;
  RILL_TRY(pool3d_geom_check(ctx, x, &g));
  rill_dims od = pool3d_dims(&g, g.out);
  rill_meta_set(out, x->dtype, &od, x->lod_level, -1, -1);
  return NULL;
}

static rill_status *pool3d_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Out"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "pool3d_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_pool3d = {
    .type = "pool3d",
    .doc = "3-D max / average pooling (NCDHW or NDHWC), adaptive and global included.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = pool3d_infer,
    .grad = pool3d_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Out", 0, "forward Out (max pooling finds the window's maximum by it)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"}};

static rill_status *pool3d_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "needs inputs X, Out and Out@GRAD");
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x->known) {
    if (dx) rill_meta_unknown(dx);
    return NULL;
  }
  pool3d_geom g;
  RILL_TRY(pool3d_geom_check(ctx, x, &g));
  if (dx) rill_meta_set(dx, x->dtype, &x->dims, x->lod_level, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_pool3d_grad = {
    .type = "pool3d_grad",
    .doc = "Gradient of pool3d: max sends each output gradient to the first maximum of its "
           "window, avg spreads it over the window.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = pool3d_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(pool3d);
