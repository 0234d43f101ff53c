/* lstm: Fluid's dynamic LSTM (fluid.layers.dynamic_lstm) over the sequences of a LoD
 * batch, and lstm_unit, one LSTM step on [N, 4D] rows (fluid.layers.lstm_unit).
 *
 * lstm: Input [T, 4D] (one LoD level: the sequences; already projected), Weight [D, 4D],
 * Bias [1, 4D] or, with use_peepholes, [1, 7D]: the gate biases then the peephole
 * weights W_ic, W_fc, W_oc. Each 4D row is [candidate, input gate, forget gate, output
 * gate] (Paddle's order), and at step t of a sequence
 *
 *   g = Input_t + h_{t-1} Weight + Bias[0:4D]
 *   c~ = cand_act(g_c)
 *   i = gate_act(g_i + W_ic * c_{t-1}),  f = gate_act(g_f + W_fc * c_{t-1})
 *   c_t = c~ * i + c_{t-1} * f
 *   o = gate_act(g_o + W_oc * c_t),  h_t = o * cell_act(c_t)
 *
 * (peephole terms only with use_peepholes); h_0 and c_0 are rows of H0 and C0, or zeros.
 * Hidden and Cell [T, D] keep Input's LoD; BatchGate [T, 4D] (the activated gates) and
 * BatchCellPreAct [T, D] (cell_act(c_t)) are in batch order (operators/recurrent.h),
 * for lstm_grad. is_reverse runs every sequence from its last row to its first. */
#include <stdio.h>

#include "operators/math_grad.h"
#include "operators/op_util.h"
#include "operators/seq_rnn.h"

enum { IN_INPUT, IN_H0, IN_C0, IN_WEIGHT, IN_BIAS };
enum { OUT_HIDDEN, OUT_CELL, OUT_BATCH_GATE, OUT_BATCH_CELL_PRE_ACT };
enum { A_PEEP, A_REVERSE, A_GATE, A_CELL, A_CAND };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", 0, "LoD tensor [T, 4D]: the projected inputs, one LoD level"},
    [IN_H0] = {"H0", RILL_SLOT_DISPENSABLE, "[N, D] initial hidden state per sequence (needs C0)"},
    [IN_C0] = {"C0", RILL_SLOT_DISPENSABLE, "[N, D] initial cell state per sequence"},
    [IN_WEIGHT] = {"Weight", 0, "[D, 4D] recurrent weight (candidate, input, forget, output)"},
    [IN_BIAS] = {"Bias", 0, "[1, 4D] gate biases, or [1, 7D] with the peephole weights after them"},
};
static const rill_slot_schema outputs[] = {
    [OUT_HIDDEN] = {"Hidden", 0, "[T, D] hidden states, Input's LoD"},
    [OUT_CELL] = {"Cell", 0, "[T, D] cell states, Input's LoD"},
    [OUT_BATCH_GATE] = {"BatchGate", RILL_SLOT_INTERMEDIATE,
                        "[T, 4D] activated gates in batch order (for lstm_grad)"},
    [OUT_BATCH_CELL_PRE_ACT] = {"BatchCellPreAct", RILL_SLOT_INTERMEDIATE,
                                "[T, D] cell_activation(cell) in batch order (for lstm_grad)"},
};
static const rill_attr_schema attrs[] = {
    [A_PEEP] = {"use_peepholes", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
                "peephole connections: Bias is [1, 7D]"},
    [A_REVERSE] = {"is_reverse", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                   "run each sequence from its last row to its first"},
    [A_GATE] = {"gate_activation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("sigmoid"),
                "input, forget and output gates: sigmoid, tanh, relu or identity"},
    [A_CELL] = {"cell_activation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("tanh"),
                "applied to the cell state before the output gate"},
    [A_CAND] = {"candidate_activation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("tanh"),
                "applied to the candidate"},
};

/* Checks Input, Weight, Bias (H0, C0) and sets the frame size D (-1 when unknown);
 * *known is false when Input or Weight has no description. */
