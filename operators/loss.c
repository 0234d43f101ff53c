/* The elementwise and row-wise losses of Fluid's layers, with Paddle 1.8's slots,
 * attributes and gradient layouts:
 *
 *   log_loss(Predicted, Labels) -> Loss     -L log(P + eps) - (1 - L) log(1 - P + eps)
 *   huber_loss(X, Y) -> Out, Residual       r = Y - X; r^2 / 2 or delta (|r| - delta / 2)
 *   smooth_l1_loss(X, Y, InsideWeight, OutsideWeight) -> Diff, Out [N, 1]
 *   kldiv_loss(X, Target) -> Loss           T (log T - X) where T > 0, reduced
 *   rank_loss(Label, Left, Right) -> Out    log(1 + e^(Left-Right)) - Label (Left-Right)
 *   margin_rank_loss(Label, X1, X2) -> Out, Activated   max(0, margin - Label (X1 - X2))
 *   label_smooth(X, PriorDist) -> Out       (1 - eps) X + eps (PriorDist or 1 / K)
 *   bpr_loss(X [N, C], Label [N, 1] int64) -> Y [N, 1]
 *                                   mean over j != Label of log(1 + e^(X_j - X_Label))
 *   sigmoid_focal_loss(X [N, D], Label [N, 1] int32, FgNum [1] int32) -> Out [N, D]
 *                                   RetinaNet's focal loss, class d + 1 positive
 *
 * Labels, targets and weights get no gradient (Paddle's makers emit none). The kernels
 * are kernels/cpu/loss.c. */
#include "operators/loss.h"
#include "operators/math_grad.h"
#include "operators/op_util.h"

/* Input `slot` (present) must be float32 or float64. */
static rill_status *need_float(rill_infer_ctx *ctx, size_t slot) {
  const rill_tensor_meta *m = rill_infer_in(ctx, slot, 0);
  if (m && m->known && m->dtype != RILL_DTYPE_FP32 && m->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input %s (%s) is %s, expected float32 or float64",
                            ctx->schema->inputs[slot].name, rill_infer_in_name(ctx, slot, 0),
                            rill_dtype_name(m->dtype));
  return NULL;
}

/* Slot `first` is a float tensor and each slot of `same` (absent ones skipped) has its
 * dtype and dims. Returns the first slot's meta through *x, NULL when any is unknown
 * (then every output is marked unknown). */
static rill_status *check_inputs(rill_infer_ctx *ctx, size_t first, const size_t *same,
                                 size_t nsame, const rill_tensor_meta **x) {
  *x = rill_infer_in(ctx, first, 0);
  if (!*x)
    return rill_infer_error(ctx, "needs input %s", ctx->schema->inputs[first].name);
  bool known = (*x)->known;
  for (size_t i = 0; i < nsame; i++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, same[i], 0);
    if (!m && !(ctx->schema->inputs[same[i]].flags & RILL_SLOT_DISPENSABLE))
      return rill_infer_error(ctx, "needs input %s", ctx->schema->inputs[same[i]].name);
    if (m && !m->known) known = false;
  }
  for (size_t s = 0; s < ctx->schema->noutputs; s++)
    if (!rill_infer_out(ctx, s, 0) && !(ctx->schema->outputs[s].flags & RILL_SLOT_DISPENSABLE))
      return rill_infer_error(ctx, "needs output %s", ctx->schema->outputs[s].name);
  if (!known) {
    for (size_t s = 0; s < ctx->schema->noutputs; s++)
      if (rill_infer_out(ctx, s, 0)) rill_meta_unknown(rill_infer_out(ctx, s, 0));
    *x = NULL;
    return NULL;
  }
  RILL_TRY(need_float(ctx, first));
  for (size_t i = 0; i < nsame; i++) RILL_TRY(rill_grad_infer_same(ctx, same[i], first));
  return NULL;
}

/* Output `slot` (when present) takes dims, X's dtype and X's LoD (from input `from`). */
static void set_out(rill_infer_ctx *ctx, size_t slot, const rill_tensor_meta *x,
                    const rill_dims *dims, int from) {
  rill_tensor_meta *o = rill_infer_out(ctx, slot, 0);
  if (o) rill_meta_set(o, x->dtype, dims, from >= 0 ? x->lod_level : 0, from, from >= 0 ? 0 : -1);
}

