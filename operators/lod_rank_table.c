/* The ops of Fluid 1.x's DynamicRNN: a rank table orders the sequences of a LoD batch by
 * length (longest first); lod_tensor_to_array splits the batch into one tensor per time
 * step holding the entries of the sequences still running (rows, or with LoD levels below
 * the ranked one, sub-sequences that keep those levels), array_to_lod_tensor puts such an
 * array back together, shrink_rnn_memory keeps a state's rows (or top-level sequences) of
 * the running sequences, and reorder_lod_tensor_by_rank puts a per-sequence tensor into
 * rank order.
 *
 * rill holds a LOD_RANK_TABLE variable as an int64 tensor [n, 2] of (index, length) rows
 * in rank order, its LoD the coarse levels above the ranked one (so the ranked level is
 * the LoD's level count). */
#include "operators/op_util.h"
#include "operators/tensor_ops.h"

#define RANK_TABLE_DOC "the rank table (lod_rank_table's Out)"

/* The gradient of to_array, to_tensor and reorder: op `type` reading X := Out@GRAD and
 * RankTable, writing Out := X@GRAD. */
static rill_status *ranked_maker(rill_grad_ctx *ctx, const char *type) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, type, &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "Out", "X"));
  RILL_TRY(rill_grad_forward(ctx, op, "RankTable"));
  return rill_grad_of_input_as(ctx, op, "X", "Out");
}

/* ---- lod_rank_table ---- */

static const rill_slot_schema rank_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "a LoD tensor; only its LoD is read"}};
static const rill_slot_schema rank_outputs[] = {
    {"Out", 0, "the rank table: (index, length) of every sequence of LoD level `level`, "
               "longest first, ties in index order"}};
