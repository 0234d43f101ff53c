/* One training step (forward + backward + sgd), float32, through the executor:
 *   - an MLP 784-512-512-10 (relu), batch 128, softmax cross entropy;
 *   - a LeNet-style CNN (conv 5x5x6 pad 2, max pool 2, conv 5x5x16, max pool 2,
 *     fc 120, fc 84, fc 10; relu), batch 64, on 28x28 inputs.
 * Baseline in the same run: the same MLP step written by hand with cblas_sgemm calls
 * (forward, backward without the input gradient, sgd), printed as a ratio. Rounds of the
 * two sides are interleaved and the best of each kept (the machine is shared).
 * The last line, "RESULT mlp_ms=... lenet_ms=...", is read by scripts/bench.sh to
 * compare with the PyTorch peer (bench/peers/torch_train.py) when torch is installed.
 * With `--device cuda:0` the steps run on that GPU (each step's batch fed from the host,
 * as a training loop feeds it); scripts/gpu-check.sh compares them with the peer's
 * `--device cuda`. Usage: bench_train [--device PLACE] */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rill.h"

#define BENCH_NAME "bench_train"
#include "bench/bench_util.h"
#include "tests/train/train_util.h"

#define F RILL_DTYPE_FP32

#define CK(expr) check((expr), #expr)

static void var(rill_program *p, const char *name, rill_dtype dt, size_t nd, const int64_t *d,
                bool stop) {
  CK(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, dt, d, nd, 0, false));
  if (stop) CK(rill_var_set_flags(p, 0, name, false, false, true));
}

static rill_op_builder *op(const char *type, const char *s1, const char *a1, const char *s2,
                           const char *a2, const char *os, const char *oa) {
  rill_op_builder *b = NULL;
  CK(rill_op_builder_create(type, &b));
  CK(rill_op_builder_input(b, s1, &a1, 1));
  if (s2) CK(rill_op_builder_input(b, s2, &a2, 1));
  CK(rill_op_builder_output(b, os, &oa, 1));
  return b;
}

static void end(rill_op_builder *b, rill_program *p) {
  CK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
}

/* fc: out = act(in * w + b) with parameters "<name>.w_0", "<name>.b_0". */
static void fc(rill_program *m, rill_program *s, const char *name, const char *in, int64_t rows,
               int64_t k, int64_t n, bool relu, const char *out, int seed) {
  char w[64], b[64], z[64], zb[64];
  snprintf(w, sizeof w, "%s.w_0", name);
  snprintf(b, sizeof b, "%s.b_0", name);
  snprintf(z, sizeof z, "%s.tmp_0", name);
  snprintf(zb, sizeof zb, "%s.tmp_1", name);
  int64_t wd[2] = {k, n}, bd[1] = {n}, zd[2] = {rows, n};
  CK(tu_param(m, s, w, F, wd, 2, sqrtf(6.0f / (float)(k + n)), seed));
  CK(tu_param(m, s, b, F, bd, 1, 0, 0));
  var(m, z, F, 2, zd, false);
  var(m, relu ? zb : out, F, 2, zd, false);
  if (relu) var(m, out, F, 2, zd, false);
  end(op("mul", "X", in, "Y", w, "Out", z), m);
  rill_op_builder *bl = op("elementwise_add", "X", z, "Y", b, "Out", relu ? zb : out);
  CK(rill_op_builder_attr_int(bl, "axis", 1));
  end(bl, m);
  if (relu) end(op("relu", "X", zb, NULL, NULL, "Out", out), m);
}

static void loss_tail(rill_program *m, const char *logits, int64_t rows, int64_t classes) {
  int64_t zd[2] = {rows, classes}, cd[2] = {rows, 1}, ld[1] = {1};
  var(m, "softmax", F, 2, zd, false);
  var(m, "ce", F, 2, cd, false);
  var(m, "loss", F, 1, ld, false);
  rill_op_builder *b = op("softmax_with_cross_entropy", "Logits", logits, "Label", "label",
                          "Softmax", "softmax");
  const char *ce = "ce";
  CK(rill_op_builder_output(b, "Loss", &ce, 1));
  end(b, m);
  end(op("mean", "X", "ce", NULL, NULL, "Out", "loss"), m);
}

