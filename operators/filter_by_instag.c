/* filter_by_instag: keeps the instances of Ins whose tags meet Filter_tag. Instance i is
 * row i of Ins (is_lod false) or sequence i of Ins's first LoD level (is_lod true); its
 * tags are sequence i of Ins_tag's first LoD level. An instance is kept when any of its
 * tags is in Filter_tag. Out stacks the kept instances' rows in order, with one LoD
 * sequence per kept instance; LossWeight [kept, 1] is float32 ones; IndexMap [kept, 3]
 * holds per kept instance (its first row in Out, its first row in Ins, its row count).
 * When nothing is kept, Out is one row of out_val_if_empty, LossWeight [[0]] and
 * IndexMap [[0, 1, 1]] (the shapes and values Paddle gives). The three outputs' sizes
 * depend on the tags, so the kernel sets them.
 * filter_by_instag_grad: Ins@GRAD is zero except the kept rows, which take Out@GRAD's
 * rows through IndexMap; all zero when LossWeight is the empty case's [[0]]. */
#include "operators/nn.h"

enum { FI_A_IS_LOD, FI_A_EMPTY };

static const rill_slot_schema inputs[] = {
    {"Ins", 0, "[rows, D] instances: rows, or sequences of its first LoD level"},
    {"Ins_tag", RILL_SLOT_NO_GRAD, "int64 [T, 1] tags, one LoD sequence per instance"},
    {"Filter_tag", RILL_SLOT_NO_GRAD, "int64 [F] (or [F, 1]) tags that keep an instance"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "[kept rows, D] the kept instances, one LoD sequence each"},
    {"LossWeight", 0, "float32 [kept, 1]: ones, or [[0]] when nothing is kept"},
    {"IndexMap", 0, "int64 [kept, 3]: Out row, Ins row, row count per kept instance"},
};
static const rill_attr_schema attrs[] = {
    [FI_A_IS_LOD] = {"is_lod", RILL_ATTR_BOOLEAN, RILL_ATTR_REQUIRED, RILL_DEF_BOOL(false),
                     "instances are Ins's LoD sequences, else its rows"},
    [FI_A_EMPTY] = {"out_val_if_empty", RILL_ATTR_LONG, 0, RILL_DEF_LONG(0),
                    "the value of Out's one row when nothing is kept"},
};

static rill_status *fi_check(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                             const rill_tensor_meta *t, const rill_tensor_meta *f) {
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  if (x && x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64 &&
      x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input Ins (%s) is %s, expected float32, float64, int32 or "
                            "int64", xn, rill_dtype_name(x->dtype));
  if (x && x->dims.n != 2)
    return rill_infer_error(ctx, "input Ins (%s) has shape %s, expected [rows, D]", xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  if (t && t->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input Ins_tag (%s) is %s, expected int64",
                            rill_infer_in_name(ctx, 1, 0), rill_dtype_name(t->dtype));
  if (f && f->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input Filter_tag (%s) is %s, expected int64",
                            rill_infer_in_name(ctx, 2, 0), rill_dtype_name(f->dtype));
  return NULL;
}

static rill_status *fi_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *t = rill_infer_in(ctx, 1, 0),
                         *f = rill_infer_in(ctx, 2, 0);
  rill_tensor_meta *o[3];
  for (size_t i = 0; i < 3; i++) o[i] = rill_infer_out(ctx, i, 0);
  if (!x || !t || !f || !o[0] || !o[1] || !o[2])
    return rill_infer_error(ctx, "needs inputs Ins, Ins_tag and Filter_tag and outputs Out, "
                            "LossWeight and IndexMap");
  RILL_TRY(fi_check(ctx, x->known ? x : NULL, t->known ? t : NULL, f->known ? f : NULL));
  if (!x->known) {
    rill_meta_unknown(o[0]);
  } else {
    rill_dims od = {.n = 2, .d = {-1, x->dims.d[1]}};
    rill_meta_set(o[0], x->dtype, &od, 1, -1, -1);
  }
  rill_dims wd = {.n = 2, .d = {-1, 1}}, md = {.n = 2, .d = {-1, 3}};
  rill_meta_set(o[1], RILL_DTYPE_FP32, &wd, 1, -1, -1);
  rill_meta_set(o[2], RILL_DTYPE_INT64, &md, 1, -1, -1);
  return NULL;
}

static rill_status *fi_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Ins", "LossWeight", "IndexMap"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"Ins"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_filter_by_instag = {
    .type = "filter_by_instag",
    .doc = "The instances (rows or LoD sequences) whose tags meet a filter tag set.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = fi_infer,
    .grad = fi_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"Ins", 0, "forward Ins"},
    {"LossWeight", 0, "forward LossWeight"},
    {"IndexMap", 0, "forward IndexMap"},
    {"Out@GRAD", 0, "gradient of Out [kept rows, D]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Ins@GRAD", RILL_SLOT_DISPENSABLE, "Ins's shape and LoD"},
};

static rill_status *fi_grad_infer(rill_infer_ctx *ctx) {
  for (size_t i = 0; i < 4; i++)
    if (!rill_infer_in(ctx, i, 0))
      return rill_infer_error(ctx, "needs inputs Ins, LossWeight, IndexMap and Out@GRAD");
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  RILL_TRY(fi_check(ctx, x->known ? x : NULL, NULL, NULL));
  rill_nn_same_meta(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_filter_by_instag_grad = {
    .type = "filter_by_instag_grad",
    .doc = "Ins@GRAD of filter_by_instag: Out@GRAD's rows back in the kept rows, zero elsewhere.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = fi_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(filter_by_instag);