/* A [N, 1] column, as Paddle's log_loss, rank losses require. */
static rill_status *need_column(rill_infer_ctx *ctx, size_t slot, const rill_tensor_meta *x) {
  char a[RILL_DIMS_STR_MAX];
  if (x->dims.n != 2 || (x->dims.d[1] >= 0 && x->dims.d[1] != 1))
    return rill_infer_error(ctx, "input %s (%s) has shape %s, expected [N, 1]",
                            ctx->schema->inputs[slot].name, rill_infer_in_name(ctx, slot, 0),
                            rill_dims_str(&x->dims, a, sizeof a));
  return NULL;
}

/* ---------------------------------------------------------------- log_loss ---- */

static const rill_slot_schema log_loss_in[] = {
    {"Predicted", 0, "probabilities [N, 1]"},
    {"Labels", RILL_SLOT_NO_GRAD, "0/1 labels, Predicted's shape"},
};
static const rill_slot_schema log_loss_out[] = {{"Loss", 0, "[N, 1]"}};
static const rill_attr_schema log_loss_attrs[] = {
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-4f), "added inside both logarithms"},
};

static rill_status *log_loss_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, (const size_t[]){1}, 1, &x));
  if (!x) return NULL;
  RILL_TRY(need_column(ctx, 0, x));
  set_out(ctx, 0, x, &x->dims, 0);
  return NULL;
}

static rill_status *log_loss_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("Predicted", "Labels"), RILL_NAMES("Loss"),
                        RILL_NAMES("Predicted"));
}

const rill_op_schema rill_schema_log_loss = {
    .type = "log_loss",
    .doc = "Loss = -Labels log(Predicted + eps) - (1 - Labels) log(1 - Predicted + eps).",
    .inputs = log_loss_in,
    .ninputs = RILL_COUNTOF(log_loss_in),
    .outputs = log_loss_out,
    .noutputs = RILL_COUNTOF(log_loss_out),
    .attrs = log_loss_attrs,
    .nattrs = RILL_COUNTOF(log_loss_attrs),
    .infer = log_loss_infer,
    .grad = log_loss_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema log_loss_grad_in[] = {
    {"Predicted", 0, "forward Predicted"},
    {"Labels", 0, "forward Labels"},
    {"Loss@GRAD", 0, "gradient of Loss"},
};
static const rill_slot_schema log_loss_grad_out[] = {
    {"Predicted@GRAD", RILL_SLOT_DISPENSABLE,
     "dLoss (-L / (P + eps) + (1 - L) / (1 - P + eps))"},
};

static rill_status *log_loss_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, (const size_t[]){1, 2}, 2, &x));
  if (x) set_out(ctx, 0, x, &x->dims, 0);
  return NULL;
}

const rill_op_schema rill_schema_log_loss_grad = {
    .type = "log_loss_grad",
    .doc = "Predicted@GRAD of log_loss.",
    .inputs = log_loss_grad_in,
    .ninputs = RILL_COUNTOF(log_loss_grad_in),
    .outputs = log_loss_grad_out,
    .noutputs = RILL_COUNTOF(log_loss_grad_out),
    .attrs = log_loss_attrs,
    .nattrs = RILL_COUNTOF(log_loss_attrs),
    .infer = log_loss_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* -------------------------------------------------------------- huber_loss ---- */

static const rill_slot_schema huber_in[] = {
    {"X", 0, "prediction"},
    {"Y", 0, "target, X's shape"},
};
static const rill_slot_schema huber_out[] = {
    {"Out", 0, "loss per element, X's shape"},
    {"Residual", RILL_SLOT_INTERMEDIATE, "Y - X"},
};
static const rill_attr_schema huber_attrs[] = {
    {"delta", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "where the loss turns linear"},
};

static rill_status *huber_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, (const size_t[]){1}, 1, &x));
  if (!x) return NULL;
  set_out(ctx, 0, x, &x->dims, 0);
  set_out(ctx, 1, x, &x->dims, 0);
  return NULL;
}

static rill_status *huber_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("Residual"), RILL_NAMES("Out"),
                        RILL_NAMES("X", "Y"));
}

