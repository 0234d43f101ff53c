/* Paddle 2.x's rnn op and Fluid 1.x's cudnn_lstm on the device, float32: every mode of
 * rnn (LSTM, GRU, RNN_RELU, RNN_TANH), any number of layers, one or two directions; the
 * forward of kernels/cpu/rnn_impl.inc step for step, the weights read where
 * WeightList's tensors or cudnn_lstm's flat W (cuDNN's canonical layout,
 * operators/cudnn_lstm.h) hold them. rnn's SequenceLength is read on the host
 * (RILL_SLOT_HOST_DATA), checked as the CPU checks it, and copied to the device: a
 * step at or past a sequence's length gives zeros and keeps its state, so the backward
 * direction starts at each sequence's last step. Per layer, one cuBLAS product per
 * direction projects every step's input at once (both directions before either runs)
 * and a pass adds the biases; then per step one product gives h W_hh^T and one thread
 * a (row, unit) applies the cell (device/rnn.cu).
 *
 * Both train on the device: the forward then keeps Reserve as the CPU's does
 * (operators/rnn.h: the activated gates per step, the lower layers' outputs; cudnn_lstm
 * then the mask as floats), draws the dropout mask between layers on the host with the
 * CPU's generator (the same elements dropped for the same seed; rnn's into
 * DropoutState), and the gradient runs the CPU's backpropagation through time: per
 * step one thread a (row, unit) forms the gate gradients and one product carries them
 * back through W_hh; per layer and direction one product each gives W_ih@GRAD,
 * W_hh@GRAD and the input's gradient, and the biases' are column sums. A cudnn_lstm_grad
 * without Reserve (Paddle's programs) is declined and runs on the host. */
#include "framework/base/alloc.h"
#include "kernels/cpu/rnn_check.h"
#include "kernels/cpu/tensor_ops.h"
#include "kernels/cuda/cuda.h"

