/* cudnn_lstm (Fluid 1.x's layers.lstm) against a naive reference written here: every
 * gate a dot product, step by step, in double, reading the flat weight W in cuDNN's
 * canonical layout as walked below (every layer and direction's 4 input then 4
 * recurrent matrices, gates i, f, c, o, each [H, in] row-major; then every layer and
 * direction's 4 input biases and 4 recurrent biases, both added). One and two layers,
 * one and two directions, float32 and float64; a hand-computed one-unit case that pins
 * the layout without the reference; the dropout between layers; cudnn_lstm_grad by
 * finite differences for Input, InitH, InitC and W, with Reserve and without it (the
 * forward run again), through dropout; and the errors naming op and variable. */
#include "op_test.h"
#include "support/grad_check.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct cfg {
  int64_t L, D, T, N, I, H;
} cfg;

static int64_t in_width(const cfg *c, int64_t l) { return l == 0 ? c->I : c->D * c->H; }

/* W's size, walking the layout. */
static int64_t wsize(const cfg *c) {
  int64_t n = 0;
  for (int64_t l = 0; l < c->L; l++) n += c->D * (4 * c->H * in_width(c, l) + 4 * c->H * c->H);
  return n + c->L * c->D * 8 * c->H;
}

/* Where each layer and direction's matrices and biases start in W. */
typedef struct where {
  int64_t w[8][2], r[8][2], bw[8][2], br[8][2];
} where;

static where layout(const cfg *c) {
  where at;
  int64_t p = 0;
  for (int64_t l = 0; l < c->L; l++)
    for (int64_t d = 0; d < c->D; d++) {
      at.w[l][d] = p;
      p += 4 * c->H * in_width(c, l);
      at.r[l][d] = p;
      p += 4 * c->H * c->H;
    }
  for (int64_t l = 0; l < c->L; l++)
    for (int64_t d = 0; d < c->D; d++) {
      at.bw[l][d] = p;
      p += 4 * c->H;
      at.br[l][d] = p;
      p += 4 * c->H;
    }
  return at;
}

static double sig(double v) { return 1.0 / (1.0 + exp(-v)); }

/* The reference forward, without dropout. out [T, N, D*H], hn and cn [L*D, N, H]. */
static void ref_lstm(const cfg *c, const double *x, const double *h0, const double *c0,
                     const double *w, double *out, double *hn, double *cn) {
  const int64_t T = c->T, N = c->N, H = c->H, D = c->D, W = D * H;
  where at = layout(c);
  double *cur = malloc((size_t)(T * N * (c->I > W ? c->I : W) + 1) * sizeof *cur);
  double *next = malloc((size_t)(T * N * W + 1) * sizeof *next);
  memcpy(cur, x, (size_t)(T * N * c->I) * sizeof *cur);
  double *h = malloc((size_t)(N * H) * sizeof *h), *cc = malloc((size_t)(N * H) * sizeof *cc);
  double *hnew = malloc((size_t)(N * H) * sizeof *hnew);
  for (int64_t l = 0; l < c->L; l++) {
    int64_t in = in_width(c, l);
    for (int64_t d = 0; d < D; d++) {
      int64_t s = l * D + d;
      memcpy(h, h0 + s * N * H, (size_t)(N * H) * sizeof *h);
      memcpy(cc, c0 + s * N * H, (size_t)(N * H) * sizeof *cc);
      for (int64_t k = 0; k < T; k++) {
        int64_t t = d == 0 ? k : T - 1 - k;
        for (int64_t b = 0; b < N; b++) {
          const double *xr = cur + (t * N + b) * in;
          for (int64_t j = 0; j < H; j++) {
            double z[4];
            for (int q = 0; q < 4; q++) {
              double v = w[at.bw[l][d] + q * H + j] + w[at.br[l][d] + q * H + j];
              const double *wr = w + at.w[l][d] + (q * H + j) * in;
              const double *rr = w + at.r[l][d] + (q * H + j) * H;
              for (int64_t m = 0; m < in; m++) v += wr[m] * xr[m];
              for (int64_t m = 0; m < H; m++) v += rr[m] * h[b * H + m];
              z[q] = v;
            }
            double cv = sig(z[1]) * cc[b * H + j] + sig(z[0]) * tanh(z[2]);
            cc[b * H + j] = cv;
            hnew[b * H + j] = sig(z[3]) * tanh(cv);
            next[(t * N + b) * W + d * H + j] = hnew[b * H + j];
          }
        }
        memcpy(h, hnew, (size_t)(N * H) * sizeof *h);
      }
      memcpy(hn + s * N * H, h, (size_t)(N * H) * sizeof *h);
      memcpy(cn + s * N * H, cc, (size_t)(N * H) * sizeof *cc);
    }
    memcpy(cur, next, (size_t)(T * N * W) * sizeof *cur);
  }
  memcpy(out, cur, (size_t)(T * N * W) * sizeof *out);
  free(cur), free(next), free(h), free(cc), free(hnew);
}

