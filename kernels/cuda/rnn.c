/* Paddle 2.x's rnn op on the device, float32, inference (is_test): every mode (LSTM,
 * GRU, RNN_RELU, RNN_TANH), any number of layers, one or two directions; the forward
 * of kernels/cpu/rnn_impl.inc step for step. Per layer, one cuBLAS product per
 * direction projects every step's input at once (both directions before either runs)
 * and a pass adds the biases; then per step one product gives h W_hh^T and one thread
 * a (row, unit) applies the cell (device/rnn.cu). The training form (Reserve and the
 * dropout between layers, which rnn_grad reads) and sequences of their own lengths
 * (SequenceLength) are declined and run on the host. */
#include "kernels/cpu/rnn_check.h"
#include "kernels/cuda/cuda.h"

_Static_assert((int)RILL_RNN_LSTM == RILL_CUDA_RNN_LSTM && (int)RILL_RNN_GRU == RILL_CUDA_RNN_GRU &&
                   (int)RILL_RNN_RELU == RILL_CUDA_RNN_RELU && (int)RILL_RNN_TANH == RILL_CUDA_RNN_TANH,
               "the device's cell numbers the modes as operators/rnn.h");

bool rill_cuda_rnn_accepts(const rill_kernel_ctx *ctx) {
  return ctx->attrs[RILL_RNN_ATTR_IS_TEST].v.b && ctx->nin[RILL_RNN_IN_SEQUENCE_LENGTH] == 0;
}

/* Entry k of WeightList's data. */
static const float *weight(const rill_kernel_ctx *ctx, int64_t k) {
  return rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_WEIGHT_LIST, (size_t)k));
}

/* The layers in turn, their outputs in two scratch buffers used alternately (the top
 * layer writes Out); `scratch` holds the gates of both directions, the step's hidden
 * projection, h and c, then the layer buffers. */
static rill_status *run_layers(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rnn_run *r, const float *x,
                               const float *h0, const float *c0, float *out, float *hN, float *cN, float *scratch) {
  const rill_rnn_geom *g = &r->g;
  const int64_t T = r->T, N = r->N, H = g->hidden, D = g->dirs, L = g->layers, GH = g->gates * H, W = D * H;
  const int64_t rows = T * N, half = rill_rnn_weight_count(g) / 2;
  const bool lstm = r->mode == RILL_RNN_LSTM, gru = r->mode == RILL_RNN_GRU;
  float *gates = scratch, *proj = gates + D * rows * GH, *h = proj + N * GH, *c = h + N * H, *bufs = c + N * H;
  const float *in = x;
  int64_t in_w = g->input;
  cudaError_t e = cudaSuccess;
  for (int64_t l = 0; l < L; l++) {
    float *dst = l == L - 1 ? out : bufs + (l % 2) * rows * W;
    for (int64_t dir = 0; dir < D; dir++) {
      int64_t wi = rill_rnn_weight_index(g, l, dir);
      float *gd = gates + dir * rows * GH;
      RILL_TRY(rill_cuda_kernel_status(
          ctx, rill_cuda_sgemm(d, false, true, rows, GH, in_w, 1.0f, in, 0, weight(ctx, wi), 0, 0.0f, gd, 0, 1)));
      e = rill_cuda_rnn_bias_f32(gd, weight(ctx, half + wi), weight(ctx, half + wi + 1), rows, GH, gru ? 2 * H : GH,
                                 d->stream);
      if (e != cudaSuccess) return rill_cuda_kernel_check(ctx, e, "adding the input projection's biases");
    }
    for (int64_t dir = 0; dir < D; dir++) {
      int64_t wi = rill_rnn_weight_index(g, l, dir), sidx = l * D + dir;
      const float *whh = weight(ctx, wi + 1), *bhh = weight(ctx, half + wi + 1);
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
                                   dst + t * N * W + dir * H, W, N, H, d->stream);
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

rill_status *rill_cuda_rnn_fp32(rill_kernel_ctx *ctx) {
  if (!rill_cuda_rnn_accepts(ctx))
    return rill_kernel_error(ctx, "the CUDA kernel runs the inference form without SequenceLength");
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
  const float *h0 = rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_PRE_STATE, 0));
  const float *c0 = lstm ? rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_PRE_STATE, 1)) : NULL;
  float *hN = rill_tensor_ptr(state[0]), *cN = lstm ? rill_tensor_ptr(state[1]) : NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, state[0], &d));
  const int64_t H = g->hidden, N = r.N, rows = r.T * N, GH = g->gates * H, W = g->dirs * H;
  if (rows == 0) { /* no step: the states pass through */
    size_t bytes = rill_tensor_nbytes(state[0]);
    cudaError_t e = bytes ? cudaMemcpyAsync(hN, h0, bytes, cudaMemcpyDeviceToDevice, d->stream) : cudaSuccess;
    if (e == cudaSuccess && lstm && bytes) e = cudaMemcpyAsync(cN, c0, bytes, cudaMemcpyDeviceToDevice, d->stream);
    return rill_cuda_kernel_check(ctx, e, "passing the states through");
  }
  int64_t layer_bufs = g->layers > 2 ? 2 : g->layers - 1;
  size_t n = (size_t)(g->dirs * rows * GH + N * GH + 2 * N * H + layer_bufs * rows * W);
  float *scratch = rill_cuda_mem_alloc(d, n * sizeof(float));
  if (!scratch) return rill_kernel_error(ctx, "out of device memory for %zu bytes of gates and states", n * sizeof(float));
  rill_status *st = run_layers(ctx, d, &r, rill_tensor_ptr(rill_kin(ctx, RILL_RNN_IN_INPUT, 0)), h0, c0,
                               rill_tensor_ptr(out), hN, cN, scratch);
  rill_cuda_mem_free(d, scratch); /* its next user is queued behind the last step */
  return st;
}
