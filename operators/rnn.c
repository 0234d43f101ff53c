/* rnn: Paddle 2.x's multi-layer, optionally bidirectional recurrent network, the op
 * paddle.nn.LSTM, GRU and SimpleRNN lower to in static graphs. Input is time-major
 * [T, N, I]; PreState holds h0 (and c0 for LSTM), each [L * D, N, H]; WeightList is the
 * packed list of operators/rnn.h; SequenceLength [N] masks the steps past each
 * sequence's length. Out is [T, N, D * H] (the two directions side by side), State the
 * last h (and c) of every layer and direction. Reserve and DropoutState carry Paddle's
 * training buffers; the CPU kernel leaves them empty. */
#include "operators/rnn.h"

#include "operators/op_util.h"

enum { IN_INPUT, IN_PRE_STATE, IN_WEIGHT_LIST, IN_SEQUENCE_LENGTH };
enum { OUT_DROPOUT_STATE, OUT_RESERVE, OUT_OUT, OUT_STATE };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", 0, "[T, N, I], time-major"},
    [IN_PRE_STATE] = {"PreState", RILL_SLOT_DUPLICABLE,
                      "h0 (and c0 for LSTM), each [num_layers * directions, N, hidden_size]"},
    [IN_WEIGHT_LIST] = {"WeightList", RILL_SLOT_DUPLICABLE,
                        "every layer and direction's W_ih, W_hh, then their b_ih, b_hh"},
    [IN_SEQUENCE_LENGTH] = {"SequenceLength", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                            "[N] int32/int64: steps at or past it give zeros, keep the state"},
};
static const rill_slot_schema outputs[] = {
    [OUT_DROPOUT_STATE] = {"DropoutState", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                           "Paddle's dropout state (cuDNN): left empty"},
    [OUT_RESERVE] = {"Reserve", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                     "Paddle's training buffers: left empty"},
    [OUT_OUT] = {"Out", 0, "[T, N, directions * hidden_size]"},
    [OUT_STATE] = {"State", RILL_SLOT_DUPLICABLE, "last h (and c), PreState's shapes"},
};
static const rill_attr_schema attrs[] = {
    {"dropout_prob", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
     "dropout between layers when training (only 0 is supported with is_test false)"},
    {"is_bidirec", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "a backward direction too, its output after the forward one's"},
    {"input_size", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(10),
     "Input's last extent (the weights' shapes decide)"},
    {"hidden_size", RILL_ATTR_INT, 0, RILL_DEF_INT(100), "H"},
    {"num_layers", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "stacked layers"},
    {"mode", RILL_ATTR_STRING, RILL_ATTR_REQUIRED, RILL_DEF_STRING("LSTM"),
     "LSTM, GRU, RNN_RELU or RNN_TANH"},
    {"seed", RILL_ATTR_INT, RILL_ATTR_EXTRA, RILL_DEF_INT(0), "dropout seed"},
    {"is_test", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "inference: no dropout"},
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

static rill_status *rnn_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input Input and output Out");
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
  if (!ctx->attrs[RILL_RNN_ATTR_IS_TEST].v.b && layers > 1 &&
      ctx->attrs[RILL_RNN_ATTR_DROPOUT_PROB].v.f != 0.0f)
    return rill_infer_error(ctx, "dropout between layers (dropout_prob %g, is_test false) is "
                            "not supported", (double)ctx->attrs[RILL_RNN_ATTR_DROPOUT_PROB].v.f);
  size_t nstate = mode == RILL_RNN_LSTM ? 2 : 1;
  if (ctx->nin[IN_PRE_STATE] != nstate)
    return rill_infer_error(ctx, "input PreState has %zu tensors, mode %s takes %zu (%s)",
                            ctx->nin[IN_PRE_STATE], mode_s, nstate,
                            nstate == 2 ? "h0, c0" : "h0");
  if (ctx->nout[OUT_STATE] != nstate)
    return rill_infer_error(ctx, "output State has %zu tensors, mode %s gives %zu",
                            ctx->nout[OUT_STATE], mode_s, nstate);
  rill_rnn_geom g = {.gates = rill_rnn_gates(mode), .layers = layers, .dirs = dirs,
                     .hidden = hidden, .input = -1};
  int64_t nw = rill_rnn_weight_count(&g);
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
  if (!known) {
    rill_meta_unknown(out);
    for (size_t i = 0; i < nstate; i++) rill_meta_unknown(rill_infer_out(ctx, OUT_STATE, i));
    return NULL;
  }
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_INPUT, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 3)
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [T, N, I] "
                            "(time-major)", xn, rill_dims_str(&x->dims, a, sizeof a));
  g.input = x->dims.d[2];
  int64_t batch = x->dims.d[1];
  rill_dims sd = {.n = 3, .d = {layers * dirs, batch, hidden}};
  for (size_t i = 0; i < nstate; i++) {
    const rill_tensor_meta *s = &ctx->in[IN_PRE_STATE][i];
    if (s->dtype != x->dtype || !dims_fit(&s->dims, &sd))
      return rill_infer_error(ctx, "input PreState[%zu] (%s, %s) is %s %s, expected %s %s "
                              "(num_layers * directions, N, hidden_size)", i,
                              i == 0 ? "h0" : "c0", rill_infer_in_name(ctx, IN_PRE_STATE, i),
                              rill_dtype_name(s->dtype), rill_dims_str(&s->dims, a, sizeof a),
                              rill_dtype_name(x->dtype), rill_dims_str(&sd, b, sizeof b));
    if (batch < 0) batch = s->dims.d[1];
  }
  sd.d[1] = batch;
  for (int64_t k = 0; k < nw; k++) {
    const rill_tensor_meta *w = &ctx->in[IN_WEIGHT_LIST][k];
    rill_dims want;
    rill_rnn_weight_role r = rill_rnn_weight_at(&g, k, &want);
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
        !extent_fits(len->dims.d[0], batch))
      return rill_infer_error(ctx, "input SequenceLength (%s) is %s %s, expected int32 or int64 "
                              "[%lld] (one length per sequence)",
                              rill_infer_in_name(ctx, IN_SEQUENCE_LENGTH, 0),
                              rill_dtype_name(len->dtype), rill_dims_str(&len->dims, a, sizeof a),
                              (long long)batch);
  }
  rill_dims od = {.n = 3, .d = {x->dims.d[0], batch, dirs * hidden}};
  rill_meta_set(out, x->dtype, &od, 0, -1, -1);
  for (size_t i = 0; i < nstate; i++)
    rill_meta_set(rill_infer_out(ctx, OUT_STATE, i), x->dtype, &sd, 0, -1, -1);
  return NULL;
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
    .flags = 0,
    .infer = rnn_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};
RILL_OP_TABLE_CHECKS(rnn);
