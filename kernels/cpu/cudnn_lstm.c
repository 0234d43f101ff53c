/* cudnn_lstm and cudnn_lstm_grad CPU kernels (float32, float64): the flat weight W is cut
 * into each layer and direction's W_ih, W_hh, b_ih, b_hh at the offsets of cuDNN's
 * canonical layout (operators/cudnn_lstm.h), which the recurrent engine the rnn op runs
 * on (kernels/cpu/rnn_engine.h) then reads in place; W@GRAD is cut the same way, so the
 * engine writes each block's gradient where the layout puts it.
 *
 * The dropout between layers draws one mask [T, N, D * H] per run, used for every layer
 * as the rnn op does: from the seed attribute when it is >= 0 (the same mask on every
 * run), else from the executor's generator. In training the forward keeps the mask in
 * Reserve with the gates; a gradient op without Reserve (a program Paddle wrote, whose
 * grad op has no such input) runs the forward again into scratch memory, which with
 * dropout needs the seed attribute to draw the same mask. */
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/random.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/rnn_engine.h"
#include "kernels/cpu/tensor_ops.h"
#include "operators/cudnn_lstm.h"

_Static_assert(RILL_SAME_POS(RILL_CUDNN_LSTM_IN_INPUT, RILL_CUDNN_LSTM_GRAD_IN_INPUT) &&
                   RILL_SAME_POS(RILL_CUDNN_LSTM_IN_INIT_H, RILL_CUDNN_LSTM_GRAD_IN_INIT_H) &&
                   RILL_SAME_POS(RILL_CUDNN_LSTM_IN_INIT_C, RILL_CUDNN_LSTM_GRAD_IN_INIT_C) &&
                   RILL_SAME_POS(RILL_CUDNN_LSTM_IN_W, RILL_CUDNN_LSTM_GRAD_IN_W) &&
                   RILL_SAME_POS(RILL_CUDNN_LSTM_ATTR_COUNT, RILL_CUDNN_LSTM_GRAD_ATTR_COUNT),
               "cudnn_lstm_grad shares cudnn_lstm's first input slots and its attributes");

/* Points the engine's weight arrays into the flat weight w (and its gradient dw, NULL:
 * not wanted), 8 arrays of L * D in one allocation (*ptrs). */
static rill_status *cut_weights(const rnn_run *r, size_t esize, const void *w, void *dw,
                                rnn_io *io, void **ptrs) {
  const rill_rnn_geom *g = &r->g;
  const int64_t n = g->layers * g->dirs;
  void **p = rill_malloc((size_t)(8 * n) * sizeof *p);
  if (!p) return rill_oom();
  for (int64_t k = 0; k < n; k++) {
    rill_cudnn_lstm_at at =
        rill_cudnn_lstm_offsets(g->layers, g->dirs, g->input, g->hidden, k / g->dirs, k % g->dirs);
    int64_t off[4] = {at.wih, at.whh, at.bih, at.bhh};
    for (int j = 0; j < 4; j++) {
      p[j * n + k] = (char *)(uintptr_t)w + (size_t)off[j] * esize;
      p[(4 + j) * n + k] = dw ? (char *)dw + (size_t)off[j] * esize : NULL;
    }
  }
  io->wih = (const void *const *)p, io->whh = (const void *const *)p + n;
  io->bih = (const void *const *)p + 2 * n, io->bhh = (const void *const *)p + 3 * n;
  io->dwih = dw ? p + 4 * n : NULL, io->dwhh = dw ? p + 5 * n : NULL;
  io->dbih = dw ? p + 6 * n : NULL, io->dbhh = dw ? p + 7 * n : NULL;
  *ptrs = p;
  return NULL;
}

/* Reserve's mask section <-> the engine's uint8 mask. */
static void mask_store(rill_dtype dt, void *sec, const uint8_t *mask, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (dt == RILL_DTYPE_FP64) ((double *)sec)[i] = mask ? mask[i] : 1;
    else ((float *)sec)[i] = mask ? mask[i] : 1;
  }
}

static void mask_load(rill_dtype dt, const void *sec, uint8_t *mask, size_t n) {
  for (size_t i = 0; i < n; i++)
    mask[i] = (dt == RILL_DTYPE_FP64 ? ((const double *)sec)[i] : ((const float *)sec)[i]) != 0;
}

static rill_status *run_forward(rill_kernel_ctx *ctx, rill_dtype dt, const rnn_run *r,
                                const rnn_io *io, void *res, const uint8_t *mask) {
  return dt == RILL_DTYPE_FP64 ? rill_rnn_engine_forward_f64(ctx, r, io, res, mask)
                               : rill_rnn_engine_forward_f32(ctx, r, io, res, mask);
}

