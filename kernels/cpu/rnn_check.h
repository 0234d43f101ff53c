/* The geometry of one run of a multi-layer recurrent network (Paddle 2.x's rnn op,
 * Fluid 1.x's cudnn_lstm), and the checks of their inputs that every kernel of those ops
 * and their gradients makes (the CPU's, kernels/cpu/rnn.c and cudnn_lstm.c, and the
 * device's, kernels/cuda/rnn.c). */
#ifndef RILL_KERNELS_CPU_RNN_CHECK_H
#define RILL_KERNELS_CPU_RNN_CHECK_H

#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/random.h"
#include "kernels/cpu/kernels.h"
#include "operators/cudnn_lstm.h"
#include "operators/rnn.h"

/* The geometry of one run, checked by the caller. */
typedef struct rnn_run {
  rill_rnn_mode mode;
  rill_rnn_geom g;
  int64_t T, N;
  const int64_t *lens; /* per sequence; NULL: every sequence has all T steps */
  float dropout_prob;  /* of the dropout between layers */
} rnn_run;

/* The part of the checks the two ops share: the geometry of Input x [T, N, I] and the
 * attributes at the given positions (num_layers and hidden_size positive, dropout_prob
 * in [0, 1]); fills r but for its lengths. */
static inline rill_status *rnn_geom_of(rill_kernel_ctx *ctx, const rill_tensor *x, rill_rnn_mode mode,
                                       size_t layers_at, size_t bidirec_at, size_t hidden_at, size_t dropout_at,
                                       rnn_run *r) {
  *r = (rnn_run){.mode = mode, .T = x->dims.d[0], .N = x->dims.d[1], .lens = NULL};
  rill_rnn_geom *g = &r->g;
  g->gates = rill_rnn_gates(mode);
  g->layers = ctx->attrs[layers_at].v.i;
  g->dirs = ctx->attrs[bidirec_at].v.b ? 2 : 1;
  g->hidden = ctx->attrs[hidden_at].v.i;
  g->input = x->dims.d[2];
  if (g->layers < 1 || g->hidden < 1)
    return rill_kernel_error(ctx, "attributes num_layers and hidden_size must be positive");
  r->dropout_prob = ctx->attrs[dropout_at].v.f;
  if (!(r->dropout_prob >= 0 && r->dropout_prob <= 1))
    return rill_kernel_error(ctx, "attribute dropout_prob %g must lie in [0, 1]", (double)r->dropout_prob);
  return NULL;
}

/* Input `slot` [i], an initial state: [layers * dirs, N, hidden] of dtype dt. */
static inline rill_status *rnn_check_state(rill_kernel_ctx *ctx, rill_dtype dt, size_t slot, size_t i,
                                           const rnn_run *r) {
  rill_tensor *s = NULL;
  RILL_TRY(rill_kin_need(ctx, slot, i, dt, &s));
  rill_dims sd = {.n = 3, .d = {r->g.layers * r->g.dirs, r->N, r->g.hidden}};
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (!rill_dims_equal(&s->dims, &sd))
    return rill_kernel_error(ctx, "input %s[%zu] (%s) has shape %s, expected %s", ctx->schema->inputs[slot].name, i,
                             rill_kin_name(ctx, slot, i), rill_dims_str(&s->dims, a, sizeof a),
                             rill_dims_str(&sd, b, sizeof b));
  return NULL;
}

/* The checks of the inference on the inputs the rnn kernels share (rnn and rnn_grad, on
 * every place), repeated where memory safety depends on them; fills r but for its
 * lengths. */
