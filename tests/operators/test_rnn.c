/* rnn (Paddle 2.x) against a naive reference written here: every gate a dot product,
 * step by step, in double. Each mode, one and two layers, one and two directions,
 * SequenceLength with unequal lengths (a full one, short ones, an empty one), float32
 * and float64; then the errors for a wrong WeightList (count, one tensor's shape),
 * PreState count, mode and SequenceLength values. */
#include "op_test.h"

#include <stdio.h>
#include <stdlib.h>

enum { LSTM, GRU, RNN_RELU, RNN_TANH };
static const char *const mode_names[] = {"LSTM", "GRU", "RNN_RELU", "RNN_TANH"};

typedef struct cfg {
  int mode, L, D;
  int64_t T, N, I, H;
  const int64_t *lens; /* NULL: no SequenceLength */
} cfg;

static int64_t gates_of(int mode) { return mode == LSTM ? 4 : mode == GRU ? 3 : 1; }
static int64_t nweights(const cfg *c) { return 4 * c->L * c->D; }

/* Shape of WeightList entry k, laid out as Paddle's rnn.py packs it: all weights (per
 * layer, per direction: W_ih then W_hh), then all biases in the same order. */
static size_t weight_shape(const cfg *c, int64_t k, int64_t *dims) {
  int64_t half = 2 * c->L * c->D, G = gates_of(c->mode);
  bool bias = k >= half;
  int64_t i = bias ? k - half : k, layer = i / (2 * c->D);
  bool hidden = i % 2;
  dims[0] = G * c->H;
  if (bias) return 1;
  dims[1] = hidden ? c->H : layer == 0 ? c->I : c->D * c->H;
  return 2;
}

static double sig(double v) { return 1 / (1 + exp(-v)); }

