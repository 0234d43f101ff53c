/* mul: matrix product of X and Y, each flattened to 2-D at its num_col_dims. */
#include "operators/math_grad.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "left operand, flattened to [prod(dims[:x_num_col_dims]), prod(rest)]"},
    {"Y", 0, "right operand, flattened to [prod(dims[:y_num_col_dims]), prod(rest)]"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "X dims[:x_num_col_dims] + Y dims[y_num_col_dims:]"},
};
static const rill_attr_schema attrs[] = {
    {"x_num_col_dims", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "leading dims of X that form rows"},
    {"y_num_col_dims", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "leading dims of Y that form rows"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

/* Product of dims [b, e); -1 when one of them is unknown. */
static int64_t span(const rill_dims *d, int b, int e) {
  int64_t p = 1;
  for (int i = b; i < e; i++) {
    if (d->d[i] < 0) return -1;
    if (__builtin_mul_overflow(p, d->d[i], &p)) return -2;
  }
  return p;
}

static rill_status *mul_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !y || !out) return rill_infer_error(ctx, "needs inputs X, Y and output Out");
  if (!x->known || !y->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int xn = ctx->attrs[RILL_MUL_ATTR_X_NUM_COL_DIMS].v.i, yn = ctx->attrs[RILL_MUL_ATTR_Y_NUM_COL_DIMS].v.i;
  const char *xname = rill_infer_in_name(ctx, 0, 0), *yname = rill_infer_in_name(ctx, 1, 0);
  char xs[RILL_DIMS_STR_MAX], ys[RILL_DIMS_STR_MAX];
  rill_dims_str(&x->dims, xs, sizeof xs);
  rill_dims_str(&y->dims, ys, sizeof ys);
  if (x->dtype != y->dtype)
    return rill_infer_error(ctx, "input X (%s) is %s but input Y (%s) is %s", xname,
                            rill_dtype_name(x->dtype), yname, rill_dtype_name(y->dtype));
  if (xn < 1 || xn >= x->dims.n)
    return rill_infer_error(ctx, "input X (%s) has shape %s: rank must exceed x_num_col_dims = %d "
                            "(and x_num_col_dims >= 1)", xname, xs, xn);
  if (yn < 1 || yn >= y->dims.n)
    return rill_infer_error(ctx, "input Y (%s) has shape %s: rank must exceed y_num_col_dims = %d "
                            "(and y_num_col_dims >= 1)", yname, ys, yn);
  int64_t k1 = span(&x->dims, xn, x->dims.n), k2 = span(&y->dims, 0, yn);
  if (k1 == -2 || k2 == -2) return rill_infer_error(ctx, "shapes %s and %s overflow", xs, ys);
  if (k1 >= 0 && k2 >= 0 && k1 != k2)
    return rill_infer_error(ctx, "input X (%s) of shape %s flattens to %lld columns but input Y "
                            "(%s) of shape %s flattens to %lld rows (x_num_col_dims %d, "
                            "y_num_col_dims %d)", xname, xs, (long long)k1, yname, ys,
                            (long long)k2, xn, yn);
  rill_dims od;
  od.n = xn + (y->dims.n - yn);
  if (od.n > RILL_MAX_DIMS) return rill_infer_error(ctx, "output rank %d is too large", od.n);
  for (int i = 0; i < xn; i++) od.d[i] = x->dims.d[i];
  for (int i = yn; i < y->dims.n; i++) od.d[xn + i - yn] = y->dims.d[i];
  rill_meta_set(out, x->dtype, &od, x->lod_level, 0, 0);
  return NULL;
}

/* Paddle's MulOpGradMaker: X, Y and Out@GRAD in (not Out), X@GRAD and Y@GRAD out. */
static rill_status *mul_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "mul_grad", RILL_NAMES("X", "Y"), RILL_NAMES("Out"),
                            RILL_NAMES("X", "Y"));
}

const rill_op_schema rill_schema_mul = {
    .type = "mul",
    .doc = "Out = flatten(X) * flatten(Y): a matrix product of X and Y flattened to 2-D.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = mul_infer,
    .grad = mul_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* Paddle's MulDoubleGradMaker: X, Y, Out@GRAD (as DOut) and the gradients of X@GRAD and
 * Y@GRAD (DDX, DDY) in; the gradients of X, Y and Out@GRAD (DX, DY, DDOut) out. */
static rill_status *mul_double_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit_as(ctx, RILL_NAMES("X", "X", "Y", "Y", "Out@GRAD", "DOut"),
                           RILL_NAMES("X@GRAD", "DDX", "Y@GRAD", "DDY"),
                           RILL_NAMES("X", "DX", "Y", "DY", "Out@GRAD", "DDOut"));
}

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward input X"},
    {"Y", 0, "forward input Y"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "dOut * Y^T, X's shape"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "X^T * dOut, Y's shape"},
};

