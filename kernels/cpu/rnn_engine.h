/* The CPU engine of the multi-layer, optionally bidirectional recurrent networks
 * (kernels/cpu/rnn.c, instantiated from rnn_impl.inc), shared by the ops that store
 * their weights differently: rnn (Paddle 2.x, a WeightList of tensors) and cudnn_lstm
 * (Fluid 1.x, one flat weight in cuDNN's canonical layout). Each kernel checks its
 * inputs, then points the engine at every tensor it reads and writes. */
#ifndef RILL_KERNELS_CPU_RNN_ENGINE_H
#define RILL_KERNELS_CPU_RNN_ENGINE_H

#include "framework/registry/registry.h"
#include "kernels/cpu/rnn_check.h"

/* The tensors of one run, of the run's element type (float or double). The weight
 * arrays hold one pointer per layer and direction, index layer * dirs + dir: W_ih
 * [G*H, in], W_hh [G*H, H], b_ih and b_hh [G*H]. Gradient pointers are NULL where that
 * gradient is not wanted (the gradient arrays themselves may be NULL: none wanted). */
typedef struct rnn_io {
  const void *x, *h0, *c0; /* Input [T, N, I]; the initial states [L*D, N, H] (c0: LSTM) */
  const void *const *wih, *const *whh, *const *bih, *const *bhh;
  void *out, *hN, *cN; /* forward: Out [T, N, D*H]; the last states */
  /* backward: Out as the forward wrote it, the upstream gradients (NULL: zeros) */
  const void *y, *dy, *dhN, *dcN;
  void *dx, *dh0, *dc0;
  void *const *dwih, *const *dwhh, *const *dbih, *const *dbhh;
} rnn_io;

/* The forward. res: Reserve (operators/rnn.h's layout; NULL: keep nothing); mask: the
 * dropout mask between layers (NULL: none). */
rill_status *rill_rnn_engine_forward_f32(rill_kernel_ctx *ctx, const rnn_run *r, const rnn_io *io,
                                         float *res, const uint8_t *mask);
rill_status *rill_rnn_engine_forward_f64(rill_kernel_ctx *ctx, const rnn_run *r, const rnn_io *io,
                                         double *res, const uint8_t *mask);
/* The backward from the forward's Reserve and mask. */
rill_status *rill_rnn_engine_backward_f32(rill_kernel_ctx *ctx, const rnn_run *r, const rnn_io *io,
                                          const float *res, const uint8_t *mask);
rill_status *rill_rnn_engine_backward_f64(rill_kernel_ctx *ctx, const rnn_run *r, const rnn_io *io,
                                          const double *res, const uint8_t *mask);

#endif
