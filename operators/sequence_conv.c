/* sequence_conv: a 1-D convolution along each sequence of X [T, D] (one LoD level).
 * Output row t of a sequence is the concatenation of the context rows t + contextStart
 * ... t + contextStart + contextLength - 1 (rows outside the sequence are zero, or rows
 * of PaddingData with paddingTrainable) times Filter [contextLength * D, N].
 * sequence_conv_grad gives X@GRAD, Filter@GRAD and (paddingTrainable) PaddingData@GRAD. */
#include "operators/math_grad.h"
#include "operators/op_util.h"

enum { IN_X, IN_PAD, IN_FILTER };
enum { OUT_OUT };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "LoD tensor [T, D] of sequences"},
    [IN_PAD] = {"PaddingData", RILL_SLOT_DISPENSABLE,
                "[up_pad + down_pad, D] rows used outside the sequences with paddingTrainable"},
    [IN_FILTER] = {"Filter", 0, "[contextLength * D, N]"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUT] = {"Out", 0, "[T, N], X's LoD"},
};
static const rill_attr_schema attrs[] = {
    {"paddingTrainable", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                 "take rows outside a sequence from PaddingData instead of zeros"},
    {"contextLength", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(1),
               "rows in each context window"},
    {"contextStart", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
                 "offset of the window's first row (negative: rows before)"},
    {"contextStride", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "must be 1"},
};

static rill_status *sequence_conv_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *f = rill_infer_in(ctx, IN_FILTER, 0);
  const rill_tensor_meta *pad = rill_infer_in(ctx, IN_PAD, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0);
  if (!x || !f || !out) return rill_infer_error(ctx, "needs inputs X and Filter and output Out");
  int32_t len = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_CONTEXT_LENGTH].v.i, start = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_CONTEXT_START].v.i;
  if (len < 1) return rill_infer_error(ctx, "attribute contextLength is %d, must be positive", (int)len);
  if (ctx->attrs[RILL_SEQUENCE_CONV_ATTR_CONTEXT_STRIDE].v.i != 1)
    return rill_infer_error(ctx, "attribute contextStride is %d: only 1 is supported",
                            (int)ctx->attrs[RILL_SEQUENCE_CONV_ATTR_CONTEXT_STRIDE].v.i);
  bool train = ctx->attrs[RILL_SEQUENCE_CONV_ATTR_PADDING_TRAINABLE].v.b;
  if (train && !pad)
    return rill_infer_error(ctx, "attribute paddingTrainable is set but input PaddingData is "
                            "missing");
  if (!x->known || !f->known || (train && !pad->known)) {
    rill_meta_unknown(out);
    return NULL;
  }
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_X, 0), *fn = rill_infer_in_name(ctx, IN_FILTER, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (f->dtype != x->dtype || (train && pad->dtype != x->dtype))
    return rill_infer_error(ctx, "inputs Filter (%s) and PaddingData must have X's dtype %s", fn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [T, D]", xn,
                            rill_dims_str(&x->dims, a, sizeof a));
  int64_t d = x->dims.d[1];
  if (f->dims.n != 2 || (d >= 0 && f->dims.d[0] >= 0 && f->dims.d[0] != (int64_t)len * d))
    return rill_infer_error(ctx, "input Filter (%s) has shape %s, expected [%d * %lld, N] "
                            "(contextLength times the width of X (%s) %s)", fn,
                            rill_dims_str(&f->dims, a, sizeof a), (int)len, (long long)d, xn,
                            rill_dims_str(&x->dims, b, sizeof b));
  if (train) {
    int64_t up = start < 0 ? -(int64_t)start : 0;
    int64_t down = (int64_t)start + len - 1 > 0 ? (int64_t)start + len - 1 : 0;
    if (pad->dims.n != 2 || (pad->dims.d[0] >= 0 && pad->dims.d[0] != up + down) ||
        (pad->dims.d[1] >= 0 && d >= 0 && pad->dims.d[1] != d))
      return rill_infer_error(ctx, "input PaddingData (%s) has shape %s, expected [%lld, %lld] "
                              "(%lld rows before and %lld after a sequence)",
                              rill_infer_in_name(ctx, IN_PAD, 0), rill_dims_str(&pad->dims, a, sizeof a),
                              (long long)(up + down), (long long)d, (long long)up, (long long)down);
  }
  rill_dims od = {.n = 2, .d = {x->dims.d[0], f->dims.d[1]}};
  rill_meta_set(out, x->dtype, &od, x->lod_level, IN_X, 0);
  return NULL;
}

