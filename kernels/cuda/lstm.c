/* lstm and lstm_grad, CUDA kernels, float32 (fluid.layers.dynamic_lstm on the device);
 * lstm_unit and its gradient (fluid.layers.lstm_unit, one step of a StaticRNN or
 * DynamicRNN), one thread an element.
 * The host builds the batch order from Input's LoD (operators/recurrent.h, as the CPU
 * kernel does) and copies its row indices to the device once per run. The forward
 * gathers Input into BatchGate with the bias, then per time step multiplies the
 * previous step's hidden rows by Weight with cuBLAS into the step's gates and runs the
 * cell update, one thread per (row, unit); Hidden and Cell are scattered back to
 * sequence order. The gradient runs the steps backwards with two GEMMs each (the
 * previous hidden rows' gradient and Weight@GRAD), as kernels/cpu/lstm_impl.inc does;
 * Bias@GRAD sums the gate gradients, and its peephole part the per-row terms, in the
 * CPU's order. lstmp and lstmp_grad (fluid.layers.dynamic_lstmp): the same steps with
 * the previous step's projection in place of its hidden state; per step one more
 * product, the hidden rows by ProjWeight, then the projection's activation and clip
 * (and cell_clip in the cell update); backwards, the projection's gradient through its
 * clip and activation and two more products (the hidden rows' gradient and
 * ProjWeight@GRAD), as the CPU kernel runs them. */
#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"
#include "kernels/cuda/batch_order.h"

static rill_cuda_lstm params_of(const rill_lstm_geom *g) {
  return (rill_cuda_lstm){.D = g->D,
                          .act_gate = (int)g->act[RILL_LSTM_ACT_GATE],
                          .act_cell = (int)g->act[RILL_LSTM_ACT_CELL],
                          .act_cand = (int)g->act[RILL_LSTM_ACT_CAND]};
}

/* What lstm_grad and lstmp_grad computed in batch order: the gate gradients [rows, 4D],
 * the peephole gradient's terms per row [rows, 3D] (NULL: none), and the gradients of
 * H0 [nseq, h0_width] and C0 [nseq, D]. */
typedef struct lstm_grad_rows {
  const float *dg, *dpeep, *dh0;
  int64_t h0_width;
  const float *dc0;
} lstm_grad_rows;

/* The gradients' last steps, once the steps backwards are queued (st and e: how they
 * went): Input@GRAD (the gate gradients back in sequence order), Bias@GRAD (their column
 * sums, then the peephole part), H0@GRAD and C0@GRAD, each output that is not NULL;
 * frees the batch. */
static rill_status *lstm_grad_finish(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_cuda_batch *bt, rill_status *st,
                                     cudaError_t e, int64_t D, const lstm_grad_rows *r, rill_tensor *dx,
                                     rill_tensor *db, rill_tensor *dh0, rill_tensor *dc0) {
  const rill_seq_batch *sb = &bt->sb;
  cudaStream_t s0 = d->stream;
  if (!st && e == cudaSuccess && dx)
    e = rill_cuda_scatter_rows_f32(r->dg, bt->row, sb->rows, 4 * D, rill_tensor_ptr(dx), s0);
  if (!st && e == cudaSuccess && db) e = rill_cuda_column_sums_f32(r->dg, sb->rows, 4 * D, rill_tensor_ptr(db), s0);
  if (!st && e == cudaSuccess && db && r->dpeep)
    e = rill_cuda_lstm_peephole_grad_f32(r->dpeep, bt->starts, sb->steps, 3 * D, (float *)rill_tensor_ptr(db) + 4 * D,
                                         s0);
  if (!st && e == cudaSuccess && dh0)
    e = rill_cuda_scatter_rows_f32(r->dh0, bt->order, sb->nseq, r->h0_width, rill_tensor_ptr(dh0), s0);
  if (!st && e == cudaSuccess && dc0)
    e = rill_cuda_scatter_rows_f32(r->dc0, bt->order, sb->nseq, D, rill_tensor_ptr(dc0), s0);
  if (!st) st = rill_cuda_kernel_check(ctx, e, "running the time steps backwards");
  rill_cuda_batch_free(d, bt);
  return st;
}

