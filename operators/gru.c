/* gru: Fluid's dynamic GRU (fluid.layers.dynamic_gru) over the sequences of a LoD
 * batch, and gru_unit, one GRU step on [N, 3D] rows (fluid.layers.gru_unit).
 *
 * gru: Input [T, 3D] (one LoD level; already projected), Weight [D, 3D], Bias [1, 3D]
 * (optional), H0 [N, D] (optional, zeros without it). Each 3D row is [update gate u,
 * reset gate r, candidate c] (Paddle's order). Weight's buffer is read as Paddle reads
 * it: its first 2 D^2 elements are a [D, 2D] matrix W_ur for the gates, its last D^2 a
 * [D, D] matrix W_c for the candidate (not column blocks of the [D, 3D] matrix). At
 * step t of a sequence
 *
 *   [u, r] = gate_act(Input_t[0:2D] + Bias[0:2D] + h_{t-1} W_ur)
 *   c = act(Input_t[2D:3D] + Bias[2D:3D] + (r * h_{t-1}) W_c)
 *   h_t = u * c + (1 - u) * h_{t-1}     (origin_mode: u * h_{t-1} + (1 - u) * c)
 *
 * Hidden [T, D] keeps Input's LoD; BatchGate [T, 3D] (activated u, r, c),
 * BatchResetHiddenPrev [T, D] (r * h_{t-1}) and BatchHidden [T, D] (h_t) are in batch
 * order (operators/recurrent.h), for gru_grad. */
#include "operators/math_grad.h"
#include "operators/op_util.h"
#include "operators/seq_rnn.h"

enum { IN_INPUT, IN_H0, IN_WEIGHT, IN_BIAS };
enum { OUT_BATCH_GATE, OUT_BATCH_RESET_HIDDEN_PREV, OUT_BATCH_HIDDEN, OUT_HIDDEN };
enum { A_ACT, A_GATE, A_REVERSE, A_ORIGIN };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", 0, "LoD tensor [T, 3D]: the projected inputs, one LoD level"},
    [IN_H0] = {"H0", RILL_SLOT_DISPENSABLE, "[N, D] initial hidden state per sequence"},
    [IN_WEIGHT] = {"Weight", 0, "[D, 3D]: a [D, 2D] gate weight then a [D, D] candidate weight"},
    [IN_BIAS] = {"Bias", RILL_SLOT_DISPENSABLE, "[1, 3D] biases of update, reset, candidate"},
};
static const rill_slot_schema outputs[] = {
    [OUT_BATCH_GATE] = {"BatchGate", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                        "[T, 3D] activated gates in batch order (for gru_grad)"},
    [OUT_BATCH_RESET_HIDDEN_PREV] = {"BatchResetHiddenPrev",
                                     RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                                     "[T, D] reset gate times previous hidden, batch order"},
    [OUT_BATCH_HIDDEN] = {"BatchHidden", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                          "[T, D] hidden states, batch order"},
    [OUT_HIDDEN] = {"Hidden", 0, "[T, D] hidden states, Input's LoD"},
};
static const rill_attr_schema attrs[] = {
    [A_ACT] = {"activation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("tanh"),
               "candidate activation: sigmoid, tanh, relu or identity"},
    [A_GATE] = {"gate_activation", RILL_ATTR_STRING, 0, RILL_DEF_STRING("sigmoid"),
                "update and reset gate activation"},
    [A_REVERSE] = {"is_reverse", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                   "run each sequence from its last row to its first"},
    [A_ORIGIN] = {"origin_mode", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                  "h = u * h_prev + (1 - u) * c (the GRU paper's form) instead of "
                  "u * c + (1 - u) * h_prev"},
};

