/* reduce_sum, reduce_mean, reduce_max, reduce_min and reduce_prod over the dims in `dim`,
 * with their gradients (Out keeps X's LoD when dim 0 is not reduced); reduce_all and reduce_any of bool tensors; isinf, isnan and
 * isfinite, which reduce a whole tensor to one flag. */
#include <stdio.h>
#include <string.h>

#include "operators/math_grad.h"
#include "operators/reduce.h"

static const rill_slot_schema inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "X reduced over `dim`"}};
static const int32_t dim_default[] = {0};
static const rill_attr_schema attrs[] = {
    {"dim", RILL_ATTR_INTS, 0,
     {.type = RILL_ATTR_INTS, .n = 1, .list.ints = (int32_t *)dim_default},
     "dims to reduce; negative ones count from the end"},
    {"keep_dim", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "keep reduced dims with extent 1"},
    {"reduce_all", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "reduce every dim"},
    {"in_dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "cast X to this dtype first; -1: none"},
    {"out_dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "dtype of Out; -1: X's"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *check_dtype_attrs(rill_infer_ctx *ctx, rill_dtype dt) {
  for (int a = 3; a <= 4; a++) {
    int32_t v = ctx->attrs[a].v.i;
    if (v != -1 && v != (int32_t)dt)
      return rill_infer_error(ctx, "attribute %s = %d differs from input X (%s)'s %s; casting "
                              "reductions are not supported", ctx->schema->attrs[a].name, v,
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(dt));
  }
  return NULL;
}

static rill_status *reduce_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  RILL_TRY(check_dtype_attrs(ctx, x->dtype));
  bool reduced[RILL_MAX_DIMS];
  rill_dims od;
  char why[128];
  if (!rill_reduce_shape(&x->dims, &ctx->attrs[RILL_REDUCE_SUM_ATTR_DIM], ctx->attrs[RILL_REDUCE_SUM_ATTR_KEEP_DIM].v.b, ctx->attrs[RILL_REDUCE_SUM_ATTR_REDUCE_ALL].v.b, reduced,
                         &od, why, sizeof why)) {
    char xs[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input X (%s) of shape %s: %s", rill_infer_in_name(ctx, 0, 0),
                            rill_dims_str(&x->dims, xs, sizeof xs), why);
  }
  /* As Paddle, Out keeps X's LoD when the rows (dim 0) are not reduced: a sequence's
   * features summed stay that sequence's (an attention score before sequence_softmax). */
  bool rows = x->dims.n > 0 && !reduced[0];
  rill_meta_set(out, x->dtype, &od, rows ? x->lod_level : 0, rows ? 0 : -1, rows ? 0 : -1);
  return NULL;
}

/* Paddle's reduce gradient makers: X and Out@GRAD in, X@GRAD out; max, min and prod also
 * read the forward Out. */
static rill_status *reduce_grad_maker(rill_grad_ctx *ctx) {
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ctx->schema->type);
  return rill_grad_emit(ctx, type, RILL_NAMES("X"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

static rill_status *reduce_out_grad_maker(rill_grad_ctx *ctx) {
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ctx->schema->type);
  return rill_grad_emit(ctx, type, RILL_NAMES("X", "Out"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

#define REDUCE(NAME, MAKER, DOC)                                                          \
  const rill_op_schema rill_schema_##NAME = {                                             \
      .type = #NAME,                                                                      \
      .doc = DOC,                                                                         \
      .inputs = inputs,                                                                   \
      .ninputs = RILL_COUNTOF(inputs),                                                    \
      .outputs = outputs,                                                                 \
      .noutputs = RILL_COUNTOF(outputs),                                                  \
      .attrs = attrs,                                                                     \
      .nattrs = RILL_COUNTOF(attrs),                                                      \
      .flags = 0,                                                                         \
      .infer = reduce_infer,                                                              \
      .grad = MAKER,                                                                      \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };

REDUCE(reduce_sum, reduce_grad_maker, "Out = sum of X over `dim` (every dim with reduce_all).")
REDUCE(reduce_mean, reduce_grad_maker, "Out = mean of X over `dim` (every dim with reduce_all).")
REDUCE(reduce_max, reduce_out_grad_maker,
       "Out = maximum of X over `dim` (every dim with reduce_all).")
REDUCE(reduce_min, reduce_out_grad_maker,
       "Out = minimum of X over `dim` (every dim with reduce_all).")
REDUCE(reduce_prod, reduce_out_grad_maker,
       "Out = product of X over `dim` (every dim with reduce_all).")
REDUCE(reduce_all, NULL, "Out = logical and of the bool X over `dim` (every dim with reduce_all).")
REDUCE(reduce_any, NULL, "Out = logical or of the bool X over `dim` (every dim with reduce_all).")

/* isinf / isnan / isfinite: one bool flag for the whole of X. */
static const rill_slot_schema flag_inputs[] = {{"X", RILL_SLOT_NO_GRAD, "float tensor"}};
static const rill_slot_schema flag_outputs[] = {{"Out", 0, "bool [1]"}};

static rill_status *flag_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  rill_dims d = {.n = 1, .d = {1}};
  rill_meta_set(out, RILL_DTYPE_BOOL, &d, 0, -1, -1);
  return NULL;
}

#define FLAG(NAME, DOC)                                                                   \
  const rill_op_schema rill_schema_##NAME = {                                             \
      .type = #NAME,                                                                      \
      .doc = DOC,                                                                         \
      .inputs = flag_inputs,                                                              \
      .ninputs = RILL_COUNTOF(flag_inputs),                                               \
      .outputs = flag_outputs,                                                            \
      .noutputs = RILL_COUNTOF(flag_outputs),                                             \
      .attrs = NULL,                                                                      \
      .nattrs = 0,                                                                        \
      .flags = 0,                                                                         \
      .infer = flag_infer,                                                                \
      .grad = NULL,                                                                       \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };

FLAG(isinf, "Out = whether any element of X is infinite (bool [1]).")
FLAG(isnan, "Out = whether any element of X is NaN (bool [1]).")
FLAG(isfinite, "Out = whether every element of X is finite (bool [1]).")

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward input"},
    {"Out", RILL_SLOT_DISPENSABLE, "forward output (read by max, min and prod)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
/* reduce_sum_grad and reduce_mean_grad read X for its shape alone: no gradient reaches
 * X through them. */
static const rill_slot_schema linear_grad_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "forward input (its shape)"},
    {"Out", RILL_SLOT_DISPENSABLE, "forward output (unread)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD broadcast back to X's shape"},
};

/* Their own gradient is the forward reduction of X@GRAD's gradient, as Paddle's
 * ReduceSumDoubleOpGradMaker / ReduceMeanDoubleGradDescMaker build it. */
static rill_status *reduce_linear_double_grad_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "Out@GRAD")) return NULL;
  char type[64];
  size_t n = strlen(ctx->schema->type) - strlen("_grad");
  snprintf(type, sizeof type, "%.*s", (int)n, ctx->schema->type);
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, type, &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "X@GRAD", "X"));
  return rill_grad_of_input_as(ctx, op, "Out@GRAD", "Out");
}