static rill_status *lstm_check(rill_infer_ctx *ctx, int64_t *D, bool *known) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0), *w = rill_infer_in(ctx, IN_WEIGHT, 0);
  const rill_tensor_meta *b = rill_infer_in(ctx, IN_BIAS, 0);
  if (!x || !w || !b) return rill_infer_error(ctx, "needs inputs Input, Weight and Bias");
  for (size_t a = A_GATE; a <= A_CAND; a++) RILL_TRY(rill_seq_rnn_check_act(ctx, a));
  if (rill_infer_in(ctx, IN_H0, 0) && !rill_infer_in(ctx, IN_C0, 0))
    return rill_infer_error(ctx, "input H0 (%s) is given without C0: give both initial states, "
                            "or C0 alone", rill_infer_in_name(ctx, IN_H0, 0));
  *known = x->known && w->known;
  *D = -1;
  if (!*known) return NULL;
  char s[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_INPUT, 0), *wn = rill_infer_in_name(ctx, IN_WEIGHT, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (w->dtype != x->dtype || (b->known && b->dtype != x->dtype))
    return rill_infer_error(ctx, "inputs Weight (%s) and Bias (%s) must have Input's dtype %s",
                            wn, rill_infer_in_name(ctx, IN_BIAS, 0), rill_dtype_name(x->dtype));
  if (x->dims.n != 2 || (x->dims.d[1] >= 0 && x->dims.d[1] % 4 != 0))
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [T, 4 * D]", xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  int64_t d = w->dims.n == 2 ? w->dims.d[0] : -1;
  if (d < 0 && x->dims.d[1] >= 0) d = x->dims.d[1] / 4;
  if (w->dims.n != 2 || (d >= 0 && w->dims.d[1] >= 0 && w->dims.d[1] != 4 * d) ||
      (d >= 0 && x->dims.d[1] >= 0 && x->dims.d[1] != 4 * d))
    return rill_infer_error(ctx, "input Weight (%s) has shape %s, expected [D, 4 * D] with "
                            "4 * D the width of Input (%s) %s", wn,
                            rill_dims_str(&w->dims, s, sizeof s), xn,
                            rill_dims_str(&x->dims, s2, sizeof s2));
  bool peep = ctx->attrs[A_PEEP].v.b;
  if (b->known && (b->dims.n != 2 || (b->dims.d[0] >= 0 && b->dims.d[0] != 1) ||
                   (d >= 0 && b->dims.d[1] >= 0 && b->dims.d[1] != (peep ? 7 : 4) * d)))
    return rill_infer_error(ctx, "input Bias (%s) has shape %s, expected [1, %lld]%s",
                            rill_infer_in_name(ctx, IN_BIAS, 0), rill_dims_str(&b->dims, s, sizeof s),
                            (long long)((peep ? 7 : 4) * d),
                            peep ? " (4 * D gate biases, then 3 * D peephole weights: "
                                   "use_peepholes is set)" : " (4 * D gate biases)");
  RILL_TRY(rill_seq_rnn_check_state(ctx, IN_H0, x->dtype, d));
  RILL_TRY(rill_seq_rnn_check_state(ctx, IN_C0, x->dtype, d));
  *D = d;
  return NULL;
}

static rill_status *lstm_infer(rill_infer_ctx *ctx) {
  int64_t d;
  bool known;
  RILL_TRY(lstm_check(ctx, &d, &known));
  rill_tensor_meta *outs[4];
  for (size_t i = 0; i < 4; i++) {
    outs[i] = rill_infer_out(ctx, i, 0);
    if (!outs[i])
      return rill_infer_error(ctx, "needs outputs Hidden, Cell, BatchGate and BatchCellPreAct");
  }
  if (!known) {
    for (size_t i = 0; i < 4; i++) rill_meta_unknown(outs[i]);
    return NULL;
  }
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0);
  rill_dims hd = {.n = 2, .d = {x->dims.d[0], d}};
  rill_meta_set(outs[OUT_HIDDEN], x->dtype, &hd, x->lod_level, IN_INPUT, 0);
  rill_meta_set(outs[OUT_CELL], x->dtype, &hd, x->lod_level, IN_INPUT, 0);
  rill_meta_set(outs[OUT_BATCH_GATE], x->dtype, &x->dims, 0, -1, -1);
  rill_meta_set(outs[OUT_BATCH_CELL_PRE_ACT], x->dtype, &hd, 0, -1, -1);
  return NULL;
}

