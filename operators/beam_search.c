/* Beam search over LoD tensors (Fluid 1.x's machine translation decoders):
 *
 *   beam_search         one step: per source sentence, the beam_size best (prefix,
 *                       candidate) pairs; finished prefixes (pre_ids == end_id) carry
 *                       only end_id with their score, and a source all of whose prefixes
 *                       and selections are end_id is dropped.
 *   beam_search_decode  after the loop: walks the tensor arrays of every step's
 *                       selections back from the last one and builds each source's
 *                       sentences, best score first.
 *   gather_tree         the same walk for dense [T, batch, beam] ids and parents.
 *
 * The selections' LoD has two levels: level 0 gives each source's prefixes (rows of the
 * step's input), level 1 each prefix's selected rows. Their row counts depend on the
 * data: the kernels size the outputs. */
#include "operators/op_util.h"

/* ---- beam_search ---- */

enum { BS_PRE_IDS, BS_PRE_SCORES, BS_IDS, BS_SCORES };
enum { BS_SEL_IDS, BS_SEL_SCORES, BS_PARENT };

static const rill_slot_schema bs_inputs[] = {
    [BS_PRE_IDS] = {"pre_ids", RILL_SLOT_NO_GRAD, "int64 [rows, 1]: the ids chosen last step"},
    [BS_PRE_SCORES] = {"pre_scores", RILL_SLOT_NO_GRAD,
                       "float32 [rows, 1]: their accumulated scores"},
    [BS_IDS] = {"ids", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                "int64 [rows, K]: candidate ids (absent: the column of scores)"},
    [BS_SCORES] = {"scores", RILL_SLOT_NO_GRAD,
                   "float32 [rows, K] candidate scores; its LoD groups the rows by source"},
};
static const rill_slot_schema bs_outputs[] = {
    [BS_SEL_IDS] = {"selected_ids", 0, "int64 [N, 1], LoD (sources -> prefixes -> rows)"},
    [BS_SEL_SCORES] = {"selected_scores", 0, "float32 [N, 1], LoD as selected_ids"},
    [BS_PARENT] = {"parent_idx", RILL_SLOT_DISPENSABLE,
                   "int32 [N]: the input row (prefix) of each selection"},
};
static const rill_attr_schema bs_attrs[] = {
    {"level", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "LoD level of scores that groups by source"},
    {"beam_size", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(1),
     "selections kept per source"},
    {"end_id", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0), "the end-of-sentence id"},
    {"is_accumulated", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "scores already hold the accumulated score; false: pre_scores + log(scores)"},
};

static rill_status *check_dtype(rill_infer_ctx *ctx, const rill_slot_schema *slots, size_t slot,
                                rill_dtype want) {
  const rill_tensor_meta *m = rill_infer_in(ctx, slot, 0);
  if (m && m->known && m->dtype != want)
    return rill_infer_error(ctx, "input %s (%s) is %s, expected %s", slots[slot].name,
                            rill_infer_in_name(ctx, slot, 0), rill_dtype_name(m->dtype),
                            rill_dtype_name(want));
  return NULL;
}