static rill_status *reduce_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *g = rill_infer_in(ctx, 2, 0);
  if (!x || !g) return rill_infer_error(ctx, "needs inputs X and Out@GRAD");
  if (x->known && g->known) {
    RILL_TRY(check_dtype_attrs(ctx, x->dtype));
    if (g->dtype != x->dtype)
      return rill_infer_error(ctx, "input Out@GRAD (%s) is %s but input X (%s) is %s",
                              rill_infer_in_name(ctx, 2, 0), rill_dtype_name(g->dtype),
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
    bool reduced[RILL_MAX_DIMS];
    rill_dims od;
    char why[128], a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    if (!rill_reduce_shape(&x->dims, &ctx->attrs[RILL_REDUCE_SUM_ATTR_DIM], ctx->attrs[RILL_REDUCE_SUM_ATTR_KEEP_DIM].v.b, ctx->attrs[RILL_REDUCE_SUM_ATTR_REDUCE_ALL].v.b,
                           reduced, &od, why, sizeof why))
      return rill_infer_error(ctx, "input X (%s) of shape %s: %s", rill_infer_in_name(ctx, 0, 0),
                              rill_dims_str(&x->dims, a, sizeof a), why);
    int64_t n1, n2;
    if (rill_dims_numel(&od, INT64_MAX, &n1) && rill_dims_numel(&g->dims, INT64_MAX, &n2) &&
        n1 != n2)
      return rill_infer_error(ctx, "input Out@GRAD (%s) has shape %s, the forward Out has %s",
                              rill_infer_in_name(ctx, 2, 0), rill_dims_str(&g->dims, a, sizeof a),
                              rill_dims_str(&od, b, sizeof b));
  }
  rill_grad_infer_like(ctx, 0, 0);
  return NULL;
}

#define REDUCE_GRAD(NAME, DOC) REDUCE_GRAD_OF(NAME, DOC, grad_inputs, NULL)
#define REDUCE_GRAD_OF(NAME, DOC, INS, DOUBLE)                                            \
  const rill_op_schema rill_schema_##NAME##_grad = {                                      \
      .type = #NAME "_grad",                                                              \
      .doc = DOC,                                                                         \
      .inputs = INS,                                                                      \
      .ninputs = RILL_COUNTOF(INS),                                                       \
      .outputs = grad_outputs,                                                            \
      .noutputs = RILL_COUNTOF(grad_outputs),                                             \
      .attrs = attrs,                                                                     \
      .nattrs = RILL_COUNTOF(attrs),                                                      \
      .flags = 0,                                                                         \
      .infer = reduce_grad_infer,                                                         \
      .grad = DOUBLE,                                                                     \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };

REDUCE_GRAD_OF(reduce_sum, "X@GRAD = Out@GRAD broadcast over the reduced dims.",
               linear_grad_inputs, reduce_linear_double_grad_maker)
REDUCE_GRAD_OF(reduce_mean, "X@GRAD = Out@GRAD / count, broadcast over the reduced dims.",
               linear_grad_inputs, reduce_linear_double_grad_maker)
REDUCE_GRAD(reduce_max, "X@GRAD = Out@GRAD where X equals Out (every tie), else 0.")
REDUCE_GRAD(reduce_min, "X@GRAD = Out@GRAD where X equals Out (every tie), else 0.")
REDUCE_GRAD(reduce_prod, "X@GRAD = Out@GRAD * Out / X, broadcast over the reduced dims.")

RILL_OP_TABLE_CHECKS(reduce);