/* Paddle's maker: lstm_grad(Input, H0, C0, Weight, Bias, Hidden, Cell, BatchGate,
 * BatchCellPreAct, Hidden@GRAD) -> Input@GRAD, H0@GRAD, C0@GRAD, Weight@GRAD,
 * Bias@GRAD. Cell@GRAD is not an input: as in Paddle, a loss reached through Cell alone
 * gives the LSTM no gradient. */
static rill_status *lstm_maker(rill_grad_ctx *ctx) {
  static const char *const wrt[] = {"Input", "H0", "C0", "Weight", "Bias"};
  bool any = false;
  for (size_t i = 0; i < RILL_COUNTOF(wrt); i++) any = any || !rill_grad_none_wanted(ctx, wrt[i]);
  if (!any) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "lstm_grad", &op));
  static const char *const fwd[] = {"Input", "H0", "C0", "Weight", "Bias",
                                    "Hidden", "Cell", "BatchGate", "BatchCellPreAct"};
  for (size_t i = 0; i < RILL_COUNTOF(fwd); i++) RILL_TRY(rill_grad_forward(ctx, op, fwd[i]));
  RILL_TRY(rill_grad_of_output(ctx, op, "Hidden"));
  for (size_t i = 0; i < RILL_COUNTOF(wrt); i++) RILL_TRY(rill_grad_of_input(ctx, op, wrt[i]));
  return NULL;
}

const rill_op_schema rill_schema_lstm = {
    .type = "lstm",
    .doc = "Fluid's dynamic LSTM over the sequences of a LoD batch (gates candidate, input, "
           "forget, output; optional peepholes, initial states and reverse direction), "
           "computed a time step at a time over the batch of sequences still running.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = lstm_infer,
    .grad = lstm_maker,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

enum { G_INPUT, G_H0, G_C0, G_WEIGHT, G_BIAS, G_HIDDEN, G_CELL, G_BATCH_GATE, G_BATCH_CELL_PRE_ACT,
       G_DHIDDEN };

static const rill_slot_schema grad_inputs[] = {
    [G_INPUT] = {"Input", 0, "forward Input (its LoD gives the batch order)"},
    [G_H0] = {"H0", RILL_SLOT_DISPENSABLE, "forward H0"},
    [G_C0] = {"C0", RILL_SLOT_DISPENSABLE, "forward C0"},
    [G_WEIGHT] = {"Weight", 0, "forward Weight"},
    [G_BIAS] = {"Bias", 0, "forward Bias"},
    [G_HIDDEN] = {"Hidden", 0, "forward Hidden"},
    [G_CELL] = {"Cell", 0, "forward Cell"},
    [G_BATCH_GATE] = {"BatchGate", 0, "forward BatchGate"},
    [G_BATCH_CELL_PRE_ACT] = {"BatchCellPreAct", 0, "forward BatchCellPreAct"},
    [G_DHIDDEN] = {"Hidden@GRAD", 0, "gradient of Hidden [T, D]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Input"},
    {"H0@GRAD", RILL_SLOT_DISPENSABLE, "gradient of H0"},
    {"C0@GRAD", RILL_SLOT_DISPENSABLE, "gradient of C0"},
    {"Weight@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Weight"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Bias (peephole weights included)"},
};

static rill_status *lstm_grad_infer(rill_infer_ctx *ctx) {
  return rill_seq_rnn_grad_infer(ctx, G_DHIDDEN, G_DHIDDEN, G_HIDDEN, RILL_COUNTOF(grad_outputs));
}

const rill_op_schema rill_schema_lstm_grad = {
    .type = "lstm_grad",
    .doc = "Gradients of lstm: the steps in reverse batch order, each gate gradient GEMM "
           "feeding the previous step's hidden gradient and Weight@GRAD.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = lstm_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_INPUT,
    .dtype_attr = -1,
};

/* ---- lstm_unit: one step, gates [i, f, o, g] (Caffe's order, not lstm's) ----
 *
 *   i = sigmoid(X_i), f = sigmoid(X_f + forget_bias), o = sigmoid(X_o), g = tanh(X_g)
 *   C = f * C_prev + i * g,  H = o * tanh(C)                                         */
enum { U_X, U_C_PREV };
enum { U_C, U_H };

static const rill_slot_schema unit_inputs[] = {
    [U_X] = {"X", 0, "[N, 4D] gate pre-activations: input, forget, output, candidate"},
    [U_C_PREV] = {"C_prev", 0, "[N, D] previous cell state"},
};
static const rill_slot_schema unit_outputs[] = {
    [U_C] = {"C", 0, "[N, D] cell state"},
    [U_H] = {"H", 0, "[N, D] hidden state"},
};
static const rill_attr_schema unit_attrs[] = {
    {"forget_bias", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "added to the forget gate's input"},
};

static rill_status *lstm_unit_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, U_X, 0), *c = rill_infer_in(ctx, U_C_PREV, 0);
  rill_tensor_meta *co = rill_infer_out(ctx, U_C, 0), *ho = rill_infer_out(ctx, U_H, 0);
  if (!x || !c || !co || !ho) return rill_infer_error(ctx, "needs inputs X and C_prev, outputs C and H");
  if (!x->known || !c->known) {
    rill_meta_unknown(co);
    rill_meta_unknown(ho);
    return NULL;
  }
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, U_X, 0), rill_dtype_name(x->dtype));
  bool bad = x->dims.n != 2 || c->dims.n != 2 || c->dtype != x->dtype;
  if (!bad && x->dims.d[1] >= 0 && c->dims.d[1] >= 0 && x->dims.d[1] != 4 * c->dims.d[1]) bad = true;
  if (!bad && x->dims.d[0] >= 0 && c->dims.d[0] >= 0 && x->dims.d[0] != c->dims.d[0]) bad = true;
  if (bad)
    return rill_infer_error(ctx, "inputs X (%s) %s %s and C_prev (%s) %s %s do not fit: expected "
                            "[N, 4 * D] and [N, D] of one dtype", rill_infer_in_name(ctx, U_X, 0),
                            rill_dims_str(&x->dims, a, sizeof a), rill_dtype_name(x->dtype),
                            rill_infer_in_name(ctx, U_C_PREV, 0), rill_dims_str(&c->dims, b, sizeof b),
                            rill_dtype_name(c->dtype));
  rill_meta_set(co, x->dtype, &c->dims, c->lod_level, U_C_PREV, 0);
  rill_meta_set(ho, x->dtype, &c->dims, c->lod_level, U_C_PREV, 0);
  return NULL;
}

