/* sum: Out = X[0] + X[1] + ... (dense tensors and selected rows; Out may be one of X). */
#include <stdio.h>
#include <string.h>

#include "framework/transform/opedit.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE, "tensors (or selected rows) of one shape"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "their sum; selected rows when every input is, else dense"},
};
static const rill_attr_schema attrs[] = {
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
};

static bool dims_agree(const rill_dims *a, const rill_dims *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (a->d[i] >= 0 && b->d[i] >= 0 && a->d[i] != b->d[i]) return false;
  return true;
}

static rill_status *sum_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  if (ctx->nin[0] == 0) return rill_infer_error(ctx, "needs at least one input X");
  const rill_tensor_meta *first = NULL;
  bool all_known = true;
  for (size_t i = 0; i < ctx->nin[0]; i++) {
    const rill_tensor_meta *x = rill_infer_in(ctx, 0, i);
    if (!x->known) {
      all_known = false;
      continue;
    }
    if (!first) {
      first = x;
      continue;
    }
    if (x->dtype != first->dtype)
      return rill_infer_error(ctx, "input X[%zu] (%s) is %s but X[0] (%s) is %s", i,
                              rill_infer_in_name(ctx, 0, i), rill_dtype_name(x->dtype),
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(first->dtype));
    if (!dims_agree(&x->dims, &first->dims)) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input X[%zu] (%s) has shape %s but X[0] (%s) has %s", i,
                              rill_infer_in_name(ctx, 0, i), rill_dims_str(&x->dims, a, sizeof a),
                              rill_infer_in_name(ctx, 0, 0),
                              rill_dims_str(&first->dims, b, sizeof b));
    }
  }
  if (!all_known || !first) {
    /* selected rows or undescribed inputs: the kernel sizes Out */
    rill_meta_unknown(out);
    return NULL;
  }
  rill_dims d = first->dims;
  for (size_t i = 0; i < ctx->nin[0]; i++) {
    const rill_tensor_meta *x = rill_infer_in(ctx, 0, i);
    for (int k = 0; k < d.n; k++)
      if (d.d[k] < 0) d.d[k] = x->dims.d[k];
  }
  rill_meta_set(out, first->dtype, &d, first->lod_level, 0, 0);
  return NULL;
}

/* Paddle's SumGradMaker: X[i]@GRAD = scale(Out@GRAD, 1) for each wanted input. */
static rill_status *sum_grad(rill_grad_ctx *ctx) {
  const rill_op_slot *x = rill_op_input(ctx->fwd, "X");
  const rill_op_slot *out = rill_op_output(ctx->fwd, "Out");
  if (!x || !out || out->nargs != 1) return NULL;
  char og[1024];
  snprintf(og, sizeof og, "%s" RILL_GRAD_SUFFIX, out->args[0]);
  for (size_t i = 0; i < x->nargs; i++) {
    if (!ctx->wants_grad || !ctx->wants_grad(ctx->impl, x->args[i])) continue;
    char xg[1024];
    snprintf(xg, sizeof xg, "%s" RILL_GRAD_SUFFIX, x->args[i]);
    rill_op_desc *op;
    RILL_TRY(rill_grad_begin(ctx, "scale", &op));
    const char *in = og, *o = xg;
    RILL_TRY(rill_opd_input(op, "X", &in, 1));
    RILL_TRY(rill_opd_output(op, "Out", &o, 1));
    rill_attr_value one = {.type = RILL_ATTR_FLOAT, .v.f = 1.0f};
    RILL_TRY(rill_grad_attr(op, "scale", &one));
  }
  return NULL;
}

const rill_op_schema rill_schema_sum = {
    .type = "sum",
    .doc = "Out = sum of the inputs X (dense tensors of one shape, or selected rows: the "
           "rows of every input are concatenated; mixed inputs give a dense Out). Out may "
           "be one of the inputs.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = sum_infer,
    .grad = sum_grad,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sum);