static void finish(rill_program *m, rill_program *s, float lr) {
  rill_param_grads *pg = NULL;
  CK(rill_program_append_backward(m, "loss", NULL, 0, &pg));
  CK(tu_append_optimizer(m, s, pg, TU_SGD, lr));
  rill_param_grads_destroy(pg);
  CK(rill_program_validate(m));
}

enum { MB = 128, MD = 784, MH = 512, MC = 10 };

static void build_mlp(rill_program **m, rill_program **s) {
  CK(rill_program_create(m));
  CK(rill_program_create(s));
  int64_t xd[2] = {MB, MD}, yd[2] = {MB, 1};
  var(*m, "x", F, 2, xd, true);
  var(*m, "label", RILL_DTYPE_INT64, 2, yd, true);
  fc(*m, *s, "fc_0", "x", MB, MD, MH, true, "h1", 1);
  fc(*m, *s, "fc_1", "h1", MB, MH, MH, true, "h2", 2);
  fc(*m, *s, "fc_2", "h2", MB, MH, MC, false, "logits", 3);
  loss_tail(*m, "logits", MB, MC);
  finish(*m, *s, 0.01f);
}

enum { LB = 64 };

static void conv_pool(rill_program *m, rill_program *s, const char *name, const char *in, int64_t cin,
                      int64_t cout, int64_t hw, int pad, const char *out, int seed) {
  char w[64], b[64], c[64], cb[64], r[64];
  snprintf(w, sizeof w, "%s.w_0", name);
  snprintf(b, sizeof b, "%s.b_0", name);
  snprintf(c, sizeof c, "%s.tmp_0", name);
  snprintf(cb, sizeof cb, "%s.tmp_1", name);
  snprintf(r, sizeof r, "%s.tmp_2", name);
  int64_t ho = hw + 2 * pad - 4;
  int64_t wd[4] = {cout, cin, 5, 5}, bd[1] = {cout}, cd[4] = {LB, cout, ho, ho};
  int64_t pd[4] = {LB, cout, ho / 2, ho / 2};
  CK(tu_param(m, s, w, F, wd, 4, sqrtf(6.0f / (float)(cin * 25 + cout * 25)), seed));
  CK(tu_param(m, s, b, F, bd, 1, 0, 0));
  var(m, c, F, 4, cd, false);
  var(m, cb, F, 4, cd, false);
  var(m, r, F, 4, cd, false);
  var(m, out, F, 4, pd, false);
  int32_t one2[2] = {1, 1}, pad2[2] = {pad, pad}, two2[2] = {2, 2}, zero2[2] = {0, 0};
  rill_op_builder *bl = op("conv2d", "Input", in, "Filter", w, "Output", c);
  CK(rill_op_builder_attr_ints(bl, "strides", one2, 2));
  CK(rill_op_builder_attr_ints(bl, "paddings", pad2, 2));
  end(bl, m);
  bl = op("elementwise_add", "X", c, "Y", b, "Out", cb);
  CK(rill_op_builder_attr_int(bl, "axis", 1));
  end(bl, m);
  end(op("relu", "X", cb, NULL, NULL, "Out", r), m);
  bl = op("pool2d", "X", r, NULL, NULL, "Out", out);
  CK(rill_op_builder_attr_string(bl, "pooling_type", "max"));
  CK(rill_op_builder_attr_ints(bl, "ksize", two2, 2));
  CK(rill_op_builder_attr_ints(bl, "strides", two2, 2));
  CK(rill_op_builder_attr_ints(bl, "paddings", zero2, 2));
  end(bl, m);
}

