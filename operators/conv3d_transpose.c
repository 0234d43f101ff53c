/* conv3d_transpose: the transpose (data gradient) of conv3d over NCDHW (or channel-last
 * NDHWC / NHWC) tensors, and its gradient op. Geometry in operators/conv3d.h (conv3d_transpose_geom_get). */
#include "operators/conv3d.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"Input", 0, "[N, C_in, D, H, W] ([N, D, H, W, C_in] with NDHWC)"},
    {"Filter", 0, "[C_in, M / groups, kd, kh, kw]"},
    {"Bias", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "must be absent (add a bias with elementwise_add)"},
};
static const rill_slot_schema outputs[] = {
    {"Output", 0, "[N, M, OD, OH, OW] ([N, OD, OH, OW, M] with NDHWC)"}};

static const rill_attr_schema attrs[] = {
    CONV3D_WINDOW_ATTRS,
    [CONV3D_A_OUTPUT_SIZE] = {"output_size", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                              "output extents (empty: inferred)"},
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"workspace_size_MB", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(512), "ignored"},
};

static rill_status *geom(rill_infer_ctx *ctx, const rill_tensor_meta *x, const rill_tensor_meta *f,
                         conv3d_geom *g) {
  if (x->dtype != f->dtype || (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64))
    return rill_infer_error(ctx, "input Input (%s) is %s and input Filter (%s) is %s: both must "
                            "be float32 or both float64", rill_infer_in_name(ctx, 0, 0),
                            rill_dtype_name(x->dtype), rill_infer_in_name(ctx, 1, 0),
                            rill_dtype_name(f->dtype));
  const char *err = conv3d_transpose_geom_get(ctx->attrs, &x->dims, &f->dims, g);
  if (!err) return NULL;
  char xs[RILL_DIMS_STR_MAX], fs[RILL_DIMS_STR_MAX];
  return rill_infer_error(ctx, "Input (%s) %s, Filter (%s) %s: %s", rill_infer_in_name(ctx, 0, 0),
                          rill_dims_str(&x->dims, xs, sizeof xs), rill_infer_in_name(ctx, 1, 0),
                          rill_dims_str(&f->dims, fs, sizeof fs), err);
}

static rill_status *convt3d_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *f = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !f || !out) return rill_infer_error(ctx, "needs inputs Input, Filter and output Output");
  if (rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "input Bias is not supported: add the bias with elementwise_add");
  if (!x->known || !f->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  conv3d_geom g;
  RILL_TRY(geom(ctx, x, f, &g));
  rill_dims od = conv3d_dims(&g, g.c, g.in);
  rill_meta_set(out, x->dtype, &od, x->lod_level, -1, -1);
  return NULL;
}

static rill_status *convt3d_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Input", "Filter"};
  static const char *const gout[] = {"Output"};
  static const char *const gin[] = {"Input", "Filter"};
  return rill_grad_emit(ctx, "conv3d_transpose_grad", fwd, RILL_COUNTOF(fwd), gout,
                        RILL_COUNTOF(gout), gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_conv3d_transpose = {
    .type = "conv3d_transpose",
    .doc = "Transposed 3-D convolution (NCDHW or NDHWC): conv3d's data gradient as a layer.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = convt3d_infer,
    .grad = convt3d_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

CONV3D_GRAD_SLOTS;

static rill_status *convt3d_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *f = rill_infer_in(ctx, 1, 0);
  if (!x || !f || !rill_infer_in(ctx, CONV3D_GRAD_IN_DOUT, 0))
    return rill_infer_error(ctx, "needs inputs Input, Filter and Output@GRAD");
  conv3d_geom g;
  if (x->known && f->known) RILL_TRY(geom(ctx, x, f, &g));
  conv3d_grad_metas(ctx, x, f);
  return NULL;
}

const rill_op_schema rill_schema_conv3d_transpose_grad = {
    .type = "conv3d_transpose_grad",
    .doc = "Gradients of conv3d_transpose: Input@GRAD is conv3d of Output@GRAD, Filter@GRAD "
           "conv3d's filter gradient with the roles of image and output swapped.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = convt3d_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(conv3d_transpose);
