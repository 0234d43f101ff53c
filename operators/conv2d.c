/* conv2d and depthwise_conv2d (NCHW or NHWC), and their gradient ops. Paddle's conv2d has no
 * Bias input on the CPU path (a bias is a separate elementwise_add); Bias and
 * ResidualData are accepted as dispensable slots only so that fused files validate, and
 * the kernels reject them when set. */
#include "operators/math_grad.h"
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"Input", 0, "[N, C, H, W] ([N, H, W, C] with data_format NHWC)"},
    {"Filter", 0, "[M, C / groups, kh, kw]"},
    {"Bias", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "oneDNN fusion only: must be absent"},
    {"ResidualData", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "oneDNN fusion only: must be absent"},
};
static const rill_slot_schema outputs[] = {{"Output", 0, "[N, M, OH, OW] ([N, OH, OW, M] with NHWC)"}};

static const rill_attr_schema attrs[] = {RILL_CONV_ATTRS};

static rill_status *conv_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *f = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !f || !out) return rill_infer_error(ctx, "needs inputs Input, Filter and output Output");
  if (!x->known || !f->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (rill_infer_in(ctx, 2, 0) || rill_infer_in(ctx, 3, 0))
    return rill_infer_error(ctx, "Bias / ResidualData inputs are oneDNN fusions rill does not "
                            "run: add the bias with elementwise_add");
  if (x->dtype != f->dtype)
    return rill_infer_error(ctx, "input Input (%s) is %s but input Filter (%s) is %s",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype),
                            rill_infer_in_name(ctx, 1, 0), rill_dtype_name(f->dtype));
  rill_conv_geom g;
  RILL_TRY(rill_nn_infer_conv_geom(ctx, true, x, f, &g));
  rill_dims od = rill_nn_conv_out_dims(&g);
  rill_meta_set(out, x->dtype, &od, x->lod_level, -1, -1);
  return NULL;
}

static rill_status *conv_grad_maker(rill_grad_ctx *ctx) {
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ctx->schema->type);
  static const char *const fwd[] = {"Input", "Filter"};
  static const char *const gout[] = {"Output"};
  static const char *const gin[] = {"Input", "Filter"};
  return rill_grad_emit(ctx, type, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_conv2d = {
    .type = "conv2d",
    .doc = "2-D convolution (NCHW, or NHWC through a transpose each way) with strides, paddings, "
           "dilations and groups.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_CONV_FUSABLE,
    .infer = conv_infer,
    .grad = conv_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_depthwise_conv2d = {
    .type = "depthwise_conv2d",
    .doc = "conv2d with groups == input channels (a filter per channel); same attributes.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_CONV_FUSABLE,
    .infer = conv_infer,
    .grad = conv_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- gradients: Input, Filter, Output@GRAD -> Input@GRAD, Filter@GRAD ---- */

static const rill_slot_schema grad_inputs[] = {
    {"Input", 0, "forward Input"},
    {"Filter", 0, "forward Filter"},
    {"Output", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "forward Output (not read)"},
    {"Output@GRAD", 0, "gradient of Output"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Input"},
    {"Filter@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Filter"},
};

static rill_status *conv_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *f = rill_infer_in(ctx, 1, 0),
                         *dy = rill_infer_in(ctx, 3, 0);
  if (!x || !f || !dy) return rill_infer_error(ctx, "needs inputs Input, Filter and Output@GRAD");
  if (x->known && f->known && dy->known) {
    rill_conv_geom g;
    char err[256];
    if (!rill_nn_conv_geom_fmt(ctx->attrs, false, true, &x->dims, &f->dims, &g, err, sizeof err))
      return rill_infer_error(ctx, "Input (%s), Filter (%s): %s", rill_infer_in_name(ctx, 0, 0),
                              rill_infer_in_name(ctx, 1, 0), err);
    rill_dims od = rill_nn_conv_out_dims(&g);
    bool match = dy->dims.n == 4;
    for (int i = 0; match && i < 4; i++)
      match = od.d[i] < 0 || dy->dims.d[i] < 0 || od.d[i] == dy->dims.d[i];
    if (!match) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input Output@GRAD (%s) has shape %s, the forward output is %s",
                              rill_infer_in_name(ctx, 3, 0), rill_dims_str(&dy->dims, a, sizeof a),
                              rill_dims_str(&od, b, sizeof b));
    }
  }
  rill_nn_same_meta(ctx, 0, 0);
  rill_nn_same_meta(ctx, 1, 1);
  return NULL;
}

/* conv2d_grad's own gradient, as Paddle's Conv2DDoubleGradMaker: the gradients of its
 * Input@GRAD and Filter@GRAD in (DDInput, DDFilter), those of Input, Filter and
 * Output@GRAD out. */
static rill_status *conv2d_double_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit_as(ctx, RILL_NAMES("Input", "Input", "Filter", "Filter", "Output@GRAD", "DOutput"),
                           RILL_NAMES("Input@GRAD", "DDInput", "Filter@GRAD", "DDFilter"),
                           RILL_NAMES("Input", "DInput", "Filter", "DFilter", "Output@GRAD", "DDOutput"));
}

const rill_op_schema rill_schema_conv2d_grad = {
    .type = "conv2d_grad",
    .doc = "Gradients of conv2d: Input@GRAD (GEMM + col2im) and Filter@GRAD (GEMM).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = conv_grad_infer,
    .grad = conv2d_double_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_depthwise_conv2d_grad = {
    .type = "depthwise_conv2d_grad",
    .doc = "Gradients of depthwise_conv2d.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = conv_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema gg_inputs[] = {
    {"Input", 0, "forward Input"},
    {"Filter", 0, "forward Filter"},
    {"DOutput", 0, "the gradient op's Output@GRAD"},
    {"DDInput", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's Input@GRAD (absent: zero)"},
    {"DDFilter", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's Filter@GRAD (absent: zero)"},
};
static const rill_slot_schema gg_outputs[] = {
    {"DDOutput", RILL_SLOT_DISPENSABLE, "conv(DDInput, Filter) + conv(Input, DDFilter)"},
    {"DInput", RILL_SLOT_DISPENSABLE, "the data gradient of DOutput through DDFilter"},
    {"DFilter", RILL_SLOT_DISPENSABLE, "the filter gradient of DOutput over DDInput"},
};

static rill_status *conv_gg_infer(rill_infer_ctx *ctx) {
  for (size_t i = 0; i < 3; i++)
    if (!rill_infer_in(ctx, i, 0))
      return rill_infer_error(ctx, "needs inputs Input, Filter and DOutput");
  if (rill_infer_in(ctx, 3, 0)) RILL_TRY(rill_grad_infer_same(ctx, 3, 0));
  if (rill_infer_in(ctx, 4, 0)) RILL_TRY(rill_grad_infer_same(ctx, 4, 1));
  rill_nn_same_meta(ctx, 0, 2);
  rill_nn_same_meta(ctx, 1, 0);
  rill_nn_same_meta(ctx, 2, 1);
  return NULL;
}

RILL_GRAD_GRAD_SCHEMA(conv2d, "Double gradient of conv2d (NCHW): DDOutput = conv(DDInput, Filter) + "
                      "conv(Input, DDFilter), DInput and DFilter the gradients of DOutput through "
                      "DDFilter and over DDInput.", gg_inputs, gg_outputs, attrs, conv_gg_infer, 0, 0);

RILL_OP_TABLE_CHECKS(conv2d);
