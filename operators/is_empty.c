/* is_empty: Out = a bool [1], whether X has no elements (a tensor without data counts as
 * empty, as a step's selection after every beam ended). */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {{"X", RILL_SLOT_NO_GRAD, "any tensor"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "bool [1]: X has no elements"}};

static rill_status *is_empty_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!rill_infer_in(ctx, 0, 0) || !out) return rill_infer_error(ctx, "needs input X and output Out");
  rill_dims one = {.n = 1, .d = {1}};
  rill_meta_set(out, RILL_DTYPE_BOOL, &one, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_is_empty = {
    .type = "is_empty",
    .doc = "Out = (X has no elements), a bool of shape [1].",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = is_empty_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(is_empty);
