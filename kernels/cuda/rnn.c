/* Paddle 2.x's rnn op and Fluid 1.x's cudnn_lstm on the device, float32, inference
 * (is_test): every mode of rnn (LSTM, GRU, RNN_RELU, RNN_TANH), any number of layers,
 * one or two directions; the forward of kernels/cpu/rnn_impl.inc step for step, the
 * weights read where WeightList's tensors or cudnn_lstm's flat W (cuDNN's canonical
 * layout, operators/cudnn_lstm.h) hold them. rnn's SequenceLength is read on the host
 * (RILL_SLOT_HOST_DATA), checked as the CPU checks it, and copied to the device: a
 * step at or past a sequence's length gives zeros and keeps its state, so the backward
 * direction starts at each sequence's last step. Per layer, one cuBLAS product per
 * direction projects every step's input at once (both directions before either runs)
 * and a pass adds the biases; then per step one product gives h W_hh^T and one thread
 * a (row, unit) applies the cell (device/rnn.cu). The training form (Reserve and the
 * dropout between layers, which the gradients read) is declined and runs on the host. */
#include "framework/base/alloc.h"
#include "kernels/cpu/rnn_check.h"
#include "kernels/cuda/cuda.h"

_Static_assert((int)RILL_RNN_LSTM == RILL_CUDA_RNN_LSTM && (int)RILL_RNN_GRU == RILL_CUDA_RNN_GRU &&
                   (int)RILL_RNN_RELU == RILL_CUDA_RNN_RELU && (int)RILL_RNN_TANH == RILL_CUDA_RNN_TANH,
               "the device's cell numbers the modes as operators/rnn.h");

bool rill_cuda_rnn_accepts(const rill_kernel_ctx *ctx) { return ctx->attrs[RILL_RNN_ATTR_IS_TEST].v.b; }

bool rill_cuda_cudnn_lstm_accepts(const rill_kernel_ctx *ctx) { return ctx->attrs[RILL_CUDNN_LSTM_ATTR_IS_TEST].v.b; }

/* Where one layer and direction's weights lie on the device: W_ih, W_hh, b_ih, b_hh. */
typedef struct layer_weights {
  const float *wih, *whh, *bih, *bhh;
} layer_weights;

/* The layers in turn (w: each layer and direction's weights, index layer * dirs + dir),
 * their outputs in two scratch buffers used alternately (the top layer writes Out);
 * `scratch` holds the gates of both directions, the step's hidden projection, h and c,
 * then the layer buffers. */
static rill_status *run_layers(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rnn_run *r, const layer_weights *w,
                               const float *x, const float *h0, const float *c0, float *out, float *hN, float *cN,
                               const int64_t *lens, float *scratch) {
  const rill_rnn_geom *g = &r->g;
  const int64_t T = r->T, N = r->N, H = g->hidden, D = g->dirs, L = g->layers, GH = g->gates * H, W = D * H;
  const int64_t rows = T * N;
  const bool lstm = r->mode == RILL_RNN_LSTM, gru = r->mode == RILL_RNN_GRU;
  float *gates = scratch, *proj = gates + D * rows * GH, *h = proj + N * GH, *c = h + N * H, *bufs = c + N * H;
  const float *in = x;
  int64_t in_w = g->input;
  cudaError_t e = cudaSuccess;
  for (int64_t l = 0; l < L; l++) {
    float *dst = l == L - 1 ? out : bufs + (l % 2) * rows * W;
    for (int64_t dir = 0; dir < D; dir++) {
      const layer_weights *lw = &w[l * D + dir];
      float *gd = gates + dir * rows * GH;
      RILL_TRY(rill_cuda_kernel_status(
          ctx, rill_cuda_sgemm(d, false, true, rows, GH, in_w, 1.0f, in, 0, lw->wih, 0, 0.0f, gd, 0, 1)));
      e = rill_cuda_rnn_bias_f32(gd, lw->bih, lw->bhh, rows, GH, gru ? 2 * H : GH, d->stream);
      if (e != cudaSuccess) return rill_cuda_kernel_check(ctx, e, "adding the input projection's biases");
    }
    for (int64_t dir = 0; dir < D; dir++) {
      int64_t sidx = l * D + dir;
      const float *whh = w[sidx].whh, *bhh = w[sidx].bhh;
      const float *gd = gates + dir * rows * GH;
      size_t state = (size_t)(N * H) * sizeof(float);
      e = cudaMemcpyAsync(h, h0 + sidx * N * H, state, cudaMemcpyDeviceToDevice, d->stream);
      if (e == cudaSuccess && lstm)
        e = cudaMemcpyAsync(c, c0 + sidx * N * H, state, cudaMemcpyDeviceToDevice, d->stream);
      for (int64_t s = 0; s < T && e == cudaSuccess; s++) {
        int64_t t = dir == 0 ? s : T - 1 - s;
        RILL_TRY(rill_cuda_kernel_status(
            ctx, rill_cuda_sgemm(d, false, true, N, GH, H, 1.0f, h, 0, whh, 0, 0.0f, proj, 0, 1)));
        e = rill_cuda_rnn_step_f32((int)r->mode, gd + t * N * GH, proj, gru ? bhh + 2 * H : NULL, h, lstm ? c : NULL,
                                   dst + t * N * W + dir * H, W, N, H, lens, t, d->stream);
      }
      if (e == cudaSuccess) e = cudaMemcpyAsync(hN + sidx * N * H, h, state, cudaMemcpyDeviceToDevice, d->stream);
      if (e == cudaSuccess && lstm)
        e = cudaMemcpyAsync(cN + sidx * N * H, c, state, cudaMemcpyDeviceToDevice, d->stream);
      if (e != cudaSuccess) return rill_cuda_kernel_check(ctx, e, "running the time steps");
    }
    in = dst;
    in_w = W;
  }
  return NULL;
}

