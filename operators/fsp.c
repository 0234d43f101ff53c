/* fsp (fluid.layers.fsp_matrix): the flow-of-solution-procedure matrix of two feature maps
 * X [N, C1, H, W] and Y [N, C2, H, W]: Out[n] = X[n] Y[n]^T / (H * W), [N, C1, C2], each
 * map flattened to [C, H * W]. fsp_grad: X@GRAD = Out@GRAD Y / (H * W), Y@GRAD =
 * Out@GRAD^T X / (H * W). */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "[N, C1, H, W]"},
    {"Y", 0, "[N, C2, H, W]"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "[N, C1, C2]"}};

static rill_status *fsp_check(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                              const rill_tensor_meta *y) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  bool ok = (x->dtype == RILL_DTYPE_FP32 || x->dtype == RILL_DTYPE_FP64) &&
            y->dtype == x->dtype && x->dims.n == 4 && y->dims.n == 4;
  for (int d = 0; ok && d < 4; d++)
    if (d != 1 && x->dims.d[d] >= 0 && y->dims.d[d] >= 0 && x->dims.d[d] != y->dims.d[d])
      ok = false;
  if (!ok)
    return rill_infer_error(ctx, "inputs X (%s) %s %s and Y (%s) %s %s must be float 4-D maps "
                            "of one dtype with the same batch, height and width",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype),
                            rill_dims_str(&x->dims, a, sizeof a), rill_infer_in_name(ctx, 1, 0),
                            rill_dtype_name(y->dtype), rill_dims_str(&y->dims, b, sizeof b));
  return NULL;
}

static rill_status *fsp_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !y || !out) return rill_infer_error(ctx, "needs inputs X and Y and output Out");
  if (!x->known || !y->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  RILL_TRY(fsp_check(ctx, x, y));
  rill_dims od = {.n = 3, .d = {x->dims.d[0], x->dims.d[1], y->dims.d[1]}};
  rill_meta_set(out, x->dtype, &od, 0, -1, -1);
  return NULL;
}

static rill_status *fsp_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Y"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X", "Y"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_fsp = {
    .type = "fsp",
    .doc = "Out[n] = X[n] Y[n]^T / (H * W) over flattened feature maps.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .infer = fsp_infer,
    .grad = fsp_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Y", 0, "forward Y"},
    {"Out@GRAD", 0, "gradient of Out [N, C1, C2]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "Y's shape"},
};

static rill_status *fsp_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  if (!x || !y || !rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "needs inputs X, Y and Out@GRAD");
  if (x->known && y->known) RILL_TRY(fsp_check(ctx, x, y));
  rill_nn_same_meta(ctx, 0, 0);
  rill_nn_same_meta(ctx, 1, 1);
  return NULL;
}

const rill_op_schema rill_schema_fsp_grad = {
    .type = "fsp_grad",
    .doc = "Gradients of fsp with respect to X and Y.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .infer = fsp_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(fsp);
