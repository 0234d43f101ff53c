// lstm's and lstmp's device code (kernels/cuda/lstm.c), and the parts gru's shares:
// rows gathered into batch order with their bias, one thread per (row, unit) for a time
// step's cell update (lstmp's cell clipped) and for its gradient, lstmp's projection
// activated and clipped, rows scattered back to sequence order, and the bias and
// peephole gradients summed over the batch rows in the CPU kernel's order. The
// arithmetic is kernels/cpu/lstm_impl.inc's, with Paddle's recurrent activations
// (ract.cuh).
#include <cmath>

#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/device/ract.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

__global__ void gather_bias(const float *x, const int64_t *rows, const float *bias, int64_t n, int64_t width,
                            float *g) {
  for (int64_t k = first_index(); k < n * width; k += grid_stride()) {
    int64_t i = k / width, c = k - i * width;
    g[k] = bias ? x[rows[i] * width + c] + bias[c] : x[rows[i] * width + c];
  }
}

__global__ void scatter_rows(const float *src, const int64_t *rows, int64_t n, int64_t width, float *dst) {
  for (int64_t k = first_index(); k < n * width; k += grid_stride()) {
    int64_t i = k / width, c = k - i * width;
    dst[rows[i] * width + c] = src[k];
  }
}

__global__ void step(float *g, const float *prev_c, float *c, float *ca, float *h, const float *peep,
                     rill_cuda_lstm p, int64_t cur) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < cur * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    float *gr = g + r * 4 * D;
    float pc = prev_c ? prev_c[k] : 0.0f;
    float in = ract(gr[i], p.act_cand);
    float ig = gr[D + i], fg = gr[2 * D + i];
    if (peep && prev_c) {
      ig += pc * peep[i];
      fg += pc * peep[D + i];
    }
    ig = ract(ig, p.act_gate);
    fg = ract(fg, p.act_gate);
    float cell = in * ig + pc * fg;
    if (p.cell_clip > 0.0f) cell = cell < -p.cell_clip ? -p.cell_clip : cell > p.cell_clip ? p.cell_clip : cell;
    float og = gr[3 * D + i];
    if (peep) og += cell * peep[2 * D + i];
    og = ract(og, p.act_gate);
    float act = ract(cell, p.act_cell);
    gr[i] = in;
    gr[D + i] = ig;
    gr[2 * D + i] = fg;
    gr[3 * D + i] = og;
    c[k] = cell;
    ca[k] = act;
    h[k] = og * act;
  }
}

// One step backwards; dpeep_rows [cur, 3D]: this step's peephole gradient terms, summed
// over the rows later (peephole_grad).
__global__ void step_grad(const float *g, const float *c, const float *ca, const float *prev_c, const float *dh,
                          float *dc, float *dg, float *prev_dc, const float *peep, float *dpeep_rows,
                          rill_cuda_lstm p, int64_t cur) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < cur * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    const float *gr = g + r * 4 * D;
    float *dgr = dg + r * 4 * D;
    float vin = gr[i], vig = gr[D + i], vfg = gr[2 * D + i], vog = gr[3 * D + i];
    float st = c[k], sa = ca[k], dout = dh[k];
    float pc = prev_c ? prev_c[k] : 0.0f;
    float ci = peep ? peep[i] : 0.0f, cf = peep ? peep[D + i] : 0.0f, co = peep ? peep[2 * D + i] : 0.0f;
    float gog = ract_grad(dout * sa, vog, p.act_gate);
    float dst = dc[k] + ract_grad(dout * vog, sa, p.act_cell) + gog * co;
    if (p.cell_clip > 0.0f && (st >= p.cell_clip || st <= -p.cell_clip)) dst = 0.0f;
    float gin = ract_grad(dst * vig, vin, p.act_cand);
    float gig = ract_grad(dst * vin, vig, p.act_gate);
    float gfg = ract_grad(dst * pc, vfg, p.act_gate);
    dgr[i] = gin;
    dgr[D + i] = gig;
    dgr[2 * D + i] = gfg;
    dgr[3 * D + i] = gog;
    dc[k] = dst;
    if (prev_dc) prev_dc[k] = gig * ci + gfg * cf + dst * vfg;
    if (dpeep_rows) {
      float *pr = dpeep_rows + r * 3 * D;
      pr[i] = prev_c ? gig * pc : 0.0f;
      pr[D + i] = prev_c ? gfg * pc : 0.0f;
      pr[2 * D + i] = gog * st;
    }
  }
}