_Static_assert((int)RILL_RNN_LSTM == RILL_CUDA_RNN_LSTM && (int)RILL_RNN_GRU == RILL_CUDA_RNN_GRU &&
                   (int)RILL_RNN_RELU == RILL_CUDA_RNN_RELU && (int)RILL_RNN_TANH == RILL_CUDA_RNN_TANH,
               "the device's cell numbers the modes as operators/rnn.h");

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
                               const int64_t *lens, float *res, const uint8_t *mask, float *scratch) {
  const rill_rnn_geom *g = &r->g;
  const int64_t T = r->T, N = r->N, H = g->hidden, D = g->dirs, L = g->layers, GH = g->gates * H, W = D * H;
  const int64_t rows = T * N, S = rill_rnn_reserve_row(r->mode, H);
  const bool lstm = r->mode == RILL_RNN_LSTM, gru = r->mode == RILL_RNN_GRU;
  float *gates = scratch, *proj = gates + D * rows * GH, *h = proj + N * GH, *c = h + N * H, *more = c + N * H;
  /* the lower layers' outputs: Reserve's hidden section when training, else two
   * scratch buffers in turn; then the dropped copy of a layer's input */
  float *hidden = res ? res + rill_rnn_reserve_hidden_at(g, r->mode, T, N) : NULL;
  float *bufs = res ? NULL : more, *dropped = more + (res ? 0 : (L > 2 ? 2 : L - 1) * rows * W);
  const float keep = 1.0f - r->dropout_prob;
  const float *in = x;
  int64_t in_w = g->input;
  cudaError_t e = cudaSuccess;
  for (int64_t l = 0; l < L; l++) {
    float *dst = l == L - 1 ? out : hidden ? hidden + l * rows * W : bufs + (l % 2) * rows * W;
    if (l > 0 && mask) {
      e = rill_cuda_rnn_dropout_f32(dropped, in, mask, keep, rows * W, d->stream);
      if (e != cudaSuccess) return rill_cuda_kernel_check(ctx, e, "the dropout between layers");
      in = dropped;
    }
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
      float *kept = res && S ? res + sidx * rows * S : NULL;
      for (int64_t s = 0; s < T && e == cudaSuccess; s++) {
        int64_t t = dir == 0 ? s : T - 1 - s;
        RILL_TRY(rill_cuda_kernel_status(
            ctx, rill_cuda_sgemm(d, false, true, N, GH, H, 1.0f, h, 0, whh, 0, 0.0f, proj, 0, 1)));
        e = rill_cuda_rnn_step_f32((int)r->mode, gd + t * N * GH, proj, gru ? bhh + 2 * H : NULL, h, lstm ? c : NULL,
                                   dst + t * N * W + dir * H, W, N, H, lens, t, kept ? kept + t * N * S : NULL, S,
                                   d->stream);
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

/* Copies n bytes of host memory to the device (pageable: staged before the call
 * returns, so the host copy may go). */
static cudaError_t upload(rill_cuda_dev *d, void *dev, const void *host, size_t n) {
  return n ? cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, d->stream) : cudaSuccess;
}

/* Out [T, N, D H] and the last states hN, cN (cN: LSTM) from Input x and the initial
 * states h0, c0, r checked (r->lens, on the host, copied to the device when given); the
 * states pass through when there is no step. Training: res, Reserve (NULL: not kept);
 * host_mask, the dropout mask drawn on the host (NULL: none), copied to mask_out (rnn's
 * DropoutState; NULL: scratch) and, with `dropout`, applied between the layers. */
static rill_status *run(rill_kernel_ctx *ctx, const rnn_run *r, const layer_weights *w, const float *x,
                        const float *h0, const float *c0, rill_tensor *out, rill_tensor *last_h, float *cN,
                        float *res, const uint8_t *host_mask, uint8_t *mask_out, bool dropout) {
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
  int64_t layer_bufs = res ? 0 : g->layers > 2 ? 2 : g->layers - 1;
  size_t n = (size_t)(g->dirs * rows * GH + N * GH + 2 * N * H + layer_bufs * rows * W + (dropout ? rows * W : 0));
  size_t lens_bytes = r->lens ? (size_t)N * sizeof(int64_t) : 0;
  size_t mask_bytes = (size_t)(rows * W), own_mask = host_mask && !mask_out ? mask_bytes : 0;
  /* the lengths first (int64 alignment), then the floats, then a mask not kept */
  size_t bytes = lens_bytes + n * sizeof(float) + own_mask;
  char *scratch = rill_cuda_mem_alloc(d, bytes);
  if (!scratch) return rill_kernel_error(ctx, "out of device memory for %zu bytes of gates and states", bytes);
  int64_t *lens = r->lens ? (int64_t *)scratch : NULL;
  uint8_t *mask = mask_out ? mask_out : own_mask ? (uint8_t *)scratch + lens_bytes + n * sizeof(float) : NULL;
  rill_status *st = rill_cuda_kernel_check(ctx, upload(d, lens, r->lens, lens_bytes), "copying SequenceLength");
  if (!st && host_mask) st = rill_cuda_kernel_check(ctx, upload(d, mask, host_mask, mask_bytes), "copying the dropout mask");
  if (!st)
    st = run_layers(ctx, d, r, w, x, h0, c0, rill_tensor_ptr(out), hN, cN, lens, res, dropout ? mask : NULL,
                    (float *)(scratch + lens_bytes));
  rill_cuda_mem_free(d, scratch); /* its next user is queued behind the last step */
  return st;
}

/* The data of a tensor, NULL when absent or empty. */
static float *data_of(rill_tensor *t) { return t && rill_tensor_is_set(t) ? rill_tensor_ptr(t) : NULL; }

/* rnn's weights (and, grad, the gradients wanted, NULL where not) per layer and
 * direction, from WeightList (WeightList@GRAD). */
static layer_weights *weights_of(rill_kernel_ctx *ctx, const rnn_run *r, bool grad) {
  const rill_rnn_geom *g = &r->g;
  const int64_t n = g->layers * g->dirs, half = rill_rnn_weight_count(g) / 2;
  layer_weights *w = rill_malloc((size_t)(2 * n) * sizeof *w);
  if (!w) return NULL;
  for (int64_t k = 0; k < n; k++) {
    size_t wi = (size_t)rill_rnn_weight_index(g, k / g->dirs, k % g->dirs), bi = (size_t)half + wi;
    const size_t wl = RILL_RNN_IN_WEIGHT_LIST, dwl = RILL_RNN_GRAD_OUT_WEIGHT_LIST_GRAD;
    w[k] = (layer_weights){data_of(rill_kin(ctx, wl, wi)), data_of(rill_kin(ctx, wl, wi + 1)),
                           data_of(rill_kin(ctx, wl, bi)), data_of(rill_kin(ctx, wl, bi + 1))};
    w[n + k] = grad ? (layer_weights){data_of(rill_kout(ctx, dwl, wi)), data_of(rill_kout(ctx, dwl, wi + 1)),
                                      data_of(rill_kout(ctx, dwl, bi)), data_of(rill_kout(ctx, dwl, bi + 1))}
                    : (layer_weights){0};
  }
  return w;
}

rill_status *rill_cuda_rnn_fp32(rill_kernel_ctx *ctx) {
  rnn_run r = {0};
  RILL_TRY(rnn_check_inputs(ctx, RILL_DTYPE_FP32, &r));
  bool train;
  rill_tensor *res = NULL, *mask = NULL;
  RILL_TRY(rnn_check_outputs(ctx, RILL_DTYPE_FP32, &r, &train, &res, &mask));
  const bool lstm = r.mode == RILL_RNN_LSTM;
  int64_t *lens = NULL;
  RILL_TRY(rnn_lengths_of(ctx, &r, &lens));
  layer_weights *w = weights_of(ctx, &r, false);
  if (!w) {
    rill_free(lens);
    return rill_oom();
  }
  /* DropoutState: drawn on the host, one mask for every layer, as Paddle */
  const bool dropout = rnn_has_dropout(ctx, &r);
  size_t mask_n = (size_t)rill_tensor_numel(rill_kout(ctx, RILL_RNN_OUT_OUT, 0));
  uint8_t *host_mask = mask || dropout ? rill_malloc(mask_n ? mask_n : 1) : NULL;
  rill_status *st = (mask || dropout) && !host_mask ? rill_oom() : NULL;
  if (host_mask) rnn_draw_mask(ctx, &r, rill_random_run_seed, host_mask, mask_n);
  if (!st)
    st = run(ctx, &r, w, data_of(rill_kin(ctx, RILL_RNN_IN_INPUT, 0)), data_of(rill_kin(ctx, RILL_RNN_IN_PRE_STATE, 0)),
             lstm ? data_of(rill_kin(ctx, RILL_RNN_IN_PRE_STATE, 1)) : NULL, rill_kout(ctx, RILL_RNN_OUT_OUT, 0),
             rill_kout(ctx, RILL_RNN_OUT_STATE, 0), lstm ? data_of(rill_kout(ctx, RILL_RNN_OUT_STATE, 1)) : NULL,
             data_of(res), host_mask, mask ? rill_tensor_ptr(mask) : NULL, dropout);
  rill_free(host_mask);
  rill_free(w);
  rill_free(lens);
  return st;
}

/* The tensors of rnn_grad, on the device: the forward's Input, initial states, Out
 * and the upstream gradients (NULL: zeros), and the gradients wanted (NULL: not). */
typedef struct back_io {
  const float *x, *h0, *c0, *y, *dy, *dhN, *dcN;
  float *dx, *dh0, *dc0;
} back_io;

/* Copies n floats, or zeroes them when src is NULL. */
static cudaError_t copy_or_zero(rill_cuda_dev *d, float *dst, const float *src, int64_t n) {
  size_t bytes = (size_t)n * sizeof(float);
  if (!dst || !bytes) return cudaSuccess;
  return src ? cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, d->stream)
             : cudaMemsetAsync(dst, 0, bytes, d->stream);
}

/* rnn_impl.inc's backward on the device: the layers from the top down to the lowest
 * whose gradients are wanted, each direction's steps in reverse order of the forward.
 * w: the weights, then (w + layers * dirs) the gradients wanted. */
static rill_status *run_backward(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rnn_run *r, const layer_weights *w,
                                 const back_io *io, const float *res, const uint8_t *mask, const int64_t *lens,
                                 float *scratch, int64_t stop) {
  const rill_rnn_geom *g = &r->g;
  const int64_t T = r->T, N = r->N, H = g->hidden, D = g->dirs, L = g->layers, GH = g->gates * H, W = D * H;
  const int64_t rows = T * N, S = rill_rnn_reserve_row(r->mode, H), buf_n = rows * W;
  const bool lstm = r->mode == RILL_RNN_LSTM, gru = r->mode == RILL_RNN_GRU;
  const layer_weights *dw = w + L * D;
  float *dgx = scratch, *dgh = gru ? dgx + rows * GH : dgx, *hprev = dgx + (gru ? 2 : 1) * rows * GH;
  float *step = hprev + rows * H, *dbufs = step + 3 * N * H, *dropped = dbufs + (L - 1 > stop ? (L > 2 ? 2 : 1) : 0) * buf_n;
  const float *hidden = res + rill_rnn_reserve_hidden_at(g, r->mode, T, N);
  const float keep = 1.0f - r->dropout_prob;
  const float *dy = io->dy; /* the gradient of the current layer's output; NULL: zeros */
  cudaError_t e = cudaSuccess;
#define CHECK(what)                                                               \
  do {                                                                            \
    if (e != cudaSuccess) return rill_cuda_kernel_check(ctx, e, what);            \
  } while (0)
  for (int64_t l = L - 1; l >= stop; l--) {
    const float *ylay = l == L - 1 ? io->y : hidden + l * buf_n;
    const float *xin = io->x;
    int64_t in_w = g->input;
    if (l > 0) {
      xin = hidden + (l - 1) * buf_n;
      in_w = W;
      if (mask) {
        e = rill_cuda_rnn_dropout_f32(dropped, xin, mask, keep, buf_n, d->stream);
        CHECK("the dropout between layers");
        xin = dropped;
      }
    }
    /* the gradient of this layer's input: Input@GRAD, or the layer below's output */
    float *dxl = l == 0 ? io->dx : l > stop ? dbufs + ((l - 1) % 2) * buf_n : NULL;
    for (int64_t dir = 0; dir < D; dir++) {
      int64_t sidx = l * D + dir;
      float *dh = step, *tmp = step + N * H, *dc = step + 2 * N * H;
      e = copy_or_zero(d, dh, io->dhN ? io->dhN + sidx * N * H : NULL, N * H);
      if (e == cudaSuccess) e = copy_or_zero(d, dc, lstm && io->dcN ? io->dcN + sidx * N * H : NULL, N * H);
      CHECK("starting the carried gradients");
      rill_cuda_rnn_back p = {.mode = (int)r->mode, .dir = (int)dir, .T = T, .n = N, .hidden = H, .S = S, .ldy = W,
                              .kept = res + sidx * rows * S, .y = ylay + dir * H, .dy = dy ? dy + dir * H : NULL,
                              .h0 = io->h0 + sidx * N * H, .c0 = lstm ? io->c0 + sidx * N * H : NULL, .lens = lens};
      for (int64_t s = 0; s < T; s++) {
        int64_t t = dir == 0 ? T - 1 - s : s;
        e = rill_cuda_rnn_back_step_f32(&p, t, dh, dc, tmp, dgx + t * N * GH, dgh + t * N * GH, hprev + t * N * H,
                                        d->stream);
        CHECK("the gate gradients of a step");
        /* dh of the step before: the gate gradients back through W_hh, the whole batch */
        RILL_TRY(rill_cuda_kernel_status(
            ctx, rill_cuda_sgemm(d, false, false, N, H, GH, 1.0f, dgh + t * N * GH, 0, w[sidx].whh, 0, 1.0f, tmp, 0, 1)));
        float *swap = dh;
        dh = tmp;
        tmp = swap;
      }
      if (io->dh0) e = copy_or_zero(d, io->dh0 + sidx * N * H, dh, N * H);
      if (e == cudaSuccess && lstm && io->dc0) e = copy_or_zero(d, io->dc0 + sidx * N * H, dc, N * H);
      CHECK("writing PreState@GRAD");
      const layer_weights *gw = &dw[sidx];
      if (gw->wih)
        RILL_TRY(rill_cuda_kernel_status(
            ctx, rill_cuda_sgemm(d, true, false, GH, in_w, rows, 1.0f, dgx, 0, xin, 0, 0.0f, (float *)gw->wih, 0, 1)));
      if (gw->whh)
        RILL_TRY(rill_cuda_kernel_status(
            ctx, rill_cuda_sgemm(d, true, false, GH, H, rows, 1.0f, dgh, 0, hprev, 0, 0.0f, (float *)gw->whh, 0, 1)));
      /* the biases' gradients: column sums from zero, the rows in order, as the CPU adds them */
      if (gw->bih) e = copy_or_zero(d, (float *)gw->bih, NULL, GH);
      if (e == cudaSuccess && gw->bih) e = rill_cuda_column_sums_f32(dgx, rows, GH, (float *)gw->bih, d->stream);
      if (e == cudaSuccess && gw->bhh) e = copy_or_zero(d, (float *)gw->bhh, NULL, GH);
      if (e == cudaSuccess && gw->bhh) e = rill_cuda_column_sums_f32(dgh, rows, GH, (float *)gw->bhh, d->stream);
      CHECK("the biases' gradients");
      if (dxl)
        RILL_TRY(rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, false, rows, in_w, GH, 1.0f, dgx, 0, w[sidx].wih,
                                                              0, dir ? 1.0f : 0.0f, dxl, 0, 1)));
    }
    if (l > 0 && dxl) {
      if (mask) {
        e = rill_cuda_rnn_dropout_f32(dxl, dxl, mask, keep, buf_n, d->stream);
        CHECK("the dropout's gradient");
      }
      dy = dxl;
    }
  }
