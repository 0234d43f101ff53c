/* Ops whose results come from ordering or finding elements: argsort, where_index, unique
 * and unique_with_counts. where_index and the unique ops have data-dependent shapes:
 * their kernels allocate the outputs (RILL_OP_KERNEL_SHAPES). None has a gradient in
 * Paddle 1.8's layers (their outputs are stop_gradient). */
#include "operators/tensor_ops.h"

#include <stdio.h>

/* ---- argsort ---- */

static const rill_slot_schema argsort_inputs[] = {{"X", RILL_SLOT_NO_GRAD, "input"}};
static const rill_slot_schema argsort_outputs[] = {
    {"Out", 0, "X sorted along axis"},
    {"Indices", 0, "int64 positions in X of Out's elements along axis"},
};
static const rill_attr_schema argsort_attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "dim sorted (negative from the end)"},
    {"descending", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "largest first"},
};

static rill_status *argsort_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0), *idx = rill_infer_out(ctx, 1, 0);
  if (!x || !out || !idx) return rill_infer_error(ctx, "needs input X and outputs Out, Indices");
  if (!x->known) {
    rill_meta_unknown(out);
    rill_meta_unknown(idx);
    return NULL;
  }
  int a;
  if (!rill_norm_axis(ctx->attrs[RILL_ARGSORT_ATTR_AXIS].v.i, x->dims.n, &a))
    return rill_infer_error(ctx, "axis %d is out of range for input X (%s) of rank %d",
                            (int)ctx->attrs[RILL_ARGSORT_ATTR_AXIS].v.i,
                            rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  rill_meta_set(idx, RILL_DTYPE_INT64, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_argsort = {
    .type = "argsort",
    .doc = "Out = X sorted along axis (stable: equal values keep their order), Indices = where "
           "each came from.",
    .inputs = argsort_inputs,
    .ninputs = RILL_COUNTOF(argsort_inputs),
    .outputs = argsort_outputs,
    .noutputs = RILL_COUNTOF(argsort_outputs),
    .attrs = argsort_attrs,
    .nattrs = RILL_COUNTOF(argsort_attrs),
    .flags = 0,
    .infer = argsort_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- where_index ---- */

static const rill_slot_schema where_inputs[] = {
    {"Condition", RILL_SLOT_NO_GRAD, "tensor whose nonzero (true) elements are listed"}};
static const rill_slot_schema where_outputs[] = {
    {"Out", 0, "int64 [count, rank]: the coordinates of each true element, in order"}};

static rill_status *where_index_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *c = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!c || !out) return rill_infer_error(ctx, "needs input Condition and output Out");
  if (!c->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_dims d = {.n = 2, .d = {-1, c->dims.n}};
  rill_meta_set(out, RILL_DTYPE_INT64, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_where_index = {
    .type = "where_index",
    .doc = "Out = the coordinates of Condition's true (nonzero) elements, one row each.",
    .inputs = where_inputs,
    .ninputs = RILL_COUNTOF(where_inputs),
    .outputs = where_outputs,
    .noutputs = RILL_COUNTOF(where_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = where_index_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- unique, unique_with_counts ---- */

static const rill_slot_schema unique_inputs[] = {{"X", RILL_SLOT_NO_GRAD, "1-D input"}};
static const rill_slot_schema unique_outputs[] = {
    {"Out", 0, "X's distinct values in the order they first appear"},
    {"Index", 0, "for each element of X, its value's position in Out"},
};
static const rill_slot_schema unique_counts_outputs[] = {
    {"Out", 0, "X's distinct values in the order they first appear"},
    {"Index", 0, "for each element of X, its value's position in Out"},
    {"Count", 0, "how many times each value of Out occurs in X"},
};
static const rill_attr_schema unique_attrs[] = {
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_INT32), "int32 (2) or int64 (3): Index, Count"},
};

static rill_status *unique_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  if (!x) return rill_infer_error(ctx, "needs input X");
  int32_t dt = ctx->attrs[RILL_UNIQUE_ATTR_DTYPE].v.i;
  if (dt != RILL_DTYPE_INT32 && dt != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "attribute dtype %d must be int32 (2) or int64 (3)", (int)dt);
  if (x->known && x->dims.n != 1)
    return rill_infer_error(ctx, "input X (%s) has rank %d; it must be 1-D",
                            rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  for (size_t i = 0; i < ctx->schema->noutputs; i++) {
    rill_tensor_meta *m = rill_infer_out(ctx, i, 0);
    if (!m) return rill_infer_error(ctx, "needs output %s", ctx->schema->outputs[i].name);
    if (!x->known) {
      rill_meta_unknown(m);
      continue;
    }
    rill_dims d = {.n = 1, .d = {i == 1 ? x->dims.d[0] : -1}};
    rill_meta_set(m, i == 0 ? x->dtype : (rill_dtype)dt, &d, 0, -1, -1);
  }
  return NULL;
}

const rill_op_schema rill_schema_unique = {
    .type = "unique",
    .doc = "Out = X's distinct values in order of first appearance; Index maps X onto Out.",
    .inputs = unique_inputs,
    .ninputs = RILL_COUNTOF(unique_inputs),
    .outputs = unique_outputs,
    .noutputs = RILL_COUNTOF(unique_outputs),
    .attrs = unique_attrs,
    .nattrs = RILL_COUNTOF(unique_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = unique_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_unique_with_counts = {
    .type = "unique_with_counts",
    .doc = "unique's Out and Index, and Count: the occurrences of each value of Out.",
    .inputs = unique_inputs,
    .ninputs = RILL_COUNTOF(unique_inputs),
    .outputs = unique_counts_outputs,
    .noutputs = RILL_COUNTOF(unique_counts_outputs),
    .attrs = unique_attrs,
    .nattrs = RILL_COUNTOF(unique_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = unique_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sort);
