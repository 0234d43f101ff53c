/* warpctc: the CTC loss (Graves et al.) of each sequence of unnormalized class scores
 * against its label sequence, with the gradient of the loss with respect to the scores
 * computed in the same pass (fluid.layers.warpctc; Paddle runs Baidu's warp-ctc, rill
 * its own forward-backward in log space).
 *
 * LoD form: Logits [Lp, C] with one LoD level (sequence n has T_n frames), Label [Lg, 1]
 * int32 with one LoD level. Padded form (LogitsLength and LabelLength, int64 [N], given):
 * Logits [Tmax, N, C] time-major, Label [N, Lmax] int32. With y = softmax(Logits_t) over
 * the C classes, Loss[n] = -log p(label_n | y), the sum over every alignment of T_n frames
 * to the label (blanks between and around the labels, repeats merged). WarpCTCGrad
 * [Tmax, N, C] holds dLoss[n] / dLogits (y - posterior of each class), zero past T_n.
 * A label that cannot fit (its length plus its adjacent repeats over T_n) gives loss 0
 * and a zero gradient, as warp-ctc does. norm_by_times scales the gradient (not the
 * loss) by 1 / T_n, in warpctc_grad. */
#include "operators/math_grad.h"
#include "operators/op_util.h"

enum { IN_LOGITS, IN_LABEL, IN_LOGITS_LENGTH, IN_LABEL_LENGTH };
enum { OUT_WARPCTC_GRAD, OUT_LOSS };

static const rill_slot_schema inputs[] = {
    [IN_LOGITS] = {"Logits", 0, "class scores: LoD [Lp, C], or [Tmax, N, C] with the lengths"},
    [IN_LABEL] = {"Label", RILL_SLOT_NO_GRAD, "int32 labels: LoD [Lg, 1], or [N, Lmax] padded"},
    [IN_LOGITS_LENGTH] = {"LogitsLength", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                          "int64 [N]: frames of each padded sequence"},
    [IN_LABEL_LENGTH] = {"LabelLength", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                         "int64 [N]: labels of each padded sequence"},
};
static const rill_slot_schema outputs[] = {
    [OUT_WARPCTC_GRAD] = {"WarpCTCGrad", RILL_SLOT_INTERMEDIATE,
                          "[Tmax, N, C] gradient of each loss with respect to Logits"},
    [OUT_LOSS] = {"Loss", 0, "[N, 1] the negative log-likelihood of each label sequence"},
};
static const rill_attr_schema attrs[] = {
    {"blank", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the blank class, in [0, C)"},
    {"norm_by_times", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "scale each sequence's gradient by 1 / its frames"},
};

static rill_status *warpctc_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_LOGITS, 0), *l = rill_infer_in(ctx, IN_LABEL, 0);
  rill_tensor_meta *g = rill_infer_out(ctx, OUT_WARPCTC_GRAD, 0), *loss = rill_infer_out(ctx, OUT_LOSS, 0);
  if (!x || !l || !g || !loss)
    return rill_infer_error(ctx, "needs inputs Logits and Label, outputs WarpCTCGrad and Loss");
  bool padded = rill_infer_in(ctx, IN_LOGITS_LENGTH, 0) != NULL;
  if (padded != (rill_infer_in(ctx, IN_LABEL_LENGTH, 0) != NULL))
    return rill_infer_error(ctx, "needs both LogitsLength and LabelLength, or neither");
  if (!x->known) {
    rill_meta_unknown(g);
    rill_meta_unknown(loss);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_LOGITS, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Logits (%s) is %s, expected float32", xn, rill_dtype_name(x->dtype));
  if (l->known && l->dtype != RILL_DTYPE_INT32)
    return rill_infer_error(ctx, "input Label (%s) is %s, expected int32",
                            rill_infer_in_name(ctx, IN_LABEL, 0), rill_dtype_name(l->dtype));
  if (x->dims.n != (padded ? 3 : 2))
    return rill_infer_error(ctx, "input Logits (%s) has shape %s, expected %s", xn,
                            rill_dims_str(&x->dims, s, sizeof s),
                            padded ? "[Tmax, N, C] (LogitsLength is given)" : "[Lp, C] with LoD");
  int64_t C = x->dims.d[x->dims.n - 1];
  rill_dims gd = {.n = 3, .d = {-1, -1, C}}, ld = {.n = 2, .d = {-1, 1}};
  if (padded) {
    gd = x->dims;
    ld.d[0] = x->dims.d[1];
  }
  rill_meta_set(g, x->dtype, &gd, 0, -1, -1);
  rill_meta_set(loss, x->dtype, &ld, 0, -1, -1);
  return NULL;
}

/* Paddle's maker: warpctc_grad(WarpCTCGrad, Logits, Loss@GRAD, LogitsLength) ->
 * Logits@GRAD. */
static rill_status *warpctc_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "Logits")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "warpctc_grad", &op));
  RILL_TRY(rill_grad_forward(ctx, op, "WarpCTCGrad"));
  RILL_TRY(rill_grad_forward(ctx, op, "Logits"));
  RILL_TRY(rill_grad_of_output(ctx, op, "Loss"));
  RILL_TRY(rill_grad_forward(ctx, op, "LogitsLength"));
  RILL_TRY(rill_grad_of_input(ctx, op, "Logits"));
  return NULL;
}

const rill_op_schema rill_schema_warpctc = {
    .type = "warpctc",
    .doc = "The CTC loss of each sequence of class scores against its labels (LoD or padded "
           "with lengths), and its gradient, by the forward-backward algorithm in log space.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = warpctc_infer,
    .grad = warpctc_maker,
    .kernel_dtype_slot = IN_LOGITS,
    .dtype_attr = -1,
};

enum { G_WARPCTC_GRAD, G_LOGITS, G_DLOSS, G_LOGITS_LENGTH };

static const rill_slot_schema grad_inputs[] = {
    [G_WARPCTC_GRAD] = {"WarpCTCGrad", 0, "forward WarpCTCGrad"},
    [G_LOGITS] = {"Logits", 0, "forward Logits (its LoD, in the LoD form)"},
    [G_DLOSS] = {"Loss@GRAD", 0, "[N, 1] gradient of Loss"},
    [G_LOGITS_LENGTH] = {"LogitsLength", RILL_SLOT_DISPENSABLE, "forward LogitsLength"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Logits@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Logits"},
};

static rill_status *warpctc_grad_infer(rill_infer_ctx *ctx) {
  for (size_t s = G_WARPCTC_GRAD; s <= G_DLOSS; s++)
    if (!rill_infer_in(ctx, s, 0)) return rill_infer_error(ctx, "needs input %s", grad_inputs[s].name);
  rill_grad_infer_like(ctx, 0, G_LOGITS);
  return NULL;
}

const rill_op_schema rill_schema_warpctc_grad = {
    .type = "warpctc_grad",
    .doc = "Logits@GRAD of warpctc: WarpCTCGrad taken back to Logits' layout, each sequence "
           "scaled by its Loss@GRAD (and by 1 / its frames with norm_by_times).",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = warpctc_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_LOGITS,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(warpctc);