static const rill_attr_schema rank_attrs[] = {
    {"level", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the LoD level whose sequences are ranked"}};

const rill_op_schema rill_schema_lod_rank_table = {
    .type = "lod_rank_table",
    .doc = "Ranks the sequences of X's LoD level `level` by length, longest first (a stable "
           "sort): Out holds (index, length) per sequence and the levels above `level`.",
    .inputs = rank_inputs,
    .ninputs = RILL_COUNTOF(rank_inputs),
    .outputs = rank_outputs,
    .noutputs = RILL_COUNTOF(rank_outputs),
    .attrs = rank_attrs,
    .nattrs = RILL_COUNTOF(rank_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

/* ---- max_sequence_len ---- */

static const rill_slot_schema maxlen_inputs[] = {{"RankTable", RILL_SLOT_NO_GRAD, RANK_TABLE_DOC}};
static const rill_slot_schema maxlen_outputs[] = {
    {"Out", 0, "int64 [1]: the longest length (0 for no sequences)"}};

const rill_op_schema rill_schema_max_sequence_len = {
    .type = "max_sequence_len",
    .doc = "Out = the length of the first (longest) sequence of the rank table.",
    .inputs = maxlen_inputs,
    .ninputs = RILL_COUNTOF(maxlen_inputs),
    .outputs = maxlen_outputs,
    .noutputs = RILL_COUNTOF(maxlen_outputs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

/* ---- lod_tensor_to_array / array_to_lod_tensor: each the other's gradient ---- */

static const rill_slot_schema to_array_inputs[] = {
    {"X", 0, "a LoD tensor with the ranked level and any levels below it (a gradient "
             "without LoD takes the sequences' rows from a table of level 0)"},
    {"RankTable", RILL_SLOT_NO_GRAD, RANK_TABLE_DOC},
};
static const rill_slot_schema to_array_outputs[] = {
    {"Out", 0, "a tensor array: item t holds entry t of every sequence longer than t, in "
               "rank order, with X's levels below the ranked one as its LoD"}};

static rill_status *to_array_maker(rill_grad_ctx *ctx) {
  return ranked_maker(ctx, "array_to_lod_tensor");
}

const rill_op_schema rill_schema_lod_tensor_to_array = {
    .type = "lod_tensor_to_array",
    .doc = "Splits X by time step: Out[t] = entry t (a row, or a sub-sequence with its LoD) "
           "of each sequence longer than t, in the rank table's order (so every item is a "
           "prefix of the previous one's sequences).",
    .inputs = to_array_inputs,
    .ninputs = RILL_COUNTOF(to_array_inputs),
    .outputs = to_array_outputs,
    .noutputs = RILL_COUNTOF(to_array_outputs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = to_array_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

static const rill_slot_schema to_tensor_inputs[] = {
    {"X", 0, "a tensor array as lod_tensor_to_array writes it (unset items count as zeros "
             "when the items carry no LoD)"},
    {"RankTable", RILL_SLOT_NO_GRAD, RANK_TABLE_DOC},
};
static const rill_slot_schema to_tensor_outputs[] = {
    {"Out", 0, "the sequences in index order; LoD: the table's coarse levels, the "
               "sequences' lengths, then the items' levels"}};

static rill_status *to_tensor_maker(rill_grad_ctx *ctx) {
  return ranked_maker(ctx, "lod_tensor_to_array");
}

const rill_op_schema rill_schema_array_to_lod_tensor = {
    .type = "array_to_lod_tensor",
    .doc = "The inverse of lod_tensor_to_array: sequence k of the table (rank order) takes "
           "entry k (row k, or top-level sequence k with its levels) of items 0 .. length - "
           "1; Out holds the sequences in index order.",
    .inputs = to_tensor_inputs,
    .ninputs = RILL_COUNTOF(to_tensor_inputs),
    .outputs = to_tensor_outputs,
    .noutputs = RILL_COUNTOF(to_tensor_outputs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = to_tensor_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

/* ---- shrink_rnn_memory ---- */

static const rill_slot_schema shrink_inputs[] = {
    {"X", 0, "a state, one row (or one top-level sequence) per sequence in rank order"},
    {"I", RILL_SLOT_NO_GRAD, "int64 [1]: the time step"},
    {"RankTable", RILL_SLOT_NO_GRAD, RANK_TABLE_DOC},
};
static const rill_slot_schema shrink_outputs[] = {
    {"Out", 0, "X's rows (or top-level sequences, with every LoD level below them) of the "
               "sequences longer than I"}};

static rill_status *shrink_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X"}, *const og[] = {"Out"}, *const ig[] = {"X"};
  return rill_grad_emit(ctx, "shrink_rnn_memory_grad", fwd, 1, og, 1, ig, 1);
}

const rill_op_schema rill_schema_shrink_rnn_memory = {
    .type = "shrink_rnn_memory",
    .doc = "Out = the first rows of X, one per sequence of the rank table longer than I "
           "(with a LoD X, the first top-level sequences and all their levels).",
    .inputs = shrink_inputs,
    .ninputs = RILL_COUNTOF(shrink_inputs),
    .outputs = shrink_outputs,
    .noutputs = RILL_COUNTOF(shrink_outputs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = shrink_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

static const rill_slot_schema shrink_grad_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "the forward's X"},
    {"Out@GRAD", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "gradient of Out; absent: zeros"},
};
static const rill_slot_schema shrink_grad_outputs[] = {
    {"X@GRAD", 0, "Out@GRAD in the first rows, zeros below; X's LoD"}};

const rill_op_schema rill_schema_shrink_rnn_memory_grad = {
    .type = "shrink_rnn_memory_grad",
    .doc = "X@GRAD: X's shape, Out@GRAD's rows first and zeros in the rows the forward "
           "dropped.",
    .inputs = shrink_grad_inputs,
    .ninputs = RILL_COUNTOF(shrink_grad_inputs),
    .outputs = shrink_grad_outputs,
    .noutputs = RILL_COUNTOF(shrink_grad_outputs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

/* ---- reorder_lod_tensor_by_rank ---- */

static const rill_slot_schema reorder_inputs[] = {
    {"X", 0, "one row per sequence (no LoD), or one top-level sequence per sequence of the "
             "table (any LoD levels below it)"},
    {"RankTable", RILL_SLOT_NO_GRAD, RANK_TABLE_DOC},
};
static const rill_slot_schema reorder_outputs[] = {
    {"Out", 0, "X's rows (or sequences) in the table's rank order"}};

static rill_status *reorder_maker(rill_grad_ctx *ctx) {
  return ranked_maker(ctx, "reorder_lod_tensor_by_rank_grad");
}

const rill_op_schema rill_schema_reorder_lod_tensor_by_rank = {
    .type = "reorder_lod_tensor_by_rank",
    .doc = "Out = X's rows (or top-level sequences with their levels) taken in the rank "
           "table's order.",
    .inputs = reorder_inputs,
    .ninputs = RILL_COUNTOF(reorder_inputs),
    .outputs = reorder_outputs,
    .noutputs = RILL_COUNTOF(reorder_outputs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = reorder_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

static const rill_slot_schema reorder_grad_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "the gradient of the forward's Out (rank order)"},
    {"RankTable", RILL_SLOT_NO_GRAD, RANK_TABLE_DOC},
};
static const rill_slot_schema reorder_grad_outputs[] = {
    {"Out", 0, "the gradient of the forward's X: X's rows (or sequences) back in index order"}};

const rill_op_schema rill_schema_reorder_lod_tensor_by_rank_grad = {
    .type = "reorder_lod_tensor_by_rank_grad",
    .doc = "The inverse permutation of reorder_lod_tensor_by_rank: row (or sequence) k of X "
           "goes to the place of the table's k-th index.",
    .inputs = reorder_grad_inputs,
    .ninputs = RILL_COUNTOF(reorder_grad_inputs),
    .outputs = reorder_grad_outputs,
    .noutputs = RILL_COUNTOF(reorder_grad_outputs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = NULL,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(lod_rank_table);