/* Out@GRAD must have the forward Out's shape (mul_infer on X and Y). */
static rill_status *mul_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  const rill_tensor_meta *g = rill_infer_in(ctx, 2, 0);
  if (!x || !y || !g) return rill_infer_error(ctx, "needs inputs X, Y and Out@GRAD");
  if (x->known && y->known && g->known) {
    rill_tensor_meta out = {0};
    size_t one = 1;
    rill_tensor_meta *outs[1] = {&out};
    const rill_tensor_meta *ins[2] = {x, y};
    size_t nin[2] = {1, 1};
    rill_infer_ctx fwd = *ctx;
    fwd.nin = nin;
    fwd.in = ins;
    fwd.nout = &one;
    fwd.out = outs;
    fwd.out_names = NULL;
    fwd.in_tensors = NULL;
    RILL_TRY(mul_infer(&fwd));
    if (g->dtype != x->dtype)
      return rill_infer_error(ctx, "input Out@GRAD (%s) is %s but input X (%s) is %s",
                              rill_infer_in_name(ctx, 2, 0), rill_dtype_name(g->dtype),
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype));
    bool same = out.dims.n == g->dims.n;
    for (int i = 0; same && i < g->dims.n; i++)
      if (out.dims.d[i] >= 0 && g->dims.d[i] >= 0 && out.dims.d[i] != g->dims.d[i]) same = false;
    if (!same) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input Out@GRAD (%s) has shape %s, the forward Out has %s",
                              rill_infer_in_name(ctx, 2, 0), rill_dims_str(&g->dims, a, sizeof a),
                              rill_dims_str(&out.dims, b, sizeof b));
    }
  }
  rill_grad_infer_like(ctx, 0, 0);
  rill_grad_infer_like(ctx, 1, 1);
  return NULL;
}

const rill_op_schema rill_schema_mul_grad = {
    .type = "mul_grad",
    .doc = "Gradients of mul: X@GRAD = dOut * Y^T, Y@GRAD = X^T * dOut (2-D views).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = mul_grad_infer,
    .grad = mul_double_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema gg_inputs[] = {
    {"X", 0, "forward input X"},
    {"Y", 0, "forward input Y"},
    {"DOut", 0, "the gradient op's Out@GRAD"},
    {"DDX", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's X@GRAD (absent: zero)"},
    {"DDY", RILL_SLOT_DISPENSABLE, "gradient of the gradient op's Y@GRAD (absent: zero)"},
};
static const rill_slot_schema gg_outputs[] = {
    {"DX", RILL_SLOT_DISPENSABLE, "gradient of X: DOut * DDY^T, X's shape"},
    {"DY", RILL_SLOT_DISPENSABLE, "gradient of Y: DDX^T * DOut, Y's shape"},
    {"DDOut", RILL_SLOT_DISPENSABLE, "gradient of DOut: DDX * Y + X * DDY, DOut's shape"},
};

static rill_status *mul_gg_infer(rill_infer_ctx *ctx) {
  if (!rill_infer_in(ctx, 0, 0) || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "needs inputs X, Y and DOut");
  if (rill_infer_in(ctx, 3, 0)) RILL_TRY(rill_grad_infer_same(ctx, 3, 0));
  if (rill_infer_in(ctx, 4, 0)) RILL_TRY(rill_grad_infer_same(ctx, 4, 1));
  rill_grad_infer_like(ctx, 0, 0);
  rill_grad_infer_like(ctx, 1, 1);
  rill_grad_infer_like(ctx, 2, 2);
  return NULL;
}

RILL_GRAD_GRAD_SCHEMA(mul, "Double gradient of mul (2-D views): DDOut = DDX * Y + X * DDY, DX = "
                      "DOut * DDY^T, DY = DDX^T * DOut.", gg_inputs, gg_outputs, attrs, mul_gg_infer, 0, 0);

RILL_OP_TABLE_CHECKS(mul);
