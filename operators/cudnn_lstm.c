/* cudnn_lstm: Fluid 1.x's multi-layer, optionally bidirectional LSTM (layers.lstm), which
 * Paddle runs through cuDNN only. Input is time-major [T, N, I]; InitH and InitC are
 * [L * D, N, H]; W is the one flat weight in cuDNN's canonical layout
 * (operators/cudnn_lstm.h). Out is [T, N, D * H] (the two directions side by side),
 * last_h and last_c the last states of every layer and direction. Between layers, when
 * training (is_test false) with dropout_prob > 0, the layer below's output goes through
 * dropout (upscale_in_train: kept values scaled by 1 / (1 - p)).
 *
 * Slots and attributes are Paddle 1.8's. Cache, the persistable raw variable in which
 * Paddle's GPU kernel keeps cuDNN's descriptors and dropout state, is accepted and not
 * read. Reserve is rill's own (dispensable): what the forward keeps in training for the
 * gradient (operators/cudnn_lstm.h); without it, cudnn_lstm_grad runs the forward again.
 *
 * cudnn_lstm_grad, Paddle 1.8's slots plus Reserve: Input, InitH, InitC, W, Cache,
 * Reserve, Out, Out@GRAD, last_h@GRAD, last_c@GRAD -> Input@GRAD, InitH@GRAD,
 * InitC@GRAD, W@GRAD. */
#include "operators/cudnn_lstm.h"

#include "operators/math_grad.h"
#include "operators/op_util.h"

enum { IN_INPUT, IN_INIT_H, IN_INIT_C, IN_W, IN_CACHE };
enum { OUT_OUT, OUT_LAST_H, OUT_LAST_C, OUT_RESERVE };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", 0, "[T, N, input_size], time-major"},
    [IN_INIT_H] = {"InitH", 0, "[num_layers * directions, N, hidden_size]"},
    [IN_INIT_C] = {"InitC", 0, "[num_layers * directions, N, hidden_size]"},
    [IN_W] = {"W", 0, "the flat weight, cuDNN's canonical layout (operators/cudnn_lstm.h)"},
    [IN_CACHE] = {"Cache", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_DECL_ONLY,
                  "Paddle's cuDNN state (a raw variable): not read"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUT] = {"Out", 0, "[T, N, directions * hidden_size]"},
    [OUT_LAST_H] = {"last_h", 0, "InitH's shape: each layer and direction's last h"},
    [OUT_LAST_C] = {"last_c", 0, "InitC's shape: each layer and direction's last c"},
    [OUT_RESERVE] = {"Reserve", RILL_SLOT_DISPENSABLE | RILL_SLOT_INTERMEDIATE,
                     "rill's: training, the gates, lower layers' outputs and dropout mask "
                     "cudnn_lstm_grad reads (operators/cudnn_lstm.h); inference: left empty"},
};
static const rill_attr_schema attrs[] = {
    {"max_len", RILL_ATTR_INT, 0, RILL_DEF_INT(20),
     "Paddle sizes cuDNN's descriptors by it; the steps are Input's first extent"},
    {"dropout_prob", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f),
     "dropout between layers when training (upscale_in_train), in [0, 1]"},
    {"is_bidirec", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "a backward direction too, its output after the forward one's"},
    {"input_size", RILL_ATTR_INT, 0, RILL_DEF_INT(10), "I, Input's last extent"},
    {"hidden_size", RILL_ATTR_INT, 0, RILL_DEF_INT(100), "H"},
    {"num_layers", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "stacked layers"},
    {"is_test", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "inference: no dropout, nothing kept for the gradient"},
    {"seed", RILL_ATTR_INT, 0, RILL_DEF_INT(-1),
     "dropout seed: >= 0 the same mask on every run; negative: drawn from the executor's "
     "generator each run"},
};

typedef struct geom {
  int64_t layers, dirs, hidden, input, steps, batch; /* input, steps, batch: -1 unknown */
} geom;

