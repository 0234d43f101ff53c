/* The index ops: gather, gather_nd, scatter, scatter_nd_add, index_select, index_sample
 * and their gradients.
 *
 * Each reads or writes slices of X picked by index tuples: gather and scatter take one
 * coordinate per index (rows of X's first dim), gather_nd and scatter_nd_add take
 * Index's last dim as the tuple length k and address slices X[i0, ..., ik-1, ...];
 * index_select picks along any dim, index_sample picks per row of a 2-D X. */
#include "operators/tensor_ops.h"

#include <stdio.h>

/* Checks an index input: int32/int64 and, for the one-coordinate ops, rank 1 or [N, 1].
 * k_out receives the tuple length (1 for rows; Index's last extent for the nd ops). */
static rill_status *index_meta(rill_infer_ctx *ctx, size_t slot, bool nd, int64_t *count,
                               int64_t *k_out, rill_dims *lead) {
  const rill_tensor_meta *ix = rill_infer_in(ctx, slot, 0);
  const char *slot_name = ctx->schema->inputs[slot].name, *n = rill_infer_in_name(ctx, slot, 0);
  if (ix->dtype != RILL_DTYPE_INT32 && ix->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input %s (%s) is %s; it must be int32 or int64", slot_name, n,
                            rill_dtype_name(ix->dtype));
  char s[RILL_DIMS_STR_MAX];
  if (!nd) {
    if (ix->dims.n != 1 && !(ix->dims.n == 2 && (ix->dims.d[1] == 1 || ix->dims.d[1] < 0)))
      return rill_infer_error(ctx, "input %s (%s) has shape %s; it must be [N] or [N, 1]",
                              slot_name, n, rill_dims_str(&ix->dims, s, sizeof s));
    *count = ix->dims.d[0];
    *k_out = 1;
    lead->n = 1;
    lead->d[0] = ix->dims.d[0];
    return NULL;
  }
  if (ix->dims.n < 1)
    return rill_infer_error(ctx, "input %s (%s) must have rank >= 1", slot_name, n);
  *k_out = ix->dims.d[ix->dims.n - 1];
  lead->n = ix->dims.n - 1;
  for (int i = 0; i < lead->n; i++) lead->d[i] = ix->dims.d[i];
  *count = rill_span_prod(&ix->dims, 0, ix->dims.n - 1);
  return NULL;
}

/* lead + x's dims from k on: the shape of the gathered slices (and of Updates). */
static rill_status *sliced_dims(rill_infer_ctx *ctx, size_t xslot, size_t islot,
                                const rill_dims *x, const rill_dims *lead, int64_t k,
                                rill_dims *out) {
  if (k >= 0 && k > x->n) {
    char s[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input %s (%s) addresses %lld dims of input %s (%s), which has "
                            "shape %s", ctx->schema->inputs[islot].name,
                            rill_infer_in_name(ctx, islot, 0), (long long)k,
                            ctx->schema->inputs[xslot].name, rill_infer_in_name(ctx, xslot, 0),
                            rill_dims_str(x, s, sizeof s));
  }
  if (k < 0) {
    /* Unknown tuple length: only the rank of the result is unknown. */
    out->n = lead->n;
    for (int i = 0; i < lead->n; i++) out->d[i] = lead->d[i];
    return NULL;
  }
  if (lead->n + (x->n - (int)k) > RILL_MAX_DIMS)
    return rill_infer_error(ctx, "the result of input %s (%s) would have more than %d dims",
                            ctx->schema->inputs[islot].name, rill_infer_in_name(ctx, islot, 0),
                            RILL_MAX_DIMS);
  *out = *lead;
  for (int i = (int)k; i < x->n; i++) out->d[out->n++] = x->d[i];
  return NULL;
}

/* ---- gather, gather_nd ---- */

static const rill_slot_schema g_inputs[] = {
    {"X", 0, "the source"},
    {"Index", RILL_SLOT_NO_GRAD, "int32/int64 coordinates"},
};
static const rill_slot_schema g_outputs[] = {{"Out", 0, "the gathered slices"}};
static const rill_attr_schema gather_attrs[] = {
    {"overwrite", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "gradient of a repeated index: the last Out@GRAD row (true) or their sum (false)"},
};

