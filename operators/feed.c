/* feed: binds item `col` of the feed list (filled by the caller of a run) to Out,
 * sharing the data. */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "the feed list variable (a tensor array filled by the run's caller)"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "the fed variable; shares the caller's tensor"},
};
static const rill_attr_schema attrs[] = {
    {"col", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "position in the feed list"},
};

/* The fed tensor is only known when the run binds it: at compile time the declared
 * description of Out stands. */
static rill_status *feed_infer(rill_infer_ctx *ctx) {
  if (ctx->attrs[RILL_FEED_ATTR_COL].v.i < 0)
    return rill_infer_error(ctx, "attribute col is %d, must be >= 0", (int)ctx->attrs[RILL_FEED_ATTR_COL].v.i);
  return NULL;
}

const rill_op_schema rill_schema_feed = {
    .type = "feed",
    .doc = "Out = X[col]: hands a fed tensor to the program without a copy.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_FEED | RILL_OP_KERNEL_SHAPES,
    .infer = feed_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(feed);