/* Paddle's maker: lstm_unit_grad(X, C_prev, C, H@GRAD, C@GRAD) -> X@GRAD, C_prev@GRAD. */
static rill_status *lstm_unit_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "C_prev", "C"};
  static const char *const outg[] = {"H", "C"};
  static const char *const ing[] = {"X", "C_prev"};
  return rill_grad_emit(ctx, "lstm_unit_grad", fwd, 3, outg, 2, ing, 2);
}

const rill_op_schema rill_schema_lstm_unit = {
    .type = "lstm_unit",
    .doc = "One LSTM step on [N, 4D] gate pre-activations (input, forget, output, candidate) "
           "and the previous cell state.",
    .inputs = unit_inputs,
    .ninputs = RILL_COUNTOF(unit_inputs),
    .outputs = unit_outputs,
    .noutputs = RILL_COUNTOF(unit_outputs),
    .attrs = unit_attrs,
    .nattrs = RILL_COUNTOF(unit_attrs),
    .flags = 0,
    .infer = lstm_unit_infer,
    .grad = lstm_unit_maker,
    .kernel_dtype_slot = U_X,
    .dtype_attr = -1,
};

enum { UG_X, UG_C_PREV, UG_C, UG_DH, UG_DC };

static const rill_slot_schema unit_grad_inputs[] = {
    [UG_X] = {"X", 0, "forward X"},
    [UG_C_PREV] = {"C_prev", 0, "forward C_prev"},
    [UG_C] = {"C", 0, "forward C"},
    [UG_DH] = {"H@GRAD", 0, "gradient of H"},
    [UG_DC] = {"C@GRAD", 0, "gradient of C"},
};
static const rill_slot_schema unit_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
    {"C_prev@GRAD", RILL_SLOT_DISPENSABLE, "gradient of C_prev"},
};