#undef CHECK
  return NULL;
}

/* The backward of either op, r checked (r->lens on the host: NULL without lengths): w
 * holds the weights, then the gradients wanted (NULL where not); res, Reserve's gates
 * and hidden sections; the dropout mask as uint8 on the device (mask), or as cudnn_lstm
 * keeps it in Reserve, 0 / 1 floats (mask_f32); neither without dropout. */
static rill_status *backward(rill_kernel_ctx *ctx, const rnn_run *r, const layer_weights *w, const back_io *io,
                             rill_tensor *res, const uint8_t *mask, const float *mask_f32) {
  const rill_rnn_geom *g = &r->g;
  const bool lstm = r->mode == RILL_RNN_LSTM;
  const int64_t T = r->T, N = r->N, H = g->hidden, D = g->dirs, L = g->layers, GH = g->gates * H, W = D * H;
  /* the lowest layer the backward must reach: the one below it wants nothing */
  int64_t stop = io->dx || io->dh0 || io->dc0 ? 0 : L;
  for (int64_t k = 0; k < L * D && stop > 0; k++) {
    const layer_weights *gw = &w[L * D + k];
    if (gw->wih || gw->whh || gw->bih || gw->bhh) stop = k / D < stop ? k / D : stop;
  }
  if (stop == L) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, res, &d));
  if (T * N == 0) { /* the state gradients pass through, the weights get zeros */
    cudaError_t e = copy_or_zero(d, io->dh0, io->dhN, L * D * N * H);
    if (e == cudaSuccess && lstm) e = copy_or_zero(d, io->dc0, io->dcN, L * D * N * H);
    for (int64_t k = 0; k < L * D && e == cudaSuccess; k++) {
      const layer_weights *gw = &w[L * D + k];
      int64_t in_w = k / D == 0 ? g->input : W;
      e = copy_or_zero(d, (float *)gw->wih, NULL, GH * in_w);
      if (e == cudaSuccess) e = copy_or_zero(d, (float *)gw->whh, NULL, GH * H);
      if (e == cudaSuccess) e = copy_or_zero(d, (float *)gw->bih, NULL, GH);
      if (e == cudaSuccess) e = copy_or_zero(d, (float *)gw->bhh, NULL, GH);
    }
    return rill_cuda_kernel_check(ctx, e, "the gradients of no steps");
  }
  const int64_t rows = T * N, buf_n = rows * W;
  size_t n = (size_t)((r->mode == RILL_RNN_GRU ? 2 : 1) * rows * GH + rows * H + 3 * N * H +
                      (L - 1 > stop ? (L > 2 ? 2 : 1) * buf_n : 0) + (mask || mask_f32 ? buf_n : 0));
  size_t lens_bytes = r->lens ? (size_t)N * sizeof(int64_t) : 0, mask_bytes = mask_f32 ? (size_t)buf_n : 0;
  /* the lengths (int64), the floats, then the mask made from mask_f32 */
  size_t bytes = lens_bytes + n * sizeof(float) + mask_bytes;
  char *scratch = rill_cuda_mem_alloc(d, bytes);
  if (!scratch) return rill_kernel_error(ctx, "out of device memory for %zu bytes of gate gradients", bytes);
  cudaError_t e = upload(d, scratch, r->lens, lens_bytes);
  if (e == cudaSuccess && mask_f32) {
    uint8_t *m = (uint8_t *)scratch + lens_bytes + n * sizeof(float);
    e = rill_cuda_rnn_mask_of_f32(m, mask_f32, buf_n, d->stream);
    mask = m;
  }
  rill_status *st = rill_cuda_kernel_check(ctx, e, "copying SequenceLength and the dropout mask");
  if (!st)
    st = run_backward(ctx, d, r, w, io, rill_tensor_ptr(res), mask, r->lens ? (const int64_t *)scratch : NULL,
                      (float *)(scratch + lens_bytes), stop);
  rill_cuda_mem_free(d, scratch); /* its next user is queued behind the last launch */
  return st;
}