/* wl[k]: WeightList entry k. Writes out [T, N, D*H], hn and cn [L*D, N, H]. */
static void ref_rnn(const cfg *c, const double *x, const double *h0, const double *c0,
                    double *const *wl, double *out, double *hn, double *cn) {
  int64_t T = c->T, N = c->N, H = c->H, D = c->D, G = gates_of(c->mode);
  int64_t in_w = c->I;
  double *in = malloc((size_t)(T * N * in_w) * sizeof *in);
  memcpy(in, x, (size_t)(T * N * in_w) * sizeof *in);
  double *xg = malloc((size_t)(G * H) * sizeof *xg), *hg = malloc((size_t)(G * H) * sizeof *hg);
  for (int l = 0; l < c->L; l++) {
    double *lo = calloc((size_t)(T * N * D * H), sizeof *lo);
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
              double ig = sig(xg[j] + hg[j]), fg = sig(xg[H + j] + hg[H + j]);
              double gg = tanh(xg[2 * H + j] + hg[2 * H + j]), og = sig(xg[3 * H + j] + hg[3 * H + j]);
              nc[j] = fg * cc[b * H + j] + ig * gg;
              nh[j] = og * tanh(nc[j]);
            } else if (c->mode == GRU) {
              double r = sig(xg[j] + hg[j]), z = sig(xg[H + j] + hg[H + j]);
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

static void *as_dtype(const double *v, int64_t n, rill_dtype dt) {
  if (dt == RILL_DTYPE_FP64) {
    double *p = malloc((size_t)(n + 1) * sizeof *p);
    memcpy(p, v, (size_t)n * sizeof *p);
    return p;
  }
  float *p = malloc((size_t)(n + 1) * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = (float)v[i];
  return p;
}

static void bind_d(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                   const int64_t *dims, size_t nd, const double *v) {
  void *p = as_dtype(v, numel_of(dims, nd), dt);
  bind_input(h, slot, name, dt, dims, nd, p);
  free(p);
}

static void expect_close(const rill_tensor *t, const double *want, int64_t n, rill_dtype dt) {
  cr_assert_eq(t->dtype, dt);
  for (int64_t i = 0; i < n; i++) {
    double got = dt == RILL_DTYPE_FP64 ? ((const double *)rill_tensor_ptr(t))[i]
                                       : ((const float *)rill_tensor_ptr(t))[i];
    double tol = dt == RILL_DTYPE_FP64 ? 1e-10 : 2e-5;
    cr_assert(fabs(got - want[i]) <= tol * (1 + fabs(want[i])), "[%lld] %.9g != %.9g",
              (long long)i, got, want[i]);
  }
}

/* Deterministic values in [-scale, scale]. */
static void fill(double *v, int64_t n, double seed, double scale) {
  for (int64_t i = 0; i < n; i++) v[i] = scale * sin(seed + 0.37 * (double)i + 0.011 * (double)(i * i % 97));
}

typedef struct built {
  op_harness *h;
  double *x, *h0, *c0, *w[64], *out, *hn, *cn;
} built;

/* Builds the op for cfg with deterministic inputs and computes the reference. */
static built build(const cfg *c, rill_dtype dt, bool with_len) {
  built r = {0};
  int64_t T = c->T, N = c->N, I = c->I, H = c->H, SD = c->L * c->D;
  r.h = harness("rnn");
  r.x = malloc((size_t)(T * N * I + 1) * sizeof(double));
  r.h0 = malloc((size_t)(SD * N * H) * sizeof(double));
  r.c0 = malloc((size_t)(SD * N * H) * sizeof(double));
  fill(r.x, T * N * I, 0.3, 1.0);
  fill(r.h0, SD * N * H, 1.1, 0.5);
  fill(r.c0, SD * N * H, 2.3, 0.5);
  bind_d(r.h, "Input", "x", dt, DIMS(T, N, I), r.x);
  bind_d(r.h, "PreState", "h0", dt, DIMS(SD, N, H), r.h0);
  if (c->mode == LSTM) bind_d(r.h, "PreState", "c0", dt, DIMS(SD, N, H), r.c0);
  cr_assert_leq(nweights(c), 64);
  for (int64_t k = 0; k < nweights(c); k++) {
    int64_t dims[2];
    size_t nd = weight_shape(c, k, dims);
    int64_t n = numel_of(dims, nd);
    r.w[k] = malloc((size_t)n * sizeof(double));
    fill(r.w[k], n, 0.7 * (double)k + 0.2, 0.6);
    char name[32];
    snprintf(name, sizeof name, "w%lld", (long long)k);
    bind_d(r.h, "WeightList", name, dt, dims, nd, r.w[k]);
  }
  if (with_len && c->lens)
    bind_input(r.h, "SequenceLength", "len", RILL_DTYPE_INT64, DIMS(N), c->lens);
  OK(op_harness_output(r.h, "Out", "out"));
  OK(op_harness_output(r.h, "State", "hn"));
  if (c->mode == LSTM) OK(op_harness_output(r.h, "State", "cn"));
  OK(op_harness_attr_string(r.h, "mode", mode_names[c->mode]));
  OK(op_harness_attr_int(r.h, "num_layers", c->L));
  OK(op_harness_attr_int(r.h, "hidden_size", (int32_t)H));
  OK(op_harness_attr_int(r.h, "input_size", (int32_t)I));
  OK(op_harness_attr_bool(r.h, "is_bidirec", c->D == 2));
  OK(op_harness_attr_bool(r.h, "is_test", true));
  r.out = malloc((size_t)(T * N * c->D * H + 1) * sizeof(double));
  r.hn = malloc((size_t)(SD * N * H) * sizeof(double));
  r.cn = malloc((size_t)(SD * N * H) * sizeof(double));
  ref_rnn(c, r.x, r.h0, r.c0, r.w, r.out, r.hn, r.cn);
  return r;
}

static void release(const cfg *c, built *r) {
  op_harness_destroy(r->h);
  for (int64_t k = 0; k < nweights(c); k++) free(r->w[k]);
  free(r->x), free(r->h0), free(r->c0), free(r->out), free(r->hn), free(r->cn);
}

static void check(const cfg *c, rill_dtype dt, int threads) {
  built r = build(c, dt, true);
  if (threads > 1) op_harness_set_threads(r.h, threads);
  OK(op_harness_run(r.h));
  int64_t SD = c->L * c->D;
  rill_tensor *out = op_harness_tensor(r.h, "out");
  expect_dims(out, DIMS(c->T, c->N, c->D * c->H));
  expect_close(out, r.out, c->T * c->N * c->D * c->H, dt);
  rill_tensor *hn = op_harness_tensor(r.h, "hn");
  expect_dims(hn, DIMS(SD, c->N, c->H));
  expect_close(hn, r.hn, SD * c->N * c->H, dt);
  if (c->mode == LSTM) expect_close(op_harness_tensor(r.h, "cn"), r.cn, SD * c->N * c->H, dt);
  release(c, &r);
}

static const int64_t lens4[] = {5, 2, 0, 4}; /* T = 5: full, short, empty, short */

Test(rnn, each_mode_two_layers_bidirectional_with_lengths) {
  for (int m = LSTM; m <= RNN_TANH; m++) {
    cfg c = {.mode = m, .L = 2, .D = 2, .T = 5, .N = 4, .I = 3, .H = 4, .lens = lens4};
    check(&c, RILL_DTYPE_FP32, 1);
    check(&c, RILL_DTYPE_FP64, 1);
  }
}

Test(rnn, each_mode_without_lengths) {
  for (int m = LSTM; m <= RNN_TANH; m++) {
    cfg one = {.mode = m, .L = 1, .D = 1, .T = 4, .N = 3, .I = 5, .H = 3};
    check(&one, RILL_DTYPE_FP32, 1);
    cfg deep = {.mode = m, .L = 3, .D = 1, .T = 3, .N = 2, .I = 2, .H = 5};
    check(&deep, RILL_DTYPE_FP64, 1);
    cfg bi = {.mode = m, .L = 1, .D = 2, .T = 6, .N = 2, .I = 4, .H = 2};
    check(&bi, RILL_DTYPE_FP32, 1);
  }
}

Test(rnn, lengths_stop_the_steps) {
  /* Past a sequence's length Out is zero and the state is the one at its last step:
   * the first sequence (length 2) of a forward LSTM ends with the h of step 1. */
  cfg c = {.mode = LSTM, .L = 1, .D = 1, .T = 5, .N = 4, .I = 3, .H = 4, .lens = lens4};
  built r = build(&c, RILL_DTYPE_FP32, true);
  OK(op_harness_run(r.h));
  const float *out = rill_tensor_ptr(op_harness_tensor(r.h, "out"));
  const float *hn = rill_tensor_ptr(op_harness_tensor(r.h, "hn"));
  for (int64_t j = 0; j < c.H; j++) {
    cr_assert_eq(out[(3 * c.N + 1) * c.H + j], 0.0f, "step 3 of a length-2 sequence");
    cr_assert_float_eq(hn[1 * c.H + j], out[(1 * c.N + 1) * c.H + j], 1e-7);
    cr_assert_float_eq(hn[2 * c.H + j], (float)r.h0[2 * c.H + j], 1e-7); /* empty: h0 */
    cr_assert_neq(out[(1 * c.N + 1) * c.H + j], 0.0f);
  }
  release(&c, &r);
  /* The lengths change the answer: without them every step runs. */
  built all = build(&c, RILL_DTYPE_FP32, false);
  OK(op_harness_run(all.h));
  const float *hn_all = rill_tensor_ptr(op_harness_tensor(all.h, "hn"));
  cr_assert_gt(fabs(hn_all[1 * c.H] - all.hn[1 * c.H]), 1e-3, "lengths made no difference");
  cfg full = c;
  full.lens = NULL;
  double *want = malloc((size_t)(c.N * c.H) * sizeof *want), *wc = malloc((size_t)(c.N * c.H) * sizeof *wc);
  double *wo = malloc((size_t)(c.T * c.N * c.H) * sizeof *wo);
  ref_rnn(&full, all.x, all.h0, all.c0, all.w, wo, want, wc);
  expect_close(op_harness_tensor(all.h, "hn"), want, c.N * c.H, RILL_DTYPE_FP32);
  free(want), free(wc), free(wo);
  release(&c, &all);
}

Test(rnn, int32_lengths_and_threads) {
  static const int32_t l32[] = {3, 6, 1};
  static const int64_t l64[] = {3, 6, 1};
  cfg c = {.mode = GRU, .L = 2, .D = 2, .T = 6, .N = 3, .I = 7, .H = 9, .lens = l64};
  built r = build(&c, RILL_DTYPE_FP32, false);
  bind_input(r.h, "SequenceLength", "len32", RILL_DTYPE_INT32, DIMS(3), l32);
  op_harness_set_threads(r.h, 4);
  OK(op_harness_run(r.h));
  expect_close(op_harness_tensor(r.h, "out"), r.out, c.T * c.N * c.D * c.H, RILL_DTYPE_FP32);
  expect_close(op_harness_tensor(r.h, "hn"), r.hn, c.L * c.D * c.N * c.H, RILL_DTYPE_FP32);
  release(&c, &r);
}

/* A harness for a 2-layer bidirectional LSTM (I 3, H 4) with `nw` weights, weight
 * `bad` (if >= 0) given shape bad_dims. */
static op_harness *lstm_with(int64_t nw, int64_t bad, const int64_t *bad_dims, size_t bad_nd,
                             int npre, const char *mode) {
  cfg c = {.mode = LSTM, .L = 2, .D = 2, .T = 2, .N = 1, .I = 3, .H = 4};
  op_harness *h = harness("rnn");
  static const float zeros[64 * 64];
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(2, 1, 3), zeros);
  for (int i = 0; i < npre; i++)
    bind_input(h, "PreState", i ? "c0" : "h0", RILL_DTYPE_FP32, DIMS(4, 1, 4), zeros);
  for (int64_t k = 0; k < nw; k++) {
    int64_t dims[2];
    size_t nd = weight_shape(&c, k % nweights(&c), dims);
    char name[32];
    snprintf(name, sizeof name, "lstm.w%lld", (long long)k);
    if (k == bad) bind_input(h, "WeightList", name, RILL_DTYPE_FP32, bad_dims, bad_nd, zeros);
    else bind_input(h, "WeightList", name, RILL_DTYPE_FP32, dims, nd, zeros);
  }
  OK(op_harness_output(h, "Out", "out"));
  for (int i = 0; i < npre; i++) OK(op_harness_output(h, "State", i ? "cn" : "hn"));
  OK(op_harness_attr_string(h, "mode", mode));
  OK(op_harness_attr_int(h, "num_layers", 2));
  OK(op_harness_attr_int(h, "hidden_size", 4));
  OK(op_harness_attr_bool(h, "is_bidirec", true));
  OK(op_harness_attr_bool(h, "is_test", true));
  return h;
}

Test(rnn, well_formed_lstm_runs) {
  op_harness *h = lstm_with(16, -1, NULL, 0, 2, "LSTM");
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(2, 1, 8));
  op_harness_destroy(h);
}

Test(rnn, wrong_weight_count_is_named) {
  op_harness *h = lstm_with(15, -1, NULL, 0, 2, "LSTM");
  EXPECT_ERROR(op_harness_run(h), "rnn", "WeightList has 15 tensors", "expected 16");
  op_harness_destroy(h);
}

Test(rnn, wrong_weight_shape_is_named) {
  /* entry 5 is layer 1's forward W_hh [16, 4]; layer 1's W_ih (entry 4) takes 2 * 4 inputs */
  op_harness *h = lstm_with(16, 5, DIMS(16, 3), 2, "LSTM");
  EXPECT_ERROR(op_harness_run(h), "WeightList[5] (lstm.w5)", "[16, 3]", "[16, 4]",
               "hidden weight W_hh of layer 1, forward");
  op_harness_destroy(h);
  h = lstm_with(16, 4, DIMS(16, 3), 2, "LSTM");
  EXPECT_ERROR(op_harness_run(h), "WeightList[4] (lstm.w4)", "[16, 8]", "input weight W_ih");
  op_harness_destroy(h);
  h = lstm_with(16, 11, DIMS(12), 2, "LSTM");
  EXPECT_ERROR(op_harness_run(h), "WeightList[11] (lstm.w11)", "hidden bias b_hh of layer 0, backward");
  op_harness_destroy(h);
}

Test(rnn, wrong_state_count_and_mode) {
  op_harness *h = lstm_with(16, -1, NULL, 0, 1, "LSTM");
  EXPECT_ERROR(op_harness_run(h), "PreState has 1 tensors", "h0, c0");
  op_harness_destroy(h);
  h = lstm_with(16, -1, NULL, 0, 2, "LSTMX");
  EXPECT_ERROR(op_harness_run(h), "mode is \"LSTMX\"");
  op_harness_destroy(h);
}

Test(rnn, lengths_outside_the_steps) {
  op_harness *h = lstm_with(16, -1, NULL, 0, 2, "LSTM");
  static const int64_t bad[] = {3};
  bind_input(h, "SequenceLength", "len", RILL_DTYPE_INT64, DIMS(1), bad);
  EXPECT_ERROR(op_harness_run(h), "SequenceLength (len) holds 3", "[0, 2]");
  op_harness_destroy(h);
  h = lstm_with(16, -1, NULL, 0, 2, "LSTM");
  static const int64_t two[] = {1, 1};
  bind_input(h, "SequenceLength", "len", RILL_DTYPE_INT64, DIMS(2), two);
  EXPECT_ERROR(op_harness_run(h), "SequenceLength (len)", "[1]");
  op_harness_destroy(h);
}