static void build_lenet(rill_program **m, rill_program **s) {
  CK(rill_program_create(m));
  CK(rill_program_create(s));
  int64_t xd[4] = {LB, 1, 28, 28}, yd[2] = {LB, 1};
  var(*m, "x", F, 4, xd, true);
  var(*m, "label", RILL_DTYPE_INT64, 2, yd, true);
  conv_pool(*m, *s, "conv2d_0", "x", 1, 6, 28, 2, "pool_0", 11);
  conv_pool(*m, *s, "conv2d_1", "pool_0", 6, 16, 14, 0, "pool_1", 12);
  fc(*m, *s, "fc_0", "pool_1", LB, 400, 120, true, "f1", 13);
  fc(*m, *s, "fc_1", "f1", LB, 120, 84, true, "f2", 14);
  fc(*m, *s, "fc_2", "f2", LB, 84, 10, false, "logits", 15);
  loss_tail(*m, "logits", LB, 10);
  finish(*m, *s, 0.01f);
}

/* ---- the hand-written MLP step ---- */

typedef struct hand {
  float *w1, *b1, *w2, *b2, *w3, *b3;
  float *z1, *a1, *z2, *a2, *z3, *d3, *d2, *d1, *dw1, *dw2, *dw3, *db1, *db2, *db3;
} hand;

static float *alloc_f(size_t n, float range, unsigned seed) {
  float *p = malloc(n * sizeof *p);
  srand(seed);
  for (size_t i = 0; i < n; i++) p[i] = range * (2.0f * (float)rand() / (float)RAND_MAX - 1.0f);
  return p;
}

static void hand_init(hand *h) {
  h->w1 = alloc_f((size_t)MD * MH, sqrtf(6.0f / (MD + MH)), 1);
  h->w2 = alloc_f((size_t)MH * MH, sqrtf(6.0f / (MH + MH)), 2);
  h->w3 = alloc_f((size_t)MH * MC, sqrtf(6.0f / (MH + MC)), 3);
  h->b1 = alloc_f(MH, 0, 0);
  h->b2 = alloc_f(MH, 0, 0);
  h->b3 = alloc_f(MC, 0, 0);
  float **bufs[] = {&h->z1, &h->a1, &h->z2, &h->a2, &h->d2, &h->d1};
  for (size_t i = 0; i < 6; i++) *bufs[i] = alloc_f((size_t)MB * MH, 0, 0);
  h->z3 = alloc_f((size_t)MB * MC, 0, 0);
  h->d3 = alloc_f((size_t)MB * MC, 0, 0);
  h->dw1 = alloc_f((size_t)MD * MH, 0, 0);
  h->dw2 = alloc_f((size_t)MH * MH, 0, 0);
  h->dw3 = alloc_f((size_t)MH * MC, 0, 0);
  h->db1 = alloc_f(MH, 0, 0);
  h->db2 = alloc_f(MH, 0, 0);
  h->db3 = alloc_f(MC, 0, 0);
}

static void dense_fwd(const float *in, const float *w, const float *b, float *z, float *a, int k,
                      int n) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, MB, n, k, 1, in, k, w, n, 0, z, n);
  for (int i = 0; i < MB; i++)
    for (int j = 0; j < n; j++) {
      float v = z[i * n + j] + b[j];
      z[i * n + j] = v;
      if (a) a[i * n + j] = v > 0 ? v : 0;
    }
}

/* dW = in^T d, db = colsum(d); then w -= lr dW, b -= lr db. */
static void dense_bwd_update(const float *in, const float *d, float *w, float *b, float *dw,
                             float *db, int k, int n, float lr) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, MB, 1, in, k, d, n, 0, dw, n);
  memset(db, 0, (size_t)n * sizeof *db);
  for (int i = 0; i < MB; i++)
    for (int j = 0; j < n; j++) db[j] += d[i * n + j];
  for (size_t i = 0; i < (size_t)k * n; i++) w[i] -= lr * dw[i];
  for (int j = 0; j < n; j++) b[j] -= lr * db[j];
}