const rill_op_schema rill_schema_huber_loss = {
    .type = "huber_loss",
    .doc = "r = Y - X; Out = r^2 / 2 where |r| <= delta, else delta (|r| - delta / 2).",
    .inputs = huber_in,
    .ninputs = RILL_COUNTOF(huber_in),
    .outputs = huber_out,
    .noutputs = RILL_COUNTOF(huber_out),
    .attrs = huber_attrs,
    .nattrs = RILL_COUNTOF(huber_attrs),
    .infer = huber_infer,
    .grad = huber_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema huber_grad_in[] = {
    {"Residual", 0, "forward Residual"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema huber_grad_out[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "-dOut clip(r, -delta, delta)"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "dOut clip(r, -delta, delta)"},
};

static rill_status *residual_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, (const size_t[]){1}, 1, &x));
  if (!x) return NULL;
  set_out(ctx, 0, x, &x->dims, 0);
  set_out(ctx, 1, x, &x->dims, 0);
  return NULL;
}

const rill_op_schema rill_schema_huber_loss_grad = {
    .type = "huber_loss_grad",
    .doc = "X@GRAD and Y@GRAD of huber_loss from its Residual.",
    .inputs = huber_grad_in,
    .ninputs = RILL_COUNTOF(huber_grad_in),
    .outputs = huber_grad_out,
    .noutputs = RILL_COUNTOF(huber_grad_out),
    .attrs = huber_attrs,
    .nattrs = RILL_COUNTOF(huber_attrs),
    .infer = residual_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---------------------------------------------------------- smooth_l1_loss ---- */

static const rill_slot_schema sl1_in[] = {
    {"X", 0, "[N, ...]"},
    {"Y", 0, "X's shape"},
    {"InsideWeight", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "X's shape: scales X - Y"},
    {"OutsideWeight", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "X's shape: scales each element's loss"},
};
static const rill_slot_schema sl1_out[] = {
    {"Diff", RILL_SLOT_INTERMEDIATE, "(X - Y) InsideWeight"},
    {"Out", 0, "[N, 1]: the weighted losses of each row summed"},
};
static const rill_attr_schema sl1_attrs[] = {
    {"sigma", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f),
     "the loss is quadratic where |Diff| < 1 / sigma^2"},
};

static rill_status *sl1_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, (const size_t[]){1, 2, 3}, 3, &x));
  if (!x) return NULL;
  char a[RILL_DIMS_STR_MAX];
  if (x->dims.n < 2)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected rank 2 or more",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a));
  rill_dims od = {.n = 2, .d = {x->dims.d[0], 1}};
  set_out(ctx, 0, x, &x->dims, 0);
  set_out(ctx, 1, x, &od, -1);
  return NULL;
}

static rill_status *sl1_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("InsideWeight", "OutsideWeight", "Diff"),
                        RILL_NAMES("Out"), RILL_NAMES("X", "Y"));
}

const rill_op_schema rill_schema_smooth_l1_loss = {
    .type = "smooth_l1_loss",
    .doc = "Out[i] = sum_j OutsideWeight s(Diff[i, j]), Diff = (X - Y) InsideWeight, "
           "s(d) = sigma^2 d^2 / 2 where |d| < 1 / sigma^2, else |d| - 0.5 / sigma^2.",
    .inputs = sl1_in,
    .ninputs = RILL_COUNTOF(sl1_in),
    .outputs = sl1_out,
    .noutputs = RILL_COUNTOF(sl1_out),
    .attrs = sl1_attrs,
    .nattrs = RILL_COUNTOF(sl1_attrs),
    .infer = sl1_infer,
    .grad = sl1_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

enum { SG_IW, SG_OW, SG_DIFF, SG_DOUT };
static const rill_slot_schema sl1_grad_in[] = {
    [SG_IW] = {"InsideWeight", RILL_SLOT_DISPENSABLE, "forward InsideWeight"},
    [SG_OW] = {"OutsideWeight", RILL_SLOT_DISPENSABLE, "forward OutsideWeight"},
    [SG_DIFF] = {"Diff", 0, "forward Diff"},
    [SG_DOUT] = {"Out@GRAD", 0, "gradient of Out [N, 1]"},
};
static const rill_slot_schema sl1_grad_out[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "dOut[i] InsideWeight OutsideWeight s'(Diff)"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "-X@GRAD"},
};

