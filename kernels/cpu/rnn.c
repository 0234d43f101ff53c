/* rnn and rnn_grad CPU kernels (Paddle 2.x semantics), float32 and float64 from one
 * engine (rnn_impl.inc).
 *
 * Forward. Per layer and direction, one GEMM projects every step's input at once,
 * G = xs W_ih^T + b_ih (+ b_hh, except GRU's candidate part), for both directions before
 * either runs, so Out may share Input's buffer. Then per step one GEMM gives the hidden
 * projection P = h W_hh^T [N, gates * H] and the cell is applied row by row:
 *   LSTM (i, f, c, o): c' = sig(f) c + sig(i) tanh(c~), h' = sig(o) tanh(c')
 *   GRU (r, z, c):     r = sig(Gr + Pr), z = sig(Gz + Pz),
 *                      n = tanh(Gc + r (Pc + b_hh,c)), h' = (1 - z) n + z h
 *   RNN_RELU / RNN_TANH: h' = act(G + P)
 * The backward direction walks the steps from T - 1 down to 0. A row whose step is at
 * or past its SequenceLength gets zeros in Out and keeps h (and c) as they were, so the
 * backward direction starts at each sequence's last step. Layers above the first read
 * the layer below's output, through the dropout between layers when training with
 * dropout_prob > 0 (one uint8 mask, Out's shape, drawn once per run and applied to every
 * layer's input as Paddle does: x * mask / (1 - p)). In training the gates and the lower
 * layers' outputs go to Reserve (layout in operators/rnn.h).
 *
 * Backward (rnn_grad). Top layer first; per direction from the last step processed to
 * the first, with dh (and dc) carried. At each step the gate gradients of the batch
 * are formed row by row from Reserve, and one GEMM dgates W_hh gives the dh the
 * previous step receives (GRU adds z dh). A row past its sequence's length has zero
 * gate gradients and passes dh and dc on unchanged, as the forward carried h and c.
 * After the steps, one GEMM over all T * N rows gives each of dW_ih (dgates^T x) and
 * dW_hh (dgates^T h_prev, h_prev gathered during the steps), the biases are column sums,
 * and one GEMM dgates W_ih adds the direction's share of the layer input's gradient,
 * which (through the dropout mask) is the layer below's output gradient. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/random.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
#include "kernels/cpu/tensor_ops.h"
#include "kernels/cpu/vexp.h"
#include "kernels/cpu/rnn_engine.h"

_Static_assert(RILL_SAME_POS(RILL_RNN_IN_INPUT, RILL_RNN_GRAD_IN_INPUT) &&
                   RILL_SAME_POS(RILL_RNN_IN_PRE_STATE, RILL_RNN_GRAD_IN_PRE_STATE) &&
                   RILL_SAME_POS(RILL_RNN_IN_WEIGHT_LIST, RILL_RNN_GRAD_IN_WEIGHT_LIST) &&
                   RILL_SAME_POS(RILL_RNN_IN_SEQUENCE_LENGTH, RILL_RNN_GRAD_IN_SEQUENCE_LENGTH) &&
                   RILL_SAME_POS(RILL_RNN_ATTR_COUNT, RILL_RNN_GRAD_ATTR_COUNT),
               "rnn_grad shares rnn's first input slots and its attributes");

/* Whether sequence b has step t. */
static inline bool rnn_live(const rnn_run *r, int64_t t, int64_t b) {
  return !r->lens || t < r->lens[b];
}

/* The step whose state step t of direction d starts from (the one before it in the
 * direction's order), or -1 where it starts from PreState: its sequence's first step.
 * Steps past a length are a suffix, so a live step's neighbour is live or absent. */
static inline int64_t rnn_prev_step(const rnn_run *r, int64_t d, int64_t t, int64_t b) {
  int64_t p = d == 0 ? t - 1 : t + 1;
  return p < 0 || p >= r->T || !rnn_live(r, p, b) ? -1 : p;
}

/* c = op(a) op(b) + beta c (beta 0 or 1) on the kernel's threads; nothing to multiply
 * when k is 0. */
static void gemm_f32(const rill_kernel_ctx *ctx, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb,
                     int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                     int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (beta == 0)
      for (int64_t i = 0; i < m; i++) memset(c + i * ldc, 0, (size_t)n * sizeof *c);
    return;
  }
  rill_sgemm(ctx->dev, rill_dev_threads(ctx->dev), ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta,
             c, ldc);
}