/* Paddle's maker: sequence_conv_grad(X, Filter, PaddingData with paddingTrainable,
 * Out@GRAD) -> X@GRAD, Filter@GRAD (and PaddingData@GRAD). */
static rill_status *sequence_conv_maker(rill_grad_ctx *ctx) {
  const rill_attr *tr = rill_op_attr(ctx->fwd, "paddingTrainable");
  bool train = tr && ((tr->value.type == RILL_ATTR_BOOLEAN && tr->value.v.b) ||
                      (tr->value.type == RILL_ATTR_INT && tr->value.v.i));
  const rill_op_slot *pad = rill_op_input(ctx->fwd, "PaddingData");
  train = train && pad && pad->nargs > 0;
  if (rill_grad_none_wanted(ctx, "X") && rill_grad_none_wanted(ctx, "Filter") &&
      (!train || rill_grad_none_wanted(ctx, "PaddingData")))
    return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "sequence_conv_grad", &op));
  RILL_TRY(rill_grad_forward(ctx, op, "X"));
  RILL_TRY(rill_grad_forward(ctx, op, "Filter"));
  if (train) RILL_TRY(rill_grad_forward(ctx, op, "PaddingData"));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_of_input(ctx, op, "X"));
  RILL_TRY(rill_grad_of_input(ctx, op, "Filter"));
  if (train) RILL_TRY(rill_grad_of_input(ctx, op, "PaddingData"));
  return NULL;
}

const rill_op_schema rill_schema_sequence_conv = {
    .type = "sequence_conv",
    .doc = "1-D convolution over a context window along each sequence of a LoD tensor.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = sequence_conv_infer,
    .grad = sequence_conv_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

enum { G_X, G_PAD, G_FILTER, G_DOUT };

static const rill_slot_schema grad_inputs[] = {
    [G_X] = {"X", 0, "forward input"},
    [G_PAD] = {"PaddingData", RILL_SLOT_DISPENSABLE, "forward PaddingData (paddingTrainable)"},
    [G_FILTER] = {"Filter", 0, "forward Filter"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out [T, N]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
    {"PaddingData@GRAD", RILL_SLOT_DISPENSABLE, "gradient of PaddingData"},
    {"Filter@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Filter"},
};

static rill_status *sequence_conv_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, G_X, 0), *f = rill_infer_in(ctx, G_FILTER, 0);
  const rill_tensor_meta *g = rill_infer_in(ctx, G_DOUT, 0);
  if (!x || !f || !g) return rill_infer_error(ctx, "needs inputs X, Filter and Out@GRAD");
  if (rill_infer_out(ctx, 1, 0) && !rill_infer_in(ctx, G_PAD, 0))
    return rill_infer_error(ctx, "output PaddingData@GRAD needs input PaddingData");
  if (x->known && g->known && g->dtype != x->dtype)
    return rill_infer_error(ctx, "input Out@GRAD (%s) is %s but input X (%s) is %s",
                            rill_infer_in_name(ctx, G_DOUT, 0), rill_dtype_name(g->dtype),
                            rill_infer_in_name(ctx, G_X, 0), rill_dtype_name(x->dtype));
  rill_grad_infer_like(ctx, 0, G_X);
  rill_grad_infer_like(ctx, 1, G_PAD);
  rill_grad_infer_like(ctx, 2, G_FILTER);
  return NULL;
}

const rill_op_schema rill_schema_sequence_conv_grad = {
    .type = "sequence_conv_grad",
    .doc = "Gradients of sequence_conv: Filter@GRAD = contexts^T Out@GRAD; the context rows' "
           "gradients Out@GRAD Filter^T go back to the rows of X (or of PaddingData) they "
           "were read from.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = sequence_conv_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_X,
    .dtype_attr = -1,
};
RILL_OP_TABLE_CHECKS(sequence_conv);
