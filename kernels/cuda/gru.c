/* gru and gru_grad, CUDA kernels, float32 (fluid.layers.dynamic_gru on the device), and
 * gru_unit and its gradient (fluid.layers.gru_unit, a step of a DynamicRNN); gru over
 * the batch order of batch_order.h. The forward gathers Input into BatchGate with the
 * bias, then per time step: one cuBLAS product of the previous hidden rows by the gate
 * weight W_ur [D, 2D] into the update and reset gates (a block of the [rows, 3D] gates,
 * hence the leading dimensions), their activation and the reset hidden, one product of
 * that by W_c [D, D] into the candidate, and the output. The gradient runs the steps
 * backwards with four products each, as kernels/cpu/gru_impl.inc does; Bias@GRAD sums
 * the gate gradients over the batch rows in the CPU's order. */
#include "framework/base/alloc.h"
#include "kernels/cuda/batch_order.h"

static rill_cuda_gru params_of(const rill_gru_geom *g) {
  return (rill_cuda_gru){.D = g->D, .act = (int)g->act, .gate = (int)g->gate, .origin = g->origin};
}

rill_status *rill_cuda_gru_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *w = NULL, *b = NULL, *h0 = NULL, *hid = NULL;
  rill_tensor *outs[3] = {NULL, NULL, NULL};
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_IN_WEIGHT, 0, RILL_DTYPE_FP32, &w));
  if (rill_kin(ctx, RILL_GRU_IN_BIAS, 0)) RILL_TRY(rill_kin_need(ctx, RILL_GRU_IN_BIAS, 0, RILL_DTYPE_FP32, &b));
  if (rill_kin(ctx, RILL_GRU_IN_H0, 0)) RILL_TRY(rill_kin_need(ctx, RILL_GRU_IN_H0, 0, RILL_DTYPE_FP32, &h0));
  RILL_TRY(rill_kout_need(ctx, RILL_GRU_OUT_HIDDEN, 0, RILL_DTYPE_FP32, &hid));
  rill_gru_geom gm;
  RILL_TRY(rill_gru_check(ctx, x, w, b, h0, &gm));
  int64_t rows = gm.rows, D = gm.D;
  rill_dims hd = {.n = 2, .d = {rows, D}}, gd = {.n = 2, .d = {rows, 3 * D}};
  static const size_t slots[3] = {RILL_GRU_OUT_BATCH_GATE, RILL_GRU_OUT_BATCH_RESET_HIDDEN_PREV,
                                  RILL_GRU_OUT_BATCH_HIDDEN};
  for (size_t k = 0; k < 3; k++)
    if (rill_kout(ctx, slots[k], 0)) {
      RILL_TRY(rill_kout_need(ctx, slots[k], 0, RILL_DTYPE_FP32, &outs[k]));
      RILL_TRY(rill_kout_check_dims(ctx, slots[k], 0, outs[k], k ? &hd : &gd));
    }
  RILL_TRY(rill_kout_check_dims(ctx, RILL_GRU_OUT_HIDDEN, 0, hid, &hd));
  if (rows == 0 || D == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, hid, &d));
  rill_cuda_batch bt;
  RILL_TRY(rill_cuda_batch_make(ctx, d, x, RILL_GRU_IN_INPUT, rows, gm.reverse, &bt));
  const rill_seq_batch *sb = &bt.sb;
  /* scratch: the batch outputs the op was not given, and H0 in batch order */
  int64_t need = sb->nseq * D;
  for (size_t k = 0; k < 3; k++)
    if (!outs[k]) need += rows * D * (k ? 1 : 3);
  RILL_TRY(rill_cuda_batch_scratch(ctx, d, &bt, need));
  float *buf = bt.scratch;
  rill_status *st = NULL;
  float *next = buf + sb->nseq * D, *bufs[3];
  for (size_t k = 0; k < 3; k++) {
    if (outs[k]) {
      bufs[k] = rill_tensor_ptr(outs[k]);
    } else {
      bufs[k] = next;
      next += rows * D * (k ? 1 : 3);
    }
  }
  float *g = bufs[0], *brh = bufs[1], *bh = bufs[2], *oh0 = h0 ? buf : NULL;
  const float *wp = rill_tensor_ptr(w), *wc = wp + 2 * D * D;
  cudaStream_t s0 = d->stream;
  rill_cuda_gru p = params_of(&gm);
  cudaError_t e = rill_cuda_gather_rows_bias_f32(rill_tensor_ptr(x), bt.row, b ? rill_tensor_ptr(b) : NULL, rows,
                                                 3 * D, g, s0);
  if (e == cudaSuccess && h0) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(h0), bt.order, true, sb->nseq, D, -1, oh0, s0);
  for (int64_t n = 0; n < sb->steps && e == cudaSuccess && !st; n++) {
    int64_t s = sb->starts[n], cur = sb->starts[n + 1] - s;
    const float *prev = n > 0 ? bh + sb->starts[n - 1] * D : oh0;
    float *gs = g + s * 3 * D;
    if (prev)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, false, false, cur, 2 * D, D, 1.0f, prev, D, wp, 2 * D,
                                                           1.0f, gs, 3 * D));
    if (!st) e = rill_cuda_gru_gates_f32(gs, prev, brh + s * D, &p, cur, s0);
    if (!st && e == cudaSuccess && prev)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, false, false, cur, D, D, 1.0f, brh + s * D, D, wc, D,
                                                           1.0f, gs + 2 * D, 3 * D));
    if (!st && e == cudaSuccess) e = rill_cuda_gru_output_f32(gs, prev, bh + s * D, &p, cur, s0);
  }
  if (!st && e == cudaSuccess) e = rill_cuda_scatter_rows_f32(bh, bt.row, rows, D, rill_tensor_ptr(hid), s0);
  if (!st) st = rill_cuda_kernel_check(ctx, e, "running the time steps");
  rill_cuda_batch_free(d, &bt);
  return st;
}