static void gemm_f64(const rill_kernel_ctx *ctx, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb,
                     int64_t m, int64_t n, int64_t k, const double *a, int64_t lda,
                     const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
  (void)ctx;
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    if (beta == 0)
      for (int64_t i = 0; i < m; i++) memset(c + i * ldc, 0, (size_t)n * sizeof *c);
    return;
  }
  cblas_dgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b, (int)ldb, beta,
              c, (int)ldc);
}

/* The recurrent weight W_hh [GH, H] of one layer and direction, which every step of the
 * forward multiplies the state by (h [N, H] W_hh^T): in float32, transposed once and
 * packed once for rill_sgemm's kernel instead of on every step. */
typedef struct recur_weight {
  rill_sgemm_packed *packed;
  float *transposed; /* [H, GH]: the packed form's source, kept while it is used */
} recur_weight;

static void recur_begin_f32(recur_weight *w, const float *whh, int64_t GH, int64_t H) {
  memset(w, 0, sizeof *w);
  if (!rill_sgemm_has_kernels() || GH <= 0 || H <= 0) return;
  w->transposed = rill_malloc((size_t)(GH * H) * sizeof(float));
  if (!w->transposed) return; /* rill_sgemm per step then */
  for (int64_t g = 0; g < GH; g++)
    for (int64_t k = 0; k < H; k++) w->transposed[k * GH + g] = whh[g * H + k];
  w->packed = rill_sgemm_pack_b(w->transposed, GH, H, GH);
}

/* The backward's per-step product dh [N, H] += dgates [N, GH] W_hh: W_hh as it is. */
static void recur_back_begin_f32(recur_weight *w, const float *whh, int64_t GH, int64_t H) {
  memset(w, 0, sizeof *w);
  if (rill_sgemm_has_kernels() && GH > 0 && H > 0) w->packed = rill_sgemm_pack_b(whh, H, GH, H);
}

static void recur_back_gemm_f32(const rill_kernel_ctx *ctx, const recur_weight *w, int64_t N,
                                int64_t GH, int64_t H, const float *dg, const float *whh,
                                float *dh) {
  if (N > 0 && w->packed &&
      rill_sgemm_prepacked(ctx->dev, rill_dev_threads(ctx->dev), CblasNoTrans, N, 1.0f, dg, GH,
                           w->packed, 1.0f, dh, H))
    return;
  gemm_f32(ctx, CblasNoTrans, CblasNoTrans, N, H, GH, dg, GH, whh, H, 1, dh, H);
}

static void recur_end_f32(recur_weight *w) {
  rill_sgemm_packed_destroy(w->packed);
  rill_free(w->transposed);
}

/* proj [N, GH] = h [N, H] W_hh^T. */
static void recur_gemm_f32(const rill_kernel_ctx *ctx, const recur_weight *w, int64_t N, int64_t GH,
                           int64_t H, const float *h, const float *whh, float *proj) {
  if (N > 0 && w->packed &&
      rill_sgemm_prepacked(ctx->dev, rill_dev_threads(ctx->dev), CblasNoTrans, N, 1.0f, h, H,
                           w->packed, 0.0f, proj, GH))
    return;
  gemm_f32(ctx, CblasNoTrans, CblasTrans, N, GH, H, h, H, whh, H, 0, proj, GH);
}

static void recur_begin_f64(recur_weight *w, const double *whh, int64_t GH, int64_t H) {
  (void)whh, (void)GH, (void)H;
  memset(w, 0, sizeof *w);
}

static void recur_end_f64(recur_weight *w) { (void)w; }

static void recur_back_begin_f64(recur_weight *w, const double *whh, int64_t GH, int64_t H) {
  recur_begin_f64(w, whh, GH, H);
}

static void recur_back_gemm_f64(const rill_kernel_ctx *ctx, const recur_weight *w, int64_t N,
                                int64_t GH, int64_t H, const double *dg, const double *whh,
                                double *dh) {
  (void)w;
  gemm_f64(ctx, CblasNoTrans, CblasNoTrans, N, H, GH, dg, GH, whh, H, 1, dh, H);
}