static void fill(double *v, int64_t n, double seed, double scale) {
  for (int64_t i = 0; i < n; i++)
    v[i] = scale * sin(seed + 0.37 * (double)i + 0.011 * (double)(i * i % 97));
}

typedef struct built {
  op_harness *h;
  double *x, *h0, *c0, *w, *out, *hn, *cn;
} built;

/* The op for cfg with deterministic inputs and the reference outputs. train: is_test
 * false; reserve: with output Reserve. */
static built build(const cfg *c, rill_dtype dt, bool train, bool reserve) {
  built r = {0};
  int64_t T = c->T, N = c->N, I = c->I, H = c->H, SD = c->L * c->D, nw = wsize(c);
  r.h = harness("cudnn_lstm");
  r.x = malloc((size_t)(T * N * I + 1) * sizeof(double));
  r.h0 = malloc((size_t)(SD * N * H) * sizeof(double));
  r.c0 = malloc((size_t)(SD * N * H) * sizeof(double));
  r.w = malloc((size_t)nw * sizeof(double));
  fill(r.x, T * N * I, 0.3, 1.0);
  fill(r.h0, SD * N * H, 1.1, 0.5);
  fill(r.c0, SD * N * H, 2.3, 0.5);
  fill(r.w, nw, 0.9, 0.6);
  bind_input_dt(r.h, "Input", "x", dt, DIMS(T, N, I), r.x);
  bind_input_dt(r.h, "InitH", "h0", dt, DIMS(SD, N, H), r.h0);
  bind_input_dt(r.h, "InitC", "c0", dt, DIMS(SD, N, H), r.c0);
  bind_input_dt(r.h, "W", "w", dt, DIMS(nw), r.w);
  OK(op_harness_output(r.h, "Out", "out"));
  OK(op_harness_output(r.h, "last_h", "hn"));
  OK(op_harness_output(r.h, "last_c", "cn"));
  if (reserve) OK(op_harness_output(r.h, "Reserve", "reserve"));
  OK(op_harness_attr_int(r.h, "num_layers", (int32_t)c->L));
  OK(op_harness_attr_int(r.h, "hidden_size", (int32_t)H));
  OK(op_harness_attr_int(r.h, "input_size", (int32_t)I));
  OK(op_harness_attr_int(r.h, "max_len", (int32_t)T));
  OK(op_harness_attr_bool(r.h, "is_bidirec", c->D == 2));
  OK(op_harness_attr_bool(r.h, "is_test", !train));
  r.out = malloc((size_t)(T * N * c->D * H + 1) * sizeof(double));
  r.hn = malloc((size_t)(SD * N * H) * sizeof(double));
  r.cn = malloc((size_t)(SD * N * H) * sizeof(double));
  ref_lstm(c, r.x, r.h0, r.c0, r.w, r.out, r.hn, r.cn);
  return r;
}