static bool extent_fits(int64_t got, int64_t want) {
  return got < 0 || want < 0 || got == want;
}

/* The checks cudnn_lstm and cudnn_lstm_grad share (their first four slots and their
 * attributes are the same tables): the attributes and, where every input is known
 * (*known), the dtypes and shapes of Input, InitH, InitC and W. */
static rill_status *check_inputs(rill_infer_ctx *ctx, geom *g, bool *known_out) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0);
  g->layers = ctx->attrs[RILL_CUDNN_LSTM_ATTR_NUM_LAYERS].v.i;
  g->hidden = ctx->attrs[RILL_CUDNN_LSTM_ATTR_HIDDEN_SIZE].v.i;
  g->dirs = ctx->attrs[RILL_CUDNN_LSTM_ATTR_IS_BIDIREC].v.b ? 2 : 1;
  g->input = g->steps = g->batch = -1;
  if (g->layers < 1 || g->hidden < 1)
    return rill_infer_error(ctx, "attributes num_layers %lld and hidden_size %lld must be "
                            "positive", (long long)g->layers, (long long)g->hidden);
  float p = ctx->attrs[RILL_CUDNN_LSTM_ATTR_DROPOUT_PROB].v.f;
  if (!(p >= 0 && p <= 1))
    return rill_infer_error(ctx, "attribute dropout_prob %g must lie in [0, 1]", (double)p);
  bool known = x && x->known;
  for (size_t s = IN_INIT_H; s <= IN_W; s++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, s, 0);
    if (!m) return rill_infer_error(ctx, "needs input %s", ctx->schema->inputs[s].name);
    known = known && m->known;
  }
  *known_out = known;
  if (!known) return NULL;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_INPUT, 0);
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 3)
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [T, N, input_size] "
                            "(time-major)", xn, rill_dims_str(&x->dims, a, sizeof a));
  g->steps = x->dims.d[0], g->batch = x->dims.d[1], g->input = x->dims.d[2];
  int64_t isz = ctx->attrs[RILL_CUDNN_LSTM_ATTR_INPUT_SIZE].v.i;
  if (g->input >= 0 && isz > 0 && isz != g->input)
    return rill_infer_error(ctx, "attribute input_size %lld differs from Input (%s)'s last "
                            "extent %lld", (long long)isz, xn, (long long)g->input);
  rill_dims sd = {.n = 3, .d = {g->layers * g->dirs, g->batch, g->hidden}};
  for (size_t s = IN_INIT_H; s <= IN_INIT_C; s++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, s, 0);
    bool fits = m->dims.n == 3;
    for (int i = 0; fits && i < 3; i++) fits = extent_fits(m->dims.d[i], sd.d[i]);
    if (m->dtype != x->dtype || !fits)
      return rill_infer_error(ctx, "input %s (%s) is %s %s, expected %s %s (num_layers * "
                              "directions, N, hidden_size)", ctx->schema->inputs[s].name,
                              rill_infer_in_name(ctx, s, 0), rill_dtype_name(m->dtype),
                              rill_dims_str(&m->dims, a, sizeof a), rill_dtype_name(x->dtype),
                              rill_dims_str(&sd, b, sizeof b));
    if (g->batch < 0) g->batch = m->dims.d[1];
  }
  const rill_tensor_meta *w = rill_infer_in(ctx, IN_W, 0);
  if (g->input >= 0) {
    int64_t want = rill_cudnn_lstm_weight_numel(g->layers, g->dirs, g->input, g->hidden);
    int64_t got = -1;
    bool counted = rill_dims_numel(&w->dims, INT64_MAX, &got);
    if (w->dtype != x->dtype || (counted && got != want))
      return rill_infer_error(ctx, "input W (%s) is %s %s, expected %s with %lld elements (the "
                              "flat weight of %lld layers, %lld directions, input_size %lld, "
                              "hidden_size %lld)", rill_infer_in_name(ctx, IN_W, 0),
                              rill_dtype_name(w->dtype), rill_dims_str(&w->dims, a, sizeof a),
                              rill_dtype_name(x->dtype), (long long)want, (long long)g->layers,
                              (long long)g->dirs, (long long)g->input, (long long)g->hidden);
  }
  return NULL;
}