static float hand_step(hand *h, const float *x, const int64_t *y, float lr) {
  dense_fwd(x, h->w1, h->b1, h->z1, h->a1, MD, MH);
  dense_fwd(h->a1, h->w2, h->b2, h->z2, h->a2, MH, MH);
  dense_fwd(h->a2, h->w3, h->b3, h->z3, NULL, MH, MC);
  float loss = 0;
  for (int i = 0; i < MB; i++) {
    float *z = h->z3 + i * MC, mx = z[0], sum = 0;
    for (int j = 1; j < MC; j++) mx = z[j] > mx ? z[j] : mx;
    for (int j = 0; j < MC; j++) sum += expf(z[j] - mx);
    for (int j = 0; j < MC; j++) {
      float p = expf(z[j] - mx) / sum;
      h->d3[i * MC + j] = (p - (j == y[i] ? 1.0f : 0.0f)) / MB;
    }
    loss += (logf(sum) + mx - z[y[i]]) / MB;
  }
  /* gradients of the hidden layers use the weights before their update */
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, MB, MH, MC, 1, h->d3, MC, h->w3, MC, 0,
              h->d2, MH);
  for (size_t i = 0; i < (size_t)MB * MH; i++) h->d2[i] = h->z2[i] > 0 ? h->d2[i] : 0;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, MB, MH, MH, 1, h->d2, MH, h->w2, MH, 0,
              h->d1, MH);
  for (size_t i = 0; i < (size_t)MB * MH; i++) h->d1[i] = h->z1[i] > 0 ? h->d1[i] : 0;
  dense_bwd_update(h->a2, h->d3, h->w3, h->b3, h->dw3, h->db3, MH, MC, lr);
  dense_bwd_update(h->a1, h->d2, h->w2, h->b2, h->dw2, h->db2, MH, MH, lr);
  dense_bwd_update(x, h->d1, h->w1, h->b1, h->dw1, h->db1, MD, MH, lr);
  return loss;
}

typedef struct side {
  rill_program *main, *startup;
  rill_scope *scope;
  const char *feeds[2];
  rill_tensor *feed_t[2];
} side;

static float rill_step(rill_executor *e, side *s) {
  const char *fetch[1] = {"loss"};
  rill_tensor *out = NULL;
  CK(rill_executor_run(e, s->main, s->scope, s->feeds, s->feed_t, 2, fetch, 1, &out));
  float l = *(float *)rill_tensor_data(out);
  rill_tensor_destroy(out);
  return l;
}

static void side_init(rill_executor *e, side *s, void (*build)(rill_program **, rill_program **),
                      float *x, const int64_t *xd, size_t nd, int64_t *y, int64_t rows) {
  build(&s->main, &s->startup);
  CK(rill_scope_create(NULL, &s->scope));
  CK(rill_executor_run(e, s->startup, s->scope, NULL, NULL, 0, NULL, 0, NULL));
  size_t n = 1;
  for (size_t i = 0; i < nd; i++) n *= (size_t)xd[i];
  int64_t yd[2] = {rows, 1};
  CK(rill_tensor_create_from_data(F, xd, nd, x, n * sizeof(float), NULL, NULL, &s->feed_t[0]));
  CK(rill_tensor_create_from_data(RILL_DTYPE_INT64, yd, 2, y, (size_t)rows * sizeof(int64_t), NULL,
                                  NULL, &s->feed_t[1]));
  s->feeds[0] = "x";
  s->feeds[1] = "label";
}

#define ROUNDS 7
#define STEPS 5
#define PROF_PAIRS 40
#define PROF_STEPS 3

