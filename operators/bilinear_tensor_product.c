/* bilinear_tensor_product: Out[b, i] = X[b] Weight[i] Y[b]^T + Bias[i] for X [B, M],
 * Y [B, N], Weight [size, M, N], Bias [1, size] (optional); and its gradient with
 * respect to all four. */
#include "operators/op_util.h"

#include "operators/math_grad.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "[B, M]"},
    {"Y", 0, "[B, N]"},
    {"Weight", 0, "[size, M, N]"},
    {"Bias", RILL_SLOT_DISPENSABLE, "[1, size]"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "[B, size]"}};

static rill_status *btp_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  const rill_tensor_meta *w = rill_infer_in(ctx, 2, 0), *b = rill_infer_in(ctx, 3, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !y || !w || !out) return rill_infer_error(ctx, "needs inputs X, Y, Weight and output Out");
  if (!x->known || !y->known || !w->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  const rill_dims *xd = &x->dims, *yd = &y->dims, *wd = &w->dims;
  char xs[RILL_DIMS_STR_MAX], ys[RILL_DIMS_STR_MAX], ws[RILL_DIMS_STR_MAX];
#define DIFF(a, b) ((a) >= 0 && (b) >= 0 && (a) != (b))
  if (xd->n != 2 || yd->n != 2 || wd->n != 3 || DIFF(xd->d[0], yd->d[0]) ||
      DIFF(xd->d[1], wd->d[1]) || DIFF(yd->d[1], wd->d[2]) || x->dtype != y->dtype ||
      x->dtype != w->dtype)
    return rill_infer_error(ctx, "inputs X (%s) %s, Y (%s) %s and Weight (%s) %s must be "
                            "[B, M], [B, N] and [size, M, N] of one dtype",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(xd, xs, sizeof xs),
                            rill_infer_in_name(ctx, 1, 0), rill_dims_str(yd, ys, sizeof ys),
                            rill_infer_in_name(ctx, 2, 0), rill_dims_str(wd, ws, sizeof ws));
  if (b && b->known && (b->dims.n != 2 || DIFF(b->dims.d[0], 1) || DIFF(b->dims.d[1], wd->d[0])))
    return rill_infer_error(ctx, "input Bias (%s) %s must be [1, %lld]",
                            rill_infer_in_name(ctx, 3, 0), rill_dims_str(&b->dims, xs, sizeof xs),
                            (long long)wd->d[0]);
#undef DIFF
  rill_dims d = {.n = 2, .d = {xd->d[0] >= 0 ? xd->d[0] : yd->d[0], wd->d[0]}};
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *btp_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "Y", "Weight"), RILL_NAMES("Out"),
                        RILL_NAMES("X", "Y", "Weight", "Bias"));
}

const rill_op_schema rill_schema_bilinear_tensor_product = {
    .type = "bilinear_tensor_product",
    .doc = "Out[b, i] = X[b] Weight[i] Y[b]^T (+ Bias[0, i]).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = btp_infer,
    .grad = btp_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {{"X", 0, "forward X"},
                                               {"Y", 0, "forward Y"},
                                               {"Weight", 0, "forward Weight"},
                                               {"Out@GRAD", 0, "gradient of Out [B, size]"}};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "sum_i Out@GRAD[b, i] Weight[i] Y[b]^T"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "sum_i Out@GRAD[b, i] X[b] Weight[i]"},
    {"Weight@GRAD", RILL_SLOT_DISPENSABLE, "sum_b Out@GRAD[b, i] X[b]^T Y[b]"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "[1, size]: Out@GRAD summed over the batch"}};

static rill_status *btp_grad_infer(rill_infer_ctx *ctx) {
  for (size_t o = 0; o < 3; o++)
    if (rill_infer_out(ctx, o, 0)) rill_grad_infer_like(ctx, o, o);
  rill_tensor_meta *db = rill_infer_out(ctx, 3, 0);
  const rill_tensor_meta *w = rill_infer_in(ctx, 2, 0);
  if (db) {
    rill_dims d = {.n = 2, .d = {1, w && w->known ? w->dims.d[0] : -1}};
    if (w && w->known) rill_meta_set(db, w->dtype, &d, 0, -1, -1);
    else rill_meta_unknown(db);
  }
  return NULL;
}

const rill_op_schema rill_schema_bilinear_tensor_product_grad = {
    .type = "bilinear_tensor_product_grad",
    .doc = "X@GRAD, Y@GRAD, Weight@GRAD, Bias@GRAD of bilinear_tensor_product.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = btp_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 3,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(bilinear_tensor_product);