static rill_status *sl1_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, SG_DIFF, (const size_t[]){SG_IW, SG_OW}, 2, &x));
  if (!x) return NULL;
  set_out(ctx, 0, x, &x->dims, SG_DIFF);
  set_out(ctx, 1, x, &x->dims, SG_DIFF);
  return NULL;
}

const rill_op_schema rill_schema_smooth_l1_loss_grad = {
    .type = "smooth_l1_loss_grad",
    .doc = "X@GRAD and Y@GRAD of smooth_l1_loss from Diff (s' of the weighted difference, "
           "scaled by both weights, as Paddle).",
    .inputs = sl1_grad_in,
    .ninputs = RILL_COUNTOF(sl1_grad_in),
    .outputs = sl1_grad_out,
    .noutputs = RILL_COUNTOF(sl1_grad_out),
    .attrs = sl1_attrs,
    .nattrs = RILL_COUNTOF(sl1_attrs),
    .infer = sl1_grad_infer,
    .kernel_dtype_slot = SG_DIFF,
    .dtype_attr = -1,
};

/* -------------------------------------------------------------- kldiv_loss ---- */

static const rill_slot_schema kldiv_in[] = {
    {"X", 0, "log-probabilities"},
    {"Target", RILL_SLOT_NO_GRAD, "probabilities, X's shape"},
};
static const rill_slot_schema kldiv_out[] = {
    {"Loss", 0, "X's shape with reduction 'none', else [1]"},
};
static const rill_attr_schema kldiv_attrs[] = {
    {"reduction", RILL_ATTR_STRING, 0, RILL_DEF_STRING("mean"),
     "'none', 'batchmean' (sum / N), 'mean' (sum / numel) or 'sum'"},
};

/* The reduction (KLDIV_*) or an error naming the attribute. */
static rill_status *kldiv_check(rill_infer_ctx *ctx, const char *red, int *r) {
  *r = rill_kldiv_reduction(red);
  if (*r < 0)
    return rill_infer_error(ctx, "attribute reduction is '%s', expected 'none', 'batchmean', "
                            "'mean' or 'sum'", red ? red : "");
  return NULL;
}

static rill_status *kldiv_infer(rill_infer_ctx *ctx) {
  int r;
  RILL_TRY(kldiv_check(ctx, ctx->attrs[RILL_KLDIV_LOSS_ATTR_REDUCTION].v.s, &r));
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, (const size_t[]){1}, 1, &x));
  if (!x) return NULL;
  rill_dims one = {.n = 1, .d = {1}};
  set_out(ctx, 0, x, r == KLDIV_NONE ? &x->dims : &one, r == KLDIV_NONE ? 0 : -1);
  return NULL;
}

static rill_status *kldiv_grad_infer(rill_infer_ctx *ctx) {
  int r;
  RILL_TRY(kldiv_check(ctx, ctx->attrs[RILL_KLDIV_LOSS_GRAD_ATTR_REDUCTION].v.s, &r));
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, (const size_t[]){1}, 1, &x));
  if (x) set_out(ctx, 0, x, &x->dims, 0);
  return NULL;
}

static rill_status *kldiv_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "Target"), RILL_NAMES("Loss"),
                        RILL_NAMES("X"));
}

const rill_op_schema rill_schema_kldiv_loss = {
    .type = "kldiv_loss",
    .doc = "Loss = Target (log Target - X) where Target > 0, else 0; reduced by reduction.",
    .inputs = kldiv_in,
    .ninputs = RILL_COUNTOF(kldiv_in),
    .outputs = kldiv_out,
    .noutputs = RILL_COUNTOF(kldiv_out),
    .attrs = kldiv_attrs,
    .nattrs = RILL_COUNTOF(kldiv_attrs),
    .infer = kldiv_infer,
    .grad = kldiv_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema kldiv_grad_in[] = {
    {"X", 0, "forward X"},
    {"Target", 0, "forward Target"},
    {"Loss@GRAD", 0, "gradient of Loss"},
};
static const rill_slot_schema kldiv_grad_out[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "-Target dLoss where Target > 0, reduced's scale"},
};