static rill_status *cudnn_lstm_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0);
  rill_tensor_meta *lh = rill_infer_out(ctx, OUT_LAST_H, 0);
  rill_tensor_meta *lc = rill_infer_out(ctx, OUT_LAST_C, 0);
  if (!rill_infer_in(ctx, IN_INPUT, 0) || !out || !lh || !lc)
    return rill_infer_error(ctx, "needs input Input and outputs Out, last_h, last_c");
  geom g;
  bool known;
  RILL_TRY(check_inputs(ctx, &g, &known));
  bool train = !ctx->attrs[RILL_CUDNN_LSTM_ATTR_IS_TEST].v.b;
  rill_tensor_meta *reserve = rill_infer_out(ctx, OUT_RESERVE, 0);
  if (!known) {
    rill_meta_unknown(out);
    rill_meta_unknown(lh);
    rill_meta_unknown(lc);
    if (train && reserve) rill_meta_unknown(reserve);
    return NULL;
  }
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0);
  rill_dims od = {.n = 3, .d = {g.steps, g.batch, g.dirs * g.hidden}};
  rill_dims sd = {.n = 3, .d = {g.layers * g.dirs, g.batch, g.hidden}};
  rill_meta_set(out, x->dtype, &od, 0, -1, -1);
  rill_meta_set(lh, x->dtype, &sd, 0, -1, -1);
  rill_meta_set(lc, x->dtype, &sd, 0, -1, -1);
  if (train && reserve) {
    int64_t n = g.steps < 0 || g.batch < 0
                    ? -1
                    : rill_cudnn_lstm_reserve_numel(g.layers, g.dirs, g.hidden, g.steps, g.batch);
    rill_dims rd = {.n = 1, .d = {n}};
    rill_meta_set(reserve, x->dtype, &rd, 0, -1, -1);
  }
  return NULL;
}

/* Paddle's grad maker (the forward's inputs and Out, the gradients of the three
 * outputs), with rill's Reserve when the forward has it. */
static rill_status *cudnn_lstm_grad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "cudnn_lstm_grad",
                        RILL_NAMES("Input", "InitH", "InitC", "W", "Cache", "Reserve", "Out"),
                        RILL_NAMES("Out", "last_h", "last_c"),
                        RILL_NAMES("Input", "InitH", "InitC", "W"));
}

