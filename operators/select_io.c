/* select_input and select_output: the branch switch of Paddle's 2.x-style cond. Mask is
 * an int32 tensor of one element, the branch number b. select_input: Out = X[b] (one of
 * the duplicable X); select_output: Out[b] = X, the other Out left as they are (a
 * branch not taken holds no tensor). Each is the other's gradient (Paddle 1.8's makers):
 * select_input's is select_output(X = Out@GRAD, Mask) -> Out = X@GRAD, so only the
 * chosen branch's X@GRAD is written and the others stay unset, as in Paddle;
 * select_output's is select_input(X = Out@GRAD, Mask) -> Out = X@GRAD. Dense tensors
 * (with their LoD), selected rows and tensor arrays are copied. */
#include <stdio.h>

#include "framework/transform/opedit.h"
#include "operators/op_util.h"

enum { IN_X, IN_MASK };

static const rill_slot_schema in_inputs[] = {
    [IN_X] = {"X", RILL_SLOT_DUPLICABLE, "the branches' tensors"},
    [IN_MASK] = {"Mask", RILL_SLOT_NO_GRAD, "int32, one element: the branch taken"},
};
static const rill_slot_schema in_outputs[] = {{"Out", 0, "X[Mask]"}};
static const rill_slot_schema out_inputs[] = {
    [IN_X] = {"X", 0, "the tensor sent to one branch"},
    [IN_MASK] = {"Mask", RILL_SLOT_NO_GRAD, "int32, one element: the branch taken"},
};
static const rill_slot_schema out_outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE, "the branches' tensors; Out[Mask] := X"}};

static rill_status *check_mask(rill_infer_ctx *ctx) {
  const rill_tensor_meta *m = rill_infer_in(ctx, IN_MASK, 0);
  if (!m) return rill_infer_error(ctx, "needs input Mask");
  if (m->known && m->dtype != RILL_DTYPE_INT32)
    return rill_infer_error(ctx, "input Mask (%s) is %s, expected int32",
                            rill_infer_in_name(ctx, IN_MASK, 0), rill_dtype_name(m->dtype));
  return NULL;
}

static rill_status *select_input_infer(rill_infer_ctx *ctx) {
  RILL_TRY(check_mask(ctx));
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out || ctx->nin[IN_X] == 0) return rill_infer_error(ctx, "needs inputs X and output Out");
  /* the branches' common meta when they agree, else unknown until the op runs */
  const rill_tensor_meta *first = rill_infer_in(ctx, IN_X, 0);
  bool same = first && first->known;
  for (size_t i = 1; same && i < ctx->nin[IN_X]; i++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, IN_X, i);
    same = m && m->known && m->dtype == first->dtype && m->dims.n == first->dims.n;
    for (int k = 0; same && k < first->dims.n; k++) same = m->dims.d[k] == first->dims.d[k];
  }
  if (same)
    rill_meta_set(out, first->dtype, &first->dims, first->lod_level, -1, -1);
  else
    rill_meta_unknown(out);
  return NULL;
}

static rill_status *select_output_infer(rill_infer_ctx *ctx) {
  RILL_TRY(check_mask(ctx));
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  if (!x || ctx->nout[0] == 0) return rill_infer_error(ctx, "needs input X and outputs Out");
  for (size_t i = 0; i < ctx->nout[0]; i++) {
    rill_tensor_meta *o = rill_infer_out(ctx, 0, i);
    if (!o) continue;
    if (x->known)
      rill_meta_set(o, x->dtype, &x->dims, x->lod_level, -1, -1);
    else
      rill_meta_unknown(o);
  }
  return NULL;
}

/* The gradient names of the forward slot's arguments into names[] (buffers of 1024);
 * with `empty_unwanted`, arguments that want no gradient get RILL_EMPTY_VAR. */
static rill_status *grad_names(rill_grad_ctx *ctx, const rill_op_slot *s, bool empty_unwanted,
                               char (*buf)[1024], const char **names, size_t cap, size_t *n) {
  if (!s || s->nargs == 0 || s->nargs > cap)
    return rill_error(RILL_INVALID_ARGUMENT, "%s: between 1 and %zu branches are supported",
                      ctx->schema->type, cap);
  for (size_t i = 0; i < s->nargs; i++) {
    if (empty_unwanted && !ctx->wants_grad(ctx->impl, s->args[i])) {
      names[i] = RILL_EMPTY_VAR;
      continue;
    }
    if ((size_t)snprintf(buf[i], 1024, "%s" RILL_GRAD_SUFFIX, s->args[i]) >= 1024)
      return rill_error(RILL_INVALID_ARGUMENT, "%s: variable name '%s' is too long",
                        ctx->schema->type, s->args[i]);
    names[i] = buf[i];
  }
  *n = s->nargs;
  return NULL;
}

/* The other op of the pair, reading the forward op's output gradients as X and writing
 * its input gradients as Out. */
static rill_status *select_maker(rill_grad_ctx *ctx, const char *type) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  enum { CAP = 16 };
  static char ibuf[CAP][1024], obuf[CAP][1024];
  const char *in[CAP], *out[CAP];
  size_t nin, nout;
  RILL_TRY(grad_names(ctx, rill_op_output(ctx->fwd, "Out"), false, ibuf, in, CAP, &nin));
  RILL_TRY(grad_names(ctx, rill_op_input(ctx->fwd, "X"), true, obuf, out, CAP, &nout));
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, type, &op));
  RILL_TRY(rill_opd_input(op, "X", in, nin));
  RILL_TRY(rill_grad_forward(ctx, op, "Mask"));
  return rill_opd_output(op, "Out", out, nout);
}

static rill_status *select_input_maker(rill_grad_ctx *ctx) { return select_maker(ctx, "select_output"); }
static rill_status *select_output_maker(rill_grad_ctx *ctx) { return select_maker(ctx, "select_input"); }

const rill_op_schema rill_schema_select_input = {
    .type = "select_input",
    .doc = "Out = X[Mask]: the tensor of the branch taken.",
    .inputs = in_inputs,
    .ninputs = RILL_COUNTOF(in_inputs),
    .outputs = in_outputs,
    .noutputs = RILL_COUNTOF(in_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = select_input_infer,
    .grad = select_input_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_select_output = {
    .type = "select_output",
    .doc = "Out[Mask] = X: the tensor sent to the branch taken; the other Out untouched.",
    .inputs = out_inputs,
    .ninputs = RILL_COUNTOF(out_inputs),
    .outputs = out_outputs,
    .noutputs = RILL_COUNTOF(out_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = select_output_infer,
    .grad = select_output_maker,
    .kernel_dtype_slot = -1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(select_io);
