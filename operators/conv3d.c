/* conv3d: 3-D convolution over NCDHW (or channel-last NDHWC) tensors with strides,
 * paddings (symmetric or asymmetric), dilations, groups and padding_algorithm. Geometry
 * in operators/conv3d.h. */
#include "operators/conv3d.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    [CONV3D_IN_INPUT] = {"Input", 0, "[N, C, D, H, W] ([N, D, H, W, C] with NDHWC)"},
    [CONV3D_IN_FILTER] = {"Filter", 0, "[M, C / groups, kd, kh, kw]"},
    [CONV3D_IN_RESIDUAL] = {"ResidualData", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                            "oneDNN fusion only: must be absent"},
};
static const rill_slot_schema outputs[] = {
    {"Output", 0, "[N, M, OD, OH, OW] ([N, OD, OH, OW, M] with NDHWC)"}};

static const rill_attr_schema attrs[] = {
    CONV3D_WINDOW_ATTRS,
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"workspace_size_MB", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(512), "ignored"},
    {"exhaustive_search", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *conv3d_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, CONV3D_IN_INPUT, 0);
  const rill_tensor_meta *f = rill_infer_in(ctx, CONV3D_IN_FILTER, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !f || !out) return rill_infer_error(ctx, "needs inputs Input, Filter and output Output");
  if (rill_infer_in(ctx, CONV3D_IN_RESIDUAL, 0))
    return rill_infer_error(ctx, "input ResidualData is a oneDNN fusion rill does not run");
  if (!x->known || !f->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dtype != f->dtype || (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64))
    return rill_infer_error(ctx, "input Input (%s) is %s and input Filter (%s) is %s: both must "
                            "be float32 or both float64", rill_infer_in_name(ctx, 0, 0),
                            rill_dtype_name(x->dtype), rill_infer_in_name(ctx, 1, 0),
                            rill_dtype_name(f->dtype));
  conv3d_geom g;
  const char *err = conv3d_geom_get(ctx->attrs, &x->dims, &f->dims, &g);
  if (err) {
    char xs[RILL_DIMS_STR_MAX], fs[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "Input (%s) %s, Filter (%s) %s: %s", rill_infer_in_name(ctx, 0, 0),
                            rill_dims_str(&x->dims, xs, sizeof xs), rill_infer_in_name(ctx, 1, 0),
                            rill_dims_str(&f->dims, fs, sizeof fs), err);
  }
  rill_dims od = conv3d_dims(&g, g.m, g.out);
  rill_meta_set(out, x->dtype, &od, x->lod_level, -1, -1);
  return NULL;
}

static rill_status *conv3d_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Input", "Filter"};
  static const char *const gout[] = {"Output"};
  static const char *const gin[] = {"Input", "Filter"};
  return rill_grad_emit(ctx, "conv3d_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_conv3d = {
    .type = "conv3d",
    .doc = "3-D convolution (NCDHW, or NDHWC through a transpose each way) with strides, paddings, "
           "dilations and groups.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = conv3d_infer,
    .grad = conv3d_grad_maker,
    .kernel_dtype_slot = CONV3D_IN_INPUT,
    .dtype_attr = -1,
};

/* ---- conv3d_grad: Input, Filter, Output@GRAD -> Input@GRAD, Filter@GRAD ---- */

CONV3D_GRAD_SLOTS;

static rill_status *conv3d_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, CONV3D_IN_INPUT, 0);
  const rill_tensor_meta *f = rill_infer_in(ctx, CONV3D_IN_FILTER, 0);
  const rill_tensor_meta *dy = rill_infer_in(ctx, CONV3D_GRAD_IN_DOUT, 0);
  if (!x || !f || !dy) return rill_infer_error(ctx, "needs inputs Input, Filter and Output@GRAD");
  if (x->known && f->known && dy->known) {
    conv3d_geom g;
    const char *err = conv3d_geom_get(ctx->attrs, &x->dims, &f->dims, &g);
    if (err)
      return rill_infer_error(ctx, "Input (%s), Filter (%s): %s", rill_infer_in_name(ctx, 0, 0),
                              rill_infer_in_name(ctx, 1, 0), err);
    rill_dims od = conv3d_dims(&g, g.m, g.out);
    bool match = dy->dims.n == 5 && dy->dtype == x->dtype;
    for (int i = 0; match && i < 5; i++)
      match = od.d[i] < 0 || dy->dims.d[i] < 0 || od.d[i] == dy->dims.d[i];
    if (!match) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input Output@GRAD (%s) is %s %s, the forward output is %s %s",
                              rill_infer_in_name(ctx, CONV3D_GRAD_IN_DOUT, 0),
                              rill_dtype_name(dy->dtype), rill_dims_str(&dy->dims, a, sizeof a),
                              rill_dtype_name(x->dtype), rill_dims_str(&od, b, sizeof b));
    }
  }
  conv3d_grad_metas(ctx, x, f);
  return NULL;
}

const rill_op_schema rill_schema_conv3d_grad = {
    .type = "conv3d_grad",
    .doc = "Gradients of conv3d: Filter@GRAD (vol2col + GEMM) and Input@GRAD (GEMM + col2vol).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = conv3d_grad_infer,
    .kernel_dtype_slot = CONV3D_IN_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(conv3d);
