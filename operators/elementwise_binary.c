/* elementwise_sub / _mul / _div / _max / _min / _pow, and the gradient ops of every
 * elementwise binary op (elementwise_add's forward lives in elementwise_add.c). All
 * broadcast as operators/elementwise.h describes. */
#include "operators/elementwise.h"
#include "operators/math_grad.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "first operand"},
    {"Y", 0, "second operand, broadcast against X"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "the result, of the broadcast shape"}};
static const rill_attr_schema attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(-1),
     "dim of the higher-rank operand where the other one starts; -1: trailing dims"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static rill_status *broadcast_error(rill_infer_ctx *ctx, const rill_dims *x, const rill_dims *y,
                                    const char *why) {
  char xs[RILL_DIMS_STR_MAX], ys[RILL_DIMS_STR_MAX];
  return rill_infer_error(ctx, "input X (%s) of shape %s does not broadcast with input Y (%s) "
                          "of shape %s: %s", rill_infer_in_name(ctx, 0, 0),
                          rill_dims_str(x, xs, sizeof xs), rill_infer_in_name(ctx, 1, 0),
                          rill_dims_str(y, ys, sizeof ys), why);
}

static rill_status *ew_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !y || !out) return rill_infer_error(ctx, "needs inputs X, Y and output Out");
  if (!x->known || !y->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dtype != y->dtype)
    return rill_infer_error(ctx, "input X (%s) is %s but input Y (%s) is %s",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype),
                            rill_infer_in_name(ctx, 1, 0), rill_dtype_name(y->dtype));
  rill_dims xa, ya, od;
  char why[160];
  if (!rill_elementwise_broadcast(&x->dims, &y->dims, ctx->attrs[RILL_ELEMENTWISE_SUB_ATTR_AXIS].v.i, &xa, &ya, &od, why,
                                  sizeof why))
    return broadcast_error(ctx, &x->dims, &y->dims, why);
  rill_meta_set(out, x->dtype, &od, x->lod_level, 0, 0);
  return NULL;
}

#define EW_SCHEMA(NAME, GRAD, DOC)                                                        \
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
      .infer = ew_infer,                                                                  \
      .grad = GRAD,                                                                       \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };
#define EW_FORWARD(NAME, DOC) EW_SCHEMA(NAME, rill_grad_default, DOC)

EW_FORWARD(elementwise_sub, "Out = X - Y with Paddle's broadcasting (Y starts at dim `axis`).")
EW_FORWARD(elementwise_mul, "Out = X * Y with Paddle's broadcasting (Y starts at dim `axis`).")
EW_FORWARD(elementwise_div, "Out = X / Y with Paddle's broadcasting (Y starts at dim `axis`).")
EW_FORWARD(elementwise_max, "Out = max(X, Y) with Paddle's broadcasting.")
EW_FORWARD(elementwise_min, "Out = min(X, Y) with Paddle's broadcasting.")
EW_FORWARD(elementwise_pow, "Out = X ^ Y with Paddle's broadcasting.")

/* Ops without a gradient, as Paddle 1.8.5 registers them: for integers C's truncating
 * remainder and division (-7 mod 3 = -1, -7 floordiv 3 = -2); mod of floats takes the
 * divisor's sign (-7.5 mod 2 = 0.5). */
EW_SCHEMA(elementwise_mod, NULL, "Out = X % Y (int32/int64: C's remainder; float32/float64: "
          "the divisor's sign, as Python), broadcast.")
EW_SCHEMA(elementwise_floordiv, NULL, "Out = X / Y (int32/int64, truncated as Paddle 1.8.5 "
          "does), broadcast.")

/* Gradient ops: X and Out are optional. Paddle 1.x's elementwise_add_grad / _sub_grad
 * come without X and elementwise_div_grad with Out instead of X: X@GRAD then takes
 * Out@GRAD's shape. */
static const rill_slot_schema grad_inputs[] = {
    {"X", RILL_SLOT_DISPENSABLE, "forward input X (add, sub and div may omit it)"},
    {"Y", 0, "forward input Y"},
    {"Out", RILL_SLOT_DISPENSABLE, "forward output (div reads it when X is absent)"},
    {"Out@GRAD", 0, "gradient of Out, of the broadcast shape"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X, reduced to X's shape"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Y, reduced to Y's shape"},
};

static rill_status *ew_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  const rill_tensor_meta *g = rill_infer_in(ctx, 3, 0);
  if (!y || !g) return rill_infer_error(ctx, "needs inputs Y and Out@GRAD");
  const rill_tensor_meta *xl = x ? x : g; /* X's shape: Out@GRAD's when X is absent */
  if (xl->known && y->known && g->known) {
    if (xl->dtype != y->dtype || g->dtype != y->dtype)
      return rill_infer_error(ctx, "inputs X (%s), Y (%s) and Out@GRAD (%s) must share a dtype "
                              "(%s, %s, %s)", rill_infer_in_name(ctx, 0, 0),
                              rill_infer_in_name(ctx, 1, 0), rill_infer_in_name(ctx, 3, 0),
                              rill_dtype_name(xl->dtype), rill_dtype_name(y->dtype),
                              rill_dtype_name(g->dtype));
    rill_dims xa, ya, od;
    char why[160];
    if (!rill_elementwise_broadcast(&xl->dims, &y->dims, ctx->attrs[RILL_ELEMENTWISE_SUB_ATTR_AXIS].v.i, &xa, &ya, &od, why,
                                    sizeof why))
      return broadcast_error(ctx, &xl->dims, &y->dims, why);
    bool same = od.n == g->dims.n;
    for (int i = 0; same && i < od.n; i++)
      if (od.d[i] >= 0 && g->dims.d[i] >= 0 && od.d[i] != g->dims.d[i]) same = false;
    if (!same) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input Out@GRAD (%s) has shape %s, the forward Out has %s",
                              rill_infer_in_name(ctx, 3, 0), rill_dims_str(&g->dims, a, sizeof a),
                              rill_dims_str(&od, b, sizeof b));
    }
  }
  rill_grad_infer_like(ctx, 0, x ? 0 : 3);
  rill_grad_infer_like(ctx, 1, 1);
  return NULL;
}

