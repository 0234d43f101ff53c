/* rnn (Paddle 2.x) against a naive reference (rnn_test.h): every gate a dot product,
 * step by step, in double. Each mode, one and two layers, one and two directions,
 * SequenceLength with unequal lengths (a full one, short ones, an empty one), float32
 * and float64; then the errors for a wrong WeightList (count, one tensor's shape),
 * PreState count, mode and SequenceLength values. Training: Reserve's layout, the
 * dropout between layers, and rnn_grad by finite differences (grad_check) for every
 * mode, with lengths, through dropout, float32 against float64, with no steps, and its
 * errors. */
#include "op_test.h"
#include "rnn_test.h"
#include "support/fail_alloc.h"
#include "support/grad_check.h"

#include <stdio.h>
#include <stdlib.h>

/* Deterministic values in [-scale, scale]. */
static void fill(double *v, int64_t n, double seed, double scale) {
  for (int64_t i = 0; i < n; i++) v[i] = scale * sin(seed + 0.37 * (double)i + 0.011 * (double)(i * i % 97));
}

typedef struct built {
  op_harness *h;
  double *x, *h0, *c0, *w[64], *out, *hn, *cn;
} built;

/* Builds the op for cfg with deterministic inputs and computes the reference (without
 * dropout). train: is_test false, with outputs Reserve ("reserve") and DropoutState
 * ("mask"). */
