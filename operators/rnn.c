/* rnn: Paddle 2.x's multi-layer, optionally bidirectional recurrent network, the op
 * paddle.nn.LSTM, GRU and SimpleRNN lower to in static graphs. Input is time-major
 * [T, N, I]; PreState holds h0 (and c0 for LSTM), each [L * D, N, H]; WeightList is the
 * packed list of operators/rnn.h; SequenceLength [N] masks the steps past each
 * sequence's length. Out is [T, N, D * H] (the two directions side by side), State the
 * last h (and c) of every layer and direction. In training (is_test false) Reserve keeps
 * what rnn_grad reads (layout in operators/rnn.h) and DropoutState the mask of the
 * dropout between layers (uint8, Out's shape, 1 = kept, one mask for every layer as in
 * Paddle); at inference both are left empty.
 *
 * rnn_grad, Paddle's slots: Input, PreState, WeightList, SequenceLength, DropoutState,
 * Reserve, Out, Out@GRAD, State@GRAD -> Input@GRAD, PreState@GRAD, WeightList@GRAD. */
#include "operators/rnn.h"

#include "operators/math_grad.h"
#include "operators/op_util.h"

enum { IN_INPUT, IN_PRE_STATE, IN_WEIGHT_LIST, IN_SEQUENCE_LENGTH };
enum { OUT_DROPOUT_STATE, OUT_RESERVE, OUT_OUT, OUT_STATE };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", 0, "[T, N, I], time-major"},
    [IN_PRE_STATE] = {"PreState", RILL_SLOT_DUPLICABLE,
                      "h0 (and c0 for LSTM), each [num_layers * directions, N, hidden_size]"},
    [IN_WEIGHT_LIST] = {"WeightList", RILL_SLOT_DUPLICABLE,
                        "every layer and direction's W_ih, W_hh, then their b_ih, b_hh"},
    [IN_SEQUENCE_LENGTH] = {"SequenceLength", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA,
                            "[N] int32/int64: steps at or past it give zeros, keep the state (read on the "
                            "host)"},
};
static const rill_slot_schema outputs[] = {
    [OUT_DROPOUT_STATE] = {"DropoutState", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                           "training: uint8 [T, N, D * H], the mask of the dropout between "
                           "layers (1 = kept); inference: left empty"},
    [OUT_RESERVE] = {"Reserve", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                     "training: the gates and lower layers' outputs rnn_grad reads "
                     "(operators/rnn.h); inference: left empty"},
    [OUT_OUT] = {"Out", 0, "[T, N, directions * hidden_size]"},
    [OUT_STATE] = {"State", RILL_SLOT_DUPLICABLE, "last h (and c), PreState's shapes"},
};
static const rill_attr_schema attrs[] = {
    {"dropout_prob", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
     "dropout between layers when training (upscale_in_train), in [0, 1]"},
    {"is_bidirec", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "a backward direction too, its output after the forward one's"},
    {"input_size", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(10),
     "Input's last extent (the weights' shapes decide)"},
    {"hidden_size", RILL_ATTR_INT, 0, RILL_DEF_INT(100), "H"},
    {"num_layers", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "stacked layers"},
    {"mode", RILL_ATTR_STRING, RILL_ATTR_REQUIRED, RILL_DEF_STRING("LSTM"),
     "LSTM, GRU, RNN_RELU or RNN_TANH"},
    {"seed", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(0),
     "dropout seed: the same mask on every run; 0: drawn from the executor's generator"},
    {"is_test", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "inference: no dropout, nothing kept for the gradient"},
};

/* -1 matches anything. */
static bool extent_fits(int64_t got, int64_t want) {
  return got < 0 || want < 0 || got == want;
}

static bool dims_fit(const rill_dims *got, const rill_dims *want) {
  if (got->n != want->n) return false;
  for (int i = 0; i < got->n; i++)
    if (!extent_fits(got->d[i], want->d[i])) return false;
  return true;
}

static const char *role_name(rill_rnn_weight_role r) {
  return r.bias ? (r.hidden ? "hidden bias b_hh" : "input bias b_ih")
                : (r.hidden ? "hidden weight W_hh" : "input weight W_ih");
}

/* The checks rnn and rnn_grad share (their first four input slots and their attributes
 * are the same tables): the attributes, PreState's and WeightList's counts and, where
 * every input is known (*known), their dtypes and shapes. Fills *g (input -1 while
 * unknown), *steps and *batch. */
