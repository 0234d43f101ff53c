/* mine_hard_examples: picks each image's hard negative priors for SSD training.
 *   max_negative: candidates are unmatched priors (MatchIndices -1) whose MatchDist is
 *     under neg_dist_threshold; the min(num_pos * neg_pos_ratio, candidates) with the
 *     largest ClsLoss are the negatives; UpdatedMatchIndices is MatchIndices.
 *   hard_example: every prior is a candidate (loss ClsLoss + LocLoss when given); the
 *     sample_size largest are selected; matched priors not selected are unmatched (-1)
 *     in UpdatedMatchIndices and unmatched ones selected are the negatives.
 * NegIndices [Neg, 1] lists each image's negatives in ascending order, its LoD giving
 * each image's rows. */
#include <string.h>

#include "operators/op_util.h"

enum { IN_CLS, IN_LOC, IN_MATCH, IN_DIST };
enum { OUT_NEG, OUT_MATCH };

static const rill_slot_schema inputs[] = {
    [IN_CLS] = {"ClsLoss", RILL_SLOT_NO_GRAD, "[N, Np] classification loss per prior"},
    [IN_LOC] = {"LocLoss", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                "[N, Np] localisation loss (hard_example only)"},
    [IN_MATCH] = {"MatchIndices", RILL_SLOT_NO_GRAD, "int32 [N, Np]: matched row, -1 none"},
    [IN_DIST] = {"MatchDist", RILL_SLOT_NO_GRAD, "[N, Np] matched distances"},
};
static const rill_slot_schema outputs[] = {
    [OUT_NEG] = {"NegIndices", 0, "int32 [Neg, 1], one LoD level: each image's negatives"},
    [OUT_MATCH] = {"UpdatedMatchIndices", 0, "int32 [N, Np]"},
};
static const rill_attr_schema attrs[] = {
    {"neg_pos_ratio", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f),
     "max_negative: negatives per positive"},
    {"neg_dist_threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f),
     "max_negative: a negative's match distance is below it"},
    {"sample_size", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "hard_example: priors selected"},
    {"mining_type", RILL_ATTR_STRING, 0, RILL_DEF_STRING("max_negative"),
     "max_negative or hard_example"},
};

static rill_status *mine_hard_examples_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *cls = rill_infer_in(ctx, IN_CLS, 0), *loc = rill_infer_in(ctx, IN_LOC, 0);
  const rill_tensor_meta *m = rill_infer_in(ctx, IN_MATCH, 0), *d = rill_infer_in(ctx, IN_DIST, 0);
  rill_tensor_meta *neg = rill_infer_out(ctx, OUT_NEG, 0), *um = rill_infer_out(ctx, OUT_MATCH, 0);
  if (!cls || !m || !d || !neg || !um)
    return rill_infer_error(ctx, "needs inputs ClsLoss, MatchIndices and MatchDist and outputs "
                            "NegIndices and UpdatedMatchIndices");
  const char *type = ctx->attrs[RILL_MINE_HARD_EXAMPLES_ATTR_MINING_TYPE].v.s;
  bool maxneg = type && strcmp(type, "max_negative") == 0;
  if (!maxneg && !(type && strcmp(type, "hard_example") == 0))
    return rill_infer_error(ctx, "attribute mining_type \"%s\" is not max_negative or "
                            "hard_example", type ? type : "");
  float ratio = ctx->attrs[RILL_MINE_HARD_EXAMPLES_ATTR_NEG_POS_RATIO].v.f;
  float thr = ctx->attrs[RILL_MINE_HARD_EXAMPLES_ATTR_NEG_DIST_THRESHOLD].v.f;
  if (maxneg && !(ratio > 0))
    return rill_infer_error(ctx, "attribute neg_pos_ratio is %g, must be positive with "
                            "max_negative", (double)ratio);
  if (maxneg && !(thr > 0 && thr < 1))
    return rill_infer_error(ctx, "attribute neg_dist_threshold is %g, must be in (0, 1) with "
                            "max_negative", (double)thr);
  if (!maxneg && ctx->attrs[RILL_MINE_HARD_EXAMPLES_ATTR_SAMPLE_SIZE].v.i <= 0)
    return rill_infer_error(ctx, "attribute sample_size is %d, must be positive with "
                            "hard_example", (int)ctx->attrs[RILL_MINE_HARD_EXAMPLES_ATTR_SAMPLE_SIZE].v.i);
  if (!cls->known || !m->known || !d->known || (loc && !loc->known)) {
    rill_meta_unknown(neg);
    rill_meta_unknown(um);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  const rill_tensor_meta *all[4] = {cls, loc, m, d};
  for (int i = 0; i < 4; i++) {
    if (!all[i]) continue;
    const char *slot = ctx->schema->inputs[i].name, *name = rill_infer_in_name(ctx, (size_t)i, 0);
    rill_dtype want = i == IN_MATCH ? RILL_DTYPE_INT32 : cls->dtype;
    /* the extents are compared by the kernel: ssd_loss's ClsLoss is [-1, 1] until it runs */
    if (all[i]->dims.n != 2 || all[i]->dtype != want)
      return rill_infer_error(ctx, "input %s (%s) is %s %s, expected %s [N, Np]",
                              slot, name, rill_dtype_name(all[i]->dtype),
                              rill_dims_str(&all[i]->dims, s, sizeof s), rill_dtype_name(want));
  }
  if (cls->dtype != RILL_DTYPE_FP32 && cls->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input ClsLoss (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, IN_CLS, 0), rill_dtype_name(cls->dtype));
  rill_dims nd = {.n = 2, .d = {-1, 1}};
  rill_meta_set(neg, RILL_DTYPE_INT32, &nd, 1, -1, -1);
  rill_meta_set(um, RILL_DTYPE_INT32, &m->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_mine_hard_examples = {
    .type = "mine_hard_examples",
    .doc = "Selects the hard negative priors of each image for SSD training.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = mine_hard_examples_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_CLS,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(mine_hard_examples);
