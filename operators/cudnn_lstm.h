/* The flat weight W of Fluid 1.x's cudnn_lstm, in cuDNN's canonical parameter layout
 * (the buffer cuDNN's LSTM reads, which Paddle's GPU kernel hands it as it is), shared by
 * the op's shape inference and its CPU kernels. With H hidden_size, I input_size, D
 * directions (2 when is_bidirec) and L num_layers:
 *
 *   every weight matrix first, per layer, then per direction (forward, then backward):
 *     the input matrices W_i, W_f, W_c, W_o, each [H, in] row-major (in = I in layer 0,
 *     D * H above it), then the recurrent matrices R_i, R_f, R_c, R_o, each [H, H];
 *   then every bias, in the same layer and direction order: bW_i, bW_f, bW_c, bW_o, then
 *     bR_i, bR_f, bR_c, bR_o, each [H] (cuDNN's double bias: both are added).
 *
 * Gate order input, forget, cell candidate, output. The four input matrices of one layer
 * and direction are thus one [4H, in] block, W_ih in the rnn op's terms, and the
 * recurrent ones one [4H, H] block, W_hh; the layout is the rnn op's WeightList
 * (operators/rnn.h) laid end to end. */
#ifndef RILL_OPERATORS_CUDNN_LSTM_H
#define RILL_OPERATORS_CUDNN_LSTM_H

#include <stdint.h>

#include "operators/rnn.h"

/* Offsets (in elements) of one layer and direction's blocks in W. */
typedef struct rill_cudnn_lstm_at {
  int64_t wih, whh, bih, bhh;
} rill_cudnn_lstm_at;

/* The input width of layer l. */
static inline int64_t rill_cudnn_lstm_in(int64_t l, int64_t input, int64_t dirs, int64_t hidden) {
  return l == 0 ? input : dirs * hidden;
}

/* W's element count (Paddle's layers.lstm weight size). */
static inline int64_t rill_cudnn_lstm_weight_numel(int64_t layers, int64_t dirs, int64_t input,
                                                   int64_t hidden) {
  int64_t n = 0;
  for (int64_t l = 0; l < layers; l++)
    n += dirs * (4 * hidden * (rill_cudnn_lstm_in(l, input, dirs, hidden) + hidden) + 8 * hidden);
  return n;
}

static inline rill_cudnn_lstm_at rill_cudnn_lstm_offsets(int64_t layers, int64_t dirs,
                                                         int64_t input, int64_t hidden,
                                                         int64_t l, int64_t d) {
  int64_t w = 0, total = 0;
  for (int64_t k = 0; k < layers * dirs; k++) {
    int64_t m = 4 * hidden * (rill_cudnn_lstm_in(k / dirs, input, dirs, hidden) + hidden);
    if (k < l * dirs + d) w += m;
    total += m;
  }
  rill_cudnn_lstm_at at;
  at.wih = w;
  at.whh = w + 4 * hidden * rill_cudnn_lstm_in(l, input, dirs, hidden);
  at.bih = total + (l * dirs + d) * 8 * hidden;
  at.bhh = at.bih + 4 * hidden;
  return at;
}

/* Reserve, what rill's forward keeps in training for cudnn_lstm_grad: the rnn op's
 * Reserve for an LSTM of this geometry (operators/rnn.h), then, with more than one
 * layer, the mask of the dropout between layers as 0 / 1 values of Input's dtype
 * [T, N, D * H] (all 1 without dropout). */
static inline int64_t rill_cudnn_lstm_reserve_numel(int64_t layers, int64_t dirs, int64_t hidden,
                                                    int64_t steps, int64_t batch) {
  rill_rnn_geom g = {.gates = 4, .layers = layers, .dirs = dirs, .hidden = hidden, .input = -1};
  int64_t mask = layers > 1 ? steps * batch * dirs * hidden : 0;
  return rill_rnn_reserve_numel(&g, RILL_RNN_LSTM, steps, batch) + mask;
}

#endif