static rill_status *lstm_unit_grad_infer(rill_infer_ctx *ctx) {
  for (size_t s = UG_X; s <= UG_DC; s++)
    if (!rill_infer_in(ctx, s, 0)) return rill_infer_error(ctx, "needs input %s", unit_grad_inputs[s].name);
  RILL_TRY(rill_grad_infer_same(ctx, UG_DH, UG_C));
  RILL_TRY(rill_grad_infer_same(ctx, UG_DC, UG_C));
  rill_grad_infer_like(ctx, 0, UG_X);
  rill_grad_infer_like(ctx, 1, UG_C_PREV);
  return NULL;
}

const rill_op_schema rill_schema_lstm_unit_grad = {
    .type = "lstm_unit_grad",
    .doc = "Gradients of lstm_unit with respect to X and C_prev.",
    .inputs = unit_grad_inputs,
    .ninputs = RILL_COUNTOF(unit_grad_inputs),
    .outputs = unit_grad_outputs,
    .noutputs = RILL_COUNTOF(unit_grad_outputs),
    .attrs = unit_attrs,
    .nattrs = RILL_COUNTOF(unit_attrs),
    .flags = 0,
    .infer = lstm_unit_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = UG_X,
    .dtype_attr = -1,
};

/* ---- lstmp: lstm with a recurrent projection (fluid.layers.dynamic_lstmp) ----
 *
 * Input [T, 4D] (one LoD level), Weight [P, 4D], ProjWeight [D, P], Bias as lstm's. Each
 * step is lstm's with the previous projection r_{t-1} [P] in place of h_{t-1}:
 *
 *   g = Input_t + r_{t-1} Weight + Bias[0:4D];  c_t, h_t as lstm's (c_t clipped to
 *   [-cell_clip, cell_clip] when cell_clip > 0);  r_t = act(h_t ProjWeight), clipped to
 *   [-proj_clip, proj_clip] when proj_clip > 0.
 *
 * As in Paddle 1.8, `act` is identity when proj_activation is identity and otherwise
 * the function cell_activation names (the kernel applies cell_activation's kind). H0 is
 * the initial projection [N, P], C0 the initial cell [N, D]. Projection [T, P] and Cell
 * [T, D] keep Input's LoD; BatchGate, BatchCellPreAct and BatchHidden (h_t) are in batch
 * order for lstmp_grad. */
enum { P_INPUT, P_H0, P_C0, P_WEIGHT, P_PROJ_WEIGHT, P_BIAS };
enum { PO_PROJECTION, PO_CELL, PO_BATCH_GATE, PO_BATCH_CELL_PRE_ACT, PO_BATCH_HIDDEN };
enum { PA_PEEP, PA_REVERSE, PA_CELL_CLIP, PA_PROJ_CLIP, PA_GATE, PA_CELL, PA_CAND, PA_PROJ };

static const rill_slot_schema p_inputs[] = {
    [P_INPUT] = {"Input", 0, "LoD tensor [T, 4D]: the projected inputs, one LoD level"},
    [P_H0] = {"H0", RILL_SLOT_DISPENSABLE, "[N, P] initial projection per sequence (needs C0)"},
    [P_C0] = {"C0", RILL_SLOT_DISPENSABLE, "[N, D] initial cell state per sequence"},
    [P_WEIGHT] = {"Weight", 0, "[P, 4D] recurrent weight from the projection"},
    [P_PROJ_WEIGHT] = {"ProjWeight", 0, "[D, P] projection weight"},
    [P_BIAS] = {"Bias", 0, "[1, 4D] gate biases, or [1, 7D] with the peephole weights after them"},
};
static const rill_slot_schema p_outputs[] = {
    [PO_PROJECTION] = {"Projection", 0, "[T, P] projections, Input's LoD"},
    [PO_CELL] = {"Cell", 0, "[T, D] cell states, Input's LoD"},
    [PO_BATCH_GATE] = {"BatchGate", RILL_SLOT_INTERMEDIATE,
                       "[T, 4D] activated gates in batch order (for lstmp_grad)"},
    [PO_BATCH_CELL_PRE_ACT] = {"BatchCellPreAct", RILL_SLOT_INTERMEDIATE,
                               "[T, D] cell_activation(cell) in batch order (for lstmp_grad)"},
    [PO_BATCH_HIDDEN] = {"BatchHidden", RILL_SLOT_INTERMEDIATE,
                         "[T, D] hidden states before the projection, in batch order"},
};
static const rill_attr_schema p_attrs[] = {
    [PA_PEEP] = {"use_peepholes", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
                 "peephole connections: Bias is [1, 7D]"},
    [PA_REVERSE] = {"is_reverse", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                    "run each sequence from its last row to its first"},
    [PA_CELL_CLIP] = {"cell_clip", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
                      "when > 0, the cell state is clipped to [-cell_clip, cell_clip]"},
    [PA_PROJ_CLIP] = {"proj_clip", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
                      "when > 0, the projection is clipped to [-proj_clip, proj_clip]"},
    [PA_GATE] = {"gate_activation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("sigmoid"),
                 "input, forget and output gates: sigmoid, tanh, relu or identity"},
    [PA_CELL] = {"cell_activation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("tanh"),
                 "applied to the cell state before the output gate"},
    [PA_CAND] = {"candidate_activation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("tanh"),
                 "applied to the candidate"},
    [PA_PROJ] = {"proj_activation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("tanh"),
                 "identity: none; otherwise the projection gets cell_activation (Paddle 1.8)"},
};

