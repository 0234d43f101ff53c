/* sequence_scatter: Out = X, then for each sequence i of Ids' (and Updates') LoD and each
 * of its rows j, Out[i, Ids[j]] += Updates[j]: X [N, ...] is read as N rows of
 * `slice` elements, sequence i scatters into row i, and Ids index within the row
 * (repeats add up). Ids int32 / int64 [M, 1], Updates [M, 1] of X's dtype, both with the
 * N sequences as their one LoD level. sequence_erase: removes the listed tokens from
 * each sequence of an int32 / int64 LoD tensor [T, 1]. */
#include "operators/math_grad.h"
#include "operators/op_util.h"

enum { IN_X, IN_IDS, IN_UPDATES };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "[N, ...] the rows scattered into"},
    [IN_IDS] = {"Ids", RILL_SLOT_NO_GRAD, "int32 / int64 LoD [M, 1]: positions within row i"},
    [IN_UPDATES] = {"Updates", 0, "LoD [M, 1] of X's dtype: the values added"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "X's shape"}};

static rill_status *sequence_scatter_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *ids = rill_infer_in(ctx, IN_IDS, 0);
  const rill_tensor_meta *up = rill_infer_in(ctx, IN_UPDATES, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !ids || !up || !out) return rill_infer_error(ctx, "needs inputs X, Ids, Updates and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (ids->known && ids->dtype != RILL_DTYPE_INT32 && ids->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input Ids (%s) is %s, expected int32 or int64",
                            rill_infer_in_name(ctx, IN_IDS, 0), rill_dtype_name(ids->dtype));
  if (up->known && up->dtype != x->dtype)
    return rill_infer_error(ctx, "input Updates (%s) is %s, expected X's dtype %s",
                            rill_infer_in_name(ctx, IN_UPDATES, 0), rill_dtype_name(up->dtype),
                            rill_dtype_name(x->dtype));
  if (x->dims.n < 1)
    return rill_infer_error(ctx, "input X (%s) is a scalar, expected [N, ...]",
                            rill_infer_in_name(ctx, IN_X, 0));
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, IN_X, 0);
  return NULL;
}

/* Paddle's maker: sequence_scatter_grad(Ids, Updates, Out@GRAD) -> X@GRAD, Updates@GRAD. */
static rill_status *sequence_scatter_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Ids", "Updates"};
  static const char *const outg[] = {"Out"};
  static const char *const ing[] = {"X", "Updates"};
  return rill_grad_emit(ctx, NULL, fwd, 2, outg, 1, ing, 2);
}

const rill_op_schema rill_schema_sequence_scatter = {
    .type = "sequence_scatter",
    .doc = "Out = X with Updates added at Out[i, Ids[j]] for the rows j of sequence i.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = sequence_scatter_infer,
    .grad = sequence_scatter_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

enum { G_IDS, G_UPDATES, G_DOUT };
static const rill_slot_schema grad_inputs[] = {
    [G_IDS] = {"Ids", 0, "forward Ids"},
    [G_UPDATES] = {"Updates", 0, "forward Updates (its shape)"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X: Out@GRAD"},
    {"Updates@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Updates: Out@GRAD at each scatter target"},
};

static rill_status *sequence_scatter_grad_infer(rill_infer_ctx *ctx) {
  for (size_t s = G_IDS; s <= G_DOUT; s++)
    if (!rill_infer_in(ctx, s, 0)) return rill_infer_error(ctx, "needs input %s", grad_inputs[s].name);
  rill_grad_infer_like(ctx, 0, G_DOUT);
  rill_grad_infer_like(ctx, 1, G_UPDATES);
  return NULL;
}

const rill_op_schema rill_schema_sequence_scatter_grad = {
    .type = "sequence_scatter_grad",
    .doc = "Gradients of sequence_scatter: X@GRAD = Out@GRAD, Updates@GRAD[j] = "
           "Out@GRAD[i, Ids[j]].",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = sequence_scatter_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_DOUT,
    .dtype_attr = -1,
};

/* ---- sequence_erase ---- */
static const rill_slot_schema erase_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "int32 / int64 LoD tensor [T, 1]"}};
static const rill_slot_schema erase_outputs[] = {
    {"Out", 0, "X without the tokens; its last LoD level recounted"}};
static const rill_attr_schema erase_attrs[] = {
    {"tokens", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS), "the token values removed"},
};

static rill_status *sequence_erase_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected int32 or int64",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
  if (x->dims.n != 2 || (x->dims.d[1] >= 0 && x->dims.d[1] != 1))
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [T, 1]",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, s, sizeof s));
  rill_dims d = {.n = 2, .d = {-1, 1}};
  rill_meta_set(out, x->dtype, &d, x->lod_level > 0 ? x->lod_level : 1, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_sequence_erase = {
    .type = "sequence_erase",
    .doc = "Removes the listed token values from each sequence of an int LoD tensor.",
    .inputs = erase_inputs,
    .ninputs = RILL_COUNTOF(erase_inputs),
    .outputs = erase_outputs,
    .noutputs = RILL_COUNTOF(erase_outputs),
    .attrs = erase_attrs,
    .nattrs = RILL_COUNTOF(erase_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = sequence_erase_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sequence_scatter);