static rill_status *check_inputs(rill_infer_ctx *ctx, rill_rnn_mode *mode_out, rill_rnn_geom *g,
                                 int64_t *steps, int64_t *batch, bool *known_out) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0);
  const char *mode_s = ctx->attrs[RILL_RNN_ATTR_MODE].v.s;
  rill_rnn_mode mode = rill_rnn_mode_of(mode_s);
  if (mode == RILL_RNN_MODE_COUNT)
    return rill_infer_error(ctx, "attribute mode is \"%s\", expected LSTM, GRU, RNN_RELU or "
                            "RNN_TANH", mode_s ? mode_s : "");
  int64_t layers = ctx->attrs[RILL_RNN_ATTR_NUM_LAYERS].v.i;
  int64_t hidden = ctx->attrs[RILL_RNN_ATTR_HIDDEN_SIZE].v.i;
  int64_t dirs = ctx->attrs[RILL_RNN_ATTR_IS_BIDIREC].v.b ? 2 : 1;
  if (layers < 1 || hidden < 1)
    return rill_infer_error(ctx, "attributes num_layers %lld and hidden_size %lld must be "
                            "positive", (long long)layers, (long long)hidden);
  float p = ctx->attrs[RILL_RNN_ATTR_DROPOUT_PROB].v.f;
  if (!(p >= 0 && p <= 1))
    return rill_infer_error(ctx, "attribute dropout_prob %g must lie in [0, 1]", (double)p);
  size_t nstate = mode == RILL_RNN_LSTM ? 2 : 1;
  if (ctx->nin[IN_PRE_STATE] != nstate)
    return rill_infer_error(ctx, "input PreState has %zu tensors, mode %s takes %zu (%s)",
                            ctx->nin[IN_PRE_STATE], mode_s, nstate,
                            nstate == 2 ? "h0, c0" : "h0");
  *g = (rill_rnn_geom){.gates = rill_rnn_gates(mode), .layers = layers, .dirs = dirs,
                       .hidden = hidden, .input = -1};
  *mode_out = mode;
  *steps = *batch = -1;
  int64_t nw = rill_rnn_weight_count(g);
  if ((int64_t)ctx->nin[IN_WEIGHT_LIST] != nw)
    return rill_infer_error(ctx, "input WeightList has %zu tensors, expected %lld (4 per layer "
                            "and direction: %lld layers, %lld directions)",
                            ctx->nin[IN_WEIGHT_LIST], (long long)nw, (long long)layers,
                            (long long)dirs);
  bool known = x->known;
  for (size_t i = 0; i < nstate; i++) known = known && ctx->in[IN_PRE_STATE][i].known;
  for (int64_t k = 0; k < nw; k++) known = known && ctx->in[IN_WEIGHT_LIST][k].known;
  const rill_tensor_meta *len = rill_infer_in(ctx, IN_SEQUENCE_LENGTH, 0);
  if (len) known = known && len->known;
  *known_out = known;
  if (!known) return NULL;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_INPUT, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 3)
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [T, N, I] "
                            "(time-major)", xn, rill_dims_str(&x->dims, a, sizeof a));
  g->input = x->dims.d[2];
  *steps = x->dims.d[0];
  *batch = x->dims.d[1];
  rill_dims sd = {.n = 3, .d = {layers * dirs, *batch, hidden}};
  for (size_t i = 0; i < nstate; i++) {
    const rill_tensor_meta *s = &ctx->in[IN_PRE_STATE][i];
    if (s->dtype != x->dtype || !dims_fit(&s->dims, &sd))
      return rill_infer_error(ctx, "input PreState[%zu] (%s, %s) is %s %s, expected %s %s "
                              "(num_layers * directions, N, hidden_size)", i,
                              i == 0 ? "h0" : "c0", rill_infer_in_name(ctx, IN_PRE_STATE, i),
                              rill_dtype_name(s->dtype), rill_dims_str(&s->dims, a, sizeof a),
                              rill_dtype_name(x->dtype), rill_dims_str(&sd, b, sizeof b));
    if (*batch < 0) *batch = s->dims.d[1];
  }
  for (int64_t k = 0; k < nw; k++) {
    const rill_tensor_meta *w = &ctx->in[IN_WEIGHT_LIST][k];
    rill_dims want;
    rill_rnn_weight_role r = rill_rnn_weight_at(g, k, &want);
    if (w->dtype != x->dtype || !dims_fit(&w->dims, &want))
      return rill_infer_error(ctx, "input WeightList[%lld] (%s) is %s %s, expected %s %s: the "
                              "%s of layer %lld, %s direction (mode %s, hidden_size %lld)",
                              (long long)k, rill_infer_in_name(ctx, IN_WEIGHT_LIST, (size_t)k),
                              rill_dtype_name(w->dtype), rill_dims_str(&w->dims, a, sizeof a),
                              rill_dtype_name(x->dtype), rill_dims_str(&want, b, sizeof b),
                              role_name(r), (long long)r.layer, r.dir ? "backward" : "forward",
                              mode_s, (long long)hidden);
  }
  if (len) {
    if ((len->dtype != RILL_DTYPE_INT32 && len->dtype != RILL_DTYPE_INT64) || len->dims.n != 1 ||
        !extent_fits(len->dims.d[0], *batch))
      return rill_infer_error(ctx, "input SequenceLength (%s) is %s %s, expected int32 or int64 "
                              "[%lld] (one length per sequence)",
                              rill_infer_in_name(ctx, IN_SEQUENCE_LENGTH, 0),
                              rill_dtype_name(len->dtype), rill_dims_str(&len->dims, a, sizeof a),
                              (long long)*batch);
  }
  return NULL;
}