rill_status *rill_cuda_lstm_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *w = NULL, *b = NULL, *h0 = NULL, *c0 = NULL;
  rill_tensor *hid = NULL, *cell = NULL, *bg = NULL, *bcp = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_IN_WEIGHT, 0, RILL_DTYPE_FP32, &w));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_IN_BIAS, 0, RILL_DTYPE_FP32, &b));
  if (rill_kin(ctx, RILL_LSTM_IN_H0, 0)) RILL_TRY(rill_kin_need(ctx, RILL_LSTM_IN_H0, 0, RILL_DTYPE_FP32, &h0));
  if (rill_kin(ctx, RILL_LSTM_IN_C0, 0)) RILL_TRY(rill_kin_need(ctx, RILL_LSTM_IN_C0, 0, RILL_DTYPE_FP32, &c0));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTM_OUT_HIDDEN, 0, RILL_DTYPE_FP32, &hid));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTM_OUT_CELL, 0, RILL_DTYPE_FP32, &cell));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTM_OUT_BATCH_GATE, 0, RILL_DTYPE_FP32, &bg));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTM_OUT_BATCH_CELL_PRE_ACT, 0, RILL_DTYPE_FP32, &bcp));
  rill_lstm_geom gm;
  RILL_TRY(rill_lstm_check(ctx, x, w, b, h0, c0, &gm));
  int64_t rows = gm.rows, D = gm.D;
  rill_dims hd = {.n = 2, .d = {rows, D}}, gd = {.n = 2, .d = {rows, 4 * D}};
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTM_OUT_HIDDEN, 0, hid, &hd));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTM_OUT_CELL, 0, cell, &hd));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTM_OUT_BATCH_GATE, 0, bg, &gd));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTM_OUT_BATCH_CELL_PRE_ACT, 0, bcp, &hd));
  if (rows == 0 || D == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, hid, &d));
  rill_cuda_batch bt;
  RILL_TRY(rill_cuda_batch_make(ctx, d, x, RILL_LSTM_IN_INPUT, rows, gm.reverse, &bt));
  const rill_seq_batch *sb = &bt.sb;
  /* batch order: hidden, cell [rows, D]; reordered H0, C0 [nseq, D] */
  RILL_TRY(rill_cuda_batch_scratch(ctx, d, &bt, 2 * rows * D + 2 * sb->nseq * D));
  float *buf = bt.scratch;
  rill_status *st = NULL;
  float *bh = buf, *bc = bh + rows * D, *oh0 = bc + rows * D, *oc0 = oh0 + sb->nseq * D;
  float *g = rill_tensor_ptr(bg), *ca = rill_tensor_ptr(bcp);
  const float *wp = rill_tensor_ptr(w), *bp = rill_tensor_ptr(b), *peep = gm.peep ? bp + 4 * D : NULL;
  rill_cuda_lstm p = params_of(&gm);
  cudaError_t e = rill_cuda_gather_rows_bias_f32(rill_tensor_ptr(x), bt.row, bp, rows, 4 * D, g, d->stream);
  if (e == cudaSuccess && h0)
    e = rill_cuda_gather_rows_f32(rill_tensor_ptr(h0), bt.order, true, sb->nseq, D, -1, oh0, d->stream);
  if (e == cudaSuccess && c0)
    e = rill_cuda_gather_rows_f32(rill_tensor_ptr(c0), bt.order, true, sb->nseq, D, -1, oc0, d->stream);
  for (int64_t n = 0; n < sb->steps && e == cudaSuccess && !st; n++) {
    int64_t s = sb->starts[n], cur = sb->starts[n + 1] - s;
    const float *ph = n > 0 ? bh + sb->starts[n - 1] * D : h0 ? oh0 : NULL;
    const float *pc = n > 0 ? bc + sb->starts[n - 1] * D : c0 ? oc0 : NULL;
    if (ph)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, false, cur, 4 * D, D, 1.0f, ph, 0, wp, 0, 1.0f,
                                                        g + s * 4 * D, 0, 1));
    if (!st) e = rill_cuda_lstm_step_f32(g + s * 4 * D, pc, bc + s * D, ca + s * D, bh + s * D, peep, &p, cur, d->stream);
  }
  if (!st && e == cudaSuccess) e = rill_cuda_scatter_rows_f32(bh, bt.row, rows, D, rill_tensor_ptr(hid), d->stream);
  if (!st && e == cudaSuccess) e = rill_cuda_scatter_rows_f32(bc, bt.row, rows, D, rill_tensor_ptr(cell), d->stream);
  if (!st) st = rill_cuda_kernel_check(ctx, e, "running the time steps");
  rill_cuda_batch_free(d, &bt);
  return st;
}

