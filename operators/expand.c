/* expand (Fluid 1.x): tiles X expand_times[i] times along dim i, Out extent = X extent *
 * times. The times come from ExpandTimes (1-D int32/int64) when given, else from
 * expand_times, where an entry of -1 takes its value from the matching one-element tensor
 * of expand_times_tensor (Fluid's list of Variables). expand_grad sums Out@GRAD's tiles
 * back into X's shape.
 * expand_as tiles X to target_tensor's shape; it and expand_as_grad run expand's
 * kernels, which take the times from the shapes (their slots sit where expand's do). */
#include "operators/math_grad.h"

#include "framework/data/tensor.h"

enum { IN_X, IN_TIMES, IN_TIMES_LIST };
static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "tensor to tile"},
    [IN_TIMES] = {"ExpandTimes", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                  "1-D int32/int64 times, one per dim of X, overriding expand_times"},
    [IN_TIMES_LIST] = {"expand_times_tensor",
                       RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                       "one-element int32/int64 tensors, one per dim of X, overriding "
                       "expand_times"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "X tiled: extent * times per dim"}};
static const rill_attr_schema attrs[] = {
    {"expand_times", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS), "times per dim of X"},
};

/* times[] for X of rank n: from ExpandTimes (known false when it cannot be read now),
 * expand_times_tensor (-1 for an entry that cannot be read yet) or the attribute. */
static rill_status *expand_times(rill_infer_ctx *ctx, int n, int64_t *times, bool *known) {
  *known = true;
  if (rill_infer_in(ctx, IN_TIMES, 0)) {
    const rill_tensor *t = rill_infer_tensor(ctx, IN_TIMES, 0);
    if (!t) {
      *known = false;
      return NULL;
    }
    if (!rill_tensor_ptr(t) || (t->dtype != RILL_DTYPE_INT32 && t->dtype != RILL_DTYPE_INT64) ||
        rill_tensor_numel(t) != n)
      return rill_infer_error(ctx, "input ExpandTimes (%s) must hold %d int32/int64 values, "
                              "one per dim of X", rill_infer_in_name(ctx, IN_TIMES, 0), n);
    for (int i = 0; i < n; i++)
      times[i] = t->dtype == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(t))[i]
                                              : ((const int64_t *)rill_tensor_ptr(t))[i];
  } else if (ctx->nin[IN_TIMES_LIST] > 0) {
    if ((int)ctx->nin[IN_TIMES_LIST] != n)
      return rill_infer_error(ctx, "input expand_times_tensor has %d tensors for input X (%s) "
                              "of rank %d", (int)ctx->nin[IN_TIMES_LIST],
                              rill_infer_in_name(ctx, IN_X, 0), n);
    for (int i = 0; i < n; i++) {
      const rill_tensor *t = rill_infer_tensor(ctx, IN_TIMES_LIST, (size_t)i);
      if (!t) { /* not readable yet: the attribute's entry, -1 where it defers to t */
        const rill_attr_value *a = &ctx->attrs[RILL_EXPAND_ATTR_EXPAND_TIMES];
        times[i] = (int)a->n == n && a->list.ints[i] > 0 ? a->list.ints[i] : -1;
        continue;
      }
      if (!rill_tensor_ptr(t) || (t->dtype != RILL_DTYPE_INT32 && t->dtype != RILL_DTYPE_INT64) ||
          rill_tensor_numel(t) != 1)
        return rill_infer_error(ctx, "input expand_times_tensor (%s) must hold one int32/int64 "
                                "value", rill_infer_in_name(ctx, IN_TIMES_LIST, (size_t)i));
      times[i] = t->dtype == RILL_DTYPE_INT32 ? *(const int32_t *)rill_tensor_ptr(t)
                                              : *(const int64_t *)rill_tensor_ptr(t);
    }
  } else {
    const rill_attr_value *a = &ctx->attrs[RILL_EXPAND_ATTR_EXPAND_TIMES];
    if ((int)a->n != n)
      return rill_infer_error(ctx, "attribute expand_times has %d values for input X (%s) of "
                              "rank %d", (int)a->n, rill_infer_in_name(ctx, IN_X, 0), n);
    for (int i = 0; i < n; i++) times[i] = a->list.ints[i];
  }
  for (int i = 0; i < n; i++)
    if (times[i] < 1 && !(times[i] == -1 && ctx->nin[IN_TIMES_LIST] > 0 && !ctx->in_tensors))
      return rill_infer_error(ctx, "expand times %lld at dim %d must be positive",
                              (long long)times[i], i);
  return NULL;
}

static rill_status *expand_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int64_t times[RILL_MAX_DIMS];
  bool known;
  RILL_TRY(expand_times(ctx, x->dims.n, times, &known));
  rill_dims od = x->dims;
  for (int i = 0; i < od.n; i++)
    od.d[i] = known && od.d[i] >= 0 && times[i] > 0 ? od.d[i] * times[i] : -1;
  /* Paddle's rule: Out takes X's LoD when its dim 0 is X's (not tiled along the rows) */
  bool rows = od.n > 0 && od.d[0] == x->dims.d[0];
  rill_meta_set(out, x->dtype, &od, rows ? x->lod_level : 0, rows ? IN_X : -1, rows ? 0 : -1);
  return NULL;
}

/* Paddle's ExpandGradOpMaker: X, ExpandTimes, expand_times_tensor and Out@GRAD in,
 * X@GRAD out. */
