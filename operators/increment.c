/* increment: Out = X + step, X holding one element (step counters). */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {{"X", RILL_SLOT_NO_GRAD, "one-element counter"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "X + step (often X itself)"}};
static const rill_attr_schema attrs[] = {
    {"step", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "added to X"},
};

static rill_status *increment_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int64_t n;
  if (rill_dims_numel(&x->dims, INT64_MAX, &n) && n != 1)
    return rill_infer_error(ctx, "input X (%s) must hold one element, has %lld",
                            rill_infer_in_name(ctx, 0, 0), (long long)n);
  rill_meta_set(out, x->dtype, &x->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_increment = {
    .type = "increment",
    .doc = "Out = X + step for a one-element X (int32, int64, float32, float64).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = increment_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(increment);