static rill_status *gather_infer_common(rill_infer_ctx *ctx, bool nd) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *ix = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !ix || !out) return rill_infer_error(ctx, "needs inputs X, Index and output Out");
  if (!x->known || !ix->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int64_t count, k;
  rill_dims lead, d;
  RILL_TRY(index_meta(ctx, 1, nd, &count, &k, &lead));
  if (!nd && x->dims.n < 1)
    return rill_infer_error(ctx, "input X (%s) must have rank >= 1", rill_infer_in_name(ctx, 0, 0));
  RILL_TRY(sliced_dims(ctx, 0, 1, &x->dims, &lead, k, &d));
  if (k < 0) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *gather_infer(rill_infer_ctx *ctx) { return gather_infer_common(ctx, false); }
static rill_status *gather_nd_infer(rill_infer_ctx *ctx) { return gather_infer_common(ctx, true); }

static rill_status *gather_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Index"}, *const og[] = {"Out"}, *const ig[] = {"X"};
  return rill_grad_emit(ctx, NULL, fwd, 2, og, 1, ig, 1);
}

const rill_op_schema rill_schema_gather = {
    .type = "gather",
    .doc = "Out[i] = X[Index[i]]: rows of X picked by a 1-D (or [N, 1]) index.",
    .inputs = g_inputs,
    .ninputs = RILL_COUNTOF(g_inputs),
    .outputs = g_outputs,
    .noutputs = RILL_COUNTOF(g_outputs),
    .attrs = gather_attrs,
    .nattrs = RILL_COUNTOF(gather_attrs),
    .flags = 0,
    .infer = gather_infer,
    .grad = gather_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_gather_nd = {
    .type = "gather_nd",
    .doc = "Out[i...] = X[Index[i..., 0], ..., Index[i..., k-1]] with k = Index's last extent; "
           "Out's shape is Index's without the last dim followed by X's dims from k on.",
    .inputs = g_inputs,
    .ninputs = RILL_COUNTOF(g_inputs),
    .outputs = g_outputs,
    .noutputs = RILL_COUNTOF(g_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = gather_nd_infer,
    .grad = gather_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema gg_inputs[] = {
    {"X", 0, "the forward source (only its shape is read)"},
    {"Index", RILL_SLOT_NO_GRAD, "the forward coordinates"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema gg_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "zeros with the Out@GRAD slices added at Index"}};


const rill_op_schema rill_schema_gather_grad = {
    .type = "gather_grad",
    .doc = "X@GRAD = zeros of X's shape; row Index[i] receives Out@GRAD row i (the last one "
           "for a repeated index when overwrite, else their sum).",
    .inputs = gg_inputs,
    .ninputs = RILL_COUNTOF(gg_inputs),
    .outputs = gg_outputs,
    .noutputs = RILL_COUNTOF(gg_outputs),
    .attrs = gather_attrs,
    .nattrs = RILL_COUNTOF(gather_attrs),
    .flags = 0,
    .infer = rill_grad_like_input_infer,
    .grad = NULL,
    .kernel_dtype_slot = 2,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_gather_nd_grad = {
    .type = "gather_nd_grad",
    .doc = "X@GRAD = zeros of X's shape with the Out@GRAD slices added at the Index tuples.",
    .inputs = gg_inputs,
    .ninputs = RILL_COUNTOF(gg_inputs),
    .outputs = gg_outputs,
    .noutputs = RILL_COUNTOF(gg_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = rill_grad_like_input_infer,
    .grad = NULL,
    .kernel_dtype_slot = 2,
    .dtype_attr = -1,
};

/* ---- scatter, scatter_nd_add ---- */

static const rill_slot_schema s_inputs[] = {
    {"X", 0, "the tensor updated"},
    {"Ids", RILL_SLOT_NO_GRAD, "int32/int64 rows of X, [N] or [N, 1]"},
    {"Updates", 0, "[N] + X's dims after the first"},
};
static const rill_slot_schema snd_inputs[] = {
    {"X", 0, "the tensor updated"},
    {"Index", RILL_SLOT_NO_GRAD, "int32/int64 coordinate tuples [..., k]"},
    {"Updates", 0, "Index's dims without the last + X's dims from k on"},
};
static const rill_slot_schema s_outputs[] = {{"Out", 0, "X with the updates applied"}};
static const rill_attr_schema scatter_attrs[] = {
    {"overwrite", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "rows of repeated ids: the last update (true) or the sum of the updates (false)"},
};

static rill_status *scatter_infer_common(rill_infer_ctx *ctx, bool nd) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *ix = rill_infer_in(ctx, 1, 0),
                         *up = rill_infer_in(ctx, 2, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  const char *iname = ctx->schema->inputs[1].name;
  if (!x || !ix || !up || !out)
    return rill_infer_error(ctx, "needs inputs X, %s, Updates and output Out", iname);
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (ix->known && up->known) {
    int64_t count, k;
    rill_dims lead, want;
    RILL_TRY(index_meta(ctx, 1, nd, &count, &k, &lead));
    if (!nd && x->dims.n < 1)
      return rill_infer_error(ctx, "input X (%s) must have rank >= 1", rill_infer_in_name(ctx, 0, 0));
    RILL_TRY(sliced_dims(ctx, 0, 1, &x->dims, &lead, k, &want));
    bool ok = k < 0 || want.n == up->dims.n;
    for (int i = 0; ok && k >= 0 && i < want.n; i++)
      ok = want.d[i] < 0 || up->dims.d[i] < 0 || want.d[i] == up->dims.d[i];
    if (!ok) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input Updates (%s) has shape %s; input %s (%s) and X (%s) "
                              "need %s", rill_infer_in_name(ctx, 2, 0),
                              rill_dims_str(&up->dims, a, sizeof a), iname,
                              rill_infer_in_name(ctx, 1, 0), rill_infer_in_name(ctx, 0, 0),
                              rill_dims_str(&want, b, sizeof b));
    }
    if (up->dtype != x->dtype)
      return rill_infer_error(ctx, "input Updates (%s) is %s; it must be X's dtype %s",
                              rill_infer_in_name(ctx, 2, 0), rill_dtype_name(up->dtype),
                              rill_dtype_name(x->dtype));
  }
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *scatter_infer(rill_infer_ctx *ctx) { return scatter_infer_common(ctx, false); }
static rill_status *scatter_nd_add_infer(rill_infer_ctx *ctx) {
  return scatter_infer_common(ctx, true);
}

static rill_status *scatter_maker(rill_grad_ctx *ctx) {
  const char *ids = ctx->schema->inputs[1].name;
  const char *const fwd[] = {ids, "Updates"}, *const og[] = {"Out"},
                    *const ig[] = {"X", "Updates"};
  return rill_grad_emit(ctx, NULL, fwd, 2, og, 1, ig, 2);
}

const rill_op_schema rill_schema_scatter = {
    .type = "scatter",
    .doc = "Out = X with row Ids[i] set to Updates[i] (overwrite: the last update of a repeated "
           "id wins; else rows named by Ids are zeroed and their updates summed).",
    .inputs = s_inputs,
    .ninputs = RILL_COUNTOF(s_inputs),
    .outputs = s_outputs,
    .noutputs = RILL_COUNTOF(s_outputs),
    .attrs = scatter_attrs,
    .nattrs = RILL_COUNTOF(scatter_attrs),
    .flags = 0,
    .infer = scatter_infer,
    .grad = scatter_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_scatter_nd_add = {
    .type = "scatter_nd_add",
    .doc = "Out = X with Updates[i...] added to the slice X[Index[i...]] (repeated tuples add up).",
    .inputs = snd_inputs,
    .ninputs = RILL_COUNTOF(snd_inputs),
    .outputs = s_outputs,
    .noutputs = RILL_COUNTOF(s_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = scatter_nd_add_infer,
    .grad = scatter_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema sg_inputs[] = {
    {"Ids", RILL_SLOT_NO_GRAD, "the forward rows"},
    {"Updates", 0, "the forward updates (only the shape is read)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema sndg_inputs[] = {
    {"Index", RILL_SLOT_NO_GRAD, "the forward coordinate tuples"},
    {"Updates", 0, "the forward updates (only the shape is read)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema sg_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD (scatter: zero at the rows Ids overwrote)"},
    {"Updates@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD gathered at the indices"},
};

static rill_status *scatter_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *up = rill_infer_in(ctx, 1, 0), *dout = rill_infer_in(ctx, 2, 0);
  if (!up || !dout || !rill_infer_in(ctx, 0, 0))
    return rill_infer_error(ctx, "needs inputs %s, Updates and Out@GRAD",
                            ctx->schema->inputs[0].name);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0), *dup = rill_infer_out(ctx, 1, 0);
  if (dx) {
    if (dout->known) rill_meta_set(dx, dout->dtype, &dout->dims, dout->lod_level, 2, 0);
    else rill_meta_unknown(dx);
  }
  if (dup) {
    if (up->known && dout->known) rill_meta_set(dup, dout->dtype, &up->dims, up->lod_level, 1, 0);
    else rill_meta_unknown(dup);
  }
  return NULL;
}

const rill_op_schema rill_schema_scatter_grad = {
    .type = "scatter_grad",
    .doc = "X@GRAD = Out@GRAD with the rows named by Ids zeroed; Updates@GRAD[i] = "
           "Out@GRAD[Ids[i]].",
    .inputs = sg_inputs,
    .ninputs = RILL_COUNTOF(sg_inputs),
    .outputs = sg_outputs,
    .noutputs = RILL_COUNTOF(sg_outputs),
    .attrs = scatter_attrs,
    .nattrs = RILL_COUNTOF(scatter_attrs),
    .flags = 0,
    .infer = scatter_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 2,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_scatter_nd_add_grad = {
    .type = "scatter_nd_add_grad",
    .doc = "X@GRAD = Out@GRAD; Updates@GRAD[i...] = Out@GRAD[Index[i...]].",
    .inputs = sndg_inputs,
    .ninputs = RILL_COUNTOF(sndg_inputs),
    .outputs = sg_outputs,
    .noutputs = RILL_COUNTOF(sg_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = scatter_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 2,
    .dtype_attr = -1,
};

/* ---- index_select, index_sample ---- */

static const rill_attr_schema index_select_attrs[] = {
    {"dim", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "dim picked along (negative from the end)"},
};

static rill_status *int_index(rill_infer_ctx *ctx, const rill_tensor_meta *ix) {
  if (ix->dtype != RILL_DTYPE_INT32 && ix->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input Index (%s) is %s; it must be int32 or int64",
                            rill_infer_in_name(ctx, 1, 0), rill_dtype_name(ix->dtype));
  return NULL;
}

static rill_status *index_select_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *ix = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !ix || !out) return rill_infer_error(ctx, "needs inputs X, Index and output Out");
  if (!x->known || !ix->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  RILL_TRY(int_index(ctx, ix));
  char s[RILL_DIMS_STR_MAX];
  if (ix->dims.n != 1 && !(ix->dims.n == 2 && (ix->dims.d[1] == 1 || ix->dims.d[1] < 0)))
    return rill_infer_error(ctx, "input Index (%s) has shape %s; it must be 1-D",
                            rill_infer_in_name(ctx, 1, 0), rill_dims_str(&ix->dims, s, sizeof s));
  int a;
  int32_t dim = ctx->attrs[RILL_INDEX_SELECT_ATTR_DIM].v.i;
  if (!rill_norm_axis(dim, x->dims.n, &a))
    return rill_infer_error(ctx, "dim %d is out of range for input X (%s) of rank %d", (int)dim,
                            rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  rill_dims d = x->dims;
  d.d[a] = ix->dims.d[0];
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_index_select = {
    .type = "index_select",
    .doc = "Out = X with its slices along dim picked by the 1-D Index (Out's extent there is "
           "Index's length).",
    .inputs = g_inputs,
    .ninputs = RILL_COUNTOF(g_inputs),
    .outputs = g_outputs,
    .noutputs = RILL_COUNTOF(g_outputs),
    .attrs = index_select_attrs,
    .nattrs = RILL_COUNTOF(index_select_attrs),
    .flags = 0,
    .infer = index_select_infer,
    .grad = gather_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_index_select_grad = {
    .type = "index_select_grad",
    .doc = "X@GRAD = zeros of X's shape with the Out@GRAD slices added at Index along dim.",
    .inputs = gg_inputs,
    .ninputs = RILL_COUNTOF(gg_inputs),
    .outputs = gg_outputs,
    .noutputs = RILL_COUNTOF(gg_outputs),
    .attrs = index_select_attrs,
    .nattrs = RILL_COUNTOF(index_select_attrs),
    .flags = 0,
    .infer = rill_grad_like_input_infer,
    .grad = NULL,
    .kernel_dtype_slot = 2,
    .dtype_attr = -1,
};

static rill_status *index_sample_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *ix = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !ix || !out) return rill_infer_error(ctx, "needs inputs X, Index and output Out");
  if (!x->known || !ix->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  RILL_TRY(int_index(ctx, ix));
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (x->dims.n != 2 || ix->dims.n != 2 ||
      (x->dims.d[0] >= 0 && ix->dims.d[0] >= 0 && x->dims.d[0] != ix->dims.d[0]))
    return rill_infer_error(ctx, "input X (%s) of shape %s and input Index (%s) of shape %s must "
                            "be 2-D with the same first extent", rill_infer_in_name(ctx, 0, 0),
                            rill_dims_str(&x->dims, a, sizeof a), rill_infer_in_name(ctx, 1, 0),
                            rill_dims_str(&ix->dims, b, sizeof b));
  rill_meta_set(out, x->dtype, &ix->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_index_sample = {
    .type = "index_sample",
    .doc = "Out[i, j] = X[i, Index[i, j]] for a 2-D X and Index.",
    .inputs = g_inputs,
    .ninputs = RILL_COUNTOF(g_inputs),
    .outputs = g_outputs,
    .noutputs = RILL_COUNTOF(g_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = index_sample_infer,
    .grad = gather_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_index_sample_grad = {
    .type = "index_sample_grad",
    .doc = "X@GRAD = zeros of X's shape with Out@GRAD[i, j] added at [i, Index[i, j]].",
    .inputs = gg_inputs,
    .ninputs = RILL_COUNTOF(gg_inputs),
    .outputs = gg_outputs,
    .noutputs = RILL_COUNTOF(gg_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = rill_grad_like_input_infer,
    .grad = NULL,
    .kernel_dtype_slot = 2,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(gather);