static void recur_gemm_f64(const rill_kernel_ctx *ctx, const recur_weight *w, int64_t N, int64_t GH,
                           int64_t H, const double *h, const double *whh, double *proj) {
  (void)w;
  gemm_f64(ctx, CblasNoTrans, CblasTrans, N, GH, H, h, H, whh, H, 0, proj, GH);
}

/* y[i] = sigmoid(x[i]) / tanh(x[i]) over a span (y may be x): float32's are vexp.h's,
 * 8 lanes at a time where the CPU has AVX2 (libm's expf and tanhf were a fifth of an
 * LSTM's forward), float64's libm's. */
static void sigmoid_span_f32(float *y, const float *x, int64_t n) { rill_sigmoid_span_f32(y, x, n); }
static void tanh_span_f32(float *y, const float *x, int64_t n) { rill_tanh_span_f32(y, x, n); }

static void sigmoid_span_f64(double *y, const double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = 1.0 / (1.0 + exp(-x[i]));
}

static void tanh_span_f64(double *y, const double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = tanh(x[i]);
}

#define REAL float
#define SUF f32
#define GEMM gemm_f32
#define EXP expf
#define TANH tanhf
#include "kernels/cpu/rnn_impl.inc"
#undef REAL
#undef SUF
#undef GEMM
#undef EXP
#undef TANH

#define REAL double
#define SUF f64
#define GEMM gemm_f64
#define EXP exp
#define TANH tanh
#include "kernels/cpu/rnn_impl.inc"
#undef REAL
#undef SUF
#undef GEMM
#undef EXP
#undef TANH

/* The data of tensor (slot, i), NULL when absent or empty. */
static void *in_data(const rill_kernel_ctx *ctx, size_t slot, size_t i) {
  rill_tensor *t = rill_kin(ctx, slot, i);
  return t && rill_tensor_is_set(t) ? rill_tensor_ptr(t) : NULL;
}

static void *out_data(const rill_kernel_ctx *ctx, size_t slot, size_t i) {
  rill_tensor *t = rill_kout(ctx, slot, i);
  return t && rill_tensor_is_set(t) ? rill_tensor_ptr(t) : NULL;
}

/* The engine's per layer and direction weight pointers (and, grad, those of the
 * gradients) from WeightList: 8 arrays of L * D in one allocation (*ptrs). */
static rill_status *weights_of(const rill_kernel_ctx *ctx, const rnn_run *r, bool grad, rnn_io *io,
                               void **ptrs) {
  const int64_t n = r->g.layers * r->g.dirs, half = rill_rnn_weight_count(&r->g) / 2;
  void **p = rill_malloc((size_t)(8 * n) * sizeof *p);
  if (!p) return rill_oom();
  const size_t wl = RILL_RNN_IN_WEIGHT_LIST, dwl = RILL_RNN_GRAD_OUT_WEIGHT_LIST_GRAD;
  for (int64_t k = 0; k < n; k++) {
    int64_t wi = rill_rnn_weight_index(&r->g, k / r->g.dirs, k % r->g.dirs);
    size_t at[4] = {(size_t)wi, (size_t)wi + 1, (size_t)(half + wi), (size_t)(half + wi + 1)};
    for (int j = 0; j < 4; j++) {
      p[j * n + k] = in_data(ctx, wl, at[j]);
      p[(4 + j) * n + k] = grad ? out_data(ctx, dwl, at[j]) : NULL;
    }
  }
  io->wih = (const void *const *)p, io->whh = (const void *const *)p + n;
  io->bih = (const void *const *)p + 2 * n, io->bhh = (const void *const *)p + 3 * n;
  io->dwih = p + 4 * n, io->dwhh = p + 5 * n, io->dbih = p + 6 * n, io->dbhh = p + 7 * n;
  *ptrs = p;
  return NULL;
}