/* Double gradients, as Paddle's ElementwiseAdd/Sub/MulDoubleGradMaker: the gradient op's
 * Y (and X) and Out@GRAD (as DOut) in, with the gradients of its outputs (DDX, DDY);
 * DDOut, the gradient of its Out@GRAD, out, and for mul X@GRAD and Y@GRAD too. */
static rill_status *ew_linear_double_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit_as(ctx, RILL_NAMES("Y", "Y", "Out@GRAD", "DOut"),
                           RILL_NAMES("X@GRAD", "DDX", "Y@GRAD", "DDY"), RILL_NAMES("Out@GRAD", "DDOut"));
}
static rill_status *ew_mul_double_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit_as(ctx, RILL_NAMES("X", "X", "Y", "Y", "Out@GRAD", "DOut"),
                           RILL_NAMES("X@GRAD", "DDX", "Y@GRAD", "DDY"),
                           RILL_NAMES("X", "X@GRAD", "Y", "Y@GRAD", "Out@GRAD", "DDOut"));
}

/* Paddle's ElementwiseDivDoubleGradMaker: the gradient op seen as a function of Y, Out
 * and Out@GRAD (its X@GRAD, DX, read back), whose X is not differentiated. */
static rill_status *ew_div_double_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit_as(ctx, RILL_NAMES("Y", "Y", "Out", "Out", "X@GRAD", "DX"),
                           RILL_NAMES("X@GRAD", "DDX", "Y@GRAD", "DDY"),
                           RILL_NAMES("Y", "Y@GRAD", "Out", "DOut", "Out@GRAD", "DDOut"));
}

#define EW_GRAD(NAME, DOC) EW_GRAD_DOUBLE(NAME, DOC, NULL)
#define EW_GRAD_DOUBLE(NAME, DOC, DOUBLE)                                                 \
  const rill_op_schema rill_schema_##NAME##_grad = {                                      \
      .type = #NAME "_grad",                                                              \
      .doc = DOC,                                                                         \
      .inputs = grad_inputs,                                                              \
      .ninputs = RILL_COUNTOF(grad_inputs),                                               \
      .outputs = grad_outputs,                                                            \
      .noutputs = RILL_COUNTOF(grad_outputs),                                             \
      .attrs = attrs,                                                                     \
      .nattrs = RILL_COUNTOF(attrs),                                                      \
      .flags = 0,                                                                         \
      .infer = ew_grad_infer,                                                             \
      .grad = DOUBLE,                                                                     \
      .kernel_dtype_slot = 3,                                                             \
      .dtype_attr = -1,                                                                   \
  };

EW_GRAD_DOUBLE(elementwise_add, "X@GRAD = dOut, Y@GRAD = dOut, each summed over its broadcast dims.",
               ew_linear_double_grad_maker)
EW_GRAD_DOUBLE(elementwise_sub, "X@GRAD = dOut, Y@GRAD = -dOut, each summed over its broadcast dims.",
               ew_linear_double_grad_maker)
EW_GRAD_DOUBLE(elementwise_mul, "X@GRAD = dOut * Y, Y@GRAD = dOut * X, summed over broadcast dims.",
               ew_mul_double_grad_maker)
EW_GRAD_DOUBLE(elementwise_div, "X@GRAD = dOut / Y, Y@GRAD = -dOut * X / Y^2, summed over "
               "broadcast dims.", ew_div_double_grad_maker)
EW_GRAD(elementwise_max, "dOut goes to X where X > Y, else to Y; summed over broadcast dims.")
EW_GRAD(elementwise_min, "dOut goes to X where X < Y, else to Y; summed over broadcast dims.")
EW_GRAD(elementwise_pow, "X@GRAD = dOut * Y * X^(Y-1), Y@GRAD = dOut * ln(X) * X^Y, summed over "
                         "broadcast dims.")

/* The double-gradient ops. DDX and DDY are absent where the gradient op wrote no X@GRAD
 * or Y@GRAD (they count as zero); X (mul only) and Y broadcast as in the forward op. */
