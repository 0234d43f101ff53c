/* hierarchical_sigmoid: the loss of a label as a path of binary decisions through a tree
 * of classifiers (rows of W, with Bias). Row i's path has length len(i) <= L and, at
 * step j, node index(i, j) and branch bit(i, j):
 *   default tree (no PathTable): c = Label[i] + num_classes, len = floor(log2 c),
 *     index = (c >> (j + 1)) - 1, bit = (c >> j) & 1, L = bit length of num_classes - 1;
 *   custom tree: index = PathTable[i][j] up to its first negative entry, bit =
 *     PathCode[i][j], L = PathTable's width.
 * With z(i, j) = clip(W[index] . X[i] + Bias[index], -40, 40) on the path and 0 beyond it,
 *   PreOut = log(1 + e^z)  (every one of the L columns),
 *   Out[i] = sum over the L columns of PreOut - sum over the path of bit * z,
 * so each column past the path adds log 2, as Paddle's does. The gradient ignores the
 * clip, as Paddle's does; with is_sparse W@GRAD is selected rows: the distinct
 * non-negative entries of PathTable, ascending. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "[N, D]"},
    {"W", 0, "[num_classes - 1, D] (custom tree: rows the paths name)"},
    {"Label", RILL_SLOT_NO_GRAD, "[N] or [N, 1] int64 class (default tree)"},
    {"PathTable", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "[N, L] int64: each row's nodes, -1 after the path"},
    {"PathCode", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "[N, L] int64: each node's branch"},
    {"Bias", RILL_SLOT_DISPENSABLE, "[W's rows, 1]"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "[N, 1]"},
    {"PreOut", RILL_SLOT_INTERMEDIATE, "[N, L]: softplus of each step's logit"},
    {"W_Out", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
     "W itself in Fluid's programs (remote prefetch); not written"},
};
static const rill_attr_schema attrs[] = {
    {"num_classes", RILL_ATTR_INT, 0, RILL_DEF_INT(2), "classes of the default tree"},
    {"is_sparse", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "W@GRAD is selected rows (custom tree only)"},
    {"remote_prefetch", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"trainer_id", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(0), "ignored"},
    {"height_sections", RILL_ATTR_LONGS, RILL_ATTR_EXTRA, RILL_DEF_EMPTY(RILL_ATTR_LONGS),
     "ignored"},
    {"epmap", RILL_ATTR_STRINGS, RILL_ATTR_EXTRA, RILL_DEF_EMPTY(RILL_ATTR_STRINGS), "ignored"},
    {"table_names", RILL_ATTR_STRINGS, RILL_ATTR_EXTRA, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "ignored"},
};

/* Bits of v (v > 0): Paddle's FindLastSet. */
static int64_t hs_bits(int64_t v) {
  int64_t b = 0;
  while (v > 0) b++, v >>= 1;
  return b;
}

static rill_status *hs_check(rill_infer_ctx *ctx, int64_t *code_len) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *w = rill_infer_in(ctx, 1, 0);
  const rill_tensor_meta *l = rill_infer_in(ctx, 2, 0), *pt = rill_infer_in(ctx, 3, 0);
  const rill_tensor_meta *pc = rill_infer_in(ctx, 4, 0), *bias = rill_infer_in(ctx, 5, 0);
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, D]", xn,
                            rill_dims_str(&x->dims, a, sizeof a));
  int64_t n = x->dims.d[0], d = x->dims.d[1];
  if (w->dtype != x->dtype || w->dims.n != 2 || (w->dims.d[1] >= 0 && d >= 0 && w->dims.d[1] != d))
    return rill_infer_error(ctx, "input W (%s) is %s %s; it needs %s [nodes, D] with X (%s)'s "
                            "D of %s", rill_infer_in_name(ctx, 1, 0), rill_dtype_name(w->dtype),
                            rill_dims_str(&w->dims, a, sizeof a), rill_dtype_name(x->dtype), xn,
                            rill_dims_str(&x->dims, b, sizeof b));
  bool lshape = l->dims.n == 1 || (l->dims.n == 2 && (l->dims.d[1] < 0 || l->dims.d[1] == 1));
  if (l->dtype != RILL_DTYPE_INT64 || !lshape ||
      (l->dims.d[0] >= 0 && n >= 0 && l->dims.d[0] != n))
    return rill_infer_error(ctx, "input Label (%s) is %s %s; it needs int64 [N] or [N, 1] with "
                            "X (%s)'s rows", rill_infer_in_name(ctx, 2, 0),
                            rill_dtype_name(l->dtype), rill_dims_str(&l->dims, a, sizeof a), xn);
  if (!pt != !pc)
    return rill_infer_error(ctx, "inputs PathTable and PathCode come together (custom tree)");
  if (pt) {
    if (!pt->known || !pc->known) {
      *code_len = -1;
    } else {
      if (pt->dtype != RILL_DTYPE_INT64 || pc->dtype != RILL_DTYPE_INT64 || pt->dims.n != 2 ||
          !rill_dims_equal(&pt->dims, &pc->dims) ||
          (pt->dims.d[0] >= 0 && n >= 0 && pt->dims.d[0] != n))
        return rill_infer_error(ctx, "inputs PathTable (%s) %s %s and PathCode (%s) %s %s must "
                                "be int64 [N, L] alike with X (%s)'s rows",
                                rill_infer_in_name(ctx, 3, 0), rill_dtype_name(pt->dtype),
                                rill_dims_str(&pt->dims, a, sizeof a),
                                rill_infer_in_name(ctx, 4, 0), rill_dtype_name(pc->dtype),
                                rill_dims_str(&pc->dims, b, sizeof b), xn);
      *code_len = pt->dims.d[1];
    }
  } else {
    int k = ctx->attrs[RILL_HIERARCHICAL_SIGMOID_ATTR_NUM_CLASSES].v.i;
    if (k < 2)
      return rill_infer_error(ctx, "attribute num_classes is %d: the default tree needs 2 or "
                              "more", k);
    if (w->dims.d[0] >= 0 && w->dims.d[0] < k - 1)
      return rill_infer_error(ctx, "input W (%s) has %lld rows; the default tree of %d classes "
                              "needs %d", rill_infer_in_name(ctx, 1, 0),
                              (long long)w->dims.d[0], k, k - 1);
    if (ctx->attrs[RILL_HIERARCHICAL_SIGMOID_ATTR_IS_SPARSE].v.b)
      return rill_infer_error(ctx, "attribute is_sparse needs a custom tree (PathTable)");
    *code_len = hs_bits(k - 1);
  }
  if (bias && bias->known &&
      (bias->dtype != x->dtype || bias->dims.n < 1 || bias->dims.n > 2 ||
       (bias->dims.n == 2 && bias->dims.d[1] >= 0 && bias->dims.d[1] != 1) ||
       (bias->dims.d[0] >= 0 && w->dims.d[0] >= 0 && bias->dims.d[0] != w->dims.d[0])))
    return rill_infer_error(ctx, "input Bias (%s) is %s %s; it needs %s [W's rows, 1]",
                            rill_infer_in_name(ctx, 5, 0), rill_dtype_name(bias->dtype),
                            rill_dims_str(&bias->dims, a, sizeof a), rill_dtype_name(x->dtype));
  return NULL;
}