static rill_status *gru_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0), *w = rill_infer_in(ctx, IN_WEIGHT, 0);
  const rill_tensor_meta *b = rill_infer_in(ctx, IN_BIAS, 0);
  rill_tensor_meta *hid = rill_infer_out(ctx, OUT_HIDDEN, 0);
  if (!x || !w || !hid) return rill_infer_error(ctx, "needs inputs Input and Weight and output Hidden");
  RILL_TRY(rill_seq_rnn_check_act(ctx, A_ACT));
  RILL_TRY(rill_seq_rnn_check_act(ctx, A_GATE));
  rill_tensor_meta *outs[4];
  for (size_t i = 0; i < 4; i++) outs[i] = rill_infer_out(ctx, i, 0);
  if (!x->known || !w->known) {
    for (size_t i = 0; i < 4; i++)
      if (outs[i]) rill_meta_unknown(outs[i]);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_INPUT, 0), *wn = rill_infer_in_name(ctx, IN_WEIGHT, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (w->dtype != x->dtype || (b && b->known && b->dtype != x->dtype))
    return rill_infer_error(ctx, "inputs Weight (%s) and Bias must have Input's dtype %s", wn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2 || (x->dims.d[1] >= 0 && x->dims.d[1] % 3 != 0))
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [T, 3 * D]", xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  int64_t d = w->dims.n == 2 ? w->dims.d[0] : -1;
  if (d < 0 && x->dims.d[1] >= 0) d = x->dims.d[1] / 3;
  if (w->dims.n != 2 || (d >= 0 && w->dims.d[1] >= 0 && w->dims.d[1] != 3 * d) ||
      (d >= 0 && x->dims.d[1] >= 0 && x->dims.d[1] != 3 * d))
    return rill_infer_error(ctx, "input Weight (%s) has shape %s, expected [D, 3 * D] with "
                            "3 * D the width of Input (%s) %s", wn,
                            rill_dims_str(&w->dims, s, sizeof s), xn,
                            rill_dims_str(&x->dims, s2, sizeof s2));
  if (b && b->known && (b->dims.n != 2 || (b->dims.d[0] >= 0 && b->dims.d[0] != 1) ||
                        (d >= 0 && b->dims.d[1] >= 0 && b->dims.d[1] != 3 * d)))
    return rill_infer_error(ctx, "input Bias (%s) has shape %s, expected [1, %lld]",
                            rill_infer_in_name(ctx, IN_BIAS, 0), rill_dims_str(&b->dims, s, sizeof s),
                            (long long)(3 * d));
  RILL_TRY(rill_seq_rnn_check_state(ctx, IN_H0, x->dtype, d));
  rill_dims hd = {.n = 2, .d = {x->dims.d[0], d}};
  rill_meta_set(hid, x->dtype, &hd, x->lod_level, IN_INPUT, 0);
  if (outs[OUT_BATCH_GATE]) rill_meta_set(outs[OUT_BATCH_GATE], x->dtype, &x->dims, 0, -1, -1);
  if (outs[OUT_BATCH_RESET_HIDDEN_PREV])
    rill_meta_set(outs[OUT_BATCH_RESET_HIDDEN_PREV], x->dtype, &hd, 0, -1, -1);
  if (outs[OUT_BATCH_HIDDEN]) rill_meta_set(outs[OUT_BATCH_HIDDEN], x->dtype, &hd, 0, -1, -1);
  return NULL;
}

/* Paddle's maker: gru_grad(Input, H0, Weight, Bias, BatchGate, BatchResetHiddenPrev,
 * BatchHidden, Hidden, Hidden@GRAD) -> Input@GRAD, H0@GRAD, Weight@GRAD, Bias@GRAD. */
static rill_status *gru_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Input", "H0", "Weight", "Bias", "BatchGate",
                                    "BatchResetHiddenPrev", "BatchHidden", "Hidden"};
  static const char *const outg[] = {"Hidden"};
  static const char *const ing[] = {"Input", "H0", "Weight", "Bias"};
  return rill_grad_emit(ctx, "gru_grad", fwd, RILL_COUNTOF(fwd), outg, 1, ing, RILL_COUNTOF(ing));
}

