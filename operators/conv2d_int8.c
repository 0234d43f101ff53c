/* conv2d_int8: a convolution over quantized levels computed in int8 with int32 sums,
 * then dequantized: Output[:, c] = conv2d(Input, Filter)[:, c] * FilterScale[c] * Scale /
 * max_range, each scale only where given (at least one). Input and Filter are float32
 * tensors holding integer levels (Input in [-128, 127], Filter in [-127, 127]); it is
 * what the INT8 inference pass makes of conv2d -> fake_dequantize_max_abs (Scale) or
 * conv2d -> fake_channel_wise_dequantize_max_abs (FilterScale, per output channel, and
 * Scale where it has two) when the conv's input comes from a fake quantize op
 * (doc/design/int8.md). The conv attributes come first, in conv2d's order. With InScale,
 * Input holds floats and the op quantizes them as the fake quantize op it absorbed
 * (bit_length, round_type: fake_quantize's arithmetic) while it reads them. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"Input", 0, "[N, C, H, W], integer levels in [-128, 127]"},
    {"Filter", 0, "[M, C / groups, kh, kw], integer levels in [-127, 127]"},
    {"Scale", RILL_SLOT_DISPENSABLE, "[1], the dequantizing (activation) scale"},
    {"FilterScale", RILL_SLOT_DISPENSABLE, "[M], one scale per output channel (filter)"},
    {"InScale", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "[1]: Input holds floats, quantized here as the folded fake quantize op did with this scale"},
};
static const rill_slot_schema outputs[] = {
    {"Output", 0, "[N, M, OH, OW] = conv * Scale / max_range"},
};
static const rill_attr_schema attrs[] = {
    RILL_CONV_ATTRS,
    {"max_range", RILL_ATTR_FLOAT, RILL_ATTR_REQUIRED, RILL_DEF_FLOAT(0.0f),
     "divisor of the dequantization (fake_dequantize_max_abs's), > 0"},
    RILL_I8_QUANT_ATTRS,
};

static rill_status *int8_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *f = rill_infer_in(ctx, 1, 0),
                         *s = rill_infer_in(ctx, 2, 0), *fs = rill_infer_in(ctx, 3, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !f || (!s && !fs) || !out)
    return rill_infer_error(ctx, "needs inputs Input, Filter, Scale or FilterScale, and output Output");
  float r = ctx->attrs[RILL_CONV2D_INT8_ATTR_MAX_RANGE].v.f;
  if (!(r > 0)) return rill_infer_error(ctx, "attribute max_range is %g, must be > 0", (double)r);
  int bits = ctx->attrs[RILL_CONV2D_INT8_ATTR_BIT_LENGTH].v.i, rt = ctx->attrs[RILL_CONV2D_INT8_ATTR_ROUND_TYPE].v.i;
  if (rill_infer_in(ctx, RILL_CONV2D_INT8_IN_IN_SCALE, 0) && !rill_nn_i8_quant_attrs_ok(bits, rt))
    return rill_infer_error(ctx, "with InScale, bit_length is %d (must be 2..8) and round_type %d (0 or 1)", bits, rt);
  if (!rill_nn_is_nchw(&ctx->attrs[RILL_CONV_FORMAT]))
    return rill_error(RILL_UNIMPLEMENTED, "conv2d_int8: only NCHW is supported");
  if (!x->known || !f->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_conv_geom g;
  RILL_TRY(rill_nn_infer_conv_geom(ctx, false, x, f, &g));
  rill_dims od = {4, {g.n, g.m, g.oh, g.ow}};
  rill_meta_set(out, RILL_DTYPE_FP32, &od, x->lod_level, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_conv2d_int8 = {
    .type = "conv2d_int8",
    .doc = "Output[:, c] = conv2d(Input, Filter)[:, c] * FilterScale[c] * Scale / max_range over "
           "integer levels (each scale where given), computed in int8 with exact int32 sums (NCHW).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = int8_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(conv2d_int8);