rill_status *rill_cuda_lstm_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *w = NULL, *b = NULL, *h0 = NULL, *c0 = NULL, *hid = NULL, *cell = NULL;
  rill_tensor *bg = NULL, *bcp = NULL, *dhid = NULL;
  rill_tensor *dx = NULL, *dh0 = NULL, *dc0 = NULL, *dw = NULL, *db = NULL;
  bool want = false;
  for (size_t o = 0; o < RILL_LSTM_GRAD_OUT_COUNT; o++) want = want || rill_kout(ctx, o, 0);
  if (!want) return NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_GRAD_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_GRAD_IN_WEIGHT, 0, RILL_DTYPE_FP32, &w));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_GRAD_IN_BIAS, 0, RILL_DTYPE_FP32, &b));
  if (rill_kin(ctx, RILL_LSTM_GRAD_IN_H0, 0))
    RILL_TRY(rill_kin_need(ctx, RILL_LSTM_GRAD_IN_H0, 0, RILL_DTYPE_FP32, &h0));
  if (rill_kin(ctx, RILL_LSTM_GRAD_IN_C0, 0))
    RILL_TRY(rill_kin_need(ctx, RILL_LSTM_GRAD_IN_C0, 0, RILL_DTYPE_FP32, &c0));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_GRAD_IN_HIDDEN, 0, RILL_DTYPE_FP32, &hid));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_GRAD_IN_CELL, 0, RILL_DTYPE_FP32, &cell));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_GRAD_IN_BATCH_GATE, 0, RILL_DTYPE_FP32, &bg));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_GRAD_IN_BATCH_CELL_PRE_ACT, 0, RILL_DTYPE_FP32, &bcp));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_GRAD_IN_HIDDEN_GRAD, 0, RILL_DTYPE_FP32, &dhid));
  rill_lstm_geom gm;
  RILL_TRY(rill_lstm_check(ctx, x, w, b, h0, c0, &gm));
  int64_t rows = gm.rows, D = gm.D;
  rill_dims hd = {.n = 2, .d = {rows, D}}, gd = {.n = 2, .d = {rows, 4 * D}};
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTM_GRAD_IN_HIDDEN, hid, &hd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTM_GRAD_IN_CELL, cell, &hd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTM_GRAD_IN_BATCH_GATE, bg, &gd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTM_GRAD_IN_BATCH_CELL_PRE_ACT, bcp, &hd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTM_GRAD_IN_HIDDEN_GRAD, dhid, &hd));
  const rill_tensor *const fwd[] = {x, h0, c0, w, b};
  rill_tensor *outs[RILL_LSTM_GRAD_OUT_COUNT];
  RILL_TRY(rill_kout_like(ctx, RILL_LSTM_GRAD_OUT_COUNT, RILL_DTYPE_FP32, fwd, rill_lstm_grad_wrt, 0u, outs));
  dx = outs[0], dh0 = outs[1], dc0 = outs[2], dw = outs[3], db = outs[4];
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_zero_outputs(ctx, outs, RILL_LSTM_GRAD_OUT_COUNT, &d));
  if (rows == 0 || D == 0) return NULL;
  rill_cuda_batch bt;
  RILL_TRY(rill_cuda_batch_make(ctx, d, x, RILL_LSTM_IN_INPUT, rows, gm.reverse, &bt));
  const rill_seq_batch *sb = &bt.sb;
  int64_t nseq = sb->nseq;
  bool peep_grad = gm.peep && db;
  /* batch order: hidden, its gradient, cell, its gradient [rows, D]; gate gradients
   * [rows, 4D]; reordered H0, C0 and their gradients [nseq, D]; the peephole gradient's
   * terms per row [rows, 3D] */
  RILL_TRY(rill_cuda_batch_scratch(ctx, d, &bt, 8 * rows * D + 4 * nseq * D + (peep_grad ? 3 * rows * D : 0)));
  float *buf = bt.scratch;
  rill_status *st = NULL;
  float *bh = buf, *bdh = bh + rows * D, *bc = bdh + rows * D, *bdc = bc + rows * D, *bdg = bdc + rows * D;
  float *oh0 = bdg + 4 * rows * D, *oc0 = oh0 + nseq * D, *odh0 = oc0 + nseq * D, *odc0 = odh0 + nseq * D;
  float *dpr = peep_grad ? odc0 + nseq * D : NULL;
  cudaStream_t s0 = d->stream;
  cudaError_t e = rill_cuda_gather_rows_f32(rill_tensor_ptr(hid), bt.row, true, rows, D, -1, bh, s0);
  if (e == cudaSuccess) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(dhid), bt.row, true, rows, D, -1, bdh, s0);
  if (e == cudaSuccess) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(cell), bt.row, true, rows, D, -1, bc, s0);
  if (e == cudaSuccess && h0) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(h0), bt.order, true, nseq, D, -1, oh0, s0);
  if (e == cudaSuccess && c0) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(c0), bt.order, true, nseq, D, -1, oc0, s0);
  const float *g = rill_tensor_ptr(bg), *ca = rill_tensor_ptr(bcp), *wp = rill_tensor_ptr(w);
  const float *peep = gm.peep ? (const float *)rill_tensor_ptr(b) + 4 * D : NULL;
  float *dwp = dw ? rill_tensor_ptr(dw) : NULL;
  rill_cuda_lstm p = params_of(&gm);
  for (int64_t n = sb->steps - 1; n >= 0 && e == cudaSuccess && !st; n--) {
    int64_t s = sb->starts[n], cur = sb->starts[n + 1] - s, ps = n > 0 ? sb->starts[n - 1] : 0;
    const float *pc = n > 0 ? bc + ps * D : c0 ? oc0 : NULL;
    float *pdc = n > 0 ? bdc + ps * D : dc0 ? odc0 : NULL;
    e = rill_cuda_lstm_step_grad_f32(g + s * 4 * D, bc + s * D, ca + s * D, pc, bdh + s * D, bdc + s * D,
                                     bdg + s * 4 * D, pdc, peep, dpr ? dpr + s * 3 * D : NULL, &p, cur, s0);
    const float *ph = n > 0 ? bh + ps * D : h0 ? oh0 : NULL;
    float *pdh = n > 0 ? bdh + ps * D : dh0 ? odh0 : NULL;
    if (e == cudaSuccess && ph && pdh)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, true, cur, D, 4 * D, 1.0f, bdg + s * 4 * D, 0, wp,
                                                        0, 1.0f, pdh, 0, 1));
    if (e == cudaSuccess && !st && ph && dwp)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, true, false, D, 4 * D, cur, 1.0f, ph, 0, bdg + s * 4 * D,
                                                        0, 1.0f, dwp, 0, 1));
  }
  const lstm_grad_rows r = {bdg, dpr, odh0, D, odc0};
  return lstm_grad_finish(ctx, d, &bt, st, e, D, &r, dx, db, dh0, dc0);
}