const rill_op_schema rill_schema_gru = {
    .type = "gru",
    .doc = "Fluid's dynamic GRU over the sequences of a LoD batch (gates update, reset, "
           "candidate; optional initial state, reverse direction and origin_mode), computed "
           "a time step at a time over the batch of sequences still running.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = gru_infer,
    .grad = gru_maker,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

enum { G_INPUT, G_H0, G_WEIGHT, G_BIAS, G_BATCH_GATE, G_BATCH_RESET_HIDDEN_PREV, G_BATCH_HIDDEN,
       G_HIDDEN, G_DHIDDEN };

static const rill_slot_schema grad_inputs[] = {
    [G_INPUT] = {"Input", 0, "forward Input (its LoD gives the batch order)"},
    [G_H0] = {"H0", RILL_SLOT_DISPENSABLE, "forward H0"},
    [G_WEIGHT] = {"Weight", 0, "forward Weight"},
    [G_BIAS] = {"Bias", RILL_SLOT_DISPENSABLE, "forward Bias"},
    [G_BATCH_GATE] = {"BatchGate", 0, "forward BatchGate"},
    [G_BATCH_RESET_HIDDEN_PREV] = {"BatchResetHiddenPrev", 0, "forward BatchResetHiddenPrev"},
    [G_BATCH_HIDDEN] = {"BatchHidden", 0, "forward BatchHidden"},
    [G_HIDDEN] = {"Hidden", 0, "forward Hidden"},
    [G_DHIDDEN] = {"Hidden@GRAD", 0, "gradient of Hidden [T, D]"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Input"},
    {"H0@GRAD", RILL_SLOT_DISPENSABLE, "gradient of H0"},
    {"Weight@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Weight"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Bias"},
};

static rill_status *gru_grad_infer(rill_infer_ctx *ctx) {
  return rill_seq_rnn_grad_infer(ctx, G_DHIDDEN, G_DHIDDEN, G_HIDDEN, RILL_COUNTOF(grad_outputs));
}

const rill_op_schema rill_schema_gru_grad = {
    .type = "gru_grad",
    .doc = "Gradients of gru: the steps in reverse batch order, GEMMs by the candidate and "
           "gate weights feeding the previous step's hidden gradient and Weight@GRAD.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = gru_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_INPUT,
    .dtype_attr = -1,
};

/* ---- gru_unit: one step on [N, 3D] rows and the previous hidden state [N, D] ---- */
enum { U_INPUT, U_HIDDEN_PREV, U_WEIGHT, U_BIAS };
enum { U_GATE, U_RESET_HIDDEN_PREV, U_HIDDEN };

static const rill_slot_schema unit_inputs[] = {
    [U_INPUT] = {"Input", 0, "[N, 3D] projected inputs"},
    [U_HIDDEN_PREV] = {"HiddenPrev", 0, "[N, D] previous hidden state"},
    [U_WEIGHT] = {"Weight", 0, "[D, 3D]: a [D, 2D] gate weight then a [D, D] candidate weight"},
    [U_BIAS] = {"Bias", RILL_SLOT_DISPENSABLE, "[1, 3D]"},
};
static const rill_slot_schema unit_outputs[] = {
    [U_GATE] = {"Gate", 0, "[N, 3D] activated update, reset, candidate"},
    [U_RESET_HIDDEN_PREV] = {"ResetHiddenPrev", 0, "[N, D] reset gate times HiddenPrev"},
    [U_HIDDEN] = {"Hidden", 0, "[N, D] new hidden state"},
};
static const rill_attr_schema unit_attrs[] = {
    {"activation", RILL_ATTR_INT, 0, RILL_DEF_INT(2),
     "candidate activation: 0 identity, 1 sigmoid, 2 tanh, 3 relu"},
    {"gate_activation", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "gate activation, same codes"},
    {"origin_mode", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "h = u * h_prev + (1 - u) * c instead of u * c + (1 - u) * h_prev"},
};

static rill_status *gru_unit_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, U_INPUT, 0), *hp = rill_infer_in(ctx, U_HIDDEN_PREV, 0);
  const rill_tensor_meta *w = rill_infer_in(ctx, U_WEIGHT, 0), *b = rill_infer_in(ctx, U_BIAS, 0);
  rill_tensor_meta *outs[3];
  for (size_t i = 0; i < 3; i++) outs[i] = rill_infer_out(ctx, i, 0);
  if (!x || !hp || !w || !outs[0] || !outs[1] || !outs[2])
    return rill_infer_error(ctx, "needs inputs Input, HiddenPrev and Weight and outputs Gate, "
                            "ResetHiddenPrev and Hidden");
  for (size_t a = 0; a < 2; a++) {
    int32_t v = ctx->attrs[a].v.i;
    if (v < 0 || v > 3)
      return rill_infer_error(ctx, "attribute %s is %d: expected 0 (identity), 1 (sigmoid), "
                              "2 (tanh) or 3 (relu)", unit_attrs[a].name, (int)v);
  }
  if (!x->known || !hp->known || !w->known) {
    for (size_t i = 0; i < 3; i++) rill_meta_unknown(outs[i]);
    return NULL;
  }
  char s1[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX], s3[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, U_INPUT, 0), rill_dtype_name(x->dtype));
  int64_t d = w->dims.n == 2 ? w->dims.d[0] : -1;
  bool bad = x->dims.n != 2 || hp->dims.n != 2 || w->dims.n != 2 || hp->dtype != x->dtype ||
             w->dtype != x->dtype;
  if (!bad && d >= 0) {
    if ((w->dims.d[1] >= 0 && w->dims.d[1] != 3 * d) || (x->dims.d[1] >= 0 && x->dims.d[1] != 3 * d) ||
        (hp->dims.d[1] >= 0 && hp->dims.d[1] != d))
      bad = true;
  }
  if (!bad && x->dims.d[0] >= 0 && hp->dims.d[0] >= 0 && x->dims.d[0] != hp->dims.d[0]) bad = true;
  if (bad)
    return rill_infer_error(ctx, "inputs Input (%s) %s, HiddenPrev (%s) %s and Weight (%s) %s do "
                            "not fit: expected [N, 3 * D], [N, D] and [D, 3 * D] of one dtype",
                            rill_infer_in_name(ctx, U_INPUT, 0), rill_dims_str(&x->dims, s1, sizeof s1),
                            rill_infer_in_name(ctx, U_HIDDEN_PREV, 0),
                            rill_dims_str(&hp->dims, s2, sizeof s2),
                            rill_infer_in_name(ctx, U_WEIGHT, 0), rill_dims_str(&w->dims, s3, sizeof s3));
  if (b && b->known && (b->dtype != x->dtype || b->dims.n != 2 || (b->dims.d[0] >= 0 && b->dims.d[0] != 1) ||
                        (d >= 0 && b->dims.d[1] >= 0 && b->dims.d[1] != 3 * d)))
    return rill_infer_error(ctx, "input Bias (%s) has shape %s, expected [1, %lld] of Input's dtype",
                            rill_infer_in_name(ctx, U_BIAS, 0), rill_dims_str(&b->dims, s1, sizeof s1),
                            (long long)(3 * d));
  rill_dims hd = {.n = 2, .d = {x->dims.d[0], d}};
  rill_meta_set(outs[U_GATE], x->dtype, &x->dims, 0, -1, -1);
  rill_meta_set(outs[U_RESET_HIDDEN_PREV], x->dtype, &hd, 0, -1, -1);
  rill_meta_set(outs[U_HIDDEN], x->dtype, &hd, 0, -1, -1);
  return NULL;
}

