/* lookup_table (Ids int64 [..., 1]) and lookup_table_v2 (Ids of any shape): Out = the rows
 * of W picked by Ids; rows for padding_idx are zeros. Their gradients
 * (<op>_grad: W, Ids, Out@GRAD -> W@GRAD) are dense, or with is_sparse a SELECTED_ROWS
 * variable whose rows are the ids and whose value holds the Out@GRAD rows. */
#include "operators/tensor_ops.h"

#include <stdio.h>

enum { IN_W, IN_IDS };

static const rill_slot_schema inputs[] = {
    [IN_W] = {"W", 0, "the table [rows, width]"},
    [IN_IDS] = {"Ids", RILL_SLOT_NO_GRAD, "row indices (int64; lookup_table_v2 also int32)"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "the picked rows"}};
static const rill_attr_schema attrs[] = {
    {"is_sparse", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                     "the gradient of W is SELECTED_ROWS"},
    {"is_distributed", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA,
                          RILL_DEF_BOOL(false),
     "the table lives on the pservers: the transpiler turns the lookup into "
     "distributed_lookup_table"},
    {"padding_idx", RILL_ATTR_LONG, 0, RILL_DEF_LONG(-1),
                       "id whose output row is zeros (-1: none)"},
    {"remote_prefetch", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"is_test", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"entry_config", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING(""), "ignored"},
    {"entry", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("none"), "ignored"},
    {"table_class", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("none"), "ignored"},
};

static rill_status *lookup_infer(rill_infer_ctx *ctx, bool v2) {
  const rill_tensor_meta *w = rill_infer_in(ctx, IN_W, 0), *ids = rill_infer_in(ctx, IN_IDS, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!w || !ids || !out) return rill_infer_error(ctx, "needs inputs W, Ids and output Out");
  if (!w->known || !ids->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  const char *wn = rill_infer_in_name(ctx, IN_W, 0), *in = rill_infer_in_name(ctx, IN_IDS, 0);
  char ws[RILL_DIMS_STR_MAX], is[RILL_DIMS_STR_MAX];
  rill_dims_str(&w->dims, ws, sizeof ws);
  rill_dims_str(&ids->dims, is, sizeof is);
  if (w->dims.n != 2)
    return rill_infer_error(ctx, "input W (%s) has shape %s; it must be a matrix [rows, width]", wn, ws);
  if (ids->dtype != RILL_DTYPE_INT64 && !(v2 && ids->dtype == RILL_DTYPE_INT32))
    return rill_infer_error(ctx, "input Ids (%s) is %s; it must be int64%s", in,
                            rill_dtype_name(ids->dtype), v2 ? " or int32" : "");
  rill_dims d;
  if (v2) {
    if (ids->dims.n + 1 > RILL_MAX_DIMS)
      return rill_infer_error(ctx, "input Ids (%s) of shape %s has too many dims", in, is);
    d = ids->dims;
    d.d[d.n++] = w->dims.d[1];
  } else {
    if (ids->dims.n < 1 || (ids->dims.d[ids->dims.n - 1] != 1 && ids->dims.d[ids->dims.n - 1] >= 0))
      return rill_infer_error(ctx, "input Ids (%s) has shape %s; its last dim must be 1", in, is);
    d = ids->dims;
    d.d[d.n - 1] = w->dims.d[1];
  }
  rill_meta_set(out, w->dtype, &d, ids->lod_level, IN_IDS, 0);
  return NULL;
}

static rill_status *v1_infer(rill_infer_ctx *ctx) { return lookup_infer(ctx, false); }
static rill_status *v2_infer(rill_infer_ctx *ctx) { return lookup_infer(ctx, true); }

/* <op>_grad(W, Ids, Out@GRAD) -> W@GRAD (Paddle's layout; W's data is not read). */
static rill_status *lookup_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "W")) return NULL;
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ctx->schema->type);
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, type, &op));
  RILL_TRY(rill_grad_forward(ctx, op, "W"));
  RILL_TRY(rill_grad_forward(ctx, op, "Ids"));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_of_input(ctx, op, "W"));
  return NULL;
}

const rill_op_schema rill_schema_lookup_table = {
    .type = "lookup_table",
    .doc = "Out = W[Ids] for Ids of shape [..., 1]; padding_idx rows are zeros.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = v1_infer,
    .grad = lookup_maker,
    .kernel_dtype_slot = IN_W,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_lookup_table_v2 = {
    .type = "lookup_table_v2",
    .doc = "Out = W[Ids] for Ids of any shape (Out adds W's width as last dim); padding_idx "
           "rows are zeros.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = v2_infer,
    .grad = lookup_maker,
    .kernel_dtype_slot = IN_W,
    .dtype_attr = -1,
};

enum { G_W, G_IDS, G_DOUT };
static const rill_slot_schema grad_inputs[] = {
    [G_W] = {"W", RILL_SLOT_DECL_ONLY, "the table (only its shape is read)"},
    [G_IDS] = {"Ids", RILL_SLOT_NO_GRAD, "the forward ids"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"W@GRAD", RILL_SLOT_DISPENSABLE,
     "dense [rows, width], or with is_sparse SELECTED_ROWS (rows = ids, value = Out@GRAD rows)"}};

static rill_status *grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *w = rill_infer_in(ctx, G_W, 0), *dout = rill_infer_in(ctx, G_DOUT, 0);
  rill_tensor_meta *dw = rill_infer_out(ctx, 0, 0);
  if (!w || !dout || !rill_infer_in(ctx, G_IDS, 0))
    return rill_infer_error(ctx, "needs inputs W, Ids and Out@GRAD");
  if (!dw) return NULL;
  /* Sparse: the kernel writes selected rows (not a dense tensor the executor sizes). */
  if (ctx->attrs[RILL_LOOKUP_TABLE_ATTR_IS_SPARSE].v.b || !w->known || !dout->known) {
    rill_meta_unknown(dw);
    return NULL;
  }
  rill_meta_set(dw, dout->dtype, &w->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_lookup_table_grad = {
    .type = "lookup_table_grad",
    .doc = "W@GRAD = Out@GRAD rows summed into the rows of Ids (dense), or as selected rows.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_DOUT,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_lookup_table_v2_grad = {
    .type = "lookup_table_v2_grad",
    .doc = "W@GRAD = Out@GRAD rows summed into the rows of Ids (dense), or as selected rows.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_DOUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(lookup_table);