static bool hs_known(rill_infer_ctx *ctx) {
  for (size_t s = 0; s < 3; s++)
    if (!rill_infer_in(ctx, s, 0)->known) return false;
  return true;
}

static rill_status *hs_infer(rill_infer_ctx *ctx) {
  if (!rill_infer_in(ctx, 0, 0) || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0) ||
      !rill_infer_out(ctx, 0, 0) || !rill_infer_out(ctx, 1, 0))
    return rill_infer_error(ctx, "needs inputs X, W and Label and outputs Out and PreOut");
  if (!hs_known(ctx)) {
    rill_meta_unknown(rill_infer_out(ctx, 0, 0));
    rill_meta_unknown(rill_infer_out(ctx, 1, 0));
    return NULL;
  }
  int64_t len;
  RILL_TRY(hs_check(ctx, &len));
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_dims od = {.n = 2, .d = {x->dims.d[0], 1}}, pd = {.n = 2, .d = {x->dims.d[0], len}};
  rill_meta_set(rill_infer_out(ctx, 0, 0), x->dtype, &od, x->lod_level, 0, 0);
  rill_meta_set(rill_infer_out(ctx, 1, 0), x->dtype, &pd, 0, 0, 0);
  return NULL;
}

static rill_status *hs_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "W", "Label", "PathTable", "PathCode", "Bias", "PreOut"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X", "W", "Bias"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_hierarchical_sigmoid = {
    .type = "hierarchical_sigmoid",
    .doc = "Hierarchical sigmoid loss over a default or custom binary tree of classes.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = hs_infer,
    .grad = hs_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"W", 0, "forward W"},
    {"Label", 0, "forward Label"},
    {"PathTable", RILL_SLOT_DISPENSABLE, "forward PathTable"},
    {"PathCode", RILL_SLOT_DISPENSABLE, "forward PathCode"},
    {"Bias", RILL_SLOT_DISPENSABLE, "forward Bias"},
    {"PreOut", 0, "forward PreOut"},
    {"Out@GRAD", 0, "gradient of Out [N, 1]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape"},
    {"W@GRAD", RILL_SLOT_DISPENSABLE, "W's shape, or with is_sparse selected rows"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "Bias's shape"},
};

static rill_status *hs_grad_infer(rill_infer_ctx *ctx) {
  RILL_TRY(rill_nn_need_inputs(ctx));
  if (hs_known(ctx)) {
    int64_t len;
    RILL_TRY(hs_check(ctx, &len));
  }
  rill_nn_same_meta(ctx, 0, 0);
  rill_nn_table_grad_meta(ctx, 1, 1, ctx->attrs[RILL_HIERARCHICAL_SIGMOID_ATTR_IS_SPARSE].v.b);
  rill_nn_same_meta(ctx, 2, 5);
  return NULL;
}

const rill_op_schema rill_schema_hierarchical_sigmoid_grad = {
    .type = "hierarchical_sigmoid_grad",
    .doc = "Gradients of hierarchical_sigmoid with respect to X, W and Bias.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = hs_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(hierarchical_sigmoid);