static rill_status *expand_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "expand_grad", RILL_NAMES("X", "ExpandTimes", "expand_times_tensor"),
                        RILL_NAMES("Out"),
                        RILL_NAMES("X"));
}

const rill_op_schema rill_schema_expand = {
    .type = "expand",
    .doc = "Out = X tiled expand_times[i] times along each dim i (Fluid 1.x).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = expand_infer,
    .grad = expand_grad_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

enum { G_X, G_TIMES, G_DOUT, G_TIMES_LIST };
static const rill_slot_schema grad_inputs[] = {
    [G_X] = {"X", 0, "forward input (its shape)"},
    [G_TIMES] = {"ExpandTimes", RILL_SLOT_DISPENSABLE | RILL_SLOT_HOST_DATA, "forward ExpandTimes"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
    [G_TIMES_LIST] = {"expand_times_tensor", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_HOST_DATA,
                      "forward expand_times_tensor"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "the sum of Out@GRAD's tiles, X's shape"},
};

static rill_status *expand_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, G_X, 0), *g = rill_infer_in(ctx, G_DOUT, 0);
  if (!x || !g) return rill_infer_error(ctx, "needs inputs X and Out@GRAD");
  if (x->known && g->known && g->dtype != x->dtype)
    return rill_infer_error(ctx, "input Out@GRAD (%s) is %s but input X (%s) is %s",
                            rill_infer_in_name(ctx, G_DOUT, 0), rill_dtype_name(g->dtype),
                            rill_infer_in_name(ctx, G_X, 0), rill_dtype_name(x->dtype));
  rill_grad_infer_like(ctx, 0, G_X);
  return NULL;
}

const rill_op_schema rill_schema_expand_grad = {
    .type = "expand_grad",
    .doc = "X@GRAD = the sum over the tiles of Out@GRAD (Out = expand(X)).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = expand_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_DOUT,
    .dtype_attr = -1,
};

/* ---- expand_as ---- */

enum { EA_X, EA_TARGET };
static const rill_slot_schema ea_inputs[] = {
    [EA_X] = {"X", 0, "tensor to tile"},
    [EA_TARGET] = {"target_tensor", RILL_SLOT_NO_GRAD,
                   "gives Out's shape: each extent a multiple of X's"},
};
static const rill_slot_schema ea_outputs[] = {{"Out", 0, "X tiled to target_tensor's shape"}};

static rill_status *expand_as_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, EA_X, 0), *t = rill_infer_in(ctx, EA_TARGET, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !t || !out) return rill_infer_error(ctx, "needs inputs X, target_tensor and output Out");
  if (!x->known || !t->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  bool ok = x->dims.n == t->dims.n;
  for (int i = 0; ok && i < x->dims.n; i++) {
    int64_t xe = x->dims.d[i], te = t->dims.d[i];
    if (xe > 0 && te >= 0) ok = te % xe == 0;
    else if (xe == 0 && te >= 0) ok = te == 0;
  }
  if (!ok)
    return rill_infer_error(ctx, "input target_tensor (%s) of shape %s is not input X (%s) of "
                            "shape %s tiled a whole number of times per dim",
                            rill_infer_in_name(ctx, EA_TARGET, 0), rill_dims_str(&t->dims, a, sizeof a),
                            rill_infer_in_name(ctx, EA_X, 0), rill_dims_str(&x->dims, b, sizeof b));
  rill_meta_set(out, x->dtype, &t->dims, 0, -1, -1);
  return NULL;
}

static rill_status *expand_as_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "target_tensor"), RILL_NAMES("Out"),
                        RILL_NAMES("X"));
}

const rill_op_schema rill_schema_expand_as = {
    .type = "expand_as",
    .doc = "Out = X tiled to target_tensor's shape (each extent a whole multiple of X's).",
    .inputs = ea_inputs,
    .ninputs = RILL_COUNTOF(ea_inputs),
    .outputs = ea_outputs,
    .noutputs = RILL_COUNTOF(ea_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = expand_as_infer,
    .grad = expand_as_grad_maker,
    .kernel_dtype_slot = EA_X,
    .dtype_attr = -1,
};

static const rill_slot_schema ea_grad_inputs[] = {
    [G_X] = {"X", 0, "forward input (its shape)"},
    [G_TIMES] = {"target_tensor", RILL_SLOT_NO_GRAD, "forward target_tensor"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
};

const rill_op_schema rill_schema_expand_as_grad = {
    .type = "expand_as_grad",
    .doc = "X@GRAD = the sum over the tiles of Out@GRAD (Out = expand_as(X, target_tensor)).",
    .inputs = ea_grad_inputs,
    .ninputs = RILL_COUNTOF(ea_grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = expand_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_DOUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(expand);

/* expand's kernels serve expand_as and expand_as_grad. */
_Static_assert(RILL_SAME_POS(RILL_EXPAND_AS_IN_X, RILL_EXPAND_IN_X) &&
                   RILL_SAME_POS(RILL_EXPAND_AS_OUT_OUT, RILL_EXPAND_OUT_OUT) &&
                   RILL_SAME_POS(RILL_EXPAND_AS_GRAD_IN_OUT_GRAD, RILL_EXPAND_GRAD_IN_OUT_GRAD) &&
                   RILL_SAME_POS(RILL_EXPAND_AS_GRAD_OUT_X_GRAD, RILL_EXPAND_GRAD_OUT_X_GRAD),
               "expand_as shares expand's kernels");