static void release(built *r) {
  op_harness_destroy(r->h);
  free(r->x), free(r->h0), free(r->c0), free(r->w), free(r->out), free(r->hn), free(r->cn);
}

static void check(const cfg *c, rill_dtype dt, bool train) {
  built r = build(c, dt, train, train);
  int64_t SD = c->L * c->D;
  OK(op_harness_run(r.h));
  rill_tensor *out = op_harness_tensor(r.h, "out");
  expect_dims(out, DIMS(c->T, c->N, c->D * c->H));
  expect_close_dt(out, r.out, c->T * c->N * c->D * c->H, dt);
  expect_dims(op_harness_tensor(r.h, "hn"), DIMS(SD, c->N, c->H));
  expect_close_dt(op_harness_tensor(r.h, "hn"), r.hn, SD * c->N * c->H, dt);
  expect_dims(op_harness_tensor(r.h, "cn"), DIMS(SD, c->N, c->H));
  expect_close_dt(op_harness_tensor(r.h, "cn"), r.cn, SD * c->N * c->H, dt);
  release(&r);
}

Test(cudnn_lstm, one_and_two_layers_one_and_two_directions) {
  static const cfg cs[] = {{1, 1, 4, 3, 5, 3}, {1, 2, 5, 2, 3, 4}, {2, 1, 3, 2, 4, 3},
                           {2, 2, 5, 3, 3, 4}, {3, 2, 3, 2, 2, 2}};
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    check(&cs[i], RILL_DTYPE_FP32, false);
    check(&cs[i], RILL_DTYPE_FP64, false);
    check(&cs[i], RILL_DTYPE_FP64, true); /* training without dropout: the same numbers */
  }
}

Test(cudnn_lstm, shape_inference) {
  cfg c = {2, 2, 5, 3, 3, 4};
  built r = build(&c, RILL_DTYPE_FP32, true, true);
  OK(op_harness_infer(r.h));
  OK(op_harness_run(r.h));
  expect_dims(op_harness_tensor(r.h, "out"), DIMS(5, 3, 8));
  /* Reserve: 5H of gates per layer, direction, step and row, layer 0's output, the mask */
  expect_dims(op_harness_tensor(r.h, "reserve"), DIMS(2 * 2 * 5 * 3 * 20 + 5 * 3 * 8 + 5 * 3 * 8));
  release(&r);
}

Test(cudnn_lstm, one_unit_by_hand) {
  /* H = I = 1, one step, h0 = c0 = 0: W = [Wi Wf Wc Wo Ri Rf Rc Ro bWi bWf bWc bWo bRi
   * bRf bRc bRo]. The recurrent part meets h0 = 0, so only W* and both biases count. */
  const double w[16] = {0.5, -0.3, 0.8, 0.2, 9, 9, 9, 9, 0.1, 0.2, -0.1, 0.3, 0.05, -0.4, 0.2, 0.1};
  const double x = 0.7, zero = 0;
  double i = sig(0.5 * x + 0.1 + 0.05), cand = tanh(0.8 * x - 0.1 + 0.2);
  double o = sig(0.2 * x + 0.3 + 0.1);
  double cv = i * cand, hv = o * tanh(cv);
  op_harness *h = harness("cudnn_lstm");
  bind_input(h, "Input", "x", RILL_DTYPE_FP64, DIMS(1, 1, 1), &x);
  bind_input(h, "InitH", "h0", RILL_DTYPE_FP64, DIMS(1, 1, 1), &zero);
  bind_input(h, "InitC", "c0", RILL_DTYPE_FP64, DIMS(1, 1, 1), &zero);
  bind_input(h, "W", "w", RILL_DTYPE_FP64, DIMS(16), w);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "last_h", "hn"));
  OK(op_harness_output(h, "last_c", "cn"));
  OK(op_harness_attr_int(h, "hidden_size", 1));
  OK(op_harness_attr_int(h, "input_size", 1));
  OK(op_harness_attr_bool(h, "is_test", true));
  OK(op_harness_run(h));
  cr_assert_float_eq(*(const double *)rill_tensor_ptr(op_harness_tensor(h, "out")), hv, 1e-12);
  cr_assert_float_eq(*(const double *)rill_tensor_ptr(op_harness_tensor(h, "cn")), cv, 1e-12);
  op_harness_destroy(h);
}