/* Out [T, N, D H] and the last states hN, cN (cN: LSTM) from Input x and the initial
 * states h0, c0, r checked (r->lens, on the host, copied to the device when given); the
 * states pass through when there is no step. */
static rill_status *run(rill_kernel_ctx *ctx, const rnn_run *r, const layer_weights *w, const float *x,
                        const float *h0, const float *c0, rill_tensor *out, rill_tensor *last_h, float *cN) {
  const rill_rnn_geom *g = &r->g;
  const bool lstm = r->mode == RILL_RNN_LSTM;
  float *hN = rill_tensor_ptr(last_h);
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, last_h, &d));
  const int64_t H = g->hidden, N = r->N, rows = r->T * N, GH = g->gates * H, W = g->dirs * H;
  if (rows == 0) {
    size_t bytes = rill_tensor_nbytes(last_h);
    cudaError_t e = bytes ? cudaMemcpyAsync(hN, h0, bytes, cudaMemcpyDeviceToDevice, d->stream) : cudaSuccess;
    if (e == cudaSuccess && lstm && bytes) e = cudaMemcpyAsync(cN, c0, bytes, cudaMemcpyDeviceToDevice, d->stream);
    return rill_cuda_kernel_check(ctx, e, "passing the states through");
  }
  int64_t layer_bufs = g->layers > 2 ? 2 : g->layers - 1;
  size_t n = (size_t)(g->dirs * rows * GH + N * GH + 2 * N * H + layer_bufs * rows * W);
  size_t lens_bytes = r->lens ? (size_t)N * sizeof(int64_t) : 0;
  /* the lengths first: int64 alignment */
  char *scratch = rill_cuda_mem_alloc(d, lens_bytes + n * sizeof(float));
  if (!scratch)
    return rill_kernel_error(ctx, "out of device memory for %zu bytes of gates and states", lens_bytes + n * sizeof(float));
  int64_t *lens = r->lens ? (int64_t *)scratch : NULL;
  /* from pageable memory: staged before the call returns */
  cudaError_t e = lens ? cudaMemcpyAsync(lens, r->lens, lens_bytes, cudaMemcpyHostToDevice, d->stream) : cudaSuccess;
  rill_status *st = rill_cuda_kernel_check(ctx, e, "copying SequenceLength");
  if (!st)
    st = run_layers(ctx, d, r, w, x, h0, c0, rill_tensor_ptr(out), hN, cN, lens, (float *)(scratch + lens_bytes));
  rill_cuda_mem_free(d, scratch); /* its next user is queued behind the last step */
  return st;
}