const rill_op_schema rill_schema_cudnn_lstm = {
    .type = "cudnn_lstm",
    .doc = "Fluid 1.x's multi-layer, optionally bidirectional LSTM over a time-major batch, "
           "its weights in one flat tensor in cuDNN's layout.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_RANDOM, /* the dropout between layers draws from the generator */
    .infer = cudnn_lstm_infer,
    .grad = cudnn_lstm_grad_maker,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

/* The first five slots are cudnn_lstm's, so check_inputs reads both ops. */
enum { G_INPUT, G_INIT_H, G_INIT_C, G_W, G_CACHE, G_RESERVE, G_OUT, G_OUT_GRAD, G_LAST_H_GRAD,
       G_LAST_C_GRAD };
static const rill_slot_schema grad_inputs[] = {
    [G_INPUT] = {"Input", 0, "forward Input"},
    [G_INIT_H] = {"InitH", 0, "forward InitH"},
    [G_INIT_C] = {"InitC", 0, "forward InitC"},
    [G_W] = {"W", 0, "forward W"},
    [G_CACHE] = {"Cache", RILL_SLOT_DISPENSABLE | RILL_SLOT_DECL_ONLY, "forward Cache: not read"},
    [G_RESERVE] = {"Reserve", RILL_SLOT_DISPENSABLE,
                   "forward Reserve (absent: the forward runs again)"},
    [G_OUT] = {"Out", 0, "forward Out"},
    [G_OUT_GRAD] = {"Out@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Out (absent: zeros)"},
    [G_LAST_H_GRAD] = {"last_h@GRAD", RILL_SLOT_DISPENSABLE, "gradient of last_h (absent: zeros)"},
    [G_LAST_C_GRAD] = {"last_c@GRAD", RILL_SLOT_DISPENSABLE, "gradient of last_c (absent: zeros)"},
};
enum { GO_INPUT, GO_INIT_H, GO_INIT_C, GO_W };
static const rill_slot_schema grad_outputs[] = {
    [GO_INPUT] = {"Input@GRAD", RILL_SLOT_DISPENSABLE, "Input's shape"},
    [GO_INIT_H] = {"InitH@GRAD", RILL_SLOT_DISPENSABLE, "InitH's shape"},
    [GO_INIT_C] = {"InitC@GRAD", RILL_SLOT_DISPENSABLE, "InitC's shape"},
    [GO_W] = {"W@GRAD", RILL_SLOT_DISPENSABLE, "W's shape"},
};
_Static_assert(RILL_SAME_POS(G_INPUT, IN_INPUT) && RILL_SAME_POS(G_INIT_H, IN_INIT_H) &&
                   RILL_SAME_POS(G_INIT_C, IN_INIT_C) && RILL_SAME_POS(G_W, IN_W) &&
                   RILL_SAME_POS(G_CACHE, IN_CACHE),
               "cudnn_lstm_grad's first slots must be cudnn_lstm's");

static rill_status *cudnn_lstm_grad_infer(rill_infer_ctx *ctx) {
  if (!rill_infer_in(ctx, G_INPUT, 0) || !rill_infer_in(ctx, G_OUT, 0))
    return rill_infer_error(ctx, "needs inputs Input and Out");
  if (ctx->attrs[RILL_CUDNN_LSTM_GRAD_ATTR_IS_TEST].v.b)
    return rill_infer_error(ctx, "attribute is_test is true: the gradient needs the forward "
                            "cudnn_lstm run in training mode (is_test false)");
  geom g;
  bool known;
  RILL_TRY(check_inputs(ctx, &g, &known));
  const rill_tensor_meta *reserve = rill_infer_in(ctx, G_RESERVE, 0);
  if (known && reserve && reserve->known && g.steps >= 0 && g.batch >= 0) {
    const rill_tensor_meta *x = rill_infer_in(ctx, G_INPUT, 0);
    int64_t want = rill_cudnn_lstm_reserve_numel(g.layers, g.dirs, g.hidden, g.steps, g.batch);
    char a[RILL_DIMS_STR_MAX];
    if (reserve->dtype != x->dtype || reserve->dims.n != 1 ||
        !extent_fits(reserve->dims.d[0], want))
      return rill_infer_error(ctx, "input Reserve (%s) is %s %s, expected %s [%lld]",
                              rill_infer_in_name(ctx, G_RESERVE, 0),
                              rill_dtype_name(reserve->dtype),
                              rill_dims_str(&reserve->dims, a, sizeof a),
                              rill_dtype_name(x->dtype), (long long)want);
  }
  rill_grad_infer_like(ctx, GO_INPUT, G_INPUT);
  rill_grad_infer_like(ctx, GO_INIT_H, G_INIT_H);
  rill_grad_infer_like(ctx, GO_INIT_C, G_INIT_C);
  rill_grad_infer_like(ctx, GO_W, G_W);
  return NULL;
}

const rill_op_schema rill_schema_cudnn_lstm_grad = {
    .type = "cudnn_lstm_grad",
    .doc = "Gradients of cudnn_lstm by backpropagation through time, from the forward's "
           "Reserve or a second run of the forward.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0, /* without Reserve, the mask is drawn again from the seed attribute alone */
    .infer = cudnn_lstm_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(cudnn_lstm);
