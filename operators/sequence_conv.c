/* sequence_conv: a 1-D convolution along each sequence of X [T, D] (one LoD level).
 * Output row t of a sequence is the concatenation of the context rows t + contextStart
 * ... t + contextStart + contextLength - 1 (rows outside the sequence are zero, or rows
 * of PaddingData with paddingTrainable) times Filter [contextLength * D, N]. */
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
    .grad = NULL,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sequence_conv);