rill_status *rill_cuda_rnn_grad_fp32(rill_kernel_ctx *ctx) {
  rnn_run r = {0};
  RILL_TRY(rnn_check_inputs(ctx, RILL_DTYPE_FP32, &r));
  rill_tensor *res = NULL, *mask = NULL;
  RILL_TRY(rnn_grad_check(ctx, RILL_DTYPE_FP32, &r, &res, &mask));
  const bool lstm = r.mode == RILL_RNN_LSTM;
  back_io io = {.x = data_of(rill_kin(ctx, RILL_RNN_GRAD_IN_INPUT, 0)),
                .h0 = data_of(rill_kin(ctx, RILL_RNN_GRAD_IN_PRE_STATE, 0)),
                .c0 = lstm ? data_of(rill_kin(ctx, RILL_RNN_GRAD_IN_PRE_STATE, 1)) : NULL,
                .y = data_of(rill_kin(ctx, RILL_RNN_GRAD_IN_OUT, 0)),
                .dy = data_of(rill_kin(ctx, RILL_RNN_GRAD_IN_OUT_GRAD, 0)),
                .dhN = data_of(rill_kin(ctx, RILL_RNN_GRAD_IN_STATE_GRAD, 0)),
                .dcN = lstm ? data_of(rill_kin(ctx, RILL_RNN_GRAD_IN_STATE_GRAD, 1)) : NULL,
                .dx = data_of(rill_kout(ctx, RILL_RNN_GRAD_OUT_INPUT_GRAD, 0)),
                .dh0 = data_of(rill_kout(ctx, RILL_RNN_GRAD_OUT_PRE_STATE_GRAD, 0)),
                .dc0 = lstm ? data_of(rill_kout(ctx, RILL_RNN_GRAD_OUT_PRE_STATE_GRAD, 1)) : NULL};
  int64_t *lens = NULL;
  RILL_TRY(rnn_lengths_of(ctx, &r, &lens));
  layer_weights *w = weights_of(ctx, &r, true);
  rill_status *st = w ? backward(ctx, &r, w, &io, res, mask ? rill_tensor_ptr(mask) : NULL, NULL) : rill_oom();
  rill_free(w);
  rill_free(lens);
  return st;
}

