/* rnn CPU kernels (Paddle 2.x semantics). Per layer and direction, one GEMM projects
 * every step's input at once, G = xs W_ih^T + b_ih (+ b_hh, except GRU's candidate
 * part), for both directions before either runs, so Out may share Input's buffer. Then
 * per step one GEMM gives the hidden projection P = h W_hh^T [N, gates * H] and the
 * cell is applied row by row:
 *   LSTM (i, f, c, o): c' = sig(f) c + sig(i) tanh(c~), h' = sig(o) tanh(c')
 *   GRU (r, z, c):     r = sig(Gr + Pr), z = sig(Gz + Pz),
 *                      n = tanh(Gc + r (Pc + b_hh,c)), h' = (1 - z) n + z h
 *   RNN_RELU / RNN_TANH: h' = act(G + P)
 * The backward direction walks the steps from T - 1 down to 0. A row whose step is at
 * or past its SequenceLength gets zeros in Out and keeps h (and c) as they were, so the
 * backward direction starts at each sequence's last step. Layers above the first read
 * the layer below's output, two buffers used in turn; the top layer writes Out. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
#include "operators/rnn.h"

static inline float sigmoid_f32(float v) { return 1.0f / (1.0f + expf(-v)); }
static inline double sigmoid_f64(double v) { return 1.0 / (1.0 + exp(-v)); }

/* Reads SequenceLength into lens (N entries), each within [0, T]. */
static rill_status *read_lengths(rill_kernel_ctx *ctx, int64_t T, int64_t N, int64_t *lens) {
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

/* The checks of the inference, repeated where memory safety depends on them. */
static rill_status *check_shapes(rill_kernel_ctx *ctx, rill_dtype dt, rill_rnn_mode mode,
                                 rill_rnn_geom *g, int64_t *T, int64_t *N) {
  rill_tensor *x = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_RNN_IN_INPUT, 0, dt, &x));
  if (x->dims.n != 3)
    return rill_kernel_error(ctx, "input Input (%s) must be [T, N, I]",
                             rill_kin_name(ctx, RILL_RNN_IN_INPUT, 0));
  *T = x->dims.d[0], *N = x->dims.d[1];
  g->gates = rill_rnn_gates(mode);
  g->layers = ctx->attrs[RILL_RNN_ATTR_NUM_LAYERS].v.i;
  g->dirs = ctx->attrs[RILL_RNN_ATTR_IS_BIDIREC].v.b ? 2 : 1;
  g->hidden = ctx->attrs[RILL_RNN_ATTR_HIDDEN_SIZE].v.i;
  g->input = x->dims.d[2];
  if (g->layers < 1 || g->hidden < 1)
    return rill_kernel_error(ctx, "attributes num_layers and hidden_size must be positive");
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
  rill_dims sd = {.n = 3, .d = {g->layers * g->dirs, *N, g->hidden}};
  if (ctx->nin[RILL_RNN_IN_PRE_STATE] != nstate || ctx->nout[RILL_RNN_OUT_STATE] != nstate)
    return rill_kernel_error(ctx, "inputs PreState and outputs State must have %zu tensors",
                             nstate);
  for (size_t i = 0; i < nstate; i++) {
    rill_tensor *s = NULL;
    RILL_TRY(rill_kin_need(ctx, RILL_RNN_IN_PRE_STATE, i, dt, &s));
    if (!rill_dims_equal(&s->dims, &sd))
      return rill_kernel_error(ctx, "input PreState[%zu] (%s) has shape %s, expected %s", i,
                               rill_kin_name(ctx, RILL_RNN_IN_PRE_STATE, i),
                               rill_dims_str(&s->dims, a, sizeof a), rill_dims_str(&sd, b, sizeof b));
    RILL_TRY(rill_kout_need(ctx, RILL_RNN_OUT_STATE, i, dt, &s));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_RNN_OUT_STATE, i, s, &sd));
  }
  rill_tensor *out = NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_RNN_OUT_OUT, 0, dt, &out));
  rill_dims od = {.n = 3, .d = {*T, *N, g->dirs * g->hidden}};
  return rill_kout_check_dims(ctx, RILL_RNN_OUT_OUT, 0, out, &od);
}