/* Paddle's maker: gru_unit_grad(Input, HiddenPrev, Weight, Bias, Gate, ResetHiddenPrev,
 * Hidden@GRAD) -> Input@GRAD, HiddenPrev@GRAD, Weight@GRAD, Bias@GRAD. */
static rill_status *gru_unit_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Input", "HiddenPrev", "Weight", "Bias", "Gate",
                                    "ResetHiddenPrev"};
  static const char *const outg[] = {"Hidden"};
  static const char *const ing[] = {"Input", "HiddenPrev", "Weight", "Bias"};
  return rill_grad_emit(ctx, "gru_unit_grad", fwd, RILL_COUNTOF(fwd), outg, 1, ing, RILL_COUNTOF(ing));
}

const rill_op_schema rill_schema_gru_unit = {
    .type = "gru_unit",
    .doc = "One GRU step: [N, 3D] projected inputs and the previous hidden state give the "
           "gates (update, reset, candidate) and the new hidden state.",
    .inputs = unit_inputs,
    .ninputs = RILL_COUNTOF(unit_inputs),
    .outputs = unit_outputs,
    .noutputs = RILL_COUNTOF(unit_outputs),
    .attrs = unit_attrs,
    .nattrs = RILL_COUNTOF(unit_attrs),
    .flags = 0,
    .infer = gru_unit_infer,
    .grad = gru_unit_maker,
    .kernel_dtype_slot = U_INPUT,
    .dtype_attr = -1,
};