static rill_cuda_lstm lstmp_params_of(const rill_lstmp_geom *g) {
  return (rill_cuda_lstm){.D = g->D,
                          .act_gate = (int)g->act[RILL_LSTM_ACT_GATE],
                          .act_cell = (int)g->act[RILL_LSTM_ACT_CELL],
                          .act_cand = (int)g->act[RILL_LSTM_ACT_CAND],
                          .cell_clip = (float)g->cell_clip};
}

rill_status *rill_cuda_lstmp_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *w = NULL, *pw = NULL, *b = NULL, *h0 = NULL, *c0 = NULL;
  rill_tensor *proj = NULL, *cell = NULL, *bg = NULL, *bcp = NULL, *bhid = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_IN_WEIGHT, 0, RILL_DTYPE_FP32, &w));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_IN_PROJ_WEIGHT, 0, RILL_DTYPE_FP32, &pw));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_IN_BIAS, 0, RILL_DTYPE_FP32, &b));
  if (rill_kin(ctx, RILL_LSTMP_IN_H0, 0)) RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_IN_H0, 0, RILL_DTYPE_FP32, &h0));
  if (rill_kin(ctx, RILL_LSTMP_IN_C0, 0)) RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_IN_C0, 0, RILL_DTYPE_FP32, &c0));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTMP_OUT_PROJECTION, 0, RILL_DTYPE_FP32, &proj));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTMP_OUT_CELL, 0, RILL_DTYPE_FP32, &cell));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTMP_OUT_BATCH_GATE, 0, RILL_DTYPE_FP32, &bg));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTMP_OUT_BATCH_CELL_PRE_ACT, 0, RILL_DTYPE_FP32, &bcp));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTMP_OUT_BATCH_HIDDEN, 0, RILL_DTYPE_FP32, &bhid));
  rill_lstmp_geom gm;
  RILL_TRY(rill_lstmp_check(ctx, &rill_lstmp_fwd_slots, x, x, w, pw, b, h0, c0, &gm));
  int64_t rows = gm.rows, D = gm.D, P = gm.P;
  rill_dims pd = {.n = 2, .d = {rows, P}}, hd = {.n = 2, .d = {rows, D}}, gd = {.n = 2, .d = {rows, 4 * D}};
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTMP_OUT_PROJECTION, 0, proj, &pd));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTMP_OUT_CELL, 0, cell, &hd));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTMP_OUT_BATCH_GATE, 0, bg, &gd));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTMP_OUT_BATCH_CELL_PRE_ACT, 0, bcp, &hd));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTMP_OUT_BATCH_HIDDEN, 0, bhid, &hd));
  if (rows == 0 || D == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, proj, &d));
  rill_cuda_batch bt;
  RILL_TRY(rill_cuda_batch_make(ctx, d, x, RILL_LSTMP_IN_INPUT, rows, gm.reverse, &bt));
  const rill_seq_batch *sb = &bt.sb;
  int64_t nseq = sb->nseq;
  /* batch order: projections [rows, P], cells [rows, D]; reordered H0 [nseq, P], C0
   * [nseq, D] */
  RILL_TRY(rill_cuda_batch_scratch(ctx, d, &bt, rows * (P + D) + nseq * (P + D)));
  float *buf = bt.scratch;
  rill_status *st = NULL;
  float *bp = buf, *bc = bp + rows * P, *oh0 = bc + rows * D, *oc0 = oh0 + nseq * P;
  float *g = rill_tensor_ptr(bg), *ca = rill_tensor_ptr(bcp), *hid = rill_tensor_ptr(bhid);
  const float *wp = rill_tensor_ptr(w), *pwp = rill_tensor_ptr(pw), *bpp = rill_tensor_ptr(b);
  const float *peep = gm.peep ? bpp + 4 * D : NULL;
  rill_cuda_lstm p = lstmp_params_of(&gm);
  cudaStream_t s0 = d->stream;
  cudaError_t e = rill_cuda_gather_rows_bias_f32(rill_tensor_ptr(x), bt.row, bpp, rows, 4 * D, g, s0);
  if (e == cudaSuccess && h0) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(h0), bt.order, true, nseq, P, -1, oh0, s0);
  if (e == cudaSuccess && c0) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(c0), bt.order, true, nseq, D, -1, oc0, s0);
  for (int64_t n = 0; n < sb->steps && e == cudaSuccess && !st; n++) {
    int64_t s = sb->starts[n], cur = sb->starts[n + 1] - s;
    const float *pp = n > 0 ? bp + sb->starts[n - 1] * P : h0 ? oh0 : NULL;
    const float *pc = n > 0 ? bc + sb->starts[n - 1] * D : c0 ? oc0 : NULL;
    if (pp && P > 0)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, false, cur, 4 * D, P, 1.0f, pp, 0, wp, 0, 1.0f,
                                                        g + s * 4 * D, 0, 1));
    if (!st) e = rill_cuda_lstm_step_f32(g + s * 4 * D, pc, bc + s * D, ca + s * D, hid + s * D, peep, &p, cur, s0);
    if (!st && e == cudaSuccess && P > 0)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, false, cur, P, D, 1.0f, hid + s * D, 0, pwp, 0,
                                                        0.0f, bp + s * P, 0, 1));
    if (!st && e == cudaSuccess)
      e = rill_cuda_lstmp_proj_f32(bp + s * P, cur * P, gm.proj_on, (int)gm.proj, (float)gm.proj_clip, s0);
  }
  if (!st && e == cudaSuccess) e = rill_cuda_scatter_rows_f32(bp, bt.row, rows, P, rill_tensor_ptr(proj), s0);
  if (!st && e == cudaSuccess) e = rill_cuda_scatter_rows_f32(bc, bt.row, rows, D, rill_tensor_ptr(cell), s0);
  if (!st) st = rill_cuda_kernel_check(ctx, e, "running the time steps");
  rill_cuda_batch_free(d, &bt);
  return st;
}