Test(cudnn_lstm, dropout_between_layers_when_training) {
  cfg c = {2, 2, 4, 3, 3, 4};
  int64_t n = c.T * c.N * c.D * c.H;
  built r = build(&c, RILL_DTYPE_FP64, true, true);
  OK(op_harness_attr_float(r.h, "dropout_prob", 0.5f));
  OK(op_harness_attr_int(r.h, "seed", 7));
  OK(op_harness_run(r.h));
  double *first = malloc((size_t)n * sizeof *first);
  memcpy(first, rill_tensor_ptr(op_harness_tensor(r.h, "out")), (size_t)n * sizeof *first);
  double diff = 0;
  for (int64_t i = 0; i < n; i++) diff = fmax(diff, fabs(first[i] - r.out[i]));
  cr_assert_gt(diff, 1e-3, "dropout made no difference");
  /* a fixed seed: the same mask again; the mask in Reserve holds 0 and 1 only */
  OK(op_harness_run(r.h));
  cr_assert_eq(memcmp(first, rill_tensor_ptr(op_harness_tensor(r.h, "out")),
                      (size_t)n * sizeof *first), 0);
  rill_tensor *res = op_harness_tensor(r.h, "reserve");
  const double *mask = (const double *)rill_tensor_ptr(res) + rill_tensor_numel(res) - n;
  int64_t dropped = 0;
  for (int64_t i = 0; i < n; i++) {
    cr_assert(mask[i] == 0 || mask[i] == 1);
    dropped += mask[i] == 0;
  }
  cr_assert(dropped > n / 5 && dropped < 4 * n / 5, "%lld of %lld dropped", (long long)dropped,
            (long long)n);
  /* is_test: no dropout, the reference's numbers */
  OK(op_harness_attr_bool(r.h, "is_test", true));
  OK(op_harness_run(r.h));
  expect_close_dt(op_harness_tensor(r.h, "out"), r.out, n, RILL_DTYPE_FP64);
  free(first);
  release(&r);
}

/* Finite differences of L = sum(Out dOut) + sum(last_h dh) + sum(last_c dc) against
 * cudnn_lstm_grad for Input, InitH, InitC and W. */
static void grad_case(const cfg *c, bool reserve, float dropout) {
  built r = build(c, RILL_DTYPE_FP64, true, reserve);
  if (dropout > 0) {
    OK(op_harness_attr_float(r.h, "dropout_prob", dropout));
    OK(op_harness_attr_int(r.h, "seed", 5)); /* the same mask in every forward run */
  }
  rill_status *st = grad_check(r.h, GC_SLOTS("Input", "InitH", "InitC", "W"),
                               GC_SLOTS("Out", "last_h", "last_c"), NULL);
  cr_assert_null(st, "%lld layers, %lld directions, reserve %d: %s", (long long)c->L,
                 (long long)c->D, reserve, rill_status_message(st));
  release(&r);
}

Test(cudnn_lstm, gradient_two_layers_bidirectional) {
  cfg c = {2, 2, 3, 2, 3, 2};
  grad_case(&c, true, 0);
}

Test(cudnn_lstm, gradient_one_layer_and_without_reserve) {
  cfg one = {1, 1, 3, 2, 3, 3};
  grad_case(&one, true, 0);
  cfg bi = {2, 2, 3, 2, 2, 2};
  grad_case(&bi, false, 0); /* a program Paddle wrote: the gradient runs the forward again */
}