static void *tensor_data(rill_tensor *t) {
  return t && rill_tensor_is_set(t) ? rill_tensor_ptr(t) : NULL;
}

static rill_status *cudnn_lstm_forward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rnn_run r;
  RILL_TRY(cudnn_lstm_check_inputs(ctx, dt, &r));
  const rill_rnn_geom *g = &r.g;
  rill_dims od = {.n = 3, .d = {r.T, r.N, g->dirs * g->hidden}};
  rill_dims sd = {.n = 3, .d = {g->layers * g->dirs, r.N, g->hidden}};
  rill_tensor *out = NULL, *lh = NULL, *lc = NULL, *t = NULL;
  RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_OUT, 0, dt, &out));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_OUT, 0, out, &od));
  RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_LAST_H, 0, dt, &lh));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_LAST_H, 0, lh, &sd));
  RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_LAST_C, 0, dt, &lc));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_LAST_C, 0, lc, &sd));
  bool train = !ctx->attrs[RILL_CUDNN_LSTM_ATTR_IS_TEST].v.b;
  char *res = NULL;
  if (train && rill_kout(ctx, RILL_CUDNN_LSTM_OUT_RESERVE, 0)) {
    rill_dims rd = {.n = 1,
                    .d = {rill_cudnn_lstm_reserve_numel(g->layers, g->dirs, g->hidden, r.T, r.N)}};
    RILL_TRY(rill_kout_need(ctx, RILL_CUDNN_LSTM_OUT_RESERVE, 0, dt, &t));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_CUDNN_LSTM_OUT_RESERVE, 0, t, &rd));
    res = rill_tensor_ptr(t);
  }
  const size_t esize = rill_dtype_size(dt);
  const size_t mask_n = (size_t)(r.T * r.N * g->dirs * g->hidden);
  uint8_t *mask = NULL;
  if (cudnn_lstm_has_dropout(ctx, &r)) {
    if (!(mask = rill_malloc(mask_n ? mask_n : 1))) return rill_oom();
    cudnn_lstm_draw_mask(ctx, &r, rill_random_run_seed, mask, mask_n);
  }
  if (res && g->layers > 1)
    mask_store(dt, res + (size_t)rill_rnn_reserve_numel(g, RILL_RNN_LSTM, r.T, r.N) * esize, mask,
               mask_n);
  rnn_io io = {.x = tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_IN_INPUT, 0)),
               .h0 = tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_IN_INIT_H, 0)),
               .c0 = tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_IN_INIT_C, 0)),
               .out = rill_tensor_ptr(out),
               .hN = rill_tensor_ptr(lh),
               .cN = rill_tensor_ptr(lc)};
  void *ptrs = NULL;
  rill_status *st = cut_weights(&r, esize, tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_IN_W, 0)),
                                NULL, &io, &ptrs);
  if (!st) st = run_forward(ctx, dt, &r, &io, res, mask);
  rill_free(ptrs);
  rill_free(mask);
  return st;
}