rill_status *rill_cuda_lstmp_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *w = NULL, *pw = NULL, *b = NULL, *proj = NULL, *cell = NULL, *bg = NULL;
  rill_tensor *bcp = NULL, *bhid = NULL, *h0 = NULL, *c0 = NULL, *dproj = NULL;
  bool want = false;
  for (size_t o = 0; o < RILL_LSTMP_GRAD_OUT_COUNT; o++) want = want || rill_kout(ctx, o, 0);
  if (!want) return NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_WEIGHT, 0, RILL_DTYPE_FP32, &w));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_PROJ_WEIGHT, 0, RILL_DTYPE_FP32, &pw));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_BIAS, 0, RILL_DTYPE_FP32, &b));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_PROJECTION, 0, RILL_DTYPE_FP32, &proj));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_CELL, 0, RILL_DTYPE_FP32, &cell));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_BATCH_GATE, 0, RILL_DTYPE_FP32, &bg));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_BATCH_CELL_PRE_ACT, 0, RILL_DTYPE_FP32, &bcp));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_BATCH_HIDDEN, 0, RILL_DTYPE_FP32, &bhid));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_PROJECTION_GRAD, 0, RILL_DTYPE_FP32, &dproj));
  if (rill_kin(ctx, RILL_LSTMP_GRAD_IN_H0, 0))
    RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_H0, 0, RILL_DTYPE_FP32, &h0));
  if (rill_kin(ctx, RILL_LSTMP_GRAD_IN_C0, 0))
    RILL_TRY(rill_kin_need(ctx, RILL_LSTMP_GRAD_IN_C0, 0, RILL_DTYPE_FP32, &c0));
  rill_lstmp_geom gm;
  RILL_TRY(rill_lstmp_check(ctx, &rill_lstmp_grad_slots, bg, proj, w, pw, b, h0, c0, &gm));
  int64_t rows = gm.rows, D = gm.D, P = gm.P;
  rill_dims pd = {.n = 2, .d = {rows, P}}, hd = {.n = 2, .d = {rows, D}};
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTMP_GRAD_IN_PROJECTION, proj, &pd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTMP_GRAD_IN_PROJECTION_GRAD, dproj, &pd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTMP_GRAD_IN_CELL, cell, &hd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTMP_GRAD_IN_BATCH_CELL_PRE_ACT, bcp, &hd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTMP_GRAD_IN_BATCH_HIDDEN, bhid, &hd));
  const rill_tensor *const fwd[] = {bg, w, pw, b, h0, c0};
  rill_tensor *outs[RILL_LSTMP_GRAD_OUT_COUNT];
  RILL_TRY(rill_kout_like(ctx, RILL_LSTMP_GRAD_OUT_COUNT, RILL_DTYPE_FP32, fwd, rill_lstmp_grad_wrt, 0u, outs));
  rill_tensor *dx = outs[0], *dw = outs[1], *dpw = outs[2], *db = outs[3], *dh0 = outs[4], *dc0 = outs[5];
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_zero_outputs(ctx, outs, RILL_LSTMP_GRAD_OUT_COUNT, &d));
  if (rows == 0 || D == 0) return NULL;
  rill_cuda_batch bt;
  RILL_TRY(rill_cuda_batch_make(ctx, d, proj, RILL_LSTMP_GRAD_IN_PROJECTION, rows, gm.reverse, &bt));
  const rill_seq_batch *sb = &bt.sb;
  int64_t nseq = sb->nseq;
  bool peep_grad = gm.peep && db;
  /* batch order: projections and their gradients [rows, P]; cells, their gradients and
   * the hidden gradients [rows, D]; gate gradients [rows, 4D]; reordered H0 and its
   * gradient [nseq, P], C0 and its gradient [nseq, D]; the peephole gradient's terms
   * per row [rows, 3D] */
  RILL_TRY(rill_cuda_batch_scratch(ctx, d, &bt,
                                   rows * (2 * P + 7 * D) + 2 * nseq * (P + D) + (peep_grad ? 3 * rows * D : 0)));
  float *buf = bt.scratch;
  rill_status *st = NULL;
  float *bp = buf, *bdp = bp + rows * P, *bc = bdp + rows * P, *bdc = bc + rows * D, *bdh = bdc + rows * D;
  float *bdg = bdh + rows * D, *oh0 = bdg + 4 * rows * D, *odh0 = oh0 + nseq * P;
  float *oc0 = odh0 + nseq * P, *odc0 = oc0 + nseq * D, *dpr = peep_grad ? odc0 + nseq * D : NULL;
  cudaStream_t s0 = d->stream;
  cudaError_t e = rill_cuda_gather_rows_f32(rill_tensor_ptr(proj), bt.row, true, rows, P, -1, bp, s0);
  if (e == cudaSuccess) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(dproj), bt.row, true, rows, P, -1, bdp, s0);
  if (e == cudaSuccess) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(cell), bt.row, true, rows, D, -1, bc, s0);
  if (e == cudaSuccess && h0) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(h0), bt.order, true, nseq, P, -1, oh0, s0);
  if (e == cudaSuccess && c0) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(c0), bt.order, true, nseq, D, -1, oc0, s0);
  const float *g = rill_tensor_ptr(bg), *ca = rill_tensor_ptr(bcp), *hid = rill_tensor_ptr(bhid);
  const float *wp = rill_tensor_ptr(w), *pwp = rill_tensor_ptr(pw);
  const float *peep = gm.peep ? (const float *)rill_tensor_ptr(b) + 4 * D : NULL;
  float *dwp = dw ? rill_tensor_ptr(dw) : NULL, *dpwp = dpw ? rill_tensor_ptr(dpw) : NULL;
  rill_cuda_lstm p = lstmp_params_of(&gm);
  for (int64_t n = sb->steps - 1; n >= 0 && e == cudaSuccess && !st; n--) {
    int64_t s = sb->starts[n], cur = sb->starts[n + 1] - s, ps = n > 0 ? sb->starts[n - 1] : 0;
    float *dps = bdp + s * P;
    e = rill_cuda_lstmp_proj_grad_f32(dps, bp + s * P, cur * P, gm.proj_on, (int)gm.proj, (float)gm.proj_clip, s0);
    if (e == cudaSuccess && P > 0)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, true, cur, D, P, 1.0f, dps, 0, pwp, 0, 0.0f,
                                                        bdh + s * D, 0, 1));
    if (e == cudaSuccess && !st && P > 0 && dpwp)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, true, false, D, P, cur, 1.0f, hid + s * D, 0, dps, 0,
                                                        1.0f, dpwp, 0, 1));
    const float *pc = n > 0 ? bc + ps * D : c0 ? oc0 : NULL;
    float *pdc = n > 0 ? bdc + ps * D : dc0 ? odc0 : NULL;
    if (e == cudaSuccess && !st)
      e = rill_cuda_lstm_step_grad_f32(g + s * 4 * D, bc + s * D, ca + s * D, pc, bdh + s * D, bdc + s * D,
                                       bdg + s * 4 * D, pdc, peep, dpr ? dpr + s * 3 * D : NULL, &p, cur, s0);
    const float *pp = n > 0 ? bp + ps * P : h0 ? oh0 : NULL;
    float *pdp = n > 0 ? bdp + ps * P : dh0 ? odh0 : NULL;
    if (P == 0 || !pp) continue;
    if (e == cudaSuccess && !st && pdp)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, false, true, cur, P, 4 * D, 1.0f, bdg + s * 4 * D, 0,
                                                        wp, 0, 1.0f, pdp, 0, 1));
    if (e == cudaSuccess && !st && dwp)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm(d, true, false, P, 4 * D, cur, 1.0f, pp, 0,
                                                        bdg + s * 4 * D, 0, 1.0f, dwp, 0, 1));
  }
  const lstm_grad_rows r = {bdg, dpr, odh0, P, odc0};
  return lstm_grad_finish(ctx, d, &bt, st, e, D, &r, dx, db, dh0, dc0);
}

