/* teacher_student_sigmoid_loss: a sigmoid cross entropy whose float Label [N, 1] carries
 * a click bit and, optionally, a teacher's soft value q, coded as in Paddle:
 *   label < -1: no teacher, click 0;   -1 <= label < 0: no teacher, click 1;
 *   label >= 0: click and teacher both, label = click + q (q in [0, 1)).
 * With sp(x) = max(x, 0) + log(1 + e^-|x|) the loss is sp(x), sp(x) - x, or
 * 2 sp(x) - label x. The gradient clamps x to [soft_max_lower_bound, soft_max_up_bound]
 * and is zero at and beyond the bounds, as Paddle's is. */
#include "operators/nn.h"

static const rill_slot_schema inputs[] = {
    {"X", 0, "[N, 1] logits"},
    {"Label", RILL_SLOT_NO_GRAD, "[N, 1] float: -2, -1, or click + teacher value"},
};
static const rill_slot_schema outputs[] = {{"Y", 0, "[N, 1]"}};
static const rill_attr_schema attrs[] = {
    {"soft_max_up_bound", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(15.0f),
     "the gradient's upper clamp of X"},
    {"soft_max_lower_bound", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(-15.0f),
     "the gradient's lower clamp of X"},
};

/* X and Label float [N, 1] (X [N, D] any D as Paddle lets it through; only column 0 of
 * each row is read, so D must be 1 here) of one dtype and N rows. */
static rill_status *tss_check(rill_infer_ctx *ctx, const rill_tensor_meta *x,
                              const rill_tensor_meta *l) {
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, 0, 0), *ln = rill_infer_in_name(ctx, 1, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2 || (x->dims.d[1] >= 0 && x->dims.d[1] != 1))
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, 1]", xn,
                            rill_dims_str(&x->dims, a, sizeof a));
  if (l->dtype != x->dtype || l->dims.n != 2 || (l->dims.d[1] >= 0 && l->dims.d[1] != 1) ||
      (l->dims.d[0] >= 0 && x->dims.d[0] >= 0 && l->dims.d[0] != x->dims.d[0]))
    return rill_infer_error(ctx, "input Label (%s) is %s %s; it needs X (%s)'s dtype %s and "
                            "shape [N, 1] with X's %s", ln, rill_dtype_name(l->dtype),
                            rill_dims_str(&l->dims, a, sizeof a), xn, rill_dtype_name(x->dtype),
                            rill_dims_str(&x->dims, b, sizeof b));
  return NULL;
}

static rill_status *tss_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *l = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0);
  if (!x || !l || !y) return rill_infer_error(ctx, "needs inputs X and Label and output Y");
  if (!x->known || !l->known) {
    rill_meta_unknown(y);
    return NULL;
  }
  RILL_TRY(tss_check(ctx, x, l));
  rill_dims yd = {.n = 2, .d = {x->dims.d[0], 1}};
  rill_meta_set(y, x->dtype, &yd, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *tss_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Label"};
  static const char *const gout[] = {"Y"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, NULL, fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout), gin,
                        RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_teacher_student_sigmoid_loss = {
    .type = "teacher_student_sigmoid_loss",
    .doc = "Sigmoid cross entropy against a click bit and an optional teacher value.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = tss_infer,
    .grad = tss_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Label", 0, "forward Label"},
    {"Y@GRAD", 0, "gradient of Y [N, 1]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "X's shape"},
};

static rill_status *tss_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *l = rill_infer_in(ctx, 1, 0);
  if (!x || !l || !rill_infer_in(ctx, 2, 0))
    return rill_infer_error(ctx, "needs inputs X, Label and Y@GRAD");
  if (x->known && l->known) RILL_TRY(tss_check(ctx, x, l));
  rill_nn_same_meta(ctx, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_teacher_student_sigmoid_loss_grad = {
    .type = "teacher_student_sigmoid_loss_grad",
    .doc = "X@GRAD of teacher_student_sigmoid_loss.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = tss_grad_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(teacher_student_sigmoid_loss);