static inline rill_status *rnn_check_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rnn_run *r) {
  const char *mode_s = ctx->attrs[RILL_RNN_ATTR_MODE].v.s;
  rill_rnn_mode mode = rill_rnn_mode_of(mode_s);
  if (mode == RILL_RNN_MODE_COUNT)
    return rill_kernel_error(ctx, "attribute mode is \"%s\", expected LSTM, GRU, RNN_RELU or "
                             "RNN_TANH", mode_s ? mode_s : "");
  rill_tensor *x = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_RNN_IN_INPUT, 0, dt, &x));
  if (x->dims.n != 3)
    return rill_kernel_error(ctx, "input Input (%s) must be [T, N, I]",
                             rill_kin_name(ctx, RILL_RNN_IN_INPUT, 0));
  RILL_TRY(rnn_geom_of(ctx, x, mode, RILL_RNN_ATTR_NUM_LAYERS, RILL_RNN_ATTR_IS_BIDIREC, RILL_RNN_ATTR_HIDDEN_SIZE,
                       RILL_RNN_ATTR_DROPOUT_PROB, r));
  const rill_rnn_geom *g = &r->g;
  int64_t nw = rill_rnn_weight_count(g);
  if ((int64_t)ctx->nin[RILL_RNN_IN_WEIGHT_LIST] != nw)
    return rill_kernel_error(ctx, "input WeightList has %zu tensors, expected %lld",
                             ctx->nin[RILL_RNN_IN_WEIGHT_LIST], (long long)nw);
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  for (int64_t k = 0; k < nw; k++) {
    rill_tensor *w = NULL;
    RILL_TRY(rill_kin_need(ctx, RILL_RNN_IN_WEIGHT_LIST, (size_t)k, dt, &w));
    rill_dims want;
    rill_rnn_weight_at(g, k, &want);
    if (!rill_dims_equal(&w->dims, &want))
      return rill_kernel_error(ctx, "input WeightList[%lld] (%s) has shape %s, expected %s",
                               (long long)k, rill_kin_name(ctx, RILL_RNN_IN_WEIGHT_LIST, (size_t)k),
                               rill_dims_str(&w->dims, a, sizeof a), rill_dims_str(&want, b, sizeof b));
  }
  size_t nstate = mode == RILL_RNN_LSTM ? 2 : 1;
  if (ctx->nin[RILL_RNN_IN_PRE_STATE] != nstate)
    return rill_kernel_error(ctx, "input PreState must have %zu tensors", nstate);
  for (size_t i = 0; i < nstate; i++) RILL_TRY(rnn_check_state(ctx, dt, RILL_RNN_IN_PRE_STATE, i, r));
  return NULL;
}

/* The same for Fluid 1.x's cudnn_lstm (and cudnn_lstm_grad): Input, InitH, InitC and
 * the flat W (operators/cudnn_lstm.h) and the attributes; fills r. */
static inline rill_status *cudnn_lstm_check_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rnn_run *r) {
  rill_tensor *x = NULL, *t = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_CUDNN_LSTM_IN_INPUT, 0, dt, &x));
  char a[RILL_DIMS_STR_MAX];
  if (x->dims.n != 3)
    return rill_kernel_error(ctx, "input Input (%s) has shape %s, expected [T, N, input_size]",
                             rill_kin_name(ctx, RILL_CUDNN_LSTM_IN_INPUT, 0),
                             rill_dims_str(&x->dims, a, sizeof a));
  RILL_TRY(rnn_geom_of(ctx, x, RILL_RNN_LSTM, RILL_CUDNN_LSTM_ATTR_NUM_LAYERS, RILL_CUDNN_LSTM_ATTR_IS_BIDIREC,
                       RILL_CUDNN_LSTM_ATTR_HIDDEN_SIZE, RILL_CUDNN_LSTM_ATTR_DROPOUT_PROB, r));
  const rill_rnn_geom *g = &r->g;
  int64_t isz = ctx->attrs[RILL_CUDNN_LSTM_ATTR_INPUT_SIZE].v.i;
  if (isz > 0 && isz != g->input)
    return rill_kernel_error(ctx, "attribute input_size %lld differs from Input (%s)'s last "
                             "extent %lld", (long long)isz,
                             rill_kin_name(ctx, RILL_CUDNN_LSTM_IN_INPUT, 0), (long long)g->input);
  RILL_TRY(rnn_check_state(ctx, dt, RILL_CUDNN_LSTM_IN_INIT_H, 0, r));
  RILL_TRY(rnn_check_state(ctx, dt, RILL_CUDNN_LSTM_IN_INIT_C, 0, r));
  RILL_TRY(rill_kin_need(ctx, RILL_CUDNN_LSTM_IN_W, 0, dt, &t));
  int64_t want = rill_cudnn_lstm_weight_numel(g->layers, g->dirs, g->input, g->hidden);
  if (rill_tensor_numel(t) != want)
    return rill_kernel_error(ctx, "input W (%s) has %lld elements, expected %lld (the flat "
                             "weight of %lld layers, %lld directions, input_size %lld, "
                             "hidden_size %lld)", rill_kin_name(ctx, RILL_CUDNN_LSTM_IN_W, 0),
                             (long long)rill_tensor_numel(t), (long long)want,
                             (long long)g->layers, (long long)g->dirs, (long long)g->input,
                             (long long)g->hidden);
  return NULL;
}

