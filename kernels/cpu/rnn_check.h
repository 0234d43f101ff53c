/* The geometry of one run of Paddle 2.x's rnn op, and the checks of its inputs that
 * every kernel of rnn and rnn_grad makes (the CPU's, kernels/cpu/rnn.c, and the
 * device's, kernels/cuda/rnn.c). */
#ifndef RILL_KERNELS_CPU_RNN_CHECK_H
#define RILL_KERNELS_CPU_RNN_CHECK_H

#include "kernels/cpu/kernels.h"
#include "operators/rnn.h"

/* The geometry of one run, checked by the caller. */
typedef struct rnn_run {
  rill_rnn_mode mode;
  rill_rnn_geom g;
  int64_t T, N;
  const int64_t *lens; /* per sequence; NULL: every sequence has all T steps */
  float dropout_prob;  /* of the dropout between layers */
} rnn_run;

/* The checks of the inference on the inputs the rnn kernels share (rnn and rnn_grad, on
 * every place), repeated where memory safety depends on them; fills r but for its
 * lengths. */
static inline rill_status *rnn_check_inputs(rill_kernel_ctx *ctx, rill_dtype dt, rnn_run *r) {
  const char *mode_s = ctx->attrs[RILL_RNN_ATTR_MODE].v.s;
  r->mode = rill_rnn_mode_of(mode_s);
  if (r->mode == RILL_RNN_MODE_COUNT)
    return rill_kernel_error(ctx, "attribute mode is \"%s\", expected LSTM, GRU, RNN_RELU or "
                             "RNN_TANH", mode_s ? mode_s : "");
  rill_tensor *x = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_RNN_IN_INPUT, 0, dt, &x));
  if (x->dims.n != 3)
    return rill_kernel_error(ctx, "input Input (%s) must be [T, N, I]",
                             rill_kin_name(ctx, RILL_RNN_IN_INPUT, 0));
  rill_rnn_geom *g = &r->g;
  r->T = x->dims.d[0], r->N = x->dims.d[1];
  r->lens = NULL;
  g->gates = rill_rnn_gates(r->mode);
  g->layers = ctx->attrs[RILL_RNN_ATTR_NUM_LAYERS].v.i;
  g->dirs = ctx->attrs[RILL_RNN_ATTR_IS_BIDIREC].v.b ? 2 : 1;
  g->hidden = ctx->attrs[RILL_RNN_ATTR_HIDDEN_SIZE].v.i;
  g->input = x->dims.d[2];
  if (g->layers < 1 || g->hidden < 1)
    return rill_kernel_error(ctx, "attributes num_layers and hidden_size must be positive");
  r->dropout_prob = ctx->attrs[RILL_RNN_ATTR_DROPOUT_PROB].v.f;
  if (!(r->dropout_prob >= 0 && r->dropout_prob <= 1))
    return rill_kernel_error(ctx, "attribute dropout_prob %g must lie in [0, 1]",
                             (double)r->dropout_prob);
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
  size_t nstate = r->mode == RILL_RNN_LSTM ? 2 : 1;
  rill_dims sd = {.n = 3, .d = {g->layers * g->dirs, r->N, g->hidden}};
  if (ctx->nin[RILL_RNN_IN_PRE_STATE] != nstate)
    return rill_kernel_error(ctx, "input PreState must have %zu tensors", nstate);
  for (size_t i = 0; i < nstate; i++) {
    rill_tensor *s = NULL;
    RILL_TRY(rill_kin_need(ctx, RILL_RNN_IN_PRE_STATE, i, dt, &s));
    if (!rill_dims_equal(&s->dims, &sd))
      return rill_kernel_error(ctx, "input PreState[%zu] (%s) has shape %s, expected %s", i,
                               rill_kin_name(ctx, RILL_RNN_IN_PRE_STATE, i),
                               rill_dims_str(&s->dims, a, sizeof a), rill_dims_str(&sd, b, sizeof b));
  }
  return NULL;
}

#endif