/* cudnn_lstm's weights (and, with dw, their gradients) per layer and direction, at the
 * offsets of cuDNN's canonical layout in the flat W (W@GRAD). */
static layer_weights *cut_flat(const rnn_run *r, const float *flat, float *dw) {
  const rill_rnn_geom *g = &r->g;
  const int64_t n = g->layers * g->dirs;
  layer_weights *w = rill_malloc((size_t)(2 * n) * sizeof *w);
  if (!w) return NULL;
  for (int64_t k = 0; k < n; k++) {
    rill_cudnn_lstm_at at = rill_cudnn_lstm_offsets(g->layers, g->dirs, g->input, g->hidden, k / g->dirs, k % g->dirs);
    w[k] = (layer_weights){flat + at.wih, flat + at.whh, flat + at.bih, flat + at.bhh};
    w[n + k] = dw ? (layer_weights){dw + at.wih, dw + at.whh, dw + at.bih, dw + at.bhh} : (layer_weights){0};
  }
  return w;
}

/* cudnn_lstm_grad runs on the device when it has the forward's Reserve; a program Paddle
 * wrote (whose gradient op has none, and runs the forward again) runs it on the host. */
bool rill_cuda_cudnn_lstm_grad_accepts(const rill_kernel_ctx *ctx) {
  return ctx->nin[RILL_CUDNN_LSTM_GRAD_IN_RESERVE] > 0;
}