#define RNN_KERNEL(T_, DT, GEMM, SIGMOID, TANH, NAME)                                           \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                     \
    const char *mode_s = ctx->attrs[RILL_RNN_ATTR_MODE].v.s;                                    \
    rill_rnn_mode mode = rill_rnn_mode_of(mode_s);                                              \
    if (mode == RILL_RNN_MODE_COUNT)                                                            \
      return rill_kernel_error(ctx, "attribute mode is \"%s\", expected LSTM, GRU, RNN_RELU "  \
                               "or RNN_TANH", mode_s ? mode_s : "");                            \
    rill_rnn_geom g;                                                                            \
    int64_t T, N;                                                                               \
    RILL_TRY(check_shapes(ctx, DT, mode, &g, &T, &N));                                          \
    if (!ctx->attrs[RILL_RNN_ATTR_IS_TEST].v.b && g.layers > 1 &&                               \
        ctx->attrs[RILL_RNN_ATTR_DROPOUT_PROB].v.f != 0.0f)                                     \
      return rill_kernel_error(ctx, "dropout between layers (is_test false) is not supported"); \
    const int64_t H = g.hidden, D = g.dirs, GH = g.gates * H, L = g.layers, W = D * H;          \
    const bool lstm = mode == RILL_RNN_LSTM, gru = mode == RILL_RNN_GRU;                        \
    T_ *out = rill_tensor_ptr(rill_kout(ctx, RILL_RNN_OUT_OUT, 0));                             \
    if (T == 0 || N == 0) { /* the states pass through */                                      \
      for (size_t i = 0; i < ctx->nout[RILL_RNN_OUT_STATE]; i++)                                \
        memmove(rill_tensor_ptr(rill_kout(ctx, RILL_RNN_OUT_STATE, i)),                         \
                rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_PRE_STATE, i)),                       \
                (size_t)(L * D * N * H) * sizeof(T_));                                          \
      return NULL;                                                                              \
    }                                                                                           \
    int64_t *lens = NULL;                                                                       \
    bool has_len = rill_kin(ctx, RILL_RNN_IN_SEQUENCE_LENGTH, 0) != NULL;                       \
    size_t gates_n = (size_t)(D * T * N * GH), buf_n = (size_t)(T * N * W);                     \
    size_t step_n = (size_t)(N * GH + 2 * N * H);                                               \
    T_ *gates = rill_malloc(gates_n * sizeof(T_));                                              \
    T_ *bufs = L > 1 ? rill_malloc((L > 2 ? 2 : 1) * buf_n * sizeof(T_)) : NULL;                \
    T_ *step = rill_malloc(step_n * sizeof(T_));                                                \
    if (has_len) lens = rill_malloc((size_t)N * sizeof *lens);                                  \
    rill_status *st = NULL;                                                                     \
    if (!gates || !step || (L > 1 && !bufs) || (has_len && !lens)) {                            \
      st = rill_oom();                                                                          \
      goto done;                                                                                \
    }                                                                                           \
    if (has_len && (st = read_lengths(ctx, T, N, lens))) goto done;                             \
    T_ *proj = step, *h = step + N * GH, *c = h + N * H;                                        \
    const T_ *h0 = rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_PRE_STATE, 0));                    \
    const T_ *c0 = lstm ? rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_PRE_STATE, 1)) : NULL;      \
    T_ *hN = rill_tensor_ptr(rill_kout(ctx, RILL_RNN_OUT_STATE, 0));                            \
    T_ *cN = lstm ? rill_tensor_ptr(rill_kout(ctx, RILL_RNN_OUT_STATE, 1)) : NULL;              \
    const T_ *in = rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_INPUT, 0));                        \
    int64_t in_w = g.input, half = rill_rnn_weight_count(&g) / 2;                               \
    for (int64_t l = 0; l < L; l++) {                                                           \
      T_ *dst = l == L - 1 ? out : bufs + (size_t)(l % 2) * buf_n;                              \
      for (int64_t d = 0; d < D; d++) { /* input projections, both directions first */         \
        int64_t wi = rill_rnn_weight_index(&g, l, d);                                           \
        const T_ *wih = rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_WEIGHT_LIST, (size_t)wi));    \
        const T_ *bih =                                                                         \
            rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_WEIGHT_LIST, (size_t)(half + wi)));       \
        const T_ *bhh =                                                                         \
            rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_WEIGHT_LIST, (size_t)(half + wi + 1)));   \
        T_ *gd = gates + (size_t)(d * T * N * GH);                                              \
        if (in_w > 0)                                                                           \
          GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)(T * N), (int)GH, (int)in_w,       \
               (T_)1, in, (int)in_w, wih, (int)in_w, (T_)0, gd, (int)GH);                       \
        else                                                                                    \
          memset(gd, 0, (size_t)(T * N * GH) * sizeof(T_));                                    \
        int64_t nbh = gru ? 2 * H : GH; /* GRU's b_hh,c goes inside the reset product */       \
        for (int64_t r = 0; r < T * N; r++) {                                                   \
          T_ *row = gd + r * GH;                                                                \
          for (int64_t j = 0; j < GH; j++) row[j] += bih[j];                                    \
          for (int64_t j = 0; j < nbh; j++) row[j] += bhh[j];                                   \
        }                                                                                       \
      }                                                                                         \
      for (int64_t d = 0; d < D; d++) {                                                         \
        int64_t wi = rill_rnn_weight_index(&g, l, d), sidx = l * D + d;                         \
        const T_ *whh =                                                                         \
            rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_WEIGHT_LIST, (size_t)(wi + 1)));          \
        const T_ *bhh =                                                                         \
            rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_WEIGHT_LIST, (size_t)(half + wi + 1)));   \
        const T_ *gd = gates + (size_t)(d * T * N * GH);                                        \
        memcpy(h, h0 + sidx * N * H, (size_t)(N * H) * sizeof(T_));                             \
        if (lstm) memcpy(c, c0 + sidx * N * H, (size_t)(N * H) * sizeof(T_));                   \
        for (int64_t s = 0; s < T; s++) {                                                       \
          int64_t t = d == 0 ? s : T - 1 - s;                                                   \
          GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)N, (int)GH, (int)H, (T_)1, h,      \
               (int)H, whh, (int)H, (T_)0, proj, (int)GH);                                      \
          for (int64_t b = 0; b < N; b++) {                                                     \
            T_ *o = dst + (t * N + b) * W + d * H;                                              \
            if (has_len && t >= lens[b]) {                                                      \
              memset(o, 0, (size_t)H * sizeof(T_));                                             \
              continue;                                                                         \
            }                                                                                   \
            const T_ *gx = gd + (t * N + b) * GH;                                               \
            const T_ *ph = proj + b * GH;                                                       \
            T_ *hb = h + b * H, *cb = lstm ? c + b * H : NULL;                                  \
            for (int64_t j = 0; j < H; j++) {                                                   \
              T_ hv;                                                                            \
              if (lstm) {                                                                       \
                T_ ig = SIGMOID(gx[j] + ph[j]), fg = SIGMOID(gx[H + j] + ph[H + j]);            \
                T_ cand = TANH(gx[2 * H + j] + ph[2 * H + j]);                                  \
                T_ og = SIGMOID(gx[3 * H + j] + ph[3 * H + j]);                                 \
                T_ cv = fg * cb[j] + ig * cand;                                                 \
                cb[j] = cv;                                                                     \
                hv = og * TANH(cv);                                                             \
              } else if (gru) {                                                                 \
                T_ rg = SIGMOID(gx[j] + ph[j]), zg = SIGMOID(gx[H + j] + ph[H + j]);            \
                T_ n = TANH(gx[2 * H + j] + rg * (ph[2 * H + j] + bhh[2 * H + j]));             \
                hv = (1 - zg) * n + zg * hb[j];                                                 \
              } else {                                                                          \
                T_ v = gx[j] + ph[j];                                                           \
                hv = mode == RILL_RNN_RELU ? (v > 0 ? v : 0) : TANH(v);                         \
              }                                                                                 \
              o[j] = hv;                                                                        \
            }                                                                                   \
            memcpy(hb, o, (size_t)H * sizeof(T_));                                              \
          }                                                                                     \
        }                                                                                       \
        memcpy(hN + sidx * N * H, h, (size_t)(N * H) * sizeof(T_));                             \
        if (lstm) memcpy(cN + sidx * N * H, c, (size_t)(N * H) * sizeof(T_));                   \
      }                                                                                         \
      in = dst;                                                                                 \
      in_w = W;                                                                                 \
    }                                                                                           \
  done:                                                                                         \
    rill_free(gates);                                                                           \
    rill_free(bufs);                                                                            \
    rill_free(step);                                                                            \
    rill_free(lens);                                                                            \
    return st;                                                                                  \
  }

RNN_KERNEL(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, sigmoid_f32, tanhf, rill_cpu_rnn_fp32)
RNN_KERNEL(double, RILL_DTYPE_FP64, cblas_dgemm, sigmoid_f64, tanh, rill_cpu_rnn_fp64)