/* Reads SequenceLength into lens (N entries), each within [0, T]. */
static inline rill_status *rnn_read_lengths(rill_kernel_ctx *ctx, int64_t T, int64_t N, int64_t *lens) {
  rill_tensor *t = rill_kin(ctx, RILL_RNN_IN_SEQUENCE_LENGTH, 0);
  const char *name = rill_kin_name(ctx, RILL_RNN_IN_SEQUENCE_LENGTH, 0);
  if (!t || !rill_tensor_is_set(t) || t->dims.n != 1 || t->dims.d[0] != N ||
      (t->dtype != RILL_DTYPE_INT32 && t->dtype != RILL_DTYPE_INT64))
    return rill_kernel_error(ctx, "input SequenceLength (%s) must be int32 or int64 [%lld]", name,
                             (long long)N);
  for (int64_t b = 0; b < N; b++) {
    int64_t v = t->dtype == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(t))[b]
                                             : ((const int64_t *)rill_tensor_ptr(t))[b];
    if (v < 0 || v > T)
      return rill_kernel_error(ctx, "input SequenceLength (%s) holds %lld for sequence %lld, "
                               "outside [0, %lld] (Input's steps)", name, (long long)v,
                               (long long)b, (long long)T);
    lens[b] = v;
  }
  return NULL;
}

/* Reads SequenceLength, when given, into a fresh array (*lens, NULL without; rill_free
 * it) that r->lens points to. */
static inline rill_status *rnn_lengths_of(rill_kernel_ctx *ctx, rnn_run *r, int64_t **lens) {
  *lens = NULL;
  if (!rill_kin(ctx, RILL_RNN_IN_SEQUENCE_LENGTH, 0)) return NULL;
  *lens = rill_malloc((size_t)(r->N ? r->N : 1) * sizeof **lens);
  if (!*lens) return rill_oom();
  rill_status *st = rnn_read_lengths(ctx, r->T, r->N, *lens);
  if (st) {
    rill_free(*lens);
    *lens = NULL;
    return st;
  }
  r->lens = *lens;
  return NULL;
}

/* ---- rnn's training form: the outputs it keeps and the gradient's inputs ---- */

/* Whether the layers' inputs go through dropout: training, more than one layer and
 * dropout_prob above 0. */
static inline bool rnn_has_dropout(const rill_kernel_ctx *ctx, const rnn_run *r) {
  return !ctx->attrs[RILL_RNN_ATTR_IS_TEST].v.b && r->g.layers > 1 && r->dropout_prob > 0;
}

/* rnn's DropoutState, n entries (1: kept): drawn from the `seed` attribute when it is
 * set (the same mask on every run), else from run_seed(ctx), new each run, with the one
 * generator and order of every place, so that a device drops the CPU's elements; all
 * ones when the run trains without dropout, as Paddle writes it. */
static inline void rnn_draw_mask(const rill_kernel_ctx *ctx, const rnn_run *r,
                                 uint64_t (*run_seed)(const rill_kernel_ctx *), uint8_t *mask, size_t n) {
  if (!rnn_has_dropout(ctx, r)) {
    memset(mask, 1, n);
    return;
  }
  int32_t seed = ctx->attrs[RILL_RNN_ATTR_SEED].v.i;
  rill_rng rng;
  rill_rng_seed(&rng, seed != 0 ? (uint64_t)(uint32_t)seed : run_seed(ctx) ^ 0x9E3779B97F4A7C15ull);
  for (size_t i = 0; i < n; i++) mask[i] = rill_rng_uniform(&rng) < r->dropout_prob ? 0 : 1;
}