/* `slot`, when present and known, is a 2-D tensor of dtype dt whose known extents agree
 * with r (rows) and c (columns); -1 matches anything. */
static rill_status *lstmp_check_2d(rill_infer_ctx *ctx, size_t slot, rill_dtype dt, int64_t r,
                                   int64_t c, const char *want) {
  const rill_tensor_meta *m = rill_infer_in(ctx, slot, 0);
  if (!m || !m->known) return NULL;
  char s[RILL_DIMS_STR_MAX];
  bool bad = m->dtype != dt || m->dims.n != 2;
  if (!bad && r >= 0 && m->dims.d[0] >= 0 && m->dims.d[0] != r) bad = true;
  if (!bad && c >= 0 && m->dims.d[1] >= 0 && m->dims.d[1] != c) bad = true;
  if (bad)
    return rill_infer_error(ctx, "input %s (%s) is %s %s, expected %s %s", ctx->schema->inputs[slot].name,
                            rill_infer_in_name(ctx, slot, 0), rill_dtype_name(m->dtype),
                            rill_dims_str(&m->dims, s, sizeof s), rill_dtype_name(dt), want);
  return NULL;
}

static rill_status *lstmp_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, P_INPUT, 0), *w = rill_infer_in(ctx, P_WEIGHT, 0);
  const rill_tensor_meta *pw = rill_infer_in(ctx, P_PROJ_WEIGHT, 0);
  if (!x || !w || !pw || !rill_infer_in(ctx, P_BIAS, 0))
    return rill_infer_error(ctx, "needs inputs Input, Weight, ProjWeight and Bias");
  for (size_t a = PA_GATE; a <= PA_PROJ; a++) RILL_TRY(rill_seq_rnn_check_act(ctx, a));
  if (rill_infer_in(ctx, P_H0, 0) && !rill_infer_in(ctx, P_C0, 0))
    return rill_infer_error(ctx, "input H0 (%s) is given without C0: give both initial states, "
                            "or C0 alone", rill_infer_in_name(ctx, P_H0, 0));
  rill_tensor_meta *outs[5];
  for (size_t i = 0; i < 5; i++) {
    outs[i] = rill_infer_out(ctx, i, 0);
    if (!outs[i])
      return rill_infer_error(ctx, "needs outputs Projection, Cell, BatchGate, BatchCellPreAct "
                              "and BatchHidden");
  }
  if (!x->known || !w->known || !pw->known) {
    for (size_t i = 0; i < 5; i++) rill_meta_unknown(outs[i]);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, P_INPUT, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2 || (x->dims.d[1] >= 0 && x->dims.d[1] % 4 != 0))
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [T, 4 * D]", xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  int64_t d = x->dims.d[1] >= 0 ? x->dims.d[1] / 4 : -1;
  if (d < 0 && pw->dims.n == 2) d = pw->dims.d[0];
  RILL_TRY(lstmp_check_2d(ctx, P_PROJ_WEIGHT, x->dtype, d, -1, "[D, P] with 4 * D Input's width"));
  int64_t p = pw->dims.d[1];
  RILL_TRY(lstmp_check_2d(ctx, P_WEIGHT, x->dtype, p, d < 0 ? -1 : 4 * d,
                          "[P, 4 * D] with P ProjWeight's width"));
  if (p < 0) p = w->dims.d[0];
  bool peep = ctx->attrs[PA_PEEP].v.b;
  char want[128];
  snprintf(want, sizeof want, "[1, %lld]%s", (long long)((peep ? 7 : 4) * d),
           peep ? " (use_peepholes: 4 * D gate biases, then 3 * D peephole weights)" : "");
  RILL_TRY(lstmp_check_2d(ctx, P_BIAS, x->dtype, 1, d < 0 ? -1 : (peep ? 7 : 4) * d, want));
  RILL_TRY(rill_seq_rnn_check_state(ctx, P_H0, x->dtype, p));
  RILL_TRY(rill_seq_rnn_check_state(ctx, P_C0, x->dtype, d));
  rill_dims pd = {.n = 2, .d = {x->dims.d[0], p}}, hd = {.n = 2, .d = {x->dims.d[0], d}};
  rill_meta_set(outs[PO_PROJECTION], x->dtype, &pd, x->lod_level, P_INPUT, 0);
  rill_meta_set(outs[PO_CELL], x->dtype, &hd, x->lod_level, P_INPUT, 0);
  rill_meta_set(outs[PO_BATCH_GATE], x->dtype, &x->dims, 0, -1, -1);
  rill_meta_set(outs[PO_BATCH_CELL_PRE_ACT], x->dtype, &hd, 0, -1, -1);
  rill_meta_set(outs[PO_BATCH_HIDDEN], x->dtype, &hd, 0, -1, -1);
  return NULL;
}

