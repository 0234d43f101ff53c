/* sequence_pool: pools every sequence of a LoD tensor X into one row. The sequences are
 * those of X's last LoD level (at most 2 levels); Out has one row per sequence and, when
 * X has 2 levels, X's first level as its LoD. Empty sequences give pad_value (and
 * MaxIndex -1). sequence_pool_grad spreads Out@GRAD back over each sequence's rows. */
#include <string.h>

#include "operators/math_grad.h"
#include "operators/op_util.h"

enum { IN_X };
enum { OUT_OUT, OUT_MAX_INDEX };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "LoD tensor [T, ...] of sequences (1 or 2 LoD levels)"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUT] = {"Out", 0, "[number of sequences, ...]"},
    [OUT_MAX_INDEX] = {"MaxIndex", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                       "int32, MAX only: the row of X each maximum came from"},
};
static const rill_attr_schema attrs[] = {
    {"is_test", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false),
                "inference only (MaxIndex is written either way)"},
    {"pooltype", RILL_ATTR_STRING, 0, RILL_DEF_STRING("AVERAGE"),
                "AVERAGE, SUM, SQRT (sum / sqrt(length)), MAX, LAST or FIRST"},
    {"pad_value", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
               "the output row of an empty sequence"},
};

static const char *const pool_types[] = {"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"};

static rill_status *sequence_pool_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0), *mi = rill_infer_out(ctx, OUT_MAX_INDEX, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  const char *type = ctx->attrs[RILL_SEQUENCE_POOL_ATTR_POOLTYPE].v.s ? ctx->attrs[RILL_SEQUENCE_POOL_ATTR_POOLTYPE].v.s : "";
  bool known_type = false;
  for (size_t i = 0; i < RILL_COUNTOF(pool_types); i++) known_type = known_type || !strcmp(type, pool_types[i]);
  if (!known_type)
    return rill_infer_error(ctx, "attribute pooltype \"%s\" is not AVERAGE, SUM, SQRT, MAX, LAST "
                            "or FIRST", type);
  bool is_max = strcmp(type, "MAX") == 0;
  if (!x->known) {
    rill_meta_unknown(out);
    if (mi) rill_meta_unknown(mi);
    return NULL;
  }
  const char *xn = rill_infer_in_name(ctx, IN_X, 0);
  char s[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n < 1)
    return rill_infer_error(ctx, "input X (%s) has shape %s: it needs a row dimension", xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  rill_dims d = x->dims;
  const rill_tensor *t = rill_infer_tensor(ctx, IN_X, 0);
  if (t) { /* run time: one row per sequence of the last level */
    if (t->lod.nlevels == 0 || t->lod.nlevels > 2)
      return rill_infer_error(ctx, "input X (%s) has %zu LoD levels, expected 1 or 2 (the "
                              "sequences to pool)", xn, t->lod.nlevels);
    const rill_lod_level *last = &t->lod.levels[t->lod.nlevels - 1];
    if (last->n < 1 || last->offsets[last->n - 1] > (uint64_t)t->dims.d[0])
      return rill_infer_error(ctx, "input X (%s): its LoD runs past its %lld rows", xn,
                              (long long)t->dims.d[0]);
    d.d[0] = (int64_t)last->n - 1;
  }
  int32_t lod = x->lod_level > 0 ? x->lod_level - 1 : 0;
  rill_meta_set(out, x->dtype, &d, lod, -1, -1);
  if (mi) {
    if (is_max)
      rill_meta_set(mi, RILL_DTYPE_INT32, &d, 0, -1, -1);
    else
      rill_meta_unknown(mi);
  }
  return NULL;
}

/* Paddle's maker: sequence_pool_grad(X, MaxIndex for MAX only, Out@GRAD) -> X@GRAD. */
static rill_status *sequence_pool_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  const rill_attr *type = rill_op_attr(ctx->fwd, "pooltype");
  bool is_max = type && type->value.type == RILL_ATTR_STRING && type->value.v.s &&
                strcmp(type->value.v.s, "MAX") == 0;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "sequence_pool_grad", &op));
  RILL_TRY(rill_grad_forward(ctx, op, "X"));
  if (is_max) {
    if (!rill_op_output(ctx->fwd, "MaxIndex"))
      return rill_error(RILL_INVALID_ARGUMENT, "sequence_pool: the gradient of pooltype MAX "
                        "needs output MaxIndex");
    RILL_TRY(rill_grad_forward(ctx, op, "MaxIndex"));
  }
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_of_input(ctx, op, "X"));
  return NULL;
}

const rill_op_schema rill_schema_sequence_pool = {
    .type = "sequence_pool",
    .doc = "Pools each sequence of a LoD tensor into one row (average, sum, sqrt, max, last, "
           "first).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_LOD,
    .infer = sequence_pool_infer,
    .grad = sequence_pool_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

enum { G_X, G_MAX_INDEX, G_DOUT };

static const rill_slot_schema grad_inputs[] = {
    [G_X] = {"X", 0, "forward input (its LoD gives the sequences)"},
    [G_MAX_INDEX] = {"MaxIndex", RILL_SLOT_DISPENSABLE, "forward MaxIndex; needed by MAX"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X, X's shape and LoD"},
};

static rill_status *sequence_pool_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, G_X, 0), *g = rill_infer_in(ctx, G_DOUT, 0);
  if (!x || !g) return rill_infer_error(ctx, "needs inputs X and Out@GRAD");
  const char *type = ctx->attrs[RILL_SEQUENCE_POOL_GRAD_ATTR_POOLTYPE].v.s ? ctx->attrs[RILL_SEQUENCE_POOL_GRAD_ATTR_POOLTYPE].v.s : "";
  if (strcmp(type, "MAX") == 0 && !rill_infer_in(ctx, G_MAX_INDEX, 0))
    return rill_infer_error(ctx, "pooltype MAX needs input MaxIndex");
  if (x->known && g->known && g->dtype != x->dtype)
    return rill_infer_error(ctx, "input Out@GRAD (%s) is %s but input X (%s) is %s",
                            rill_infer_in_name(ctx, G_DOUT, 0), rill_dtype_name(g->dtype),
                            rill_infer_in_name(ctx, G_X, 0), rill_dtype_name(x->dtype));
  rill_grad_infer_like(ctx, 0, G_X);
  return NULL;
}

const rill_op_schema rill_schema_sequence_pool_grad = {
    .type = "sequence_pool_grad",
    .doc = "X@GRAD: each sequence's Out@GRAD row spread over its rows (divided by the length "
           "for AVERAGE, by its square root for SQRT), or put on the row that gave the "
           "output (MAX: MaxIndex, LAST, FIRST).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = sequence_pool_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_X,
    .dtype_attr = -1,
};
RILL_OP_TABLE_CHECKS(sequence_pool);