const rill_op_schema rill_schema_kldiv_loss_grad = {
    .type = "kldiv_loss_grad",
    .doc = "X@GRAD of kldiv_loss.",
    .inputs = kldiv_grad_in,
    .ninputs = RILL_COUNTOF(kldiv_grad_in),
    .outputs = kldiv_grad_out,
    .noutputs = RILL_COUNTOF(kldiv_grad_out),
    .attrs = kldiv_attrs,
    .nattrs = RILL_COUNTOF(kldiv_attrs),
    .infer = kldiv_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* --------------------------------------------------------------- rank_loss ---- */

static const rill_slot_schema rank_in[] = {
    {"Label", RILL_SLOT_NO_GRAD, "[N, 1]: 1 when Left should rank higher, else 0"},
    {"Left", 0, "[N, 1] scores"},
    {"Right", 0, "[N, 1] scores"},
};
static const rill_slot_schema rank_out[] = {{"Out", 0, "[N, 1]"}};

static rill_status *rank_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 1, (const size_t[]){0, 2}, 2, &x));
  if (!x) return NULL;
  RILL_TRY(need_column(ctx, 1, x));
  set_out(ctx, 0, x, &x->dims, 1);
  return NULL;
}

static rill_status *rank_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("Label", "Left", "Right"), RILL_NAMES("Out"),
                        RILL_NAMES("Left", "Right"));
}

const rill_op_schema rill_schema_rank_loss = {
    .type = "rank_loss",
    .doc = "Out = log(1 + exp(Left - Right)) - Label (Left - Right).",
    .inputs = rank_in,
    .ninputs = RILL_COUNTOF(rank_in),
    .outputs = rank_out,
    .noutputs = RILL_COUNTOF(rank_out),
    .infer = rank_infer,
    .grad = rank_maker,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

static const rill_slot_schema rank_grad_in[] = {
    {"Label", 0, "forward Label"},
    {"Left", 0, "forward Left"},
    {"Right", 0, "forward Right"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema rank_grad_out[] = {
    {"Left@GRAD", RILL_SLOT_DISPENSABLE, "dOut (sigmoid(Left - Right) - Label)"},
    {"Right@GRAD", RILL_SLOT_DISPENSABLE, "-Left@GRAD"},
};

static rill_status *rank_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 1, (const size_t[]){0, 2, 3}, 3, &x));
  if (!x) return NULL;
  set_out(ctx, 0, x, &x->dims, 1);
  set_out(ctx, 1, x, &x->dims, 1);
  return NULL;
}

const rill_op_schema rill_schema_rank_loss_grad = {
    .type = "rank_loss_grad",
    .doc = "Left@GRAD and Right@GRAD of rank_loss.",
    .inputs = rank_grad_in,
    .ninputs = RILL_COUNTOF(rank_grad_in),
    .outputs = rank_grad_out,
    .noutputs = RILL_COUNTOF(rank_grad_out),
    .infer = rank_grad_infer,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

/* -------------------------------------------------------- margin_rank_loss ---- */

static const rill_slot_schema mrank_in[] = {
    {"X1", 0, "[N, 1] scores"},
    {"X2", 0, "[N, 1] scores"},
    {"Label", RILL_SLOT_NO_GRAD, "[N, 1]: 1 when X1 should rank higher, -1 when X2"},
};
static const rill_slot_schema mrank_out[] = {
    {"Out", 0, "[N, 1]"},
    {"Activated", RILL_SLOT_INTERMEDIATE, "1 where Out > 0, else 0"},
};
static const rill_attr_schema mrank_attrs[] = {
    {"margin", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "the margin"},
};

static rill_status *mrank_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, (const size_t[]){1, 2}, 2, &x));
  if (!x) return NULL;
  RILL_TRY(need_column(ctx, 0, x));
  set_out(ctx, 0, x, &x->dims, 0);
  set_out(ctx, 1, x, &x->dims, 0);
  return NULL;
}

static rill_status *mrank_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("Activated", "Label"), RILL_NAMES("Out"),
                        RILL_NAMES("X1", "X2"));
}