rill_status *rill_cuda_gru_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *w = NULL, *b = NULL, *h0 = NULL, *bg = NULL, *brh = NULL, *bhid = NULL;
  rill_tensor *hid = NULL, *dhid = NULL;
  bool want = false;
  for (size_t o = 0; o < RILL_GRU_GRAD_OUT_COUNT; o++) want = want || rill_kout(ctx, o, 0);
  if (!want) return NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_GRAD_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_GRAD_IN_WEIGHT, 0, RILL_DTYPE_FP32, &w));
  if (rill_kin(ctx, RILL_GRU_GRAD_IN_BIAS, 0))
    RILL_TRY(rill_kin_need(ctx, RILL_GRU_GRAD_IN_BIAS, 0, RILL_DTYPE_FP32, &b));
  if (rill_kin(ctx, RILL_GRU_GRAD_IN_H0, 0)) RILL_TRY(rill_kin_need(ctx, RILL_GRU_GRAD_IN_H0, 0, RILL_DTYPE_FP32, &h0));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_GRAD_IN_BATCH_GATE, 0, RILL_DTYPE_FP32, &bg));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_GRAD_IN_BATCH_RESET_HIDDEN_PREV, 0, RILL_DTYPE_FP32, &brh));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_GRAD_IN_BATCH_HIDDEN, 0, RILL_DTYPE_FP32, &bhid));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_GRAD_IN_HIDDEN, 0, RILL_DTYPE_FP32, &hid));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_GRAD_IN_HIDDEN_GRAD, 0, RILL_DTYPE_FP32, &dhid));
  rill_gru_geom gm;
  RILL_TRY(rill_gru_check(ctx, x, w, b, h0, &gm));
  int64_t rows = gm.rows, D = gm.D;
  rill_dims hd = {.n = 2, .d = {rows, D}}, gd = {.n = 2, .d = {rows, 3 * D}};
  RILL_TRY(rill_kin_check_dims(ctx, RILL_GRU_GRAD_IN_BATCH_GATE, bg, &gd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_GRU_GRAD_IN_BATCH_RESET_HIDDEN_PREV, brh, &hd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_GRU_GRAD_IN_BATCH_HIDDEN, bhid, &hd));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_GRU_GRAD_IN_HIDDEN_GRAD, dhid, &hd));
  const rill_tensor *const fwd[] = {x, h0, w, b};
  rill_tensor *outs[RILL_GRU_GRAD_OUT_COUNT];
  RILL_TRY(rill_kout_like(ctx, RILL_GRU_GRAD_OUT_COUNT, RILL_DTYPE_FP32, fwd, rill_gru_grad_wrt, 0u, outs));
  rill_tensor *dx = outs[0], *dh0 = outs[1], *dw = outs[2], *db = outs[3];
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_zero_outputs(ctx, outs, RILL_GRU_GRAD_OUT_COUNT, &d));
  if (rows == 0 || D == 0) return NULL;
  rill_cuda_batch bt;
  RILL_TRY(rill_cuda_batch_make(ctx, d, x, RILL_GRU_GRAD_IN_INPUT, rows, gm.reverse, &bt));
  const rill_seq_batch *sb = &bt.sb;
  int64_t nseq = sb->nseq, widest = sb->steps > 0 ? sb->starts[1] : 0;
  /* batch order: hidden gradient [rows, D], gate gradients [rows, 3D]; one step's reset
   * hidden gradient [widest, D]; H0 and its gradient in batch order [nseq, D] */
  RILL_TRY(rill_cuda_batch_scratch(ctx, d, &bt, 4 * rows * D + widest * D + 2 * nseq * D));
  float *buf = bt.scratch;
  rill_status *st = NULL;
  float *bdh = buf, *bdg = bdh + rows * D, *drh = bdg + 3 * rows * D, *oh0 = drh + widest * D;
  float *odh0 = oh0 + nseq * D;
  cudaStream_t s0 = d->stream;
  cudaError_t e = rill_cuda_gather_rows_f32(rill_tensor_ptr(dhid), bt.row, true, rows, D, -1, bdh, s0);
  if (e == cudaSuccess && h0) e = rill_cuda_gather_rows_f32(rill_tensor_ptr(h0), bt.order, true, nseq, D, -1, oh0, s0);
  const float *g = rill_tensor_ptr(bg), *rh = rill_tensor_ptr(brh), *bh = rill_tensor_ptr(bhid);
  const float *wp = rill_tensor_ptr(w), *wc = wp + 2 * D * D;
  float *dwp = dw ? rill_tensor_ptr(dw) : NULL;
  rill_cuda_gru p = params_of(&gm);
  for (int64_t n = sb->steps - 1; n >= 0 && e == cudaSuccess && !st; n--) {
    int64_t s = sb->starts[n], cur = sb->starts[n + 1] - s, ps = n > 0 ? sb->starts[n - 1] : 0;
    const float *prev = n > 0 ? bh + ps * D : h0 ? oh0 : NULL;
    float *pdh = n > 0 ? bdh + ps * D : dh0 ? odh0 : NULL;
    const float *gs = g + s * 3 * D;
    float *dg = bdg + s * 3 * D;
    /* through the output, then the candidate's recurrent product, then the gates */
    e = rill_cuda_gru_grad_output_f32(gs, prev, bdh + s * D, dg, pdh, &p, cur, s0);
    if (e == cudaSuccess && prev)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, false, true, cur, D, D, 1.0f, dg + 2 * D, 3 * D, wc, D,
                                                           0.0f, drh, D));
    if (e == cudaSuccess && !st && prev && dwp)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, true, false, D, D, cur, 1.0f, rh + s * D, D, dg + 2 * D,
                                                           3 * D, 1.0f, dwp + 2 * D * D, D));
    if (e == cudaSuccess && !st) e = rill_cuda_gru_grad_gates_f32(gs, prev, drh, dg, pdh, &p, cur, s0);
    if (e == cudaSuccess && !st && prev && pdh)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, false, true, cur, D, 2 * D, 1.0f, dg, 3 * D, wp, 2 * D,
                                                           1.0f, pdh, D));
    if (e == cudaSuccess && !st && prev && dwp)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, true, false, D, 2 * D, cur, 1.0f, prev, D, dg, 3 * D,
                                                           1.0f, dwp, 2 * D));
  }
  if (!st && e == cudaSuccess && dx) e = rill_cuda_scatter_rows_f32(bdg, bt.row, rows, 3 * D, rill_tensor_ptr(dx), s0);
  if (!st && e == cudaSuccess && db) e = rill_cuda_column_sums_f32(bdg, rows, 3 * D, rill_tensor_ptr(db), s0);
  if (!st && e == cudaSuccess && dh0) e = rill_cuda_scatter_rows_f32(odh0, bt.order, nseq, D, rill_tensor_ptr(dh0), s0);
  if (!st) st = rill_cuda_kernel_check(ctx, e, "running the time steps backwards");
  rill_cuda_batch_free(d, &bt);
  return st;
}

