/* split_lod_tensor and merge_lod_tensor: Fluid's IfElse. split_lod_tensor sends each
 * sequence of X at LoD level `level` (each row when X has no LoD) to OutTrue or OutFalse
 * by the bool Mask (one element per sequence); the outputs keep the LoD levels from
 * `level` down. merge_lod_tensor puts them back in X's order: sequence i of Out is the
 * next unused sequence (level 0 of its LoD) of InTrue when Mask[i] holds, of InFalse
 * otherwise; X gives the LoD levels above `level`. Each is the other's gradient, as in
 * Paddle. Output row counts depend on the mask: the kernels size the outputs. */
#include <stdio.h>

#include "framework/transform/opedit.h"
#include "operators/op_util.h"

enum { S_X, S_MASK };
enum { S_OUT_TRUE, S_OUT_FALSE };
static const rill_slot_schema split_inputs[] = {
    [S_X] = {"X", 0, "the tensor to split (its LoD gives the sequences)"},
    [S_MASK] = {"Mask", RILL_SLOT_NO_GRAD, "bool [N, 1] or [N]: one element per sequence"},
};
static const rill_slot_schema split_outputs[] = {
    [S_OUT_TRUE] = {"OutTrue", 0, "the sequences whose Mask holds"},
    [S_OUT_FALSE] = {"OutFalse", 0, "the others"},
};

enum { M_X, M_MASK, M_IN_TRUE, M_IN_FALSE };
static const rill_slot_schema merge_inputs[] = {
    [M_X] = {"X", RILL_SLOT_NO_GRAD, "the tensor that was split: its LoD levels above `level`"},
    [M_MASK] = {"Mask", RILL_SLOT_NO_GRAD, "bool [N, 1] or [N], as given to split_lod_tensor"},
    [M_IN_TRUE] = {"InTrue", RILL_SLOT_DISPENSABLE,
                   "the sequences for the rows whose Mask holds (may hold no tensor when "
                   "no row selects it)"},
    [M_IN_FALSE] = {"InFalse", RILL_SLOT_DISPENSABLE, "the sequences for the other rows"},
};
static const rill_slot_schema merge_outputs[] = {{"Out", 0, "InTrue and InFalse interleaved"}};

static const rill_attr_schema attrs[] = {
    {"level", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the LoD level whose sequences Mask picks"},
};

static rill_status *check_mask(rill_infer_ctx *ctx, size_t slot) {
  const rill_tensor_meta *m = rill_infer_in(ctx, slot, 0);
  if (!m) return rill_infer_error(ctx, "needs input Mask");
  if (m->known && m->dtype != RILL_DTYPE_BOOL)
    return rill_infer_error(ctx, "input Mask (%s) is %s, expected bool",
                            rill_infer_in_name(ctx, slot, 0), rill_dtype_name(m->dtype));
  if (ctx->attrs[0].v.i < 0)
    return rill_infer_error(ctx, "attribute level is %d, expected 0 or more",
                            (int)ctx->attrs[0].v.i);
  return NULL;
}

/* `from`'s dtype and dims with an unknown first dim (the kernel sizes it). */
static void set_rows_unknown(rill_tensor_meta *out, const rill_tensor_meta *from, int32_t lod) {
  rill_dims d = from->dims;
  if (d.n > 0) d.d[0] = -1;
  rill_meta_set(out, from->dtype, &d, lod, -1, -1);
}

static rill_status *split_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, S_X, 0);
  if (!x) return rill_infer_error(ctx, "needs input X");
  RILL_TRY(check_mask(ctx, S_MASK));
  for (size_t s = 0; s < 2; s++) {
    rill_tensor_meta *o = rill_infer_out(ctx, s, 0);
    if (!o) continue;
    if (!x->known)
      rill_meta_unknown(o);
    else
      set_rows_unknown(o, x, x->lod_level);
  }
  return NULL;
}

static rill_status *merge_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, M_X, 0);
  const rill_tensor_meta *t = rill_infer_in(ctx, M_IN_TRUE, 0), *f = rill_infer_in(ctx, M_IN_FALSE, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  RILL_TRY(check_mask(ctx, M_MASK));
  const rill_tensor_meta *from = t && t->known ? t : f && f->known ? f : NULL;
  if (!from) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (t && t->known && f && f->known && t->dtype != f->dtype)
    return rill_infer_error(ctx, "input InTrue (%s) is %s but input InFalse (%s) is %s",
                            rill_infer_in_name(ctx, M_IN_TRUE, 0), rill_dtype_name(t->dtype),
                            rill_infer_in_name(ctx, M_IN_FALSE, 0), rill_dtype_name(f->dtype));
  set_rows_unknown(out, from, x->known ? x->lod_level : from->lod_level);
  return NULL;
}