const rill_op_schema rill_schema_margin_rank_loss = {
    .type = "margin_rank_loss",
    .doc = "Out = max(0, -Label (X1 - X2) + margin); Activated = Out > 0.",
    .inputs = mrank_in,
    .ninputs = RILL_COUNTOF(mrank_in),
    .outputs = mrank_out,
    .noutputs = RILL_COUNTOF(mrank_out),
    .attrs = mrank_attrs,
    .nattrs = RILL_COUNTOF(mrank_attrs),
    .infer = mrank_infer,
    .grad = mrank_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema mrank_grad_in[] = {
    {"Activated", 0, "forward Activated"},
    {"Label", 0, "forward Label"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema mrank_grad_out[] = {
    {"X1@GRAD", RILL_SLOT_DISPENSABLE, "-dOut Activated Label"},
    {"X2@GRAD", RILL_SLOT_DISPENSABLE, "dOut Activated Label"},
};

static rill_status *mrank_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, (const size_t[]){1, 2}, 2, &x));
  if (!x) return NULL;
  set_out(ctx, 0, x, &x->dims, 0);
  set_out(ctx, 1, x, &x->dims, 0);
  return NULL;
}

const rill_op_schema rill_schema_margin_rank_loss_grad = {
    .type = "margin_rank_loss_grad",
    .doc = "X1@GRAD and X2@GRAD of margin_rank_loss.",
    .inputs = mrank_grad_in,
    .ninputs = RILL_COUNTOF(mrank_grad_in),
    .outputs = mrank_grad_out,
    .noutputs = RILL_COUNTOF(mrank_grad_out),
    .attrs = mrank_attrs,
    .nattrs = RILL_COUNTOF(mrank_attrs),
    .infer = mrank_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ------------------------------------------------------------ label_smooth ---- */

static const rill_slot_schema ls_in[] = {
    {"X", 0, "[..., K] one-hot labels"},
    {"PriorDist", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD, "[1, K]; absent: uniform 1 / K"},
};
static const rill_slot_schema ls_out[] = {{"Out", 0, "X's shape"}};
static const rill_attr_schema ls_attrs[] = {
    {"epsilon", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "the weight of the prior"},
};

static rill_status *ls_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, NULL, 0, &x));
  if (!x) return NULL;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (x->dims.n < 1)
    return rill_infer_error(ctx, "input X (%s) is a scalar, expected [..., K]",
                            rill_infer_in_name(ctx, 0, 0));
  const rill_tensor_meta *p = rill_infer_in(ctx, 1, 0);
  if (p && p->known) {
    int64_t k = x->dims.d[x->dims.n - 1], pk = rill_dims_prod(&p->dims, 0, p->dims.n);
    if (p->dtype != x->dtype || (k >= 0 && pk >= 0 && pk != k))
      return rill_infer_error(ctx, "input PriorDist (%s) is %s %s; input X (%s) is %s %s: it "
                              "needs X's dtype and K = X's last dim elements",
                              rill_infer_in_name(ctx, 1, 0), rill_dtype_name(p->dtype),
                              rill_dims_str(&p->dims, a, sizeof a), rill_infer_in_name(ctx, 0, 0),
                              rill_dtype_name(x->dtype), rill_dims_str(&x->dims, b, sizeof b));
  }
  set_out(ctx, 0, x, &x->dims, 0);
  return NULL;
}

static rill_status *ls_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, NULL, 0, RILL_NAMES("Out"), RILL_NAMES("X"));
}