static rill_status *rnn_forward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rnn_run r;
  RILL_TRY(rnn_check_inputs(ctx, dt, &r));
  const rill_rnn_geom *g = &r.g;
  bool train;
  rill_tensor *res_t = NULL, *mask_t = NULL;
  RILL_TRY(rnn_check_outputs(ctx, dt, &r, &train, &res_t, &mask_t));
  void *res = res_t ? rill_tensor_ptr(res_t) : NULL;
  uint8_t *mask = mask_t ? rill_tensor_ptr(mask_t) : NULL, *own_mask = NULL;
  int64_t *lens = NULL;
  RILL_TRY(rnn_lengths_of(ctx, &r, &lens));
  size_t mask_n = (size_t)(r.T * r.N * g->dirs * g->hidden);
  bool dropout = rnn_has_dropout(ctx, &r);
  if (dropout && !mask && !(mask = own_mask = rill_malloc(mask_n ? mask_n : 1))) {
    rill_free(lens);
    return rill_oom();
  }
  if (mask) rnn_draw_mask(ctx, &r, rill_random_run_seed, mask, mask_n); /* one for every layer, as Paddle */
  const uint8_t *use_mask = dropout ? mask : NULL;
  bool lstm = r.mode == RILL_RNN_LSTM;
  rnn_io io = {.x = in_data(ctx, RILL_RNN_IN_INPUT, 0),
               .h0 = in_data(ctx, RILL_RNN_IN_PRE_STATE, 0),
               .c0 = lstm ? in_data(ctx, RILL_RNN_IN_PRE_STATE, 1) : NULL,
               .out = out_data(ctx, RILL_RNN_OUT_OUT, 0),
               .hN = out_data(ctx, RILL_RNN_OUT_STATE, 0),
               .cN = lstm ? out_data(ctx, RILL_RNN_OUT_STATE, 1) : NULL};
  void *ptrs = NULL;
  rill_status *st = weights_of(ctx, &r, false, &io, &ptrs);
  if (!st)
    st = dt == RILL_DTYPE_FP64 ? rill_rnn_engine_forward_f64(ctx, &r, &io, res, use_mask)
                               : rill_rnn_engine_forward_f32(ctx, &r, &io, res, use_mask);
  rill_free(ptrs);
  rill_free(own_mask);
  rill_free(lens);
  return st;
}

static rill_status *rnn_backward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rnn_run r;
  RILL_TRY(rnn_check_inputs(ctx, dt, &r));
  rill_tensor *res_t = NULL, *mask_t = NULL;
  RILL_TRY(rnn_grad_check(ctx, dt, &r, &res_t, &mask_t));
  const void *res = rill_tensor_ptr(res_t);
  const uint8_t *mask = mask_t ? rill_tensor_ptr(mask_t) : NULL;
  int64_t *lens = NULL;
  RILL_TRY(rnn_lengths_of(ctx, &r, &lens));
  bool lstm = r.mode == RILL_RNN_LSTM;
  rnn_io io = {.x = in_data(ctx, RILL_RNN_GRAD_IN_INPUT, 0),
               .h0 = in_data(ctx, RILL_RNN_GRAD_IN_PRE_STATE, 0),
               .c0 = lstm ? in_data(ctx, RILL_RNN_GRAD_IN_PRE_STATE, 1) : NULL,
               .y = in_data(ctx, RILL_RNN_GRAD_IN_OUT, 0),
               .dy = in_data(ctx, RILL_RNN_GRAD_IN_OUT_GRAD, 0),
               .dhN = in_data(ctx, RILL_RNN_GRAD_IN_STATE_GRAD, 0),
               .dcN = lstm ? in_data(ctx, RILL_RNN_GRAD_IN_STATE_GRAD, 1) : NULL,
               .dx = out_data(ctx, RILL_RNN_GRAD_OUT_INPUT_GRAD, 0),
               .dh0 = out_data(ctx, RILL_RNN_GRAD_OUT_PRE_STATE_GRAD, 0),
               .dc0 = lstm ? out_data(ctx, RILL_RNN_GRAD_OUT_PRE_STATE_GRAD, 1) : NULL};
  void *ptrs = NULL;
  rill_status *st = weights_of(ctx, &r, true, &io, &ptrs);
  if (!st)
    st = dt == RILL_DTYPE_FP64 ? rill_rnn_engine_backward_f64(ctx, &r, &io, res, mask)
                               : rill_rnn_engine_backward_f32(ctx, &r, &io, res, mask);
  rill_free(ptrs);
  rill_free(lens);
  return st;
}

rill_status *rill_cpu_rnn_fp32(rill_kernel_ctx *ctx) { return rnn_forward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_rnn_fp64(rill_kernel_ctx *ctx) { return rnn_forward(ctx, RILL_DTYPE_FP64); }
rill_status *rill_cpu_rnn_grad_fp32(rill_kernel_ctx *ctx) { return rnn_backward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_rnn_grad_fp64(rill_kernel_ctx *ctx) { return rnn_backward(ctx, RILL_DTYPE_FP64); }