Test(cudnn_lstm, gradient_through_dropout) {
  cfg c = {2, 2, 3, 3, 2, 2};
  grad_case(&c, true, 0.4f);
  grad_case(&c, false, 0.4f); /* the seed draws the forward's mask again */
}

/* ---- errors name the op and the variable ---- */

static op_harness *small(int64_t wn, const int64_t *hd, size_t hnd, int32_t input_size) {
  static const float zeros[4096];
  op_harness *h = harness("cudnn_lstm");
  bind_input(h, "Input", "x", RILL_DTYPE_FP32, DIMS(2, 1, 3), zeros);
  bind_input(h, "InitH", "lstm.h0", RILL_DTYPE_FP32, hd, hnd, zeros);
  bind_input(h, "InitC", "lstm.c0", RILL_DTYPE_FP32, DIMS(4, 1, 4), zeros);
  bind_input(h, "W", "lstm.w", RILL_DTYPE_FP32, DIMS(wn), zeros);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_output(h, "last_h", "hn"));
  OK(op_harness_output(h, "last_c", "cn"));
  OK(op_harness_attr_int(h, "num_layers", 2));
  OK(op_harness_attr_int(h, "hidden_size", 4));
  OK(op_harness_attr_int(h, "input_size", input_size));
  OK(op_harness_attr_bool(h, "is_bidirec", true));
  OK(op_harness_attr_bool(h, "is_test", true));
  return h;
}

/* 2 layers, 2 directions, I 3, H 4: 2 * (16 * 3 + 16 * 4) + 2 * (16 * 8 + 16 * 4) + 4 * 32 */
static const int64_t good_w = 2 * (48 + 64) + 2 * (128 + 64) + 4 * 32;

Test(cudnn_lstm, well_formed_runs) {
  op_harness *h = small(good_w, DIMS(4, 1, 4), 3);
  OK(op_harness_run(h));
  expect_dims(op_harness_tensor(h, "out"), DIMS(2, 1, 8));
  op_harness_destroy(h);
}

Test(cudnn_lstm, wrong_weight_size_is_named) {
  op_harness *h = small(good_w - 4, DIMS(4, 1, 4), 3);
  EXPECT_ERROR(op_harness_run(h), "cudnn_lstm", "W (lstm.w)", "is float32 [732]", "expected float32 with 736 elements",
               "2 layers, 2 directions");
  op_harness_destroy(h);
}

Test(cudnn_lstm, wrong_state_shape_and_input_size) {
  op_harness *h = small(good_w, DIMS(2, 1, 4), 3);
  EXPECT_ERROR(op_harness_run(h), "cudnn_lstm", "InitH (lstm.h0)", "[2, 1, 4]", "[4, 1, 4]");
  op_harness_destroy(h);
  h = small(good_w, DIMS(4, 1, 4), 5);
  EXPECT_ERROR(op_harness_run(h), "cudnn_lstm", "input_size 5", "Input (x)");
  op_harness_destroy(h);
}

Test(cudnn_lstm, gradient_errors) {
  cfg c = {2, 1, 3, 2, 2, 2};
  built r = build(&c, RILL_DTYPE_FP64, false, false); /* is_test true */
  EXPECT_ERROR(grad_check(r.h, GC_SLOTS("Input"), GC_SLOTS("Out"), NULL), "cudnn_lstm_grad",
               "is_test is true");
  release(&r);
  /* dropout drawn anew each run, and no Reserve to read the mask from */
  r = build(&c, RILL_DTYPE_FP64, true, false);
  OK(op_harness_attr_float(r.h, "dropout_prob", 0.3f));
  EXPECT_ERROR(grad_check(r.h, GC_SLOTS("Input"), GC_SLOTS("Out"), NULL), "cudnn_lstm_grad",
               "Reserve is absent", "seed -1");
  release(&r);
}