/* rnn's outputs, checked against r: State (2 tensors for LSTM, else 1) and Out; when
 * training, Reserve (*res, NULL when not wanted) and DropoutState (*mask, likewise).
 * Sets *train. */
static inline rill_status *rnn_check_outputs(rill_kernel_ctx *ctx, rill_dtype dt, const rnn_run *r, bool *train,
                                             rill_tensor **res, rill_tensor **mask) {
  const rill_rnn_geom *g = &r->g;
  *train = !ctx->attrs[RILL_RNN_ATTR_IS_TEST].v.b;
  *res = *mask = NULL;
  size_t nstate = r->mode == RILL_RNN_LSTM ? 2 : 1;
  if (ctx->nout[RILL_RNN_OUT_STATE] != nstate)
    return rill_kernel_error(ctx, "output State must have %zu tensors", nstate);
  rill_dims sd = {.n = 3, .d = {g->layers * g->dirs, r->N, g->hidden}};
  rill_dims od = {.n = 3, .d = {r->T, r->N, g->dirs * g->hidden}};
  rill_tensor *t = NULL;
  for (size_t i = 0; i < nstate; i++) {
    RILL_TRY(rill_kout_need(ctx, RILL_RNN_OUT_STATE, i, dt, &t));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_RNN_OUT_STATE, i, t, &sd));
  }
  RILL_TRY(rill_kout_need(ctx, RILL_RNN_OUT_OUT, 0, dt, &t));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_RNN_OUT_OUT, 0, t, &od));
  if (*train && rill_kout(ctx, RILL_RNN_OUT_RESERVE, 0)) {
    rill_dims rd = {.n = 1, .d = {rill_rnn_reserve_numel(g, r->mode, r->T, r->N)}};
    RILL_TRY(rill_kout_need(ctx, RILL_RNN_OUT_RESERVE, 0, dt, res));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_RNN_OUT_RESERVE, 0, *res, &rd));
  }
  if (*train && rill_kout(ctx, RILL_RNN_OUT_DROPOUT_STATE, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_RNN_OUT_DROPOUT_STATE, 0, RILL_DTYPE_UINT8, mask));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_RNN_OUT_DROPOUT_STATE, 0, *mask, &od));
  }
  return NULL;
}

/* An upstream gradient (slot, i): NULL when absent or empty (zeros), else checked. */
static inline rill_status *rnn_upstream(rill_kernel_ctx *ctx, size_t slot, size_t i, rill_dtype dt,
                                        const rill_dims *want) {
  rill_tensor *t = rill_kin(ctx, slot, i);
  if (!t || !rill_tensor_is_set(t)) return NULL;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (t->dtype != dt || !rill_dims_equal(&t->dims, want))
    return rill_kernel_error(ctx, "input %s (%s) is %s %s, expected %s %s", ctx->schema->inputs[slot].name,
                             rill_kin_name(ctx, slot, i), rill_dtype_name(t->dtype),
                             rill_dims_str(&t->dims, a, sizeof a), rill_dtype_name(dt), rill_dims_str(want, b, sizeof b));
  return NULL;
}

/* A wanted gradient output (slot, i), checked against `want`; absent ones are skipped. */
static inline rill_status *rnn_grad_out(rill_kernel_ctx *ctx, size_t slot, size_t i, rill_dtype dt,
                                        const rill_dims *want) {
  if (!rill_kout(ctx, slot, i)) return NULL;
  rill_tensor *t = NULL;
  RILL_TRY(rill_kout_need(ctx, slot, i, dt, &t));
  return rill_kout_check_dims(ctx, slot, i, t, want);
}

/* rnn_grad's checks beyond rnn_check_inputs: the forward ran in training mode; Reserve
 * (*res) of the forward's size, Out, the upstream gradients (Out@GRAD, State@GRAD) and,
 * when the forward dropped, DropoutState (*mask, else NULL) of Out's shape; the wanted
 * gradients' shapes. */
