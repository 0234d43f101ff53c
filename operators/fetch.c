/* fetch: puts X into item `col` of the fetch list, which the run hands back. */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "the variable to hand back"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "the fetch list variable (a tensor array)"},
};
static const rill_attr_schema attrs[] = {
    {"col", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "position in the fetch list"},
};

static rill_status *fetch_infer(rill_infer_ctx *ctx) {
  if (ctx->attrs[RILL_FETCH_ATTR_COL].v.i < 0)
    return rill_infer_error(ctx, "attribute col is %d, must be >= 0", (int)ctx->attrs[RILL_FETCH_ATTR_COL].v.i);
  return NULL; /* Out is a list, not a dense tensor: nothing to infer */
}

const rill_op_schema rill_schema_fetch = {
    .type = "fetch",
    .doc = "Out[col] = X: hands a result back to the run's caller (shared, not copied).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_FETCH | RILL_OP_KERNEL_SHAPES | RILL_OP_SIDE_EFFECT,
    .infer = fetch_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(fetch);