rill_status *rill_cuda_lstm_unit_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *cp = NULL, *c = NULL, *h = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_UNIT_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_UNIT_IN_C_PREV, 0, RILL_DTYPE_FP32, &cp));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTM_UNIT_OUT_C, 0, RILL_DTYPE_FP32, &c));
  RILL_TRY(rill_kout_need(ctx, RILL_LSTM_UNIT_OUT_H, 0, RILL_DTYPE_FP32, &h));
  int64_t N = 0, D = 0;
  RILL_TRY(rill_lstm_unit_check(ctx, x, cp, &N, &D));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTM_UNIT_OUT_C, 0, c, &cp->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LSTM_UNIT_OUT_H, 0, h, &cp->dims));
  if (N * D == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, c, &d));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_lstm_unit_f32(rill_tensor_ptr(x), rill_tensor_ptr(cp), rill_tensor_ptr(c),
                                                        rill_tensor_ptr(h), N, D,
                                                        ctx->attrs[RILL_LSTM_UNIT_ATTR_FORGET_BIAS].v.f, d->stream),
                                "the cell update");
}

rill_status *rill_cuda_lstm_unit_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *cp = NULL, *c = NULL, *dh = NULL, *dc = NULL, *outs[2];
  if (!rill_kout(ctx, RILL_LSTM_UNIT_GRAD_OUT_X_GRAD, 0) && !rill_kout(ctx, RILL_LSTM_UNIT_GRAD_OUT_C_PREV_GRAD, 0))
    return NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_UNIT_GRAD_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_UNIT_GRAD_IN_C_PREV, 0, RILL_DTYPE_FP32, &cp));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_UNIT_GRAD_IN_C, 0, RILL_DTYPE_FP32, &c));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_UNIT_GRAD_IN_H_GRAD, 0, RILL_DTYPE_FP32, &dh));
  RILL_TRY(rill_kin_need(ctx, RILL_LSTM_UNIT_GRAD_IN_C_GRAD, 0, RILL_DTYPE_FP32, &dc));
  int64_t N = 0, D = 0;
  RILL_TRY(rill_lstm_unit_check(ctx, x, cp, &N, &D));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTM_UNIT_GRAD_IN_C, c, &cp->dims));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTM_UNIT_GRAD_IN_H_GRAD, dh, &cp->dims));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_LSTM_UNIT_GRAD_IN_C_GRAD, dc, &cp->dims));
  _Static_assert(RILL_LSTM_UNIT_GRAD_OUT_X_GRAD == 0 && RILL_LSTM_UNIT_GRAD_OUT_C_PREV_GRAD == 1,
                 "lstm_unit_grad's outputs are the gradients of X and C_prev, inputs 0 and 1");
  const rill_tensor *const like[] = {x, cp};
  static const size_t wrt[] = {RILL_LSTM_UNIT_GRAD_IN_X, RILL_LSTM_UNIT_GRAD_IN_C_PREV};
  RILL_TRY(rill_kout_like(ctx, 2, RILL_DTYPE_FP32, like, wrt, 0u, outs));
  if (N * D == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, outs[0] ? outs[0] : outs[1], &d));
  return rill_cuda_kernel_check(
      ctx,
      rill_cuda_lstm_unit_grad_f32(rill_tensor_ptr(x), rill_tensor_ptr(cp), rill_tensor_ptr(c), rill_tensor_ptr(dh),
                                   rill_tensor_ptr(dc), outs[0] ? rill_tensor_ptr(outs[0]) : NULL,
                                   outs[1] ? rill_tensor_ptr(outs[1]) : NULL, N, D,
                                   ctx->attrs[RILL_LSTM_UNIT_GRAD_ATTR_FORGET_BIAS].v.f, d->stream),
      "the cell update's gradient");
}