int main(int argc, char **argv) {
  rill_executor *e = NULL;
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  if (argc == 3 && strcmp(argv[1], "--device") == 0) {
    CK(rill_parse_place(argv[2], &o.place));
  } else if (argc != 1) {
    fprintf(stderr, "usage: %s [--device PLACE]\n", argv[0]);
    return 2;
  }
  CK(rill_executor_create(&o, &e));
  float *mx = alloc_f((size_t)MB * MD, 1, 7), *lx = alloc_f((size_t)LB * 28 * 28, 1, 8);
  int64_t my[MB], ly[LB];
  for (int i = 0; i < MB; i++) my[i] = (i * 7) % MC;
  for (int i = 0; i < LB; i++) ly[i] = (i * 3) % 10;
  int64_t mxd[2] = {MB, MD}, lxd[4] = {LB, 1, 28, 28};
  side mlp, lenet;
  side_init(e, &mlp, build_mlp, mx, mxd, 2, my, MB);
  side_init(e, &lenet, build_lenet, lx, lxd, 4, ly, LB);
  hand h;
  hand_init(&h);
  /* warm up (plans, buffers, BLAS threads) */
  float l0 = rill_step(e, &mlp), h0 = hand_step(&h, mx, my, 0.01f);
  rill_step(e, &lenet);
  double best_r = 1e30, best_h = 1e30, best_l = 1e30, best_p = 1e30;
  float lr_last = 0, lh_last = 0;
  for (int r = 0; r < ROUNDS; r++) {
    double t = now();
    for (int i = 0; i < STEPS; i++) lr_last = rill_step(e, &mlp);
    best_r = fmin(best_r, (now() - t) / STEPS);
    t = now();
    for (int i = 0; i < STEPS; i++) lh_last = hand_step(&h, mx, my, 0.01f);
    best_h = fmin(best_h, (now() - t) / STEPS);
    t = now();
    for (int i = 0; i < STEPS; i++) rill_step(e, &lenet);
    best_l = fmin(best_l, (now() - t) / STEPS);
  }
  printf("mlp 784-512-512-10 batch %d, one sgd step: rill %.2f ms, hand-written sgemm %.2f ms, "
         "ratio %.2f (loss %.3f -> %.3f; hand %.3f -> %.3f)\n",
         MB, best_r * 1e3, best_h * 1e3, best_r / best_h, l0, lr_last, h0, lh_last);
  printf("lenet batch %d, one sgd step: rill %.2f ms\n", LB, best_l * 1e3);
  /* The MLP step with the profiler on (recording every op) against off: PROF_PAIRS
   * short rounds, the two sides back to back in alternating order; the median of the
   * per-round ratios, with its quartiles (a noisy machine moves single rounds by 20%). */
  double ratios[PROF_PAIRS], best_o = 1e30;
  for (int r = 0; r < PROF_PAIRS; r++) {
    double dt[2];
    for (int k = 0; k < 2; k++) {
      bool on = (k + r) % 2 == 1;
      if (on) CK(rill_profiler_start(NULL));
      double t = now();
      for (int i = 0; i < PROF_STEPS; i++) rill_step(e, &mlp);
      dt[on] = (now() - t) / PROF_STEPS;
      if (on) CK(rill_profiler_stop(NULL, NULL));
    }
    best_p = fmin(best_p, dt[1]);
    best_o = fmin(best_o, dt[0]);
    ratios[r] = dt[1] / dt[0];
  }
  qsort(ratios, PROF_PAIRS, sizeof *ratios, cmp_double);
  printf("mlp step with the profiler on / off: median %.3f (quartiles %.3f-%.3f) over %d "
         "alternating rounds of %d steps; best on %.2f ms, off %.2f ms (target <= 1.05)\n",
         ratios[PROF_PAIRS / 2], ratios[PROF_PAIRS / 4], ratios[3 * PROF_PAIRS / 4], PROF_PAIRS,
         PROF_STEPS, best_p * 1e3, best_o * 1e3);
  printf("RESULT mlp_ms=%.4f lenet_ms=%.4f\n", best_r * 1e3, best_l * 1e3);
  side *sides[2] = {&mlp, &lenet};
  for (int i = 0; i < 2; i++) {
    rill_program_destroy(sides[i]->main);
    rill_program_destroy(sides[i]->startup);
    rill_scope_destroy(sides[i]->scope);
    rill_tensor_destroy(sides[i]->feed_t[0]);
    rill_tensor_destroy(sides[i]->feed_t[1]);
  }
  rill_executor_destroy(e);
  return 0;
}