// out[c] += the column's values over the batch rows: the steps from the last to the
// first, each step's rows in order (lstm_grad's order on the CPU).
__global__ void peephole_grad(const float *rows, const int64_t *starts, int64_t steps, int64_t width, float *out) {
  for (int64_t c = first_index(); c < width; c += grid_stride()) {
    float sum = out[c];
    for (int64_t n = steps - 1; n >= 0; n--)
      for (int64_t r = starts[n]; r < starts[n + 1]; r++) sum += rows[r * width + c];
    out[c] = sum;
  }
}

__global__ void column_sums(const float *v, int64_t rows, int64_t width, float *out) {
  for (int64_t c = first_index(); c < width; c += grid_stride()) {
    float sum = out[c];
    for (int64_t r = 0; r < rows; r++) sum += v[r * width + c];
    out[c] = sum;
  }
}

// lstmp's projection activation: Paddle's plain sigmoid and tanh, unclipped.
__device__ inline float proj_act(float v, int k) {
  switch (k) {
  case kSigmoid: return 1.0f / (1.0f + expf(-v));
  case kTanh: return tanhf(v);
  case kRelu: return v > 0.0f ? v : 0.0f;
  default: return v;
  }
}

__global__ void lstmp_proj(float *v, int64_t n, bool act_on, int act, float clip) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    float x = act_on ? proj_act(v[k], act) : v[k];
    if (clip > 0.0f) x = x < -clip ? -clip : x > clip ? clip : x;
    v[k] = x;
  }
}

__global__ void lstmp_proj_grad(float *dv, const float *v, int64_t n, bool act_on, int act, float clip) {
  for (int64_t k = first_index(); k < n; k += grid_stride()) {
    float d = dv[k];
    if (clip > 0.0f && !(v[k] > -clip && v[k] < clip)) d = 0.0f;
    dv[k] = act_on ? ract_grad(d, v[k], act) : d;
  }
}

// lstm_unit's activations (Eigen's in Paddle): sigmoid unclipped, tanh as 2 sigmoid(2x) - 1.
__device__ inline float unit_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }
__device__ inline float unit_tanh(float v) { return 2.0f * unit_sigmoid(2.0f * v) - 1.0f; }

__global__ void unit(const float *x, const float *cp, float *c, float *h, int64_t n, int64_t D, float fb) {
  for (int64_t k = first_index(); k < n * D; k += grid_stride()) {
    int64_t r = k / D, d = k - r * D;
    const float *xr = x + r * 4 * D;
    float i = unit_sigmoid(xr[d]), f = unit_sigmoid(xr[D + d] + fb);
    float o = unit_sigmoid(xr[2 * D + d]), g = unit_tanh(xr[3 * D + d]);
    float cv = f * cp[k] + i * g;
    c[k] = cv;
    h[k] = o * unit_tanh(cv);
  }
}