/* Paddle's maker: lstmp_grad(Weight, ProjWeight, Bias, Projection, Cell, BatchGate,
 * BatchCellPreAct, BatchHidden, H0, C0, Projection@GRAD) -> Input@GRAD, Weight@GRAD,
 * ProjWeight@GRAD, Bias@GRAD, H0@GRAD, C0@GRAD. Projection's LoD gives the batch order;
 * as in Paddle, Cell@GRAD is not read. */
static rill_status *lstmp_maker(rill_grad_ctx *ctx) {
  static const char *const wrt[] = {"Input", "Weight", "ProjWeight", "Bias", "H0", "C0"};
  bool any = false;
  for (size_t i = 0; i < RILL_COUNTOF(wrt); i++) any = any || !rill_grad_none_wanted(ctx, wrt[i]);
  if (!any) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "lstmp_grad", &op));
  static const char *const fwd[] = {"Weight", "ProjWeight", "Bias", "Projection", "Cell",
                                    "BatchGate", "BatchCellPreAct", "BatchHidden", "H0", "C0"};
  for (size_t i = 0; i < RILL_COUNTOF(fwd); i++) RILL_TRY(rill_grad_forward(ctx, op, fwd[i]));
  RILL_TRY(rill_grad_of_output(ctx, op, "Projection"));
  for (size_t i = 0; i < RILL_COUNTOF(wrt); i++) RILL_TRY(rill_grad_of_input(ctx, op, wrt[i]));
  return NULL;
}

const rill_op_schema rill_schema_lstmp = {
    .type = "lstmp",
    .doc = "Fluid's LSTM with a recurrent projection layer (dynamic_lstmp) over the sequences "
           "of a LoD batch: the step's hidden state is projected by ProjWeight and the "
           "projection feeds the next step; optional cell and projection clipping.",
    .inputs = p_inputs,
    .ninputs = RILL_COUNTOF(p_inputs),
    .outputs = p_outputs,
    .noutputs = RILL_COUNTOF(p_outputs),
    .attrs = p_attrs,
    .nattrs = RILL_COUNTOF(p_attrs),
    .flags = 0,
    .infer = lstmp_infer,
    .grad = lstmp_maker,
    .kernel_dtype_slot = P_INPUT,
    .dtype_attr = -1,
};

enum { PG_WEIGHT, PG_PROJ_WEIGHT, PG_BIAS, PG_PROJECTION, PG_CELL, PG_BATCH_GATE,
       PG_BATCH_CELL_PRE_ACT, PG_BATCH_HIDDEN, PG_H0, PG_C0, PG_DPROJECTION };
enum { PGO_INPUT, PGO_WEIGHT, PGO_PROJ_WEIGHT, PGO_BIAS, PGO_H0, PGO_C0 };

