/* The geometry of Paddle 2.x's `rnn` op, shared by its shape inference and its CPU
 * kernels: how many gates a mode has and which tensor each entry of WeightList is.
 *
 * WeightList holds every weight first, then every bias, each group ordered by layer,
 * then direction (forward, then backward), then input before hidden:
 *   [W_ih(l0,fw), W_hh(l0,fw), W_ih(l0,bw), W_hh(l0,bw), W_ih(l1,fw), ...,
 *    b_ih(l0,fw), b_hh(l0,fw), b_ih(l0,bw), b_hh(l0,bw), b_ih(l1,fw), ...]
 * W_ih is [G*H, I] in layer 0 and [G*H, D*H] above it, W_hh [G*H, H], biases [G*H]
 * (G gates, H hidden_size, D directions). */
#ifndef RILL_OPERATORS_RNN_H
#define RILL_OPERATORS_RNN_H

#include <stdint.h>
#include <string.h>

#include "framework/registry/registry.h"

typedef enum rill_rnn_mode {
  RILL_RNN_LSTM,
  RILL_RNN_GRU,
  RILL_RNN_RELU,
  RILL_RNN_TANH,
  RILL_RNN_MODE_COUNT
} rill_rnn_mode;

/* The mode named by the attribute (Paddle's spelling), or RILL_RNN_MODE_COUNT. */
static inline rill_rnn_mode rill_rnn_mode_of(const char *s) {
  if (!s) return RILL_RNN_MODE_COUNT;
  if (strcmp(s, "LSTM") == 0) return RILL_RNN_LSTM;
  if (strcmp(s, "GRU") == 0) return RILL_RNN_GRU;
  if (strcmp(s, "RNN_RELU") == 0) return RILL_RNN_RELU;
  if (strcmp(s, "RNN_TANH") == 0) return RILL_RNN_TANH;
  return RILL_RNN_MODE_COUNT;
}

/* Gates per step: LSTM i, f, c, o; GRU r, z, c; the simple RNNs one. */
static inline int64_t rill_rnn_gates(rill_rnn_mode m) {
  return m == RILL_RNN_LSTM ? 4 : m == RILL_RNN_GRU ? 3 : 1;
}

typedef struct rill_rnn_geom {
  int64_t gates, layers, dirs, hidden, input; /* input: Input's last extent, -1 unknown */
} rill_rnn_geom;

/* Number of WeightList entries the geometry takes. */
static inline int64_t rill_rnn_weight_count(const rill_rnn_geom *g) {
  return 4 * g->layers * g->dirs;
}

typedef struct rill_rnn_weight_role {
  int64_t layer, dir;
  bool bias, hidden; /* a bias (else a weight); of the hidden projection (else input) */
} rill_rnn_weight_role;

/* What WeightList entry k is, and the dims it must have (-1 where unknown). */
static inline rill_rnn_weight_role rill_rnn_weight_at(const rill_rnn_geom *g, int64_t k,
                                                      rill_dims *want) {
  rill_rnn_weight_role r;
  int64_t half = 2 * g->layers * g->dirs;
  r.bias = k >= half;
  int64_t i = r.bias ? k - half : k;
  r.layer = i / (2 * g->dirs);
  r.dir = (i / 2) % g->dirs;
  r.hidden = i % 2 == 1;
  int64_t rows = g->gates * g->hidden;
  if (r.bias) {
    want->n = 1;
    want->d[0] = rows;
  } else {
    want->n = 2;
    want->d[0] = rows;
    want->d[1] = r.hidden ? g->hidden : r.layer == 0 ? g->input : g->dirs * g->hidden;
  }
  return r;
}

/* Index in WeightList of a layer and direction's input weight (add 1: hidden weight;
 * add rill_rnn_weight_count / 2: the biases). */
static inline int64_t rill_rnn_weight_index(const rill_rnn_geom *g, int64_t layer, int64_t dir) {
  return 2 * (layer * g->dirs + dir);
}

/* Reserve, what the forward keeps in training mode (is_test false) for rnn_grad: one
 * flat tensor of Input's dtype, two sections.
 *
 *   gates  [layers, dirs, T, N, S]: per step and sequence the activated gates and what
 *          the backward needs beside them; S = 5H for LSTM (i, f, c~, o, then the new
 *          cell c), 4H for GRU (r, z, n, then h W_hc^T + b_hc, the hidden candidate
 *          projection the reset gate scaled), 0 for the simple RNNs (their derivative
 *          comes from h itself). Rows of steps past a sequence's length are zero.
 *   hidden [layers - 1, T, N, dirs * H]: each layer but the top one's output, before
 *          the dropout between layers (the top layer's output is Out).
 *
 * The states a step starts from are not stored: h is the neighbouring step's output (or
 * PreState's h0 at a sequence's first step), c the neighbouring step's stored cell. */
static inline int64_t rill_rnn_reserve_row(rill_rnn_mode m, int64_t hidden) {
  return m == RILL_RNN_LSTM ? 5 * hidden : m == RILL_RNN_GRU ? 4 * hidden : 0;
}

/* Offset of the hidden section; also the gates section's size. */
static inline int64_t rill_rnn_reserve_hidden_at(const rill_rnn_geom *g, rill_rnn_mode m,
                                                 int64_t steps, int64_t batch) {
  return g->layers * g->dirs * steps * batch * rill_rnn_reserve_row(m, g->hidden);
}

static inline int64_t rill_rnn_reserve_numel(const rill_rnn_geom *g, rill_rnn_mode m,
                                             int64_t steps, int64_t batch) {
  return rill_rnn_reserve_hidden_at(g, m, steps, batch) +
         (g->layers - 1) * steps * batch * g->dirs * g->hidden;
}

#endif
