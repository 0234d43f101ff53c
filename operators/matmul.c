/* matmul (Fluid 1.x) and matmul_v2 (numpy-style batching), with their gradients; the
 * shape rules are in operators/matmul.h. */
#include "operators/math_grad.h"
#include "operators/matmul.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "left operand: [..., M, K] (or [K] / transposed)"},
    {"Y", 0, "right operand: [..., K, N] (or [K] / transposed)"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "the (batched) product"}};

static const rill_attr_schema v1_attrs[] = {
    {"transpose_X", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "use X's last two dims transposed"},
    {"transpose_Y", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "use Y's last two dims transposed"},
    {"alpha", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "Out = alpha * X * Y"},
    {"head_number", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "multi-head split (only 1 supported)"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};
static const rill_attr_schema v2_attrs[] = {
    {"trans_x", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "use X's last two dims transposed"},
    {"trans_y", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "use Y's last two dims transposed"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static bool is_v2(const rill_infer_ctx *ctx) { return ctx->schema->attrs == v2_attrs; }

/* Checks X and Y (slots 0, 1) and computes the plan; *known false when either is
 * unknown. */
static rill_status *matmul_check(rill_infer_ctx *ctx, rill_matmul_plan *p, bool *known) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  if (!x || !y) return rill_infer_error(ctx, "needs inputs X and Y");
  *known = x->known && y->known;
  if (!*known) return NULL;
  const char *xn = rill_infer_in_name(ctx, 0, 0), *yn = rill_infer_in_name(ctx, 1, 0);
  if (x->dtype != y->dtype)
    return rill_infer_error(ctx, "input X (%s) is %s but input Y (%s) is %s", xn,
                            rill_dtype_name(x->dtype), yn, rill_dtype_name(y->dtype));
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s; %s takes float32 or float64", xn,
                            rill_dtype_name(x->dtype), ctx->schema->type);
  bool v2 = is_v2(ctx);
  if (!v2 && ctx->attrs[RILL_MATMUL_ATTR_HEAD_NUMBER].v.i != 1)
    return rill_infer_error(ctx, "attribute head_number = %d is not supported (only 1)",
                            ctx->attrs[RILL_MATMUL_ATTR_HEAD_NUMBER].v.i);
  char why[200], xs[RILL_DIMS_STR_MAX], ys[RILL_DIMS_STR_MAX];
  if (!rill_matmul_plan_make(&x->dims, &y->dims, ctx->attrs[RILL_MATMUL_TRANS_X].v.b,
                             ctx->attrs[RILL_MATMUL_TRANS_Y].v.b, v2, p, why, sizeof why))
    return rill_infer_error(ctx, "input X (%s) of shape %s and input Y (%s) of shape %s (%s %d, "
                            "%s %d): %s", xn, rill_dims_str(&x->dims, xs, sizeof xs), yn,
                            rill_dims_str(&y->dims, ys, sizeof ys), ctx->schema->attrs[RILL_MATMUL_TRANS_X].name,
                            (int)ctx->attrs[RILL_MATMUL_TRANS_X].v.b, ctx->schema->attrs[RILL_MATMUL_TRANS_Y].name,
                            (int)ctx->attrs[RILL_MATMUL_TRANS_Y].v.b, why);
  return NULL;
}

static rill_status *matmul_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  rill_matmul_plan p;
  bool known;
  RILL_TRY(matmul_check(ctx, &p, &known));
  if (!known) {
    rill_meta_unknown(out);
    return NULL;
  }
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_meta_set(out, x->dtype, &p.out, x->lod_level, 0, 0);
  return NULL;
}

/* Paddle's MatMulOpGradMaker / MatMulV2GradOpMaker: X, Y, Out@GRAD in. */
static rill_status *matmul_grad_maker(rill_grad_ctx *ctx) {
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ctx->schema->type);
  return rill_grad_emit(ctx, type, RILL_NAMES("X", "Y"), RILL_NAMES("Out"),
                            RILL_NAMES("X", "Y"));
}

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward input X"},
    {"Y", 0, "forward input Y"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X, X's shape"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Y, Y's shape"},
};

static rill_status *matmul_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *g = rill_infer_in(ctx, 2, 0);
  if (!g) return rill_infer_error(ctx, "needs input Out@GRAD");
  rill_matmul_plan p;
  bool known;
  RILL_TRY(matmul_check(ctx, &p, &known));
  if (known && g->known) {
    const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    if (g->dtype != x->dtype)
      return rill_infer_error(ctx, "input Out@GRAD (%s) is %s but input X (%s) is %s",
                              rill_infer_in_name(ctx, 2, 0), rill_dtype_name(g->dtype),
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
    bool same = g->dims.n == p.out.n;
    for (int i = 0; same && i < p.out.n; i++)
      if (g->dims.d[i] >= 0 && p.out.d[i] >= 0 && g->dims.d[i] != p.out.d[i]) same = false;
    if (!same)
      return rill_infer_error(ctx, "input Out@GRAD (%s) has shape %s, the forward Out has %s",
                              rill_infer_in_name(ctx, 2, 0), rill_dims_str(&g->dims, a, sizeof a),
                              rill_dims_str(&p.out, b, sizeof b));
  }
  rill_grad_infer_like(ctx, 0, 0);
  rill_grad_infer_like(ctx, 1, 1);
  return NULL;
}

#define MATMUL_SCHEMAS(NAME, ATTRS, DOC, GDOC)                                            \
  const rill_op_schema rill_schema_##NAME = {                                             \
      .type = #NAME,                                                                      \
      .doc = DOC,                                                                         \
      .inputs = inputs,                                                                   \
      .ninputs = RILL_COUNTOF(inputs),                                                    \
      .outputs = outputs,                                                                 \
      .noutputs = RILL_COUNTOF(outputs),                                                  \
      .attrs = ATTRS,                                                                     \
      .nattrs = RILL_COUNTOF(ATTRS),                                                      \
      .flags = 0,                                                                         \
      .infer = matmul_infer,                                                              \
      .grad = matmul_grad_maker,                                                          \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };                                                                                      \
  const rill_op_schema rill_schema_##NAME##_grad = {                                      \
      .type = #NAME "_grad",                                                              \
      .doc = GDOC,                                                                        \
      .inputs = grad_inputs,                                                              \
      .ninputs = RILL_COUNTOF(grad_inputs),                                               \
      .outputs = grad_outputs,                                                            \
      .noutputs = RILL_COUNTOF(grad_outputs),                                             \
      .attrs = ATTRS,                                                                     \
      .nattrs = RILL_COUNTOF(ATTRS),                                                      \
      .flags = 0,                                                                         \
      .infer = matmul_grad_infer,                                                         \
      .grad = NULL,                                                                       \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };

MATMUL_SCHEMAS(matmul, v1_attrs,
               "Out = alpha * op(X) * op(Y) over the last two dims; batch dims as in Fluid 1.x.",
               "Gradients of matmul; X@GRAD / Y@GRAD have X's / Y's shapes.")
MATMUL_SCHEMAS(matmul_v2, v2_attrs,
               "Out = op(X) * op(Y) over the last two dims; batch dims broadcast numpy-style.",
               "Gradients of matmul_v2, summed over broadcast batch dims.")

RILL_OP_TABLE_CHECKS(matmul);
