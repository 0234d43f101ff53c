/* Paddle 2.x's rnn op written out naively for the rnn tests (tests/operators/test_rnn.c,
 * tests/train/test_rnn_train.c): every gate a dot product, step by step, in double, with
 * SequenceLength masking and the dropout between layers. */
#ifndef RILL_TESTS_OPERATORS_RNN_TEST_H
#define RILL_TESTS_OPERATORS_RNN_TEST_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { LSTM, GRU, RNN_RELU, RNN_TANH };
static const char *const mode_names[] = {"LSTM", "GRU", "RNN_RELU", "RNN_TANH"};

typedef struct cfg {
  int mode, L, D;
  int64_t T, N, I, H;
  const int64_t *lens; /* NULL: no SequenceLength */
} cfg;

static inline int64_t gates_of(int mode) { return mode == LSTM ? 4 : mode == GRU ? 3 : 1; }
static inline int64_t nweights(const cfg *c) { return 4 * c->L * c->D; }

/* Shape of WeightList entry k, laid out as Paddle's rnn.py packs it: all weights (per
 * layer, per direction: W_ih then W_hh), then all biases in the same order. */
static inline size_t weight_shape(const cfg *c, int64_t k, int64_t *dims) {
  int64_t half = 2 * c->L * c->D, G = gates_of(c->mode);
  bool bias = k >= half;
  int64_t i = bias ? k - half : k, layer = i / (2 * c->D);
  bool hidden = i % 2;
  dims[0] = G * c->H;
  if (bias) return 1;
  dims[1] = hidden ? c->H : layer == 0 ? c->I : c->D * c->H;
  return 2;
}

static inline double ref_sig(double v) { return 1 / (1 + exp(-v)); }

/* wl[k]: WeightList entry k; mask (NULL: no dropout) [T, N, D*H] and keep = 1 - p: each
 * layer above the first reads the layer below's output * mask / keep. Writes out
 * [T, N, D*H], hn and cn [L*D, N, H]. */
static inline void ref_rnn_dropout(const cfg *c, const double *x, const double *h0,
                                   const double *c0, double *const *wl, const uint8_t *mask,
                                   double keep, double *out, double *hn, double *cn) {
  int64_t T = c->T, N = c->N, H = c->H, D = c->D, G = gates_of(c->mode);
  int64_t in_w = c->I;
  double *in = malloc((size_t)(T * N * in_w + 1) * sizeof *in);
  memcpy(in, x, (size_t)(T * N * in_w) * sizeof *in);
  double *xg = malloc((size_t)(G * H) * sizeof *xg), *hg = malloc((size_t)(G * H) * sizeof *hg);
  for (int l = 0; l < c->L; l++) {
    if (l > 0 && mask)
      for (int64_t i = 0; i < T * N * in_w; i++) in[i] = mask[i] ? in[i] / keep : 0;
    double *lo = calloc((size_t)(T * N * D * H + 1), sizeof *lo);
    for (int d = 0; d < D; d++) {
      int64_t base = 2 * (l * D + d), half = 2 * c->L * D, s_i = l * D + d;
      const double *wih = wl[base], *whh = wl[base + 1], *bih = wl[half + base],
                   *bhh = wl[half + base + 1];
      double *h = malloc((size_t)(N * H) * sizeof *h), *cc = malloc((size_t)(N * H) * sizeof *cc);
      double *nh = malloc((size_t)H * sizeof *nh), *nc = malloc((size_t)H * sizeof *nc);
      memcpy(h, h0 + s_i * N * H, (size_t)(N * H) * sizeof *h);
      if (c->mode == LSTM) memcpy(cc, c0 + s_i * N * H, (size_t)(N * H) * sizeof *cc);
      for (int64_t s = 0; s < T; s++) {
        int64_t t = d == 0 ? s : T - 1 - s;
        for (int64_t b = 0; b < N; b++) {
          double *o = lo + (t * N + b) * D * H + d * H;
          if (c->lens && t >= c->lens[b]) continue; /* zero output, state kept */
          const double *xr = in + (t * N + b) * in_w, *hr = h + b * H;
          for (int64_t r = 0; r < G * H; r++) {
            double a = bih[r], e = bhh[r];
            for (int64_t k = 0; k < in_w; k++) a += wih[r * in_w + k] * xr[k];
            for (int64_t k = 0; k < H; k++) e += whh[r * H + k] * hr[k];
            xg[r] = a;
            hg[r] = e;
          }
          for (int64_t j = 0; j < H; j++) {
            if (c->mode == LSTM) {
              double ig = ref_sig(xg[j] + hg[j]), fg = ref_sig(xg[H + j] + hg[H + j]);
              double gg = tanh(xg[2 * H + j] + hg[2 * H + j]);
              double og = ref_sig(xg[3 * H + j] + hg[3 * H + j]);
              nc[j] = fg * cc[b * H + j] + ig * gg;
              nh[j] = og * tanh(nc[j]);
            } else if (c->mode == GRU) {
              double r = ref_sig(xg[j] + hg[j]), z = ref_sig(xg[H + j] + hg[H + j]);
              double n = tanh(xg[2 * H + j] + r * hg[2 * H + j]);
              nh[j] = (1 - z) * n + z * hr[j];
            } else {
              double v = xg[j] + hg[j];
              nh[j] = c->mode == RNN_RELU ? (v > 0 ? v : 0) : tanh(v);
            }
          }
          memcpy(h + b * H, nh, (size_t)H * sizeof *nh);
          if (c->mode == LSTM) memcpy(cc + b * H, nc, (size_t)H * sizeof *nc);
          memcpy(o, nh, (size_t)H * sizeof *nh);
        }
      }
      memcpy(hn + s_i * N * H, h, (size_t)(N * H) * sizeof *h);
      if (c->mode == LSTM) memcpy(cn + s_i * N * H, cc, (size_t)(N * H) * sizeof *cc);
      free(h), free(cc), free(nh), free(nc);
    }
    free(in);
    in = lo;
    in_w = D * H;
  }
  memcpy(out, in, (size_t)(T * N * D * H) * sizeof *out);
  free(in), free(xg), free(hg);
}

static inline void ref_rnn(const cfg *c, const double *x, const double *h0, const double *c0,
                           double *const *wl, double *out, double *hn, double *cn) {
  ref_rnn_dropout(c, x, h0, c0, wl, NULL, 1, out, hn, cn);
}

#endif