/* The gradients of forward slot `slot` (input: wanted ones, else @EMPTY@; output: all)
 * as argument names, in buf. */
static rill_status *grad_names(rill_grad_ctx *ctx, const rill_op_slot *s, bool want_check,
                               char (*buf)[1024], const char **names, size_t cap, size_t *n) {
  *n = 0;
  if (!s) return NULL;
  if (s->nargs > cap) return rill_error(RILL_INVALID_ARGUMENT, "%s: a slot holds %zu arguments, "
                                        "expected 1", ctx->schema->type, s->nargs);
  for (size_t i = 0; i < s->nargs; i++) {
    bool want = !want_check || (ctx->wants_grad && ctx->wants_grad(ctx->impl, s->args[i]));
    if (!want) {
      names[i] = RILL_EMPTY_VAR;
    } else {
      if ((size_t)snprintf(buf[i], sizeof buf[i], "%s" RILL_GRAD_SUFFIX, s->args[i]) >= sizeof buf[i])
        return rill_error(RILL_INVALID_ARGUMENT, "%s: variable name '%s' is too long",
                          ctx->schema->type, s->args[i]);
      names[i] = buf[i];
    }
  }
  *n = s->nargs;
  return NULL;
}

/* X@GRAD = merge_lod_tensor(X, Mask, InTrue = OutTrue@GRAD, InFalse = OutFalse@GRAD). */
static rill_status *split_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  char buf[3][1024];
  const char *t[1], *f[1], *x[1];
  size_t nt, nf, nx;
  RILL_TRY(grad_names(ctx, rill_op_output(ctx->fwd, "OutTrue"), false, &buf[0], t, 1, &nt));
  RILL_TRY(grad_names(ctx, rill_op_output(ctx->fwd, "OutFalse"), false, &buf[1], f, 1, &nf));
  RILL_TRY(grad_names(ctx, rill_op_input(ctx->fwd, "X"), true, &buf[2], x, 1, &nx));
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "merge_lod_tensor", &op));
  RILL_TRY(rill_grad_forward(ctx, op, "X"));
  RILL_TRY(rill_grad_forward(ctx, op, "Mask"));
  RILL_TRY(rill_opd_input(op, "InTrue", t, nt));
  RILL_TRY(rill_opd_input(op, "InFalse", f, nf));
  return rill_opd_output(op, "Out", x, nx);
}

/* InTrue@GRAD, InFalse@GRAD = split_lod_tensor(X = Out@GRAD, Mask). */
static rill_status *merge_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "InTrue") && rill_grad_none_wanted(ctx, "InFalse")) return NULL;
  char buf[3][1024];
  const char *g[1], *t[1], *f[1];
  size_t ng, nt, nf;
  RILL_TRY(grad_names(ctx, rill_op_output(ctx->fwd, "Out"), false, &buf[0], g, 1, &ng));
  RILL_TRY(grad_names(ctx, rill_op_input(ctx->fwd, "InTrue"), true, &buf[1], t, 1, &nt));
  RILL_TRY(grad_names(ctx, rill_op_input(ctx->fwd, "InFalse"), true, &buf[2], f, 1, &nf));
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "split_lod_tensor", &op));
  RILL_TRY(rill_opd_input(op, "X", g, ng));
  RILL_TRY(rill_grad_forward(ctx, op, "Mask"));
  RILL_TRY(rill_opd_output(op, "OutTrue", t, nt));
  return rill_opd_output(op, "OutFalse", f, nf);
}

const rill_op_schema rill_schema_split_lod_tensor = {
    .type = "split_lod_tensor",
    .doc = "Sends each sequence of X at LoD level `level` (each row without LoD) to OutTrue "
           "where Mask holds and to OutFalse where it does not, in order.",
    .inputs = split_inputs,
    .ninputs = RILL_COUNTOF(split_inputs),
    .outputs = split_outputs,
    .noutputs = RILL_COUNTOF(split_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = split_infer,
    .grad = split_maker,
    .kernel_dtype_slot = S_X,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_merge_lod_tensor = {
    .type = "merge_lod_tensor",
    .doc = "Interleaves the sequences of InTrue and InFalse back into X's order by Mask "
           "(split_lod_tensor undone); X gives the LoD levels above `level`.",
    .inputs = merge_inputs,
    .ninputs = RILL_COUNTOF(merge_inputs),
    .outputs = merge_outputs,
    .noutputs = RILL_COUNTOF(merge_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = merge_infer,
    .grad = merge_maker,
    .kernel_dtype_slot = M_MASK,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(split_lod_tensor);
