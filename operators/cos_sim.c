/* cos_sim: cosine similarity of the rows of X [N, ...] and Y [N or 1, ...] (flattened
 * after the first dim; a single row of Y is compared with every row of X). Out, XNorm
 * [N, 1] and YNorm [rows of Y, 1]; Out takes X's LoD. cos_sim_grad reads the norms. */
#include "operators/math_grad.h"
#include "operators/op_util.h"

enum { IN_X, IN_Y };
enum { OUT_OUT, OUT_XNORM, OUT_YNORM };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "[N, ...]"},
    [IN_Y] = {"Y", 0, "[N or 1, ...], X's trailing dims"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUT] = {"Out", 0, "[N, 1]: X.Y / (|X| |Y|) row by row"},
    [OUT_XNORM] = {"XNorm", RILL_SLOT_INTERMEDIATE, "[N, 1]: |X| per row"},
    [OUT_YNORM] = {"YNorm", RILL_SLOT_INTERMEDIATE, "[rows of Y, 1]: |Y| per row"},
};

/* Checks X and Y against each other; fills the dims of Out and YNorm. */
static rill_status *check_xy(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                             const rill_tensor_meta *y) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_X, 0), *yn = rill_infer_in_name(ctx, IN_Y, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (y->dtype != x->dtype)
    return rill_infer_error(ctx, "input Y (%s) is %s but input X (%s) is %s", yn,
                            rill_dtype_name(y->dtype), xn, rill_dtype_name(x->dtype));
  bool bad = x->dims.n < 2 || y->dims.n != x->dims.n;
  for (int i = 1; !bad && i < x->dims.n; i++)
    bad = x->dims.d[i] >= 0 && y->dims.d[i] >= 0 && x->dims.d[i] != y->dims.d[i];
  if (!bad && x->dims.d[0] >= 0 && y->dims.d[0] >= 0)
    bad = y->dims.d[0] != x->dims.d[0] && y->dims.d[0] != 1;
  if (bad)
    return rill_infer_error(ctx, "inputs X (%s) %s and Y (%s) %s: both need rank >= 2 and the "
                            "same dims after the first, and Y 1 row or as many as X", xn,
                            rill_dims_str(&x->dims, a, sizeof a), yn,
                            rill_dims_str(&y->dims, b, sizeof b));
  return NULL;
}

static rill_status *cos_sim_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0), *y = rill_infer_in(ctx, IN_Y, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0);
  rill_tensor_meta *xn = rill_infer_out(ctx, OUT_XNORM, 0), *yn = rill_infer_out(ctx, OUT_YNORM, 0);
  if (!x || !y || !out || !xn || !yn)
    return rill_infer_error(ctx, "needs inputs X and Y and outputs Out, XNorm and YNorm");
  if (!x->known || !y->known) {
    rill_meta_unknown(out);
    rill_meta_unknown(xn);
    rill_meta_unknown(yn);
    return NULL;
  }
  RILL_TRY(check_xy(ctx, x, y));
  rill_dims od = {.n = 2, .d = {x->dims.d[0], 1}}, yd = {.n = 2, .d = {y->dims.d[0], 1}};
  rill_meta_set(out, x->dtype, &od, x->lod_level, IN_X, 0);
  rill_meta_set(xn, x->dtype, &od, 0, -1, -1);
  rill_meta_set(yn, x->dtype, &yd, 0, -1, -1);
  return NULL;
}

/* Paddle's maker: cos_sim_grad(X, Y, XNorm, YNorm, Out, Out@GRAD) -> X@GRAD, Y@GRAD. */
static rill_status *cos_sim_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "cos_sim_grad", RILL_NAMES("X", "Y", "XNorm", "YNorm", "Out"),
                        RILL_NAMES("Out"), RILL_NAMES("X", "Y"));
}

const rill_op_schema rill_schema_cos_sim = {
    .type = "cos_sim",
    .doc = "Out = cosine similarity of each row of X with the same row of Y (or Y's only row).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = cos_sim_infer,
    .grad = cos_sim_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

enum { G_X, G_Y, G_XNORM, G_YNORM, G_OUT, G_DOUT };

static const rill_slot_schema grad_inputs[] = {
    [G_X] = {"X", 0, "forward X"},
    [G_Y] = {"Y", 0, "forward Y"},
    [G_XNORM] = {"XNorm", 0, "forward XNorm"},
    [G_YNORM] = {"YNorm", 0, "forward YNorm"},
    [G_OUT] = {"Out", 0, "forward Out"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out [N, 1]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Y (summed over X's rows when Y has one)"},
};

static rill_status *cos_sim_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, G_X, 0), *y = rill_infer_in(ctx, G_Y, 0);
  if (!x || !y) return rill_infer_error(ctx, "needs inputs X and Y");
  if (x->known && y->known) RILL_TRY(check_xy(ctx, x, y));
  rill_grad_infer_like(ctx, 0, G_X);
  rill_grad_infer_like(ctx, 1, G_Y);
  return NULL;
}

const rill_op_schema rill_schema_cos_sim_grad = {
    .type = "cos_sim_grad",
    .doc = "X@GRAD = dOut (Y / (|X| |Y|) - Out X / |X|^2), Y@GRAD likewise.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = cos_sim_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(cos_sim);