/* Reserve's size for the geometry, -1 while T or N is unknown. */
static int64_t reserve_numel(const rill_rnn_geom *g, rill_rnn_mode mode, int64_t steps,
                             int64_t batch) {
  return steps < 0 || batch < 0 ? -1 : rill_rnn_reserve_numel(g, mode, steps, batch);
}

static rill_status *rnn_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input Input and output Out");
  rill_rnn_mode mode;
  rill_rnn_geom g;
  int64_t steps, batch;
  bool known;
  RILL_TRY(check_inputs(ctx, &mode, &g, &steps, &batch, &known));
  size_t nstate = mode == RILL_RNN_LSTM ? 2 : 1;
  if (ctx->nout[OUT_STATE] != nstate)
    return rill_infer_error(ctx, "output State has %zu tensors, mode %s gives %zu",
                            ctx->nout[OUT_STATE], ctx->attrs[RILL_RNN_ATTR_MODE].v.s, nstate);
  bool train = !ctx->attrs[RILL_RNN_ATTR_IS_TEST].v.b;
  rill_tensor_meta *reserve = rill_infer_out(ctx, OUT_RESERVE, 0);
  rill_tensor_meta *mask = rill_infer_out(ctx, OUT_DROPOUT_STATE, 0);
  if (!known) {
    rill_meta_unknown(out);
    for (size_t i = 0; i < nstate; i++) rill_meta_unknown(rill_infer_out(ctx, OUT_STATE, i));
    if (train && reserve) rill_meta_unknown(reserve);
    if (train && mask) rill_meta_unknown(mask);
    return NULL;
  }
  rill_dims od = {.n = 3, .d = {steps, batch, g.dirs * g.hidden}};
  rill_dims sd = {.n = 3, .d = {g.layers * g.dirs, batch, g.hidden}};
  rill_meta_set(out, x->dtype, &od, 0, -1, -1);
  for (size_t i = 0; i < nstate; i++)
    rill_meta_set(rill_infer_out(ctx, OUT_STATE, i), x->dtype, &sd, 0, -1, -1);
  /* At inference the two stay as they are: Paddle's inference programs declare them. */
  if (train && reserve) {
    rill_dims rd = {.n = 1, .d = {reserve_numel(&g, mode, steps, batch)}};
    rill_meta_set(reserve, x->dtype, &rd, 0, -1, -1);
  }
  if (train && mask) rill_meta_set(mask, RILL_DTYPE_UINT8, &od, 0, -1, -1);
  return NULL;
}

/* Paddle's RNNGradOpMaker: rnn_grad reads the forward's inputs, DropoutState, Reserve
 * and Out, and the gradients of Out and State. */
static rill_status *rnn_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "rnn_grad",
                        RILL_NAMES("Input", "PreState", "WeightList", "SequenceLength",
                                   "DropoutState", "Reserve", "Out"),
                        RILL_NAMES("Out", "State"), RILL_NAMES("Input", "PreState", "WeightList"));
}

const rill_op_schema rill_schema_rnn = {
    .type = "rnn",
    .doc = "Paddle 2.x's multi-layer, optionally bidirectional LSTM, GRU or simple RNN over a "
           "time-major batch, with optional per-sequence lengths.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_RANDOM, /* the dropout between layers draws from the generator */
    .infer = rnn_infer,
    .grad = rnn_grad_maker,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};
/* The first four slots are rnn's, so check_inputs reads both ops. */
enum { G_INPUT, G_PRE_STATE, G_WEIGHT_LIST, G_SEQUENCE_LENGTH, G_DROPOUT_STATE, G_RESERVE,
       G_OUT, G_OUT_GRAD, G_STATE_GRAD };
