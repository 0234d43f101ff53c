/* flatten2 and flatten_contiguous_range: Out = X with some extents merged, sharing X's
 * buffer; XShape = [0] + X's shape for the gradient. */
#include "operators/tensor_ops.h"

static const rill_slot_schema inputs[] = {{"X", RILL_SLOT_ANY_PLACE, "input (Out views its buffer)"}};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "X flattened (shares X's buffer)"},
    {"XShape", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
     "[0] + X's shape, no data: kept for the gradient"},
};
static const rill_attr_schema flatten2_attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(1),
     "Out = [prod(X dims before axis), prod(X dims from axis)]; 0 <= axis <= rank"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};
static const rill_attr_schema range_attrs[] = {
    {"start_axis", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "first dim merged (negative from the end)"},
    {"stop_axis", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "last dim merged (negative from the end)"},
};

static rill_status *flatten_common(rill_infer_ctx *ctx, bool range) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0), *xs = rill_infer_out(ctx, 1, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    if (xs) rill_meta_unknown(xs);
    return NULL;
  }
  RILL_TRY(rill_xshape_infer(ctx, 1, x));
  rill_dims d;
  char err[256];
  bool ok = range ? rill_flatten_range_dims(ctx->attrs[RILL_FLATTEN_CONTIGUOUS_RANGE_ATTR_START_AXIS].v.i, ctx->attrs[RILL_FLATTEN_CONTIGUOUS_RANGE_ATTR_STOP_AXIS].v.i, &x->dims, &d,
                                            err, sizeof err)
                  : rill_flatten2_dims(ctx->attrs[RILL_FLATTEN2_ATTR_AXIS].v.i, &x->dims, &d, err, sizeof err);
  if (!ok) return rill_infer_error(ctx, "input X (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  bool same_first = x->dims.n > 0 && x->dims.d[0] >= 0 && x->dims.d[0] == d.d[0];
  rill_meta_set(out, x->dtype, &d, same_first ? x->lod_level : 0, same_first ? 0 : -1, 0);
  return NULL;
}

static rill_status *flatten2_infer(rill_infer_ctx *ctx) { return flatten_common(ctx, false); }
static rill_status *range_infer(rill_infer_ctx *ctx) { return flatten_common(ctx, true); }

const rill_op_schema rill_schema_flatten2 = {
    .type = "flatten2",
    .doc = "Out = X as a matrix [prod(dims[:axis]), prod(dims[axis:])], sharing X's buffer.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = flatten2_attrs,
    .nattrs = RILL_COUNTOF(flatten2_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = flatten2_infer,
    .grad = rill_xshape_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_flatten_contiguous_range = {
    .type = "flatten_contiguous_range",
    .doc = "Out = X with dims start_axis..stop_axis merged into one, sharing X's buffer.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = range_attrs,
    .nattrs = RILL_COUNTOF(range_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = range_infer,
    .grad = rill_xshape_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_XSHAPE_GRAD_SCHEMA(flatten2, flatten2_attrs, RILL_COUNTOF(flatten2_attrs), NULL);
RILL_XSHAPE_GRAD_SCHEMA(flatten_contiguous_range, range_attrs, RILL_COUNTOF(range_attrs), NULL);

RILL_OP_TABLE_CHECKS(flatten);