__global__ void unit_grad(const float *x, const float *cp, const float *c, const float *dh, const float *dc,
                          float *dx, float *dcp, int64_t n, int64_t D, float fb) {
  for (int64_t k = first_index(); k < n * D; k += grid_stride()) {
    int64_t r = k / D, d = k - r * D;
    const float *xr = x + r * 4 * D;
    float i = unit_sigmoid(xr[d]), f = unit_sigmoid(xr[D + d] + fb);
    float o = unit_sigmoid(xr[2 * D + d]), g = unit_tanh(xr[3 * D + d]);
    float tc = unit_tanh(c[k]);
    float dct = dc[k] + dh[k] * o * (1.0f - tc * tc);
    if (dcp) dcp[k] = dct * f;
    if (dx) {
      float *dr = dx + r * 4 * D;
      dr[d] = dct * g * i * (1.0f - i);
      dr[D + d] = dct * cp[k] * f * (1.0f - f);
      dr[2 * D + d] = dh[k] * tc * o * (1.0f - o);
      dr[3 * D + d] = dct * i * (1.0f - g * g);
    }
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_gather_rows_bias_f32(const float *x, const int64_t *rows, const float *bias,
                                                      int64_t n, int64_t width, float *g, cudaStream_t s) {
  if (n * width == 0) return cudaSuccess;
  gather_bias<<<blocks_for(n * width), kThreads, 0, s>>>(x, rows, bias, n, width, g);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_scatter_rows_f32(const float *src, const int64_t *rows, int64_t n, int64_t width,
                                                  float *dst, cudaStream_t s) {
  if (n * width == 0) return cudaSuccess;
  scatter_rows<<<blocks_for(n * width), kThreads, 0, s>>>(src, rows, n, width, dst);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_lstm_step_f32(float *g, const float *prev_c, float *c, float *ca, float *h,
                                               const float *peep, const rill_cuda_lstm *p, int64_t cur,
                                               cudaStream_t s) {
  if (cur * p->D == 0) return cudaSuccess;
  step<<<blocks_for(cur * p->D), kThreads, 0, s>>>(g, prev_c, c, ca, h, peep, *p, cur);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_lstm_step_grad_f32(const float *g, const float *c, const float *ca,
                                                    const float *prev_c, const float *dh, float *dc, float *dg,
                                                    float *prev_dc, const float *peep, float *dpeep_rows,
                                                    const rill_cuda_lstm *p, int64_t cur, cudaStream_t s) {
  if (cur * p->D == 0) return cudaSuccess;
  step_grad<<<blocks_for(cur * p->D), kThreads, 0, s>>>(g, c, ca, prev_c, dh, dc, dg, prev_dc, peep, dpeep_rows,
                                                        *p, cur);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_lstm_peephole_grad_f32(const float *rows, const int64_t *starts, int64_t steps,
                                                        int64_t width, float *out, cudaStream_t s) {
  if (width == 0) return cudaSuccess;
  peephole_grad<<<blocks_for(width), kThreads, 0, s>>>(rows, starts, steps, width, out);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_column_sums_f32(const float *v, int64_t rows, int64_t width, float *out,
                                                 cudaStream_t s) {
  if (width == 0) return cudaSuccess;
  column_sums<<<blocks_for(width), kThreads, 0, s>>>(v, rows, width, out);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_lstm_unit_f32(const float *x, const float *c_prev, float *c, float *h, int64_t n,
                                               int64_t D, float forget_bias, cudaStream_t s) {
  if (n * D == 0) return cudaSuccess;
  unit<<<blocks_for(n * D), kThreads, 0, s>>>(x, c_prev, c, h, n, D, forget_bias);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_lstm_unit_grad_f32(const float *x, const float *c_prev, const float *c,
                                                    const float *dh, const float *dc, float *dx, float *dc_prev,
                                                    int64_t n, int64_t D, float forget_bias, cudaStream_t s) {
  if (n * D == 0) return cudaSuccess;
  unit_grad<<<blocks_for(n * D), kThreads, 0, s>>>(x, c_prev, c, dh, dc, dx, dc_prev, n, D, forget_bias);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_lstmp_proj_f32(float *v, int64_t n, bool act_on, int act, float clip,
                                                cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  lstmp_proj<<<blocks_for(n), kThreads, 0, s>>>(v, n, act_on, act, clip);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_lstmp_proj_grad_f32(float *dv, const float *v, int64_t n, bool act_on, int act,
                                                     float clip, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  lstmp_proj_grad<<<blocks_for(n), kThreads, 0, s>>>(dv, v, n, act_on, act, clip);
  return cudaGetLastError();
}