static rill_status *beam_search_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *ids = rill_infer_out(ctx, BS_SEL_IDS, 0), *sc = rill_infer_out(ctx, BS_SEL_SCORES, 0);
  rill_tensor_meta *parent = rill_infer_out(ctx, BS_PARENT, 0);
  if (!rill_infer_in(ctx, BS_PRE_IDS, 0) || !rill_infer_in(ctx, BS_PRE_SCORES, 0) ||
      !rill_infer_in(ctx, BS_SCORES, 0))
    return rill_infer_error(ctx, "needs inputs pre_ids, pre_scores and scores");
  if (!ids || !sc) return rill_infer_error(ctx, "needs outputs selected_ids and selected_scores");
  if (ctx->attrs[RILL_BEAM_SEARCH_ATTR_BEAM_SIZE].v.i < 1)
    return rill_infer_error(ctx, "attribute beam_size is %d; it must be >= 1",
                            (int)ctx->attrs[RILL_BEAM_SEARCH_ATTR_BEAM_SIZE].v.i);
  if (ctx->attrs[RILL_BEAM_SEARCH_ATTR_LEVEL].v.i < 0)
    return rill_infer_error(ctx, "attribute level is %d; it must be >= 0",
                            (int)ctx->attrs[RILL_BEAM_SEARCH_ATTR_LEVEL].v.i);
  RILL_TRY(check_dtype(ctx, bs_inputs, BS_PRE_IDS, RILL_DTYPE_INT64));
  RILL_TRY(check_dtype(ctx, bs_inputs, BS_PRE_SCORES, RILL_DTYPE_FP32));
  RILL_TRY(check_dtype(ctx, bs_inputs, BS_IDS, RILL_DTYPE_INT64));
  RILL_TRY(check_dtype(ctx, bs_inputs, BS_SCORES, RILL_DTYPE_FP32));
  rill_dims col = {.n = 2, .d = {-1, 1}}, row = {.n = 1, .d = {-1}};
  rill_meta_set(ids, RILL_DTYPE_INT64, &col, 2, -1, -1);
  rill_meta_set(sc, RILL_DTYPE_FP32, &col, 2, -1, -1);
  if (parent) rill_meta_set(parent, RILL_DTYPE_INT32, &row, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_beam_search = {
    .type = "beam_search",
    .doc = "selected_ids, selected_scores = the beam_size best (prefix, candidate) pairs of "
           "each source sentence, grouped by prefix; parent_idx = each one's prefix row.",
    .inputs = bs_inputs,
    .ninputs = RILL_COUNTOF(bs_inputs),
    .outputs = bs_outputs,
    .noutputs = RILL_COUNTOF(bs_outputs),
    .attrs = bs_attrs,
    .nattrs = RILL_COUNTOF(bs_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = beam_search_infer,
    .grad = NULL,
    .kernel_dtype_slot = BS_SCORES,
    .dtype_attr = -1,
};

/* ---- beam_search_decode ---- */

static const rill_slot_schema bsd_inputs[] = {
    {"Ids", RILL_SLOT_NO_GRAD, "tensor array of every step's selected_ids (LoD of 2 levels)"},
    {"Scores", RILL_SLOT_NO_GRAD, "tensor array of every step's selected_scores"},
};
static const rill_slot_schema bsd_outputs[] = {
    {"SentenceIds", 0, "int64 [L]: the sentences, LoD (sources -> sentences -> words)"},
    {"SentenceScores", 0, "[L]: each word's accumulated score, LoD as SentenceIds"},
};
static const rill_attr_schema bsd_attrs[] = {
    {"beam_size", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(1), "sentences per source"},
    {"end_id", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0), "the end-of-sentence id"},
};

static rill_status *beam_search_decode_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *ids = rill_infer_out(ctx, 0, 0), *sc = rill_infer_out(ctx, 1, 0);
  const rill_tensor_meta *in_sc = rill_infer_in(ctx, 1, 0);
  if (!rill_infer_in(ctx, 0, 0) || !in_sc) return rill_infer_error(ctx, "needs inputs Ids and Scores");
  if (!ids || !sc) return rill_infer_error(ctx, "needs outputs SentenceIds and SentenceScores");
  if (ctx->attrs[RILL_BEAM_SEARCH_DECODE_ATTR_BEAM_SIZE].v.i < 1)
    return rill_infer_error(ctx, "attribute beam_size is %d; it must be >= 1",
                            (int)ctx->attrs[RILL_BEAM_SEARCH_DECODE_ATTR_BEAM_SIZE].v.i);
  rill_dims row = {.n = 1, .d = {-1}};
  rill_meta_set(ids, RILL_DTYPE_INT64, &row, 2, -1, -1);
  if (in_sc->known) rill_meta_set(sc, in_sc->dtype, &row, 2, -1, -1);
  else rill_meta_unknown(sc);
  return NULL;
}

const rill_op_schema rill_schema_beam_search_decode = {
    .type = "beam_search_decode",
    .doc = "SentenceIds, SentenceScores = each source's sentences, traced back through the "
           "steps' selections from the last step, sorted by their final score (best first).",
    .inputs = bsd_inputs,
    .ninputs = RILL_COUNTOF(bsd_inputs),
    .outputs = bsd_outputs,
    .noutputs = RILL_COUNTOF(bsd_outputs),
    .attrs = bsd_attrs,
    .nattrs = RILL_COUNTOF(bsd_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = beam_search_decode_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

/* ---- gather_tree ---- */

static const rill_slot_schema gt_inputs[] = {
    {"Ids", RILL_SLOT_NO_GRAD, "int32/int64 [T, batch, beam]: the ids selected at each step"},
    {"Parents", RILL_SLOT_NO_GRAD, "[T, batch, beam] of Ids' dtype: each one's beam at T - 1"},
};
static const rill_slot_schema gt_outputs[] = {
    {"Out", 0, "[T, batch, beam]: the full sequences ending in each last-step beam"},
};

static rill_status *gather_tree_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *ids = rill_infer_in(ctx, 0, 0), *par = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!ids || !par || !out) return rill_infer_error(ctx, "needs inputs Ids, Parents and output Out");
  if (!ids->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (ids->dtype != RILL_DTYPE_INT32 && ids->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input Ids (%s) is %s, expected int32 or int64",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(ids->dtype));
  if (ids->dims.n != 3)
    return rill_infer_error(ctx, "input Ids (%s) has shape %s, expected [T, batch, beam]",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&ids->dims, a, sizeof a));
  if (par->known) {
    bool same = par->dims.n == 3;
    for (int i = 0; same && i < 3; i++)
      same = par->dims.d[i] < 0 || ids->dims.d[i] < 0 || par->dims.d[i] == ids->dims.d[i];
    if (!same)
      return rill_infer_error(ctx, "input Parents (%s) has shape %s, Ids (%s) %s: they must agree",
                              rill_infer_in_name(ctx, 1, 0), rill_dims_str(&par->dims, a, sizeof a),
                              rill_infer_in_name(ctx, 0, 0), rill_dims_str(&ids->dims, b, sizeof b));
    if (par->dtype != ids->dtype)
      return rill_infer_error(ctx, "input Parents (%s) is %s, Ids (%s) %s: they must agree",
                              rill_infer_in_name(ctx, 1, 0), rill_dtype_name(par->dtype),
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(ids->dtype));
  }
  rill_meta_set(out, ids->dtype, &ids->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_gather_tree = {
    .type = "gather_tree",
    .doc = "Out[:, b, k] = the ids on the path through Parents that ends in beam k of batch "
           "entry b at the last step.",
    .inputs = gt_inputs,
    .ninputs = RILL_COUNTOF(gt_inputs),
    .outputs = gt_outputs,
    .noutputs = RILL_COUNTOF(gt_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = gather_tree_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(beam_search);
