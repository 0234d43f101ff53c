/* merge_selected_rows and get_tensor_from_selected_rows: the ops Paddle's gradient
 * clipping puts before a sparse (selected-rows) gradient's norm. */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {{"X", RILL_SLOT_NO_GRAD, "selected rows"}};
static const rill_slot_schema merge_outputs[] = {
    {"Out", 0, "selected rows: X's rows once each, ascending, the values of a repeated row added"}};
static const rill_slot_schema tensor_outputs[] = {{"Out", 0, "X's values: [rows of X, ...]"}};

/* Selected rows have no dense description: the outputs' shapes come at run time. */
static rill_status *rows_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  rill_meta_unknown(out);
  return NULL;
}

const rill_op_schema rill_schema_merge_selected_rows = {
    .type = "merge_selected_rows",
    .doc = "Out = X with its repeated rows merged (Paddle's MergeAdd): each row once, in "
           "ascending order, holding the sum of X's values for it; height kept.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = merge_outputs,
    .noutputs = RILL_COUNTOF(merge_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = rows_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_get_tensor_from_selected_rows = {
    .type = "get_tensor_from_selected_rows",
    .doc = "Out = the value tensor of selected rows X (one row per entry of X's rows).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = tensor_outputs,
    .noutputs = RILL_COUNTOF(tensor_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = rows_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(selected_rows);