enum { UG_INPUT, UG_HIDDEN_PREV, UG_WEIGHT, UG_BIAS, UG_GATE, UG_RESET_HIDDEN_PREV, UG_DHIDDEN };

static const rill_slot_schema unit_grad_inputs[] = {
    [UG_INPUT] = {"Input", 0, "forward Input"},
    [UG_HIDDEN_PREV] = {"HiddenPrev", 0, "forward HiddenPrev"},
    [UG_WEIGHT] = {"Weight", 0, "forward Weight"},
    [UG_BIAS] = {"Bias", RILL_SLOT_DISPENSABLE, "forward Bias"},
    [UG_GATE] = {"Gate", 0, "forward Gate"},
    [UG_RESET_HIDDEN_PREV] = {"ResetHiddenPrev", 0, "forward ResetHiddenPrev"},
    [UG_DHIDDEN] = {"Hidden@GRAD", 0, "gradient of Hidden"},
};
static const rill_slot_schema unit_grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Input"},
    {"HiddenPrev@GRAD", RILL_SLOT_DISPENSABLE, "gradient of HiddenPrev"},
    {"Weight@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Weight"},
    {"Bias@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Bias"},
};

static rill_status *gru_unit_grad_infer(rill_infer_ctx *ctx) {
  for (size_t s = UG_INPUT; s <= UG_DHIDDEN; s++)
    if (!(unit_grad_inputs[s].flags & RILL_SLOT_DISPENSABLE) && !rill_infer_in(ctx, s, 0))
      return rill_infer_error(ctx, "needs input %s", unit_grad_inputs[s].name);
  RILL_TRY(rill_grad_infer_same(ctx, UG_DHIDDEN, UG_HIDDEN_PREV));
  for (size_t o = 0; o < 4; o++)
    if (rill_infer_out(ctx, o, 0) && !rill_infer_in(ctx, o, 0))
      return rill_infer_error(ctx, "output %s needs input %s", unit_grad_outputs[o].name,
                              unit_grad_inputs[o].name);
  for (size_t o = 0; o < 4; o++) rill_grad_infer_like(ctx, o, o);
  return NULL;
}

const rill_op_schema rill_schema_gru_unit_grad = {
    .type = "gru_unit_grad",
    .doc = "Gradients of gru_unit with respect to Input, HiddenPrev, Weight and Bias.",
    .inputs = unit_grad_inputs,
    .ninputs = RILL_COUNTOF(unit_grad_inputs),
    .outputs = unit_grad_outputs,
    .noutputs = RILL_COUNTOF(unit_grad_outputs),
    .attrs = unit_attrs,
    .nattrs = RILL_COUNTOF(unit_attrs),
    .flags = 0,
    .infer = gru_unit_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = UG_INPUT,
    .dtype_attr = -1,
};
RILL_OP_TABLE_CHECKS(gru);