/* gru_unit's attributes: integer activation codes and origin_mode (the same positions in
 * its gradient). */
_Static_assert(RILL_SAME_POS(RILL_GRU_UNIT_ATTR_ACTIVATION, RILL_GRU_UNIT_GRAD_ATTR_ACTIVATION) &&
                   RILL_SAME_POS(RILL_GRU_UNIT_ATTR_GATE_ACTIVATION, RILL_GRU_UNIT_GRAD_ATTR_GATE_ACTIVATION) &&
                   RILL_SAME_POS(RILL_GRU_UNIT_ATTR_ORIGIN_MODE, RILL_GRU_UNIT_GRAD_ATTR_ORIGIN_MODE),
               "gru_unit and gru_unit_grad share their attribute table");

static rill_cuda_gru unit_params(const rill_kernel_ctx *ctx, int64_t D) {
  return (rill_cuda_gru){.D = D,
                         .act = (int)ctx->attrs[RILL_GRU_UNIT_ATTR_ACTIVATION].v.i,
                         .gate = (int)ctx->attrs[RILL_GRU_UNIT_ATTR_GATE_ACTIVATION].v.i,
                         .origin = ctx->attrs[RILL_GRU_UNIT_ATTR_ORIGIN_MODE].v.b};
}

rill_status *rill_cuda_gru_unit_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *hp = NULL, *w = NULL, *b = NULL, *gate = NULL, *rhp = NULL, *h = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_IN_HIDDEN_PREV, 0, RILL_DTYPE_FP32, &hp));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_IN_WEIGHT, 0, RILL_DTYPE_FP32, &w));
  if (rill_kin(ctx, RILL_GRU_UNIT_IN_BIAS, 0)) RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_IN_BIAS, 0, RILL_DTYPE_FP32, &b));
  RILL_TRY(rill_kout_need(ctx, RILL_GRU_UNIT_OUT_GATE, 0, RILL_DTYPE_FP32, &gate));
  RILL_TRY(rill_kout_need(ctx, RILL_GRU_UNIT_OUT_RESET_HIDDEN_PREV, 0, RILL_DTYPE_FP32, &rhp));
  RILL_TRY(rill_kout_need(ctx, RILL_GRU_UNIT_OUT_HIDDEN, 0, RILL_DTYPE_FP32, &h));
  int64_t N = 0, D = 0;
  RILL_TRY(rill_gru_unit_check(ctx, x, hp, w, b, &N, &D));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_GRU_UNIT_OUT_GATE, 0, gate, &x->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_GRU_UNIT_OUT_RESET_HIDDEN_PREV, 0, rhp, &hp->dims));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_GRU_UNIT_OUT_HIDDEN, 0, h, &hp->dims));
  if (N == 0 || D == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, h, &d));
  rill_cuda_gru p = unit_params(ctx, D);
  float *g = rill_tensor_ptr(gate), *rp = rill_tensor_ptr(rhp);
  const float *hpp = rill_tensor_ptr(hp), *wp = rill_tensor_ptr(w);
  cudaError_t e = cudaMemcpyAsync(g, rill_tensor_ptr(x), rill_tensor_nbytes(x), cudaMemcpyDeviceToDevice, d->stream);
  if (e == cudaSuccess && b) e = rill_cuda_bias_act_f32(g, rill_tensor_ptr(b), N, 3 * D, false, d->stream);
  RILL_TRY(rill_cuda_kernel_check(ctx, e, "adding the bias"));
  RILL_TRY(rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, false, false, N, 2 * D, D, 1.0f, hpp, D, wp, 2 * D, 1.0f,
                                                           g, 3 * D)));
  RILL_TRY(rill_cuda_kernel_check(ctx, rill_cuda_gru_unit_f32(RILL_CUDA_GRU_UNIT_GATES, g, hpp, rp, &p, N, d->stream),
                                  "the gates"));
  RILL_TRY(rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, false, false, N, D, D, 1.0f, rp, D, wp + 2 * D * D, D,
                                                           1.0f, g + 2 * D, 3 * D)));
  return rill_cuda_kernel_check(
      ctx, rill_cuda_gru_unit_f32(RILL_CUDA_GRU_UNIT_OUTPUT, g, hpp, rill_tensor_ptr(h), &p, N, d->stream),
      "the output");
}