static const rill_slot_schema pg_inputs[] = {
    [PG_WEIGHT] = {"Weight", 0, "forward Weight"},
    [PG_PROJ_WEIGHT] = {"ProjWeight", 0, "forward ProjWeight"},
    [PG_BIAS] = {"Bias", 0, "forward Bias"},
    [PG_PROJECTION] = {"Projection", 0, "forward Projection (its LoD gives the batch order)"},
    [PG_CELL] = {"Cell", 0, "forward Cell"},
    [PG_BATCH_GATE] = {"BatchGate", 0, "forward BatchGate"},
    [PG_BATCH_CELL_PRE_ACT] = {"BatchCellPreAct", 0, "forward BatchCellPreAct"},
    [PG_BATCH_HIDDEN] = {"BatchHidden", 0, "forward BatchHidden"},
    [PG_H0] = {"H0", RILL_SLOT_DISPENSABLE, "forward H0"},
    [PG_C0] = {"C0", RILL_SLOT_DISPENSABLE, "forward C0"},
    [PG_DPROJECTION] = {"Projection@GRAD", 0, "gradient of Projection [T, P]"},
};
static const rill_slot_schema pg_outputs[] = {
    [PGO_INPUT] = {"Input@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Input [T, 4D]"},
    [PGO_WEIGHT] = {"Weight@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Weight"},
    [PGO_PROJ_WEIGHT] = {"ProjWeight@GRAD", RILL_SLOT_DISPENSABLE, "gradient of ProjWeight"},
    [PGO_BIAS] = {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Bias (peephole weights included)"},
    [PGO_H0] = {"H0@GRAD", RILL_SLOT_DISPENSABLE, "gradient of H0"},
    [PGO_C0] = {"C0@GRAD", RILL_SLOT_DISPENSABLE, "gradient of C0"},
};

static rill_status *lstmp_grad_infer(rill_infer_ctx *ctx) {
  const rill_op_schema *s = ctx->schema;
  for (size_t i = 0; i < RILL_COUNTOF(pg_inputs); i++)
    if (!(s->inputs[i].flags & RILL_SLOT_DISPENSABLE) && !rill_infer_in(ctx, i, 0))
      return rill_infer_error(ctx, "needs input %s", s->inputs[i].name);
  RILL_TRY(rill_grad_infer_same(ctx, PG_DPROJECTION, PG_PROJECTION));
  static const size_t like[] = {[PGO_WEIGHT] = PG_WEIGHT, [PGO_PROJ_WEIGHT] = PG_PROJ_WEIGHT,
                                [PGO_BIAS] = PG_BIAS, [PGO_H0] = PG_H0, [PGO_C0] = PG_C0};
  for (size_t o = PGO_WEIGHT; o <= PGO_C0; o++) {
    if (rill_infer_out(ctx, o, 0) && !rill_infer_in(ctx, like[o], 0))
      return rill_infer_error(ctx, "output %s needs input %s", s->outputs[o].name,
                              s->inputs[like[o]].name);
    rill_grad_infer_like(ctx, o, like[o]);
  }
  rill_tensor_meta *dx = rill_infer_out(ctx, PGO_INPUT, 0);
  const rill_tensor_meta *bg = rill_infer_in(ctx, PG_BATCH_GATE, 0);
  const rill_tensor_meta *pr = rill_infer_in(ctx, PG_PROJECTION, 0);
  if (dx) {
    if (bg->known && pr->known)
      rill_meta_set(dx, bg->dtype, &bg->dims, pr->lod_level, PG_PROJECTION, 0);
    else
      rill_meta_unknown(dx);
  }
  return NULL;
}

const rill_op_schema rill_schema_lstmp_grad = {
    .type = "lstmp_grad",
    .doc = "Gradients of lstmp: the steps in reverse batch order, each through the "
           "projection (its clip and activation), the LSTM step and the recurrent weight.",
    .inputs = pg_inputs,
    .ninputs = RILL_COUNTOF(pg_inputs),
    .outputs = pg_outputs,
    .noutputs = RILL_COUNTOF(pg_outputs),
    .attrs = p_attrs,
    .nattrs = RILL_COUNTOF(p_attrs),
    .flags = 0,
    .infer = lstmp_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = PG_BATCH_GATE,
    .dtype_attr = -1,
};
RILL_OP_TABLE_CHECKS(lstm);