/* In training the forward keeps Reserve: operators/rnn.h's gates and hidden sections
 * (LSTM), then with more than one layer the dropout mask as 0 / 1 floats (all ones
 * without dropout), as the CPU kernel keeps it. */
rill_status *rill_cuda_cudnn_lstm_fp32(rill_kernel_ctx *ctx) {
  rnn_run r = {0};
  RILL_TRY(cudnn_lstm_check_inputs(ctx, RILL_DTYPE_FP32, &r));
  const rill_rnn_geom *g = &r.g;
  rill_dims od = {.n = 3, .d = {r.T, r.N, g->dirs * g->hidden}};
  rill_dims sd = {.n = 3, .d = {g->layers * g->dirs, r.N, g->hidden}};
  rill_tensor *out = NULL, *lh = NULL, *lc = NULL, *rt = NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_OUT, 0, RILL_DTYPE_FP32, &out));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_OUT, 0, out, &od));
  RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_LAST_H, 0, RILL_DTYPE_FP32, &lh));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_LAST_H, 0, lh, &sd));
  RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_LAST_C, 0, RILL_DTYPE_FP32, &lc));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_LAST_C, 0, lc, &sd));
  if (!ctx->attrs[RILL_CUDNN_LSTM_ATTR_IS_TEST].v.b && rill_kout(ctx, RILL_CUDNN_LSTM_OUT_RESERVE, 0)) {
    rill_dims rd = {.n = 1, .d = {rill_cudnn_lstm_reserve_numel(g->layers, g->dirs, g->hidden, r.T, r.N)}};
    RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_RESERVE, 0, RILL_DTYPE_FP32, &rt));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_RESERVE, 0, rt, &rd));
  }
  const bool dropout = cudnn_lstm_has_dropout(ctx, &r);
  const size_t mask_n = (size_t)(r.T * r.N * g->dirs * g->hidden);
  const bool keep_mask = rt && g->layers > 1;
  uint8_t *host_mask = dropout ? rill_malloc(mask_n ? mask_n : 1) : NULL;
  float *host_sec = keep_mask ? rill_malloc((mask_n ? mask_n : 1) * sizeof(float)) : NULL;
  layer_weights *w = cut_flat(&r, data_of(rill_kin(ctx, RILL_CUDNN_LSTM_IN_W, 0)), NULL);
  rill_status *st = (dropout && !host_mask) || (keep_mask && !host_sec) || !w ? rill_oom() : NULL;
  if (!st && host_mask) cudnn_lstm_draw_mask(ctx, &r, rill_random_run_seed, host_mask, mask_n);
  if (!st && keep_mask) {
    rill_cuda_dev *d = NULL;
    for (size_t i = 0; i < mask_n; i++) host_sec[i] = host_mask ? host_mask[i] : 1.0f;
    float *sec = (float *)rill_tensor_ptr(rt) + rill_rnn_reserve_numel(g, RILL_RNN_LSTM, r.T, r.N);
    st = rill_cuda_kernel_dev(ctx, rt, &d);
    if (!st)
      st = rill_cuda_kernel_check(ctx, upload(d, sec, host_sec, mask_n * sizeof(float)), "keeping the dropout mask");
  }
  if (!st)
    st = run(ctx, &r, w, data_of(rill_kin(ctx, RILL_CUDNN_LSTM_IN_INPUT, 0)),
             data_of(rill_kin(ctx, RILL_CUDNN_LSTM_IN_INIT_H, 0)), data_of(rill_kin(ctx, RILL_CUDNN_LSTM_IN_INIT_C, 0)),
             out, lh, rill_tensor_ptr(lc), data_of(rt), host_mask, NULL, dropout);
  rill_free(w);
  rill_free(host_sec);
  rill_free(host_mask);
  return st;
}