static inline rill_status *rnn_grad_check(rill_kernel_ctx *ctx, rill_dtype dt, const rnn_run *r, rill_tensor **res,
                                          rill_tensor **mask) {
  const rill_rnn_geom *g = &r->g;
  *res = *mask = NULL;
  if (ctx->attrs[RILL_RNN_ATTR_IS_TEST].v.b)
    return rill_kernel_error(ctx, "attribute is_test is true: the gradient needs the forward rnn "
                             "run in training mode (is_test false)");
  size_t nstate = r->mode == RILL_RNN_LSTM ? 2 : 1;
  rill_dims sd = {.n = 3, .d = {g->layers * g->dirs, r->N, g->hidden}};
  rill_dims od = {.n = 3, .d = {r->T, r->N, g->dirs * g->hidden}};
  int64_t want_res = rill_rnn_reserve_numel(g, r->mode, r->T, r->N);
  rill_tensor *t = rill_kin(ctx, RILL_RNN_GRAD_IN_RESERVE, 0);
  if (!t || !rill_tensor_is_set(t) || t->dtype != dt || rill_tensor_numel(t) != want_res)
    return rill_kernel_error(ctx, "input Reserve (%s) %s, expected %s [%lld]: the forward rnn "
                             "keeps its gates there when it runs in training mode (is_test "
                             "false) with output Reserve", rill_kin_name(ctx, RILL_RNN_GRAD_IN_RESERVE, 0),
                             !t || !rill_tensor_is_set(t) ? "holds no data" : "has another size or dtype",
                             rill_dtype_name(dt), (long long)want_res);
  *res = t;
  RILL_TRY(rill_kin_need(ctx, RILL_RNN_GRAD_IN_OUT, 0, dt, &t));
  if (!rill_dims_equal(&t->dims, &od)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input Out (%s) has shape %s, expected %s", rill_kin_name(ctx, RILL_RNN_GRAD_IN_OUT, 0),
                             rill_dims_str(&t->dims, a, sizeof a), rill_dims_str(&od, b, sizeof b));
  }
  RILL_TRY(rnn_upstream(ctx, RILL_RNN_GRAD_IN_OUT_GRAD, 0, dt, &od));
  if (ctx->nin[RILL_RNN_GRAD_IN_STATE_GRAD] && ctx->nin[RILL_RNN_GRAD_IN_STATE_GRAD] != nstate)
    return rill_kernel_error(ctx, "input State@GRAD must have %zu tensors", nstate);
  for (size_t i = 0; i < ctx->nin[RILL_RNN_GRAD_IN_STATE_GRAD]; i++)
    RILL_TRY(rnn_upstream(ctx, RILL_RNN_GRAD_IN_STATE_GRAD, i, dt, &sd));
  if (rnn_has_dropout(ctx, r)) {
    RILL_TRY(rill_kin_need(ctx, RILL_RNN_GRAD_IN_DROPOUT_STATE, 0, RILL_DTYPE_UINT8, mask));
    if (!rill_dims_equal(&(*mask)->dims, &od))
      return rill_kernel_error(ctx, "input DropoutState (%s) must be uint8 of Out's shape",
                               rill_kin_name(ctx, RILL_RNN_GRAD_IN_DROPOUT_STATE, 0));
  }
  RILL_TRY(rnn_grad_out(ctx, RILL_RNN_GRAD_OUT_INPUT_GRAD, 0, dt, &rill_kin(ctx, RILL_RNN_GRAD_IN_INPUT, 0)->dims));
  if (ctx->nout[RILL_RNN_GRAD_OUT_PRE_STATE_GRAD] > nstate)
    return rill_kernel_error(ctx, "output PreState@GRAD has more than %zu tensors", nstate);
  for (size_t i = 0; i < ctx->nout[RILL_RNN_GRAD_OUT_PRE_STATE_GRAD]; i++)
    RILL_TRY(rnn_grad_out(ctx, RILL_RNN_GRAD_OUT_PRE_STATE_GRAD, i, dt, &sd));
  int64_t nw = rill_rnn_weight_count(g);
  if ((int64_t)ctx->nout[RILL_RNN_GRAD_OUT_WEIGHT_LIST_GRAD] > nw)
    return rill_kernel_error(ctx, "output WeightList@GRAD has more than %lld tensors", (long long)nw);
  for (size_t k = 0; k < ctx->nout[RILL_RNN_GRAD_OUT_WEIGHT_LIST_GRAD]; k++) {
    rill_dims want;
    rill_rnn_weight_at(g, (int64_t)k, &want);
    RILL_TRY(rnn_grad_out(ctx, RILL_RNN_GRAD_OUT_WEIGHT_LIST_GRAD, k, dt, &want));
  }
  return NULL;
}

