/* conv2d_fusion: Paddle's fused convolution (what its conv_elementwise_add_act_fuse_pass
 * makes of conv2d + elementwise_add [+ activation]): Output = act(conv(Input, Filter) +
 * Bias [+ ResidualData]), NCHW. The conv attributes come first, in conv2d's order, so the
 * kernel can run the conv2d kernel on its own context. */
#include "operators/fused_act.h"
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"Input", 0, "[N, C, H, W]"},
    {"Filter", 0, "[M, C / groups, kh, kw]"},
    {"Bias", 0, "[M], added per output channel"},
    {"ResidualData", RILL_SLOT_DISPENSABLE, "[N, M, OH, OW], added before the activation"},
};
static const rill_slot_schema outputs[] = {
    {"Output", 0, "[N, M, OH, OW]"},
    {"Outputs", RILL_SLOT_DISPENSABLE | RILL_SLOT_DUPLICABLE, "split_channels outputs: unimplemented"},
};
static const rill_attr_schema attrs[] = {
    RILL_CONV_ATTRS,
    {"activation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("relu"),
     "identity, relu, relu6, sigmoid or tanh"},
    {"split_channels", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS), "unimplemented when set"},
};
/* Index of "activation": right after the conv attributes. */
#define ACT_ATTR (RILL_COUNTOF(attrs) - 2)

static rill_status *fusion_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *f = rill_infer_in(ctx, 1, 0),
                         *b = rill_infer_in(ctx, 2, 0), *r = rill_infer_in(ctx, 3, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !f || !b || !out) return rill_infer_error(ctx, "needs inputs Input, Filter, Bias and output Output");
  const rill_attr_value *act = &ctx->attrs[ACT_ATTR];
  if (rill_fused_act_of(act, false) == RILL_FUSED_UNKNOWN)
    return rill_infer_error(ctx, "activation '%s' is not supported (identity, relu, relu6, sigmoid, "
                            "tanh)", act->v.s ? act->v.s : "");
  if (ctx->attrs[ACT_ATTR + 1].n || rill_infer_out(ctx, 1, 0))
    return rill_error(RILL_UNIMPLEMENTED, "conv2d_fusion: split_channels / Outputs are not supported");
  if (!x->known || !f->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dtype != f->dtype)
    return rill_infer_error(ctx, "input Input (%s) is %s but Filter (%s) is %s",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype),
                            rill_infer_in_name(ctx, 1, 0), rill_dtype_name(f->dtype));
  rill_conv_geom g;
  RILL_TRY(rill_nn_infer_conv_geom(ctx, false, x, f, &g));
  if (b->known && rill_dims_known(&b->dims) && g.m >= 0 &&
      rill_dims_prod(&b->dims, 0, b->dims.n) != g.m)
    return rill_infer_error(ctx, "Bias (%s) must hold one value per output channel (%lld)",
                            rill_infer_in_name(ctx, 2, 0), (long long)g.m);
  rill_dims od = {4, {g.n, g.m, g.oh, g.ow}};
  if (r && r->known && rill_dims_known(&r->dims) && rill_dims_known(&od) && !rill_dims_equal(&r->dims, &od)) {
    char rs[RILL_DIMS_STR_MAX], os[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "ResidualData (%s) has shape %s, the output %s",
                            rill_infer_in_name(ctx, 3, 0), rill_dims_str(&r->dims, rs, sizeof rs),
                            rill_dims_str(&od, os, sizeof os));
  }
  rill_meta_set(out, x->dtype, &od, x->lod_level, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_conv2d_fusion = {
    .type = "conv2d_fusion",
    .doc = "Output = act(conv2d(Input, Filter) + Bias [+ ResidualData]): Paddle's fused "
           "convolution (NCHW).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = fusion_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(conv2d_fusion);