const rill_op_schema rill_schema_label_smooth = {
    .type = "label_smooth",
    .doc = "Out = (1 - epsilon) X + epsilon PriorDist (or epsilon / K), row by row.",
    .inputs = ls_in,
    .ninputs = RILL_COUNTOF(ls_in),
    .outputs = ls_out,
    .noutputs = RILL_COUNTOF(ls_out),
    .attrs = ls_attrs,
    .nattrs = RILL_COUNTOF(ls_attrs),
    .infer = ls_infer,
    .grad = ls_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema ls_grad_in[] = {{"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema ls_grad_out[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "(1 - epsilon) dOut"},
};

static rill_status *ls_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  RILL_TRY(check_inputs(ctx, 0, NULL, 0, &x));
  if (x) set_out(ctx, 0, x, &x->dims, 0);
  return NULL;
}

const rill_op_schema rill_schema_label_smooth_grad = {
    .type = "label_smooth_grad",
    .doc = "X@GRAD of label_smooth.",
    .inputs = ls_grad_in,
    .ninputs = RILL_COUNTOF(ls_grad_in),
    .outputs = ls_grad_out,
    .noutputs = RILL_COUNTOF(ls_grad_out),
    .attrs = ls_attrs,
    .nattrs = RILL_COUNTOF(ls_attrs),
    .infer = ls_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---------------------------------------------------------------- bpr_loss ---- */

static const rill_slot_schema bpr_in[] = {
    {"X", 0, "[N, C] scores"},
    {"Label", RILL_SLOT_NO_GRAD, "[N, 1] int64: the positive class of each row"},
};
static const rill_slot_schema bpr_out[] = {{"Y", 0, "[N, 1]"}};

/* X [N, C] float and Label [N, 1] int64 with X's rows. */
static rill_status *bpr_check(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                              const rill_tensor_meta *l) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  RILL_TRY(need_float(ctx, 0));
  if (x->dims.n != 2)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, C]",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, a, sizeof a));
  if (l->dtype != RILL_DTYPE_INT64 || l->dims.n != 2 ||
      (l->dims.d[1] >= 0 && l->dims.d[1] != 1) ||
      (l->dims.d[0] >= 0 && x->dims.d[0] >= 0 && l->dims.d[0] != x->dims.d[0]))
    return rill_infer_error(ctx, "input Label (%s) is %s %s; it needs int64 [N, 1] with X (%s)'s "
                            "%s rows", rill_infer_in_name(ctx, 1, 0), rill_dtype_name(l->dtype),
                            rill_dims_str(&l->dims, a, sizeof a), rill_infer_in_name(ctx, 0, 0),
                            rill_dims_str(&x->dims, b, sizeof b));
  return NULL;
}

static rill_status *bpr_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *l = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0);
  if (!x || !l || !y) return rill_infer_error(ctx, "needs inputs X and Label and output Y");
  if (!x->known || !l->known) {
    rill_meta_unknown(y);
    return NULL;
  }
  RILL_TRY(bpr_check(ctx, x, l));
  rill_dims yd = {.n = 2, .d = {x->dims.d[0], 1}};
  set_out(ctx, 0, x, &yd, 0);
  return NULL;
}

static rill_status *bpr_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "Label"), RILL_NAMES("Y"), RILL_NAMES("X"));
}

const rill_op_schema rill_schema_bpr_loss = {
    .type = "bpr_loss",
    .doc = "Y[i] = mean over j != Label[i] of log(1 + exp(X[i, j] - X[i, Label[i]])).",
    .inputs = bpr_in,
    .ninputs = RILL_COUNTOF(bpr_in),
    .outputs = bpr_out,
    .noutputs = RILL_COUNTOF(bpr_out),
    .infer = bpr_infer,
    .grad = bpr_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema bpr_grad_in[] = {
    {"X", 0, "forward X"},
    {"Label", 0, "forward Label"},
    {"Y@GRAD", 0, "gradient of Y [N, 1]"},
};
static const rill_slot_schema bpr_grad_out[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape"},
};

static rill_status *bpr_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *l = rill_infer_in(ctx, 1, 0);
  if (!x || !l) return rill_infer_error(ctx, "needs inputs X and Label");
  if (x->known && l->known) RILL_TRY(bpr_check(ctx, x, l));
  rill_grad_infer_like(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_bpr_loss_grad = {
    .type = "bpr_loss_grad",
    .doc = "X@GRAD of bpr_loss.",
    .inputs = bpr_grad_in,
    .ninputs = RILL_COUNTOF(bpr_grad_in),
    .outputs = bpr_grad_out,
    .noutputs = RILL_COUNTOF(bpr_grad_out),
    .infer = bpr_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ------------------------------------------------------- sigmoid_focal_loss ---- */

enum { SF_X, SF_LABEL, SF_FGNUM, SF_DOUT };
static const rill_slot_schema sf_in[] = {
    [SF_X] = {"X", 0, "[N, D] logits, one per foreground class"},
    [SF_LABEL] = {"Label", RILL_SLOT_NO_GRAD,
                  "[N, 1] int32: 1..D the positive class, 0 background, -1 ignored"},
    [SF_FGNUM] = {"FgNum", RILL_SLOT_NO_GRAD, "[1] int32: foreground count (at least 1 used)"},
};
static const rill_slot_schema sf_out[] = {{"Out", 0, "[N, D]"}};
static const rill_attr_schema sf_attrs[] = {
    {"gamma", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(2.0f), "the focusing exponent"},
    {"alpha", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.25f), "the weight of positives"},
};

static rill_status *sf_check(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, SF_X, 0), *l = rill_infer_in(ctx, SF_LABEL, 0);
  const rill_tensor_meta *f = rill_infer_in(ctx, SF_FGNUM, 0);
  if (!x || !l || !f) return rill_infer_error(ctx, "needs inputs X, Label and FgNum");
  if (!x->known || !l->known || !f->known) return NULL;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  RILL_TRY(need_float(ctx, SF_X));
  if (x->dims.n != 2)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, D]",
                            rill_infer_in_name(ctx, SF_X, 0), rill_dims_str(&x->dims, a, sizeof a));
  if (l->dtype != RILL_DTYPE_INT32 || l->dims.n != 2 || (l->dims.d[1] >= 0 && l->dims.d[1] != 1) ||
      (l->dims.d[0] >= 0 && x->dims.d[0] >= 0 && l->dims.d[0] != x->dims.d[0]))
    return rill_infer_error(ctx, "input Label (%s) is %s %s; it needs int32 [N, 1] with X (%s)'s "
                            "%s rows", rill_infer_in_name(ctx, SF_LABEL, 0),
                            rill_dtype_name(l->dtype), rill_dims_str(&l->dims, a, sizeof a),
                            rill_infer_in_name(ctx, SF_X, 0), rill_dims_str(&x->dims, b, sizeof b));
  if (f->dtype != RILL_DTYPE_INT32)
    return rill_infer_error(ctx, "input FgNum (%s) is %s, expected int32",
                            rill_infer_in_name(ctx, SF_FGNUM, 0), rill_dtype_name(f->dtype));
  return NULL;
}