/* ---- cudnn_lstm's training form ---- */

/* Whether cudnn_lstm's layers' inputs go through dropout. */
static inline bool cudnn_lstm_has_dropout(const rill_kernel_ctx *ctx, const rnn_run *r) {
  return !ctx->attrs[RILL_CUDNN_LSTM_ATTR_IS_TEST].v.b && r->g.layers > 1 && r->dropout_prob > 0;
}

/* cudnn_lstm's dropout mask, n entries (1: kept): from the seed attribute when it is
 * >= 0 (the same mask on every run), else from run_seed(ctx); one generator and order
 * on every place. */
static inline void cudnn_lstm_draw_mask(const rill_kernel_ctx *ctx, const rnn_run *r,
                                        uint64_t (*run_seed)(const rill_kernel_ctx *), uint8_t *mask, size_t n) {
  int32_t seed = ctx->attrs[RILL_CUDNN_LSTM_ATTR_SEED].v.i;
  rill_rng rng;
  rill_rng_seed(&rng, seed >= 0 ? ((uint64_t)(uint32_t)seed + 1) * 0x9E3779B97F4A7C15ull : run_seed(ctx));
  for (size_t i = 0; i < n; i++) mask[i] = rill_rng_uniform(&rng) < r->dropout_prob ? 0 : 1;
}

/* cudnn_lstm_grad's checks beyond cudnn_lstm_check_inputs: the forward ran in training
 * mode; Out, the upstream gradients (Out@GRAD, last_h@GRAD, last_c@GRAD; absent ones
 * are zeros) and the wanted gradients' shapes. Reserve is checked where it is read. */
static inline rill_status *cudnn_lstm_grad_check(rill_kernel_ctx *ctx, rill_dtype dt, const rnn_run *r) {
  const rill_rnn_geom *g = &r->g;
  if (ctx->attrs[RILL_CUDNN_LSTM_GRAD_ATTR_IS_TEST].v.b)
    return rill_kernel_error(ctx, "attribute is_test is true: the gradient needs the forward "
                             "cudnn_lstm run in training mode (is_test false)");
  rill_dims od = {.n = 3, .d = {r->T, r->N, g->dirs * g->hidden}};
  rill_dims sd = {.n = 3, .d = {g->layers * g->dirs, r->N, g->hidden}};
  rill_tensor *t = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_CUDNN_LSTM_GRAD_IN_OUT, 0, dt, &t));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_CUDNN_LSTM_GRAD_IN_OUT, t, &od));
  RILL_TRY(rnn_upstream(ctx, RILL_CUDNN_LSTM_GRAD_IN_OUT_GRAD, 0, dt, &od));
  RILL_TRY(rnn_upstream(ctx, RILL_CUDNN_LSTM_GRAD_IN_LAST_H_GRAD, 0, dt, &sd));
  RILL_TRY(rnn_upstream(ctx, RILL_CUDNN_LSTM_GRAD_IN_LAST_C_GRAD, 0, dt, &sd));
  RILL_TRY(rnn_grad_out(ctx, RILL_CUDNN_LSTM_GRAD_OUT_INPUT_GRAD, 0, dt,
                        &rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_INPUT, 0)->dims));
  RILL_TRY(rnn_grad_out(ctx, RILL_CUDNN_LSTM_GRAD_OUT_INIT_H_GRAD, 0, dt, &sd));
  RILL_TRY(rnn_grad_out(ctx, RILL_CUDNN_LSTM_GRAD_OUT_INIT_C_GRAD, 0, dt, &sd));
  return rnn_grad_out(ctx, RILL_CUDNN_LSTM_GRAD_OUT_W_GRAD, 0, dt, &rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_W, 0)->dims);
}

#endif
