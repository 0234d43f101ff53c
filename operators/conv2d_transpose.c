/* conv2d_transpose (NCHW or NHWC) and its gradient op. Filter is [C_in, C_out / groups, kh, kw];
 * the output extent is (in - 1) * stride - pad_before - pad_after + dilation * (k - 1) + 1,
 * replaced by output_size when set (which must lie in [that, that + stride)) or grown by
 * output_padding. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"Input", 0, "[N, C_in, H, W] ([N, H, W, C_in] with data_format NHWC)"},
    {"Filter", 0, "[C_in, C_out / groups, kh, kw]"},
    {"Bias", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "oneDNN fusion only: must be absent"},
};
static const rill_slot_schema outputs[] = {{"Output", 0, "[N, C_out, OH, OW] ([N, OH, OW, C_out] with NHWC)"}};

static const rill_attr_schema attrs[] = {
    {"strides", RILL_ATTR_INTS, 0, {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){1, 1}},
     "stride per spatial dim"},
    {"paddings", RILL_ATTR_INTS, 0, {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){0, 0}},
     "2 values (per dim) or 4 (top, bottom, left, right)"},
    {"padding_algorithm", RILL_ATTR_STRING, 0, RILL_DEF_STRING("EXPLICIT"), "EXPLICIT, SAME or VALID"},
    {"groups", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "channel groups"},
    {"dilations", RILL_ATTR_INTS, 0, {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){1, 1}},
     "dilation per spatial dim"},
    {"data_format", RILL_ATTR_STRING, 0, RILL_DEF_STRING("NCHW"),
     "NCHW (or AnyLayout), or NHWC (channels last; Filter keeps its layout)"},
    {"output_padding", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS), "extra extent at the end"},
    {"output_size", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS), "explicit output extent"},
    {"use_cudnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"workspace_size_MB", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(512), "ignored"},
};

static rill_status *geom_error(rill_infer_ctx *ctx, const char *err) {
  rill_status *st = rill_infer_error(ctx, "Input (%s), Filter (%s): %s", rill_infer_in_name(ctx, 0, 0),
                                     rill_infer_in_name(ctx, 1, 0), err);
  if (!strstr(err, "UNIMPLEMENTED")) return st;
  rill_status *u = rill_error(RILL_UNIMPLEMENTED, "%s", rill_status_message(st));
  rill_status_destroy(st);
  return u;
}

static rill_status *convt_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *f = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !f || !out) return rill_infer_error(ctx, "needs inputs Input, Filter and output Output");
  if (!x->known || !f->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "the Bias input is a oneDNN fusion rill does not run: add the "
                            "bias with elementwise_add");
  if (x->dtype != f->dtype)
    return rill_infer_error(ctx, "input Input (%s) is %s but input Filter (%s) is %s",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype),
                            rill_infer_in_name(ctx, 1, 0), rill_dtype_name(f->dtype));
  rill_conv_geom g;
  char err[256];
  if (!rill_nn_conv_geom_fmt(ctx->attrs, true, true, &x->dims, &f->dims, &g, err, sizeof err))
    return geom_error(ctx, err);
  rill_dims od = rill_nn_convt_out_dims(&g);
  rill_meta_set(out, x->dtype, &od, x->lod_level, -1, -1);
  return NULL;
}

static rill_status *convt_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Input", "Filter"};
  static const char *const gout[] = {"Output"};
  static const char *const gin[] = {"Input", "Filter"};
  return rill_grad_emit(ctx, "conv2d_transpose_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_conv2d_transpose = {
    .type = "conv2d_transpose",
    .doc = "2-D transposed convolution (the gradient of conv2d with respect to its input), NCHW or "
           "NHWC (through a transpose each way).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = convt_infer,
    .grad = convt_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"Input", 0, "forward Input"},
    {"Filter", 0, "forward Filter"},
    {"Output", RILL_SLOT_DISPENSABLE, "forward Output (not read)"},
    {"Output@GRAD", 0, "gradient of Output"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Input"},
    {"Filter@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Filter"},
};

static rill_status *convt_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *f = rill_infer_in(ctx, 1, 0),
                         *dy = rill_infer_in(ctx, 3, 0);
  if (!x || !f || !dy) return rill_infer_error(ctx, "needs inputs Input, Filter and Output@GRAD");
  if (x->known && f->known) {
    rill_conv_geom g;
    char err[256];
    if (!rill_nn_conv_geom_fmt(ctx->attrs, true, true, &x->dims, &f->dims, &g, err, sizeof err))
      return geom_error(ctx, err);
  }
  rill_nn_same_meta(ctx, 0, 0);
  rill_nn_same_meta(ctx, 1, 1);
  return NULL;
}

const rill_op_schema rill_schema_conv2d_transpose_grad = {
    .type = "conv2d_transpose_grad",
    .doc = "Gradients of conv2d_transpose: Input@GRAD is a conv2d of Output@GRAD.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = convt_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(conv2d_transpose);