static rill_status *sf_infer(rill_infer_ctx *ctx) {
  RILL_TRY(sf_check(ctx));
  const rill_tensor_meta *x = rill_infer_in(ctx, SF_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return NULL;
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  set_out(ctx, 0, x, &x->dims, SF_X);
  return NULL;
}

static rill_status *sf_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "Label", "FgNum"), RILL_NAMES("Out"),
                        RILL_NAMES("X"));
}

const rill_op_schema rill_schema_sigmoid_focal_loss = {
    .type = "sigmoid_focal_loss",
    .doc = "Out = -alpha (1-p)^gamma log p / fg for the positive class, -(1-alpha) p^gamma "
           "log(1-p) / fg for the others, 0 where Label is -1 (p = sigmoid(X)).",
    .inputs = sf_in,
    .ninputs = RILL_COUNTOF(sf_in),
    .outputs = sf_out,
    .noutputs = RILL_COUNTOF(sf_out),
    .attrs = sf_attrs,
    .nattrs = RILL_COUNTOF(sf_attrs),
    .infer = sf_infer,
    .grad = sf_maker,
    .kernel_dtype_slot = SF_X,
    .dtype_attr = -1,
};

static const rill_slot_schema sf_grad_in[] = {
    [SF_X] = {"X", 0, "forward X"},
    [SF_LABEL] = {"Label", 0, "forward Label"},
    [SF_FGNUM] = {"FgNum", 0, "forward FgNum"},
    [SF_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema sf_grad_out[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape"}};

static rill_status *sf_grad_infer(rill_infer_ctx *ctx) {
  RILL_TRY(sf_check(ctx));
  RILL_TRY(rill_grad_infer_same(ctx, SF_DOUT, SF_X));
  rill_grad_infer_like(ctx, 0, SF_X);
  return NULL;
}

const rill_op_schema rill_schema_sigmoid_focal_loss_grad = {
    .type = "sigmoid_focal_loss_grad",
    .doc = "X@GRAD of sigmoid_focal_loss.",
    .inputs = sf_grad_in,
    .ninputs = RILL_COUNTOF(sf_grad_in),
    .outputs = sf_grad_out,
    .noutputs = RILL_COUNTOF(sf_grad_out),
    .attrs = sf_attrs,
    .nattrs = RILL_COUNTOF(sf_attrs),
    .infer = sf_grad_infer,
    .kernel_dtype_slot = SF_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(loss);