rill_status *rill_cuda_gru_unit_grad_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *hp = NULL, *w = NULL, *b = NULL, *gate = NULL, *rhp = NULL, *dh = NULL;
  bool want = false;
  for (size_t o = 0; o < RILL_GRU_UNIT_GRAD_OUT_COUNT; o++) want = want || rill_kout(ctx, o, 0);
  if (!want) return NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_GRAD_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_GRAD_IN_HIDDEN_PREV, 0, RILL_DTYPE_FP32, &hp));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_GRAD_IN_WEIGHT, 0, RILL_DTYPE_FP32, &w));
  if (rill_kin(ctx, RILL_GRU_UNIT_GRAD_IN_BIAS, 0))
    RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_GRAD_IN_BIAS, 0, RILL_DTYPE_FP32, &b));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_GRAD_IN_GATE, 0, RILL_DTYPE_FP32, &gate));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_GRAD_IN_RESET_HIDDEN_PREV, 0, RILL_DTYPE_FP32, &rhp));
  RILL_TRY(rill_kin_need(ctx, RILL_GRU_UNIT_GRAD_IN_HIDDEN_GRAD, 0, RILL_DTYPE_FP32, &dh));
  int64_t N = 0, D = 0;
  RILL_TRY(rill_gru_unit_check(ctx, x, hp, w, b, &N, &D));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_GRU_UNIT_GRAD_IN_GATE, gate, &x->dims));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_GRU_UNIT_GRAD_IN_RESET_HIDDEN_PREV, rhp, &hp->dims));
  RILL_TRY(rill_kin_check_dims(ctx, RILL_GRU_UNIT_GRAD_IN_HIDDEN_GRAD, dh, &hp->dims));
  const rill_tensor *const fwd[] = {x, hp, w, b};
  rill_tensor *outs[RILL_GRU_UNIT_GRAD_OUT_COUNT];
  RILL_TRY(rill_kout_like(ctx, RILL_GRU_UNIT_GRAD_OUT_COUNT, RILL_DTYPE_FP32, fwd, rill_gru_unit_grad_wrt, 0u, outs));
  rill_tensor *dx = outs[0], *dhp = outs[1], *dw = outs[2], *db = outs[3];
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_zero_outputs(ctx, outs, RILL_GRU_UNIT_GRAD_OUT_COUNT, &d));
  if (N == 0 || D == 0) return NULL;
  /* the gate gradients [N, 3D], then the reset hidden's gradient [N, D] */
  float *dg = NULL;
  RILL_TRY(rill_cuda_zeroed(ctx, d, N * 4 * D, &dg));
  float *drp = dg + N * 3 * D;
  rill_cuda_gru p = unit_params(ctx, D);
  const float *g = rill_tensor_ptr(gate), *hpp = rill_tensor_ptr(hp), *rp = rill_tensor_ptr(rhp);
  const float *dhv = rill_tensor_ptr(dh), *wp = rill_tensor_ptr(w), *wc = wp + 2 * D * D;
  cudaStream_t s0 = d->stream;
  rill_status *st = NULL;
  cudaError_t e = rill_cuda_gru_unit_grad_f32(RILL_CUDA_GRU_UNIT_GRAD_OUTPUT, g, hpp, dhv, dg, &p, N, s0);
  if (e == cudaSuccess)
    st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, false, true, N, D, D, 1.0f, dg + 2 * D, 3 * D, wc, D, 0.0f,
                                                         drp, D));
  if (!st && e == cudaSuccess) e = rill_cuda_gru_unit_grad_f32(RILL_CUDA_GRU_UNIT_GRAD_RESET, g, hpp, drp, dg, &p, N, s0);
  if (!st && e == cudaSuccess && dw) {
    float *dwp = rill_tensor_ptr(dw);
    st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, true, false, D, D, N, 1.0f, rp, D, dg + 2 * D, 3 * D, 0.0f,
                                                         dwp + 2 * D * D, D));
    if (!st)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, true, false, D, 2 * D, N, 1.0f, hpp, D, dg, 3 * D, 0.0f,
                                                           dwp, 2 * D));
  }
  if (!st && e == cudaSuccess && dhp) {
    e = rill_cuda_gru_unit_grad_prev_f32(g, drp, dhv, rill_tensor_ptr(dhp), &p, N, s0);
    if (e == cudaSuccess)
      st = rill_cuda_kernel_status(ctx, rill_cuda_sgemm_ld(d, false, true, N, D, 2 * D, 1.0f, dg, 3 * D, wp, 2 * D,
                                                           1.0f, rill_tensor_ptr(dhp), D));
  }
  if (!st && e == cudaSuccess && dx)
    e = cudaMemcpyAsync(rill_tensor_ptr(dx), dg, (size_t)(N * 3 * D) * sizeof(float), cudaMemcpyDeviceToDevice, s0);
  if (!st && e == cudaSuccess && db) e = rill_cuda_column_sums_f32(dg, N, 3 * D, rill_tensor_ptr(db), s0);
  if (!st) st = rill_cuda_kernel_check(ctx, e, "the step's gradient");
  rill_cuda_mem_free(d, dg);
  return st;
}