/* The gradient from the forward's Reserve (its mask section when the forward dropped),
 * with the CPU kernel's checks; W@GRAD written block by block where the layout puts
 * each block. */
rill_status *rill_cuda_cudnn_lstm_grad_fp32(rill_kernel_ctx *ctx) {
  rnn_run r = {0};
  RILL_TRY(cudnn_lstm_check_inputs(ctx, RILL_DTYPE_FP32, &r));
  RILL_TRY(cudnn_lstm_grad_check(ctx, RILL_DTYPE_FP32, &r));
  const rill_rnn_geom *g = &r.g;
  rill_tensor *x = rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_INPUT, 0), *w = rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_W, 0);
  const int64_t res_n = rill_cudnn_lstm_reserve_numel(g->layers, g->dirs, g->hidden, r.T, r.N);
  rill_tensor *rt = rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_RESERVE, 0);
  if (!rt || !rill_tensor_is_set(rt) || rt->dtype != RILL_DTYPE_FP32 || rill_tensor_numel(rt) != res_n)
    return rill_kernel_error(ctx, "input Reserve (%s) %s, expected float32 with %lld elements: the forward keeps "
                             "it in training mode (is_test false)",
                             rill_kin_name(ctx, RILL_CUDNN_LSTM_GRAD_IN_RESERVE, 0),
                             !rt || !rill_tensor_is_set(rt) ? "holds no data" : "has another size or dtype",
                             (long long)res_n);
  back_io io = {.x = data_of(x),
                .h0 = data_of(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_INIT_H, 0)),
                .c0 = data_of(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_INIT_C, 0)),
                .y = data_of(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_OUT, 0)),
                .dy = data_of(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_OUT_GRAD, 0)),
                .dhN = data_of(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_LAST_H_GRAD, 0)),
                .dcN = data_of(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_LAST_C_GRAD, 0)),
                .dx = data_of(rill_kout(ctx, RILL_CUDNN_LSTM_GRAD_OUT_INPUT_GRAD, 0)),
                .dh0 = data_of(rill_kout(ctx, RILL_CUDNN_LSTM_GRAD_OUT_INIT_H_GRAD, 0)),
                .dc0 = data_of(rill_kout(ctx, RILL_CUDNN_LSTM_GRAD_OUT_INIT_C_GRAD, 0))};
  layer_weights *lw = cut_flat(&r, data_of(w), data_of(rill_kout(ctx, RILL_CUDNN_LSTM_GRAD_OUT_W_GRAD, 0)));
  if (!lw) return rill_oom();
  const float *sec = (const float *)rill_tensor_ptr(rt) + rill_rnn_reserve_numel(g, RILL_RNN_LSTM, r.T, r.N);
  rill_status *st = backward(ctx, &r, lw, &io, rt, NULL, cudnn_lstm_has_dropout(ctx, &r) ? sec : NULL);
  rill_free(lw);
  return st;
}