static rill_status *cudnn_lstm_backward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rnn_run r;
  RILL_TRY(cudnn_lstm_check_inputs(ctx, dt, &r));
  RILL_TRY(cudnn_lstm_grad_check(ctx, dt, &r));
  const rill_rnn_geom *g = &r.g;
  rill_tensor *w = rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_W, 0);
  rnn_io io = {.x = tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_INPUT, 0)),
               .h0 = tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_INIT_H, 0)),
               .c0 = tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_INIT_C, 0)),
               .y = tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_OUT, 0)),
               .dy = tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_OUT_GRAD, 0)),
               .dhN = tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_LAST_H_GRAD, 0)),
               .dcN = tensor_data(rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_LAST_C_GRAD, 0)),
               .dx = tensor_data(rill_kout(ctx, RILL_CUDNN_LSTM_GRAD_OUT_INPUT_GRAD, 0)),
               .dh0 = tensor_data(rill_kout(ctx, RILL_CUDNN_LSTM_GRAD_OUT_INIT_H_GRAD, 0)),
               .dc0 = tensor_data(rill_kout(ctx, RILL_CUDNN_LSTM_GRAD_OUT_INIT_C_GRAD, 0))};
  void *dw = tensor_data(rill_kout(ctx, RILL_CUDNN_LSTM_GRAD_OUT_W_GRAD, 0));
  if (!io.dx && !io.dh0 && !io.dc0 && !dw) return NULL;
  const size_t esize = rill_dtype_size(dt);
  const int64_t rnn_n = rill_rnn_reserve_numel(g, RILL_RNN_LSTM, r.T, r.N);
  const int64_t res_n = rill_cudnn_lstm_reserve_numel(g->layers, g->dirs, g->hidden, r.T, r.N);
  const size_t mask_n = (size_t)(r.T * r.N * g->dirs * g->hidden);
  const bool dropout = cudnn_lstm_has_dropout(ctx, &r);
  const char *res = NULL;
  char *own_res = NULL;
  uint8_t *mask = NULL;
  void *ptrs = NULL;
  rill_status *st = NULL;
  if (dropout && !(mask = rill_malloc(mask_n ? mask_n : 1))) return rill_oom();
  rill_tensor *rt = rill_kin(ctx, RILL_CUDNN_LSTM_GRAD_IN_RESERVE, 0);
  if (rt && rill_tensor_is_set(rt)) {
    if (rt->dtype != dt || rill_tensor_numel(rt) != res_n) {
      st = rill_kernel_error(ctx, "input Reserve (%s) is %s with %lld elements, expected %s "
                             "with %lld: the forward keeps it in training mode (is_test false)",
                             rill_kin_name(ctx, RILL_CUDNN_LSTM_GRAD_IN_RESERVE, 0),
                             rill_dtype_name(rt->dtype), (long long)rill_tensor_numel(rt),
                             rill_dtype_name(dt), (long long)res_n);
      goto done;
    }
    res = rill_tensor_ptr(rt);
    if (dropout) mask_load(dt, res + (size_t)rnn_n * esize, mask, mask_n);
  } else {
    /* No Reserve: the forward again, into scratch, with the same mask. */
    if (dropout && ctx->attrs[RILL_CUDNN_LSTM_ATTR_SEED].v.i < 0) {
      st = rill_kernel_error(ctx, "input Reserve is absent and the dropout between layers "
                             "(dropout_prob %g) draws a new mask each run (seed %d): the "
                             "gradient cannot draw the forward's mask again; give the op a "
                             "seed >= 0, or bind the forward's Reserve",
                             (double)r.dropout_prob, (int)ctx->attrs[RILL_CUDNN_LSTM_ATTR_SEED].v.i);
      goto done;
    }
    if (dropout) cudnn_lstm_draw_mask(ctx, &r, rill_random_run_seed, mask, mask_n);
    size_t scratch = (size_t)rnn_n + mask_n + 2 * (size_t)(g->layers * g->dirs * r.N * g->hidden);
    if (!(own_res = rill_malloc((scratch ? scratch : 1) * esize))) {
      st = rill_oom();
      goto done;
    }
    rnn_io fw = io;
    fw.out = own_res + (size_t)rnn_n * esize;
    fw.hN = (char *)fw.out + mask_n * esize;
    fw.cN = (char *)fw.hN + (size_t)(g->layers * g->dirs * r.N * g->hidden) * esize;
    if ((st = cut_weights(&r, esize, rill_tensor_ptr(w), NULL, &fw, &ptrs))) goto done;
    st = run_forward(ctx, dt, &r, &fw, own_res, mask);
    rill_free(ptrs);
    ptrs = NULL;
    if (st) goto done;
    res = own_res;
  }
  if ((st = cut_weights(&r, esize, rill_tensor_ptr(w), dw, &io, &ptrs))) goto done;
  st = dt == RILL_DTYPE_FP64
           ? rill_rnn_engine_backward_f64(ctx, &r, &io, (const double *)(const void *)res, mask)
           : rill_rnn_engine_backward_f32(ctx, &r, &io, (const float *)(const void *)res, mask);
done:
  rill_free(ptrs);
  rill_free(own_res);
  rill_free(mask);
  return st;
}

rill_status *rill_cpu_cudnn_lstm_fp32(rill_kernel_ctx *ctx) {
  return cudnn_lstm_forward(ctx, RILL_DTYPE_FP32);
}
rill_status *rill_cpu_cudnn_lstm_fp64(rill_kernel_ctx *ctx) {
  return cudnn_lstm_forward(ctx, RILL_DTYPE_FP64);
}
rill_status *rill_cpu_cudnn_lstm_grad_fp32(rill_kernel_ctx *ctx) {
  return cudnn_lstm_backward(ctx, RILL_DTYPE_FP32);
}
rill_status *rill_cpu_cudnn_lstm_grad_fp64(rill_kernel_ctx *ctx) {
  return cudnn_lstm_backward(ctx, RILL_DTYPE_FP64);
}