static const rill_slot_schema linear_gg_inputs[] = {
    {"Y", 0, "forward input Y"},
    {"DOut", 0, "the gradient op's Out@GRAD"},
    {"DDX", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's X@GRAD"},
    {"DDY", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's Y@GRAD"},
};
static const rill_slot_schema linear_gg_outputs[] = {
    {"DDOut", RILL_SLOT_DISPENSABLE, "gradient of DOut: DDX +- DDY, broadcast to DOut's shape"},
};
static const rill_slot_schema mul_gg_inputs[] = {
    {"X", 0, "forward input X"},
    {"Y", 0, "forward input Y"},
    {"DOut", 0, "the gradient op's Out@GRAD"},
    {"DDX", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's X@GRAD"},
    {"DDY", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's Y@GRAD"},
};
static const rill_slot_schema mul_gg_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X: DDY * DOut, reduced to X's shape"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Y: DDX * DOut, reduced to Y's shape"},
    {"DDOut", RILL_SLOT_DISPENSABLE, "gradient of DOut: DDX * Y + X * DDY"},
};

static const rill_slot_schema div_gg_inputs[] = {
    {"Y", 0, "forward input Y"},
    {"Out", 0, "forward output"},
    {"DDX", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's X@GRAD"},
    {"DDY", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's Y@GRAD"},
    {"DX", 0, "the gradient op's X@GRAD"},
};
static const rill_slot_schema div_gg_outputs[] = {
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "(Out * DDY - DDX) * DX / Y, reduced to Y's shape"},
    {"DOut", RILL_SLOT_DISPENSABLE, "gradient of Out: -DX * DDY"},
    {"DDOut", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's Out@GRAD: (DDX - Out * DDY) / Y"},
};

static rill_status *ew_div_gg_infer(rill_infer_ctx *ctx) {
  if (!rill_infer_in(ctx, 0, 0) || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 4, 0))
    return rill_infer_error(ctx, "needs inputs Y, Out and DX");
  if (rill_infer_in(ctx, 2, 0)) RILL_TRY(rill_grad_infer_same(ctx, 2, 4));
  if (rill_infer_in(ctx, 3, 0)) RILL_TRY(rill_grad_infer_same(ctx, 3, 0));
  rill_grad_infer_like(ctx, 0, 0);
  rill_grad_infer_like(ctx, 1, 1);
  rill_grad_infer_like(ctx, 2, 1);
  return NULL;
}

/* DDX and DDY have their operand's shape (X's is not known to add and sub); the outputs
 * take X's, Y's and DOut's. */
static rill_status *ew_gg_infer(rill_infer_ctx *ctx) {
  size_t x = ctx->schema->ninputs == 5 ? 0 : SIZE_MAX, y = x == 0 ? 1 : 0, dout = y + 1;
  if (!rill_infer_in(ctx, y, 0) || !rill_infer_in(ctx, dout, 0) || (x == 0 && !rill_infer_in(ctx, 0, 0)))
    return rill_infer_error(ctx, "needs inputs %sY and DOut", x == 0 ? "X, " : "");
  if (x == 0 && rill_infer_in(ctx, dout + 1, 0)) RILL_TRY(rill_grad_infer_same(ctx, dout + 1, 0));
  if (rill_infer_in(ctx, dout + 2, 0)) RILL_TRY(rill_grad_infer_same(ctx, dout + 2, y));
  if (x == 0) {
    rill_grad_infer_like(ctx, 0, 0);
    rill_grad_infer_like(ctx, 1, 1);
    rill_grad_infer_like(ctx, 2, 2);
  } else {
    rill_grad_infer_like(ctx, 0, dout);
  }
  return NULL;
}


RILL_GRAD_GRAD_SCHEMA(elementwise_add, "Double gradient of elementwise_add: DDOut = DDX + DDY, broadcast.",
                      linear_gg_inputs, linear_gg_outputs, attrs, ew_gg_infer, 0, 1);
RILL_GRAD_GRAD_SCHEMA(elementwise_sub, "Double gradient of elementwise_sub: DDOut = DDX - DDY, broadcast.",
                      linear_gg_inputs, linear_gg_outputs, attrs, ew_gg_infer, 0, 1);
RILL_GRAD_GRAD_SCHEMA(elementwise_mul,
                      "Double gradient of elementwise_mul: DDOut = DDX * Y + X * DDY, X@GRAD = DDY * "
                      "DOut, Y@GRAD = DDX * DOut, each reduced over its broadcast dims.",
                      mul_gg_inputs, mul_gg_outputs, attrs, ew_gg_infer, 0, 2);
RILL_GRAD_GRAD_SCHEMA(elementwise_div,
                      "Double gradient of elementwise_div: Y@GRAD = (Out * DDY - DDX) * DX / Y "
                      "(reduced), DOut = -DX * DDY, DDOut = (DDX - Out * DDY) / Y.",
                      div_gg_inputs, div_gg_outputs, attrs, ew_div_gg_infer, 0, 1);

RILL_OP_TABLE_CHECKS(elementwise_binary);