static const rill_slot_schema grad_inputs[] = {
    [G_INPUT] = {"Input", 0, "forward Input"},
    [G_PRE_STATE] = {"PreState", RILL_SLOT_DUPLICABLE, "forward PreState"},
    [G_WEIGHT_LIST] = {"WeightList", RILL_SLOT_DUPLICABLE, "forward WeightList"},
    [G_SEQUENCE_LENGTH] = {"SequenceLength", RILL_SLOT_DISPENSABLE | RILL_SLOT_HOST_DATA, "forward SequenceLength"},
    [G_DROPOUT_STATE] = {"DropoutState", RILL_SLOT_DISPENSABLE,
                         "forward DropoutState (read when dropout_prob > 0 and num_layers > 1)"},
    [G_RESERVE] = {"Reserve", RILL_SLOT_DISPENSABLE,
                   "forward Reserve, written in training mode (is_test false)"},
    [G_OUT] = {"Out", 0, "forward Out (the top layer's h)"},
    [G_OUT_GRAD] = {"Out@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Out (absent: zeros)"},
    [G_STATE_GRAD] = {"State@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
                      "gradients of State (absent: zeros)"},
};
enum { GO_INPUT, GO_PRE_STATE, GO_WEIGHT_LIST };
static const rill_slot_schema grad_outputs[] = {
    [GO_INPUT] = {"Input@GRAD", RILL_SLOT_DISPENSABLE, "Input's shape"},
    [GO_PRE_STATE] = {"PreState@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
                      "PreState's shapes"},
    [GO_WEIGHT_LIST] = {"WeightList@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
                        "WeightList's shapes"},
};
_Static_assert(RILL_SAME_POS(G_INPUT, IN_INPUT) && RILL_SAME_POS(G_PRE_STATE, IN_PRE_STATE) &&
                   RILL_SAME_POS(G_WEIGHT_LIST, IN_WEIGHT_LIST) &&
                   RILL_SAME_POS(G_SEQUENCE_LENGTH, IN_SEQUENCE_LENGTH),
               "rnn_grad's first slots must be rnn's");

static rill_status *rnn_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, G_INPUT, 0);
  if (!x || !rill_infer_in(ctx, G_OUT, 0))
    return rill_infer_error(ctx, "needs inputs Input and Out");
  if (ctx->attrs[RILL_RNN_ATTR_IS_TEST].v.b)
    return rill_infer_error(ctx, "attribute is_test is true: the gradient needs the forward rnn "
                            "run in training mode (is_test false), which keeps the gates in "
                            "Reserve");
  const rill_tensor_meta *reserve = rill_infer_in(ctx, G_RESERVE, 0);
  if (!reserve)
    return rill_infer_error(ctx, "needs input Reserve, the forward's output that keeps the "
                            "gates in training mode");
  rill_rnn_mode mode;
  rill_rnn_geom g;
  int64_t steps, batch;
  bool known;
  RILL_TRY(check_inputs(ctx, &mode, &g, &steps, &batch, &known));
  bool dropout = g.layers > 1 && ctx->attrs[RILL_RNN_ATTR_DROPOUT_PROB].v.f > 0;
  if (dropout && !rill_infer_in(ctx, G_DROPOUT_STATE, 0))
    return rill_infer_error(ctx, "needs input DropoutState (dropout_prob %g between %lld layers)",
                            (double)ctx->attrs[RILL_RNN_ATTR_DROPOUT_PROB].v.f,
                            (long long)g.layers);
  if (known && reserve->known) {
    int64_t want = reserve_numel(&g, mode, steps, batch);
    char a[RILL_DIMS_STR_MAX];
    if (reserve->dtype != x->dtype || reserve->dims.n != 1 || !extent_fits(reserve->dims.d[0], want))
      return rill_infer_error(ctx, "input Reserve (%s) is %s %s, expected %s [%lld] (mode %s, "
                              "%lld layers, %lld directions, %lld steps, %lld sequences)",
                              rill_infer_in_name(ctx, G_RESERVE, 0), rill_dtype_name(reserve->dtype),
                              rill_dims_str(&reserve->dims, a, sizeof a), rill_dtype_name(x->dtype),
                              (long long)want, ctx->attrs[RILL_RNN_ATTR_MODE].v.s,
                              (long long)g.layers, (long long)g.dirs, (long long)steps,
                              (long long)batch);
  }
  size_t nstate = mode == RILL_RNN_LSTM ? 2 : 1;
  if (ctx->nin[G_STATE_GRAD] && ctx->nin[G_STATE_GRAD] != nstate)
    return rill_infer_error(ctx, "input State@GRAD has %zu tensors, mode %s has %zu states",
                            ctx->nin[G_STATE_GRAD], ctx->attrs[RILL_RNN_ATTR_MODE].v.s, nstate);
  rill_grad_infer_like(ctx, GO_INPUT, G_INPUT);
  rill_grad_infer_like(ctx, GO_PRE_STATE, G_PRE_STATE);
  rill_grad_infer_like(ctx, GO_WEIGHT_LIST, G_WEIGHT_LIST);
  return NULL;
}

const rill_op_schema rill_schema_rnn_grad = {
    .type = "rnn_grad",
    .doc = "Gradients of rnn by backpropagation through time, from the gates the forward kept "
           "in Reserve.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = rnn_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(rnn);
