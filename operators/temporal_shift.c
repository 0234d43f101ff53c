/* temporal_shift: X [N * seg_num, C, H, W] seen as N clips of seg_num frames. With
 * c1 = floor(C * shift_ratio) and c2 = floor(2 * C * shift_ratio), channels below c1
 * take the previous frame's values, channels in [c1, c2) the next frame's, the rest
 * stay; a frame past either end gives zeros. The gradient shifts Out@GRAD back. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {{"X", 0, "[N * seg_num, C, H, W]"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "X's shape"}};
static const rill_attr_schema attrs[] = {
    {"seg_num", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INT),
     "frames per clip"},
    {"shift_ratio", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.25f),
     "share of the channels shifted each way, in (0, 0.5)"},
};

static rill_status *ts_check(rill_infer_ctx *ctx, const rill_tensor_meta *x, const char *slot) {
  char a[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input %s (%s) is %s, expected float32 or float64", slot, xn,
                            rill_dtype_name(x->dtype));
  int seg = ctx->attrs[RILL_TEMPORAL_SHIFT_ATTR_SEG_NUM].v.i;
  float r = ctx->attrs[RILL_TEMPORAL_SHIFT_ATTR_SHIFT_RATIO].v.f;
  if (seg <= 0 || !(r > 0.0f && r < 0.5f))
    return rill_infer_error(ctx, "attributes seg_num %d (> 0) and shift_ratio %g (in (0, 0.5)) "
                            "are out of range", seg, (double)r);
  if (x->dims.n != 4 || (x->dims.d[0] >= 0 && x->dims.d[0] % seg != 0))
    return rill_infer_error(ctx, "input %s (%s) has shape %s: temporal_shift takes 4-D input "
                            "whose first dim is a multiple of seg_num %d", slot, xn,
                            rill_dims_str(&x->dims, a, sizeof a), seg);
  return NULL;
}

static rill_status *ts_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x || !rill_infer_out(ctx, 0, 0)) return rill_infer_error(ctx, "needs input X and output Out");
  if (x->known) RILL_TRY(ts_check(ctx, x, "X"));
  rill_nn_same_meta(ctx, 0, 0);
  return NULL;
}

static rill_status *ts_maker(rill_grad_ctx *ctx) {
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, NULL, NULL, 0, gout, RILL_COUNTOF(gout), gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_temporal_shift = {
    .type = "temporal_shift",
    .doc = "Shifts a share of the channels one frame back and one forward within each clip.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = ts_infer,
    .grad = ts_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {{"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema grad_outputs[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape"}};

static rill_status *ts_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *g = rill_infer_in(ctx, 0, 0);
  if (!g) return rill_infer_error(ctx, "needs input Out@GRAD");
  if (g->known) RILL_TRY(ts_check(ctx, g, "Out@GRAD"));
  rill_nn_same_meta(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_temporal_shift_grad = {
    .type = "temporal_shift_grad",
    .doc = "X@GRAD of temporal_shift: Out@GRAD shifted back.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = ts_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(temporal_shift);