static built build_for(const cfg *c, rill_dtype dt, bool with_len, bool train) {
  built r = {0};
  int64_t T = c->T, N = c->N, I = c->I, H = c->H, SD = c->L * c->D;
  r.h = harness("rnn");
  r.x = malloc((size_t)(T * N * I + 1) * sizeof(double));
  r.h0 = malloc((size_t)(SD * N * H) * sizeof(double));
  r.c0 = malloc((size_t)(SD * N * H) * sizeof(double));
  fill(r.x, T * N * I, 0.3, 1.0);
  fill(r.h0, SD * N * H, 1.1, 0.5);
  fill(r.c0, SD * N * H, 2.3, 0.5);
  bind_input_dt(r.h, "Input", "x", dt, DIMS(T, N, I), r.x);
  bind_input_dt(r.h, "PreState", "h0", dt, DIMS(SD, N, H), r.h0);
  if (c->mode == LSTM) bind_input_dt(r.h, "PreState", "c0", dt, DIMS(SD, N, H), r.c0);
  cr_assert_leq(nweights(c), 64);
  for (int64_t k = 0; k < nweights(c); k++) {
    int64_t dims[2];
    size_t nd = weight_shape(c, k, dims);
    int64_t n = numel_of(dims, nd);
    r.w[k] = malloc((size_t)n * sizeof(double));
    fill(r.w[k], n, 0.7 * (double)k + 0.2, 0.6);
    char name[32];
    snprintf(name, sizeof name, "w%lld", (long long)k);
    bind_input_dt(r.h, "WeightList", name, dt, dims, nd, r.w[k]);
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
  OK(op_harness_attr_bool(r.h, "is_test", !train));
  if (train) {
    OK(op_harness_output(r.h, "Reserve", "reserve"));
    OK(op_harness_output(r.h, "DropoutState", "mask"));
  }
  r.out = malloc((size_t)(T * N * c->D * H + 1) * sizeof(double));
  r.hn = malloc((size_t)(SD * N * H) * sizeof(double));
  r.cn = malloc((size_t)(SD * N * H) * sizeof(double));
  ref_rnn(c, r.x, r.h0, r.c0, r.w, r.out, r.hn, r.cn);
  return r;
}

static built build(const cfg *c, rill_dtype dt, bool with_len) {
  return build_for(c, dt, with_len, false);
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
  expect_close_dt(out, r.out, c->T * c->N * c->D * c->H, dt);
  rill_tensor *hn = op_harness_tensor(r.h, "hn");
  expect_dims(hn, DIMS(SD, c->N, c->H));
  expect_close_dt(hn, r.hn, SD * c->N * c->H, dt);
  if (c->mode == LSTM) expect_close_dt(op_harness_tensor(r.h, "cn"), r.cn, SD * c->N * c->H, dt);
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
  expect_close_dt(op_harness_tensor(all.h, "hn"), want, c.N * c.H, RILL_DTYPE_FP32);
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
  expect_close_dt(op_harness_tensor(r.h, "out"), r.out, c.T * c.N * c.D * c.H, RILL_DTYPE_FP32);
  expect_close_dt(op_harness_tensor(r.h, "hn"), r.hn, c.L * c.D * c.N * c.H, RILL_DTYPE_FP32);
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

/* ---- training: Reserve, DropoutState, the dropout between layers, rnn_grad ---- */

Test(rnn, training_forward_keeps_reserve) {
  /* Training gives the answers of inference, an all-ones DropoutState without dropout, and
   * Reserve in operators/rnn.h's layout: the lower layer's output as a one-layer
   * reference computes it, LSTM's cell at each sequence's last step equal to State's c,
   * GRU's h' = (1 - z) n + z h from the kept gates, zero rows past the lengths. */
  for (int m = LSTM; m <= RNN_TANH; m++) {
    cfg c = {.mode = m, .L = 2, .D = 2, .T = 5, .N = 4, .I = 3, .H = 4, .lens = lens4};
    built r = build_for(&c, RILL_DTYPE_FP64, true, true);
    OK(op_harness_run(r.h));
    int64_t T = c.T, N = c.N, H = c.H, D = c.D, W = D * H, SD = c.L * D;
    expect_close_dt(op_harness_tensor(r.h, "out"), r.out, T * N * W, RILL_DTYPE_FP64);
    expect_close_dt(op_harness_tensor(r.h, "hn"), r.hn, SD * N * H, RILL_DTYPE_FP64);
    if (m == LSTM) expect_close_dt(op_harness_tensor(r.h, "cn"), r.cn, SD * N * H, RILL_DTYPE_FP64);
    const rill_tensor *mask = op_harness_tensor(r.h, "mask");
    cr_assert_eq(mask->dtype, RILL_DTYPE_UINT8);
    expect_dims(mask, DIMS(T, N, W));
    for (int64_t i = 0; i < T * N * W; i++) cr_assert_eq(((const uint8_t *)rill_tensor_ptr(mask))[i], 1);
    int64_t S = m == LSTM ? 5 * H : m == GRU ? 4 * H : 0, gates_n = c.L * D * T * N * S;
    const rill_tensor *rt = op_harness_tensor(r.h, "reserve");
    expect_dims(rt, DIMS(gates_n + T * N * W));
    const double *res = rill_tensor_ptr(rt);
    /* the hidden section: layer 0's output */
    cfg one = c;
    one.L = 1;
    double *wl1[8];
    for (int k = 0; k < 2 * D; k++) wl1[k] = r.w[k], wl1[2 * D + k] = r.w[4 * D + k];
    double *lo = malloc((size_t)(T * N * W) * sizeof *lo), *hn1 = malloc((size_t)(D * N * H) * sizeof *hn1);
    double *cn1 = malloc((size_t)(D * N * H) * sizeof *cn1);
    ref_rnn(&one, r.x, r.h0, r.c0, wl1, lo, hn1, cn1);
    for (int64_t i = 0; i < T * N * W; i++)
      cr_assert(fabs(res[gates_n + i] - lo[i]) < 1e-12, "%s: hidden[%lld]", mode_names[m], (long long)i);
    free(lo), free(hn1), free(cn1);
    for (int64_t l = 0; l < c.L; l++)
      for (int64_t d = 0; d < D; d++)
        for (int64_t t = 0; t < T; t++)
          for (int64_t b = 0; b < N; b++) {
            const double *row = res + (((l * D + d) * T + t) * N + b) * S;
            if (t >= lens4[b]) {
              for (int64_t j = 0; j < S; j++) cr_assert_eq(row[j], 0.0);
              continue;
            }
            int64_t last = d == 0 ? lens4[b] - 1 : 0;
            if (m == LSTM && t == last)
              for (int64_t j = 0; j < H; j++)
                cr_assert(fabs(row[4 * H + j] - r.cn[((l * D + d) * N + b) * H + j]) < 1e-12);
            if (m == GRU && l == c.L - 1 && d == 0)
              for (int64_t j = 0; j < H; j++) {
                double hp = t == 0 ? r.h0[((l * D) * N + b) * H + j] : r.out[((t - 1) * N + b) * W + j];
                double z = row[H + j], n = row[2 * H + j];
                cr_assert(fabs((1 - z) * n + z * hp - r.out[(t * N + b) * W + j]) < 1e-12);
              }
          }
    release(&c, &r);
  }
}

Test(rnn, dropout_between_layers) {
  /* One mask of Out's shape for every layer's input, x * mask / (1 - p); unseeded runs
   * draw new masks, a seed gives the same one every run. */
  cfg c = {.mode = GRU, .L = 3, .D = 2, .T = 5, .N = 4, .I = 3, .H = 4, .lens = lens4};
  built r = build_for(&c, RILL_DTYPE_FP64, true, true);
  const float p = 0.4f;
  OK(op_harness_attr_float(r.h, "dropout_prob", p));
  int64_t n = c.T * c.N * c.D * c.H, SD = c.L * c.D;
  uint8_t *first = malloc((size_t)n);
  double *out = malloc((size_t)n * sizeof *out), *hn = malloc((size_t)(SD * c.N * c.H) * sizeof *hn);
  for (int run = 0; run < 4; run++) {
    if (run == 2) OK(op_harness_attr_int(r.h, "seed", 11));
    OK(op_harness_run(r.h));
    const uint8_t *mask = rill_tensor_ptr(op_harness_tensor(r.h, "mask"));
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; i++) dropped += mask[i] == 0;
    cr_assert(dropped > n / 4 && dropped < 3 * n / 5, "%lld of %lld dropped", (long long)dropped,
              (long long)n);
    ref_rnn_dropout(&c, r.x, r.h0, r.c0, r.w, mask, (double)(1.0f - p), out, hn, NULL);
    expect_close_dt(op_harness_tensor(r.h, "out"), out, n, RILL_DTYPE_FP64);
    expect_close_dt(op_harness_tensor(r.h, "hn"), hn, SD * c.N * c.H, RILL_DTYPE_FP64);
    if (run == 1) cr_assert(memcmp(first, mask, (size_t)n) != 0, "unseeded runs drew one mask");
    if (run == 3) cr_assert(memcmp(first, mask, (size_t)n) == 0, "seeded runs drew two masks");
    if (run % 2 == 0) memcpy(first, mask, (size_t)n);
  }
  free(first), free(out), free(hn);
  release(&c, &r);
}

/* Finite differences of L = sum(Out dOut) + sum(State dState) in float64 against rnn_grad,
 * for Input, PreState and WeightList together, each alone and none (grad_check). */
static void grad_case(const cfg *c, float dropout) {
  built r = build_for(c, RILL_DTYPE_FP64, true, true);
  if (dropout > 0) {
    OK(op_harness_attr_float(r.h, "dropout_prob", dropout));
    OK(op_harness_attr_int(r.h, "seed", 5)); /* the same mask in every forward run */
  }
  rill_status *st = grad_check(r.h, GC_SLOTS("Input", "PreState", "WeightList"),
                               GC_SLOTS("Out", "State"), NULL);
  cr_assert_null(st, "%s, %d layers, %d directions: %s", mode_names[c->mode], c->L, c->D,
                 rill_status_message(st));
  release(c, &r);
}

static const int64_t lens_grad[] = {4, 2, 0, 3}; /* T = 4: full, short, empty, short */

Test(rnn, gradient_each_mode_two_layers_bidirectional_with_lengths) {
  for (int m = LSTM; m <= RNN_TANH; m++) {
    cfg c = {.mode = m, .L = 2, .D = 2, .T = 4, .N = 4, .I = 3, .H = 3, .lens = lens_grad};
    grad_case(&c, 0);
  }
}

Test(rnn, gradient_each_mode_without_lengths) {
  for (int m = LSTM; m <= RNN_TANH; m++) {
    cfg one = {.mode = m, .L = 1, .D = 1, .T = 3, .N = 2, .I = 4, .H = 3};
    grad_case(&one, 0);
    cfg deep = {.mode = m, .L = 3, .D = 1, .T = 3, .N = 2, .I = 2, .H = 2};
    grad_case(&deep, 0);
  }
}

Test(rnn, gradient_through_dropout_between_layers) {
  for (int m = LSTM; m <= GRU; m++) {
    cfg c = {.mode = m, .L = 3, .D = 2, .T = 4, .N = 4, .I = 2, .H = 2, .lens = lens_grad};
    grad_case(&c, 0.4f);
  }
}

Test(rnn, gradient_of_state_alone) {
  /* Only State in the loss: Out@GRAD is zeros, the gradient enters through dh_T, dc_T. */
  cfg c = {.mode = LSTM, .L = 2, .D = 2, .T = 4, .N = 4, .I = 2, .H = 3, .lens = lens_grad};
  built r = build_for(&c, RILL_DTYPE_FP64, true, true);
  OK(grad_check(r.h, GC_SLOTS("Input", "PreState", "WeightList"), GC_SLOTS("State"), NULL));
  release(&c, &r);
}

/* rnn_grad run on its own after r's training forward (run already), with upstream
 * gradients dout [T, N, D*H] and dst (each State's), every gradient wanted: "x@GRAD",
 * "h0@GRAD", "c0@GRAD", "w<k>@GRAD". */
static op_harness *run_grad(const cfg *c, built *r, rill_dtype dt, const double *dout,
                            const double *dst, int threads) {
  op_harness *g = harness("rnn_grad");
  static const char *const fwd_in[] = {"Input", "PreState", "WeightList", "SequenceLength"};
  static const char *const grad_out[] = {"Input@GRAD", "PreState@GRAD", "WeightList@GRAD"};
  const rill_op_desc *fd = op_harness_desc(r->h);
  for (size_t s = 0; s < 4; s++) {
    const rill_op_slot *slot = rill_op_input(fd, fwd_in[s]);
    for (size_t j = 0; slot && j < slot->nargs; j++) {
      OK(op_harness_input(g, fwd_in[s], slot->args[j], op_harness_tensor(r->h, slot->args[j])));
      char gname[64];
      snprintf(gname, sizeof gname, "%s@GRAD", slot->args[j]);
      if (s < 3) OK(op_harness_output(g, grad_out[s], gname));
    }
  }
  OK(op_harness_input(g, "Reserve", "reserve", op_harness_tensor(r->h, "reserve")));
  OK(op_harness_input(g, "DropoutState", "mask", op_harness_tensor(r->h, "mask")));
  OK(op_harness_input(g, "Out", "out", op_harness_tensor(r->h, "out")));
  bind_input_dt(g, "Out@GRAD", "out@GRAD", dt, DIMS(c->T, c->N, c->D * c->H), dout);
  bind_input_dt(g, "State@GRAD", "hn@GRAD", dt, DIMS(c->L * c->D, c->N, c->H), dst);
  if (c->mode == LSTM)
    bind_input_dt(g, "State@GRAD", "cn@GRAD", dt, DIMS(c->L * c->D, c->N, c->H), dst);
  OK(op_harness_attr_string(g, "mode", mode_names[c->mode]));
  OK(op_harness_attr_int(g, "num_layers", c->L));
  OK(op_harness_attr_int(g, "hidden_size", (int32_t)c->H));
  OK(op_harness_attr_bool(g, "is_bidirec", c->D == 2));
  OK(op_harness_attr_bool(g, "is_test", false));
  op_harness_set_threads(g, threads);
  OK(op_harness_run(g));
  return g;
}

/* Gradient v of run_grad's outputs (0 x, 1 h0, 2 c0, 3 + k weight k) as doubles. */
static double *grad_values(op_harness *g, int64_t v, int64_t *n) {
  char name[32];
  if (v < 3) snprintf(name, sizeof name, "%s@GRAD", v == 0 ? "x" : v == 1 ? "h0" : "c0");
  else snprintf(name, sizeof name, "w%lld@GRAD", (long long)(v - 3));
  const rill_tensor *t = op_harness_tensor(g, name);
  cr_assert(t && rill_tensor_is_set(t), "%s", name);
  *n = rill_tensor_numel(t);
  double *out = malloc((size_t)(*n + 1) * sizeof *out);
  for (int64_t i = 0; i < *n; i++)
    out[i] = t->dtype == RILL_DTYPE_FP64 ? ((const double *)rill_tensor_ptr(t))[i]
                                         : ((const float *)rill_tensor_ptr(t))[i];
  return out;
}

Test(rnn, gradient_float32_agrees_with_float64) {
  /* rnn_grad's float32 kernel against its float64 one, on 4 threads. */
  static const int64_t lens[] = {6, 3, 0, 5, 6};
  cfg c = {.mode = LSTM, .L = 2, .D = 2, .T = 6, .N = 5, .I = 7, .H = 8, .lens = lens};
  int64_t nv = 3 + nweights(&c), n = c.T * c.N * c.D * c.H, sn = c.L * c.D * c.N * c.H;
  double *grads[2][40] = {{0}};
  int64_t sizes[40] = {0};
  double *dout = malloc((size_t)n * sizeof *dout), *dst = malloc((size_t)sn * sizeof *dst);
  fill(dout, n, 4.1, 1.0);
  fill(dst, sn, 5.3, 1.0);
  for (int k = 0; k < 2; k++) {
    rill_dtype dt = k ? RILL_DTYPE_FP32 : RILL_DTYPE_FP64;
    built r = build_for(&c, dt, true, true);
    op_harness_set_threads(r.h, 4);
    OK(op_harness_run(r.h));
    op_harness *g = run_grad(&c, &r, dt, dout, dst, 4);
    for (int64_t v = 0; v < nv; v++) grads[k][v] = grad_values(g, v, &sizes[v]);
    op_harness_destroy(g);
    release(&c, &r);
  }
  for (int64_t v = 0; v < nv; v++) {
    double scale = 0;
    for (int64_t i = 0; i < sizes[v]; i++) scale = fmax(scale, fabs(grads[0][v][i]));
    for (int64_t i = 0; i < sizes[v]; i++)
      cr_assert(fabs(grads[0][v][i] - grads[1][v][i]) <= 1e-4 * (1 + scale), "gradient %lld "
                "[%lld]: %.8g (float64) vs %.8g (float32)", (long long)v, (long long)i,
                grads[0][v][i], grads[1][v][i]);
    free(grads[0][v]), free(grads[1][v]);
  }
  free(dout), free(dst);
}

Test(rnn, gradient_of_no_steps) {
  /* T = 0: the states pass through the forward, so their gradients pass back and the
   * weights get zeros. */
  for (int m = LSTM; m <= GRU; m++) {
    cfg c = {.mode = m, .L = 2, .D = 2, .T = 0, .N = 3, .I = 2, .H = 3};
    built r = build_for(&c, RILL_DTYPE_FP64, true, true);
    OK(op_harness_run(r.h));
    expect_dims(op_harness_tensor(r.h, "reserve"), DIMS(0));
    int64_t sn = c.L * c.D * c.N * c.H;
    double *dst = malloc((size_t)sn * sizeof *dst);
    fill(dst, sn, 0.9, 1.0);
    op_harness *g = run_grad(&c, &r, RILL_DTYPE_FP64, dst, dst, 1);
    expect_dims(op_harness_tensor(g, "x@GRAD"), DIMS(0, c.N, c.I));
    for (int64_t v = 1; v < 3 + nweights(&c); v++) {
      if (v == 2 && m != LSTM) continue;
      int64_t n;
      double *gv = grad_values(g, v, &n);
      for (int64_t i = 0; i < n; i++) cr_assert_eq(gv[i], v < 3 ? dst[i] : 0.0);
      free(gv);
    }
    free(dst);
    op_harness_destroy(g);
    release(&c, &r);
  }
}

Test(rnn, gradient_needs_the_training_forward) {
  cfg c = {.mode = GRU, .L = 1, .D = 1, .T = 3, .N = 2, .I = 2, .H = 2};
  built r = build_for(&c, RILL_DTYPE_FP64, false, false); /* is_test true */
  EXPECT_ERROR(grad_check(r.h, GC_SLOTS("Input"), GC_SLOTS("Out"), NULL), "rnn_grad",
               "is_test is true", "training mode");
  release(&c, &r);
  r = build_for(&c, RILL_DTYPE_FP64, false, false);
  OK(op_harness_attr_bool(r.h, "is_test", false)); /* training, but no Reserve output */
  EXPECT_ERROR(grad_check(r.h, GC_SLOTS("Input"), GC_SLOTS("Out"), NULL), "rnn_grad",
               "needs input Reserve");
  release(&c, &r);
}

/* ---- out of memory: the training forward and rnn_grad fail cleanly at every allocation ---- */

static rill_status *bind_sweep(op_harness *h, const char *slot, const char *name, rill_dtype dt,
                               const int64_t *d, size_t nd, const void *data) {
  rill_tensor *t = op_harness_make(dt, d, nd, data);
  if (!t) return rill_error(RILL_OUT_OF_MEMORY, "out of memory making %s", name);
  rill_status *st = op_harness_input(h, slot, name, t);
  op_harness_free_tensor(t);
  return st;
}

static rill_status *attrs_sweep(op_harness *h, const cfg *c) {
  rill_status *st = op_harness_attr_string(h, "mode", mode_names[c->mode]);
  if (!st) st = op_harness_attr_int(h, "num_layers", c->L);
  if (!st) st = op_harness_attr_int(h, "hidden_size", (int32_t)c->H);
  if (!st) st = op_harness_attr_bool(h, "is_bidirec", c->D == 2);
  if (!st) st = op_harness_attr_bool(h, "is_test", false);
  if (!st) st = op_harness_attr_float(h, "dropout_prob", 0.5f);
  if (!st) st = op_harness_attr_int(h, "seed", 3);
  return st;
}

static rill_status *run_train_step(void *ctx) {
  const cfg *c = ctx;
  static const char *const pre[] = {"h0", "c0"}, *const st_names[] = {"hn", "cn"};
  double v[256];
  fill(v, 256, 0.4, 0.5);
  op_harness *h = NULL, *g = NULL;
  RILL_TRY(op_harness_create("rnn", &h));
  rill_status *st = bind_sweep(h, "Input", "x", RILL_DTYPE_FP64, DIMS(c->T, c->N, c->I), v);
  for (int i = 0; i < 2 && !st; i++)
    st = bind_sweep(h, "PreState", pre[i], RILL_DTYPE_FP64, DIMS(c->L * c->D, c->N, c->H), v);
  char names[32][24];
  for (int64_t k = 0; k < nweights(c) && !st; k++) {
    int64_t dims[2];
    size_t nd = weight_shape(c, k, dims);
    snprintf(names[k], sizeof names[k], "w%lld", (long long)k);
    st = bind_sweep(h, "WeightList", names[k], RILL_DTYPE_FP64, dims, nd, v);
  }
  if (!st) st = bind_sweep(h, "SequenceLength", "len", RILL_DTYPE_INT64, DIMS(c->N), c->lens);
  if (!st) st = op_harness_output(h, "Out", "out");
  for (int i = 0; i < 2 && !st; i++) st = op_harness_output(h, "State", st_names[i]);
  if (!st) st = op_harness_output(h, "Reserve", "reserve");
  if (!st) st = op_harness_output(h, "DropoutState", "mask");
  if (!st) st = attrs_sweep(h, c);
  if (!st) st = op_harness_run(h);
  if (!st) st = op_harness_create("rnn_grad", &g);
  static const char *const fwd[] = {"x", "h0", "c0", "len", "reserve", "mask", "out"};
  static const char *const fwd_slots[] = {"Input", "PreState", "PreState", "SequenceLength",
                                          "Reserve", "DropoutState", "Out"};
  for (size_t i = 0; i < RILL_COUNTOF(fwd) && !st; i++)
    st = op_harness_input(g, fwd_slots[i], fwd[i], op_harness_tensor(h, fwd[i]));
  for (int64_t k = 0; k < nweights(c) && !st; k++) {
    char gname[32];
    snprintf(gname, sizeof gname, "%s@GRAD", names[k]);
    st = op_harness_input(g, "WeightList", names[k], op_harness_tensor(h, names[k]));
    if (!st) st = op_harness_output(g, "WeightList@GRAD", gname);
  }
  if (!st)
    st = bind_sweep(g, "Out@GRAD", "out@GRAD", RILL_DTYPE_FP64, DIMS(c->T, c->N, c->D * c->H), v);
  for (int i = 0; i < 2 && !st; i++)
    st = bind_sweep(g, "State@GRAD", i ? "cn@GRAD" : "hn@GRAD", RILL_DTYPE_FP64,
                    DIMS(c->L * c->D, c->N, c->H), v);
  if (!st) st = op_harness_output(g, "Input@GRAD", "x@GRAD");
  if (!st) st = op_harness_output(g, "PreState@GRAD", "h0@GRAD");
  if (!st) st = op_harness_output(g, "PreState@GRAD", "c0@GRAD");
  if (!st) st = attrs_sweep(g, c);
  if (!st) st = op_harness_run(g);
  op_harness_destroy(g);
  op_harness_destroy(h);
  return st;
}

Test(rnn, training_fails_cleanly_at_every_allocation) {
  cr_assert_null(rill_registry_init());
  static const int64_t lens[] = {3, 1};
  cfg c = {.mode = LSTM, .L = 2, .D = 2, .T = 3, .N = 2, .I = 2, .H = 2, .lens = lens};
  char why[512] = "";
  long n = fail_alloc_sweep(run_train_step, NULL, &c, 5000, false, why, sizeof why);
  fail_alloc_uninstall();
  cr_assert_geq(n, 10, "%ld failing runs: %s", n, why);
}