rill_status *rill_cuda_rnn_fp32(rill_kernel_ctx *ctx) {
  if (!rill_cuda_rnn_accepts(ctx)) return rill_kernel_error(ctx, "the CUDA kernel runs the inference form");
  rnn_run r = {0};
  RILL_TRY(rnn_check_inputs(ctx, RILL_DTYPE_FP32, &r));
  const rill_rnn_geom *g = &r.g;
  const bool lstm = r.mode == RILL_RNN_LSTM;
  const size_t nstate = lstm ? 2 : 1;
  if (ctx->nout[RILL_RNN_OUT_STATE] != nstate)
    return rill_kernel_error(ctx, "output State must have %zu tensors", nstate);
  rill_dims sd = {.n = 3, .d = {g->layers * g->dirs, r.N, g->hidden}};
  rill_dims od = {.n = 3, .d = {r.T, r.N, g->dirs * g->hidden}};
  rill_tensor *out = NULL, *state[2] = {NULL, NULL};
  for (size_t i = 0; i < nstate; i++) {
    RILL_TRY(rill_kout_need(ctx, RILL_RNN_OUT_STATE, i, RILL_DTYPE_FP32, &state[i]));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_RNN_OUT_STATE, i, state[i], &sd));
  }
  RILL_TRY(rill_kout_need(ctx, RILL_RNN_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_RNN_OUT_OUT, 0, out, &od));
  int64_t *lens = NULL;
  RILL_TRY(rnn_lengths_of(ctx, &r, &lens));
  const int64_t n = g->layers * g->dirs, half = rill_rnn_weight_count(g) / 2;
  layer_weights *w = rill_malloc((size_t)n * sizeof *w);
  if (!w) {
    rill_free(lens);
    return rill_oom();
  }
  for (int64_t k = 0; k < n; k++) {
    size_t wi = (size_t)rill_rnn_weight_index(g, k / g->dirs, k % g->dirs), bi = (size_t)half + wi;
    const size_t wl = RILL_RNN_IN_WEIGHT_LIST;
    w[k] = (layer_weights){rill_tensor_ptr(rill_kin(ctx, wl, wi)), rill_tensor_ptr(rill_kin(ctx, wl, wi + 1)),
                           rill_tensor_ptr(rill_kin(ctx, wl, bi)), rill_tensor_ptr(rill_kin(ctx, wl, bi + 1))};
  }
  rill_status *st = run(ctx, &r, w, rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_INPUT, 0)),
                        rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_PRE_STATE, 0)),
                        lstm ? rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_PRE_STATE, 1)) : NULL, out, state[0],
                        lstm ? rill_tensor_ptr(state[1]) : NULL);
  rill_free(w);
  rill_free(lens);
  return st;
}

rill_status *rill_cuda_cudnn_lstm_fp32(rill_kernel_ctx *ctx) {
  if (!rill_cuda_cudnn_lstm_accepts(ctx)) return rill_kernel_error(ctx, "the CUDA kernel runs the inference form");
  rnn_run r = {0};
  RILL_TRY(cudnn_lstm_check_inputs(ctx, RILL_DTYPE_FP32, &r));
  const rill_rnn_geom *g = &r.g;
  rill_dims od = {.n = 3, .d = {r.T, r.N, g->dirs * g->hidden}};
  rill_dims sd = {.n = 3, .d = {g->layers * g->dirs, r.N, g->hidden}};
  rill_tensor *out = NULL, *lh = NULL, *lc = NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_OUT, 0, out, &od));
  RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_LAST_H, 0, RILL_DTYPE_FP32, &lh));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_LAST_H, 0, lh, &sd));
  RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_LAST_C, 0, RILL_DTYPE_FP32, &lc));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_LAST_C, 0, lc, &sd));
  const int64_t n = g->layers * g->dirs;
  layer_weights *w = rill_malloc((size_t)n * sizeof *w);
  if (!w) return rill_oom();
  const float *flat = rill_tensor_ptr(rill_kin(ctx, RILL_CUDNN_LSTM_IN_W, 0));
  for (int64_t k = 0; k < n; k++) {
    rill_cudnn_lstm_at at = rill_cudnn_lstm_offsets(g->layers, g->dirs, g->input, g->hidden, k / g->dirs, k % g->dirs);
    w[k] = (layer_weights){flat + at.wih, flat + at.whh, flat + at.bih, flat + at.bhh};
  }
  rill_status *st = run(ctx, &r, w, rill_tensor_ptr(rill_kin(ctx, RILL_CUDNN_LSTM_IN_INPUT, 0)),
                        rill_tensor_ptr(rill_kin(ctx, RILL_CUDNN_LSTM_IN_INIT_H, 0)),
                        rill_tensor_ptr(rill_kin(ctx, RILL_CUDNN_LSTM_IN_INIT_C, 0)), out, lh, rill_tensor_ptr(lc));
  rill_free(w);
  return st;
}
