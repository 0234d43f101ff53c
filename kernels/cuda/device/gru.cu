// gru's device code (kernels/cuda/gru.c): one thread per (row, unit) for each
// elementwise part of a time step and of its gradient, between the step's cuBLAS
// products. The arithmetic and its order are kernels/cpu/gru_impl.inc's, with Paddle's
// recurrent activations (ract.cuh).
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/device/ract.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

__global__ void gates(float *g, const float *prev, float *rh, rill_cuda_gru p, int64_t cur) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < cur * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    float *gr = g + r * 3 * D;
    float h = prev ? prev[k] : 0.0f;
    float u = ract(gr[i], p.gate), rs = ract(gr[D + i], p.gate);
    gr[i] = u;
    gr[D + i] = rs;
    rh[k] = h * rs;
  }
}

__global__ void output(float *g, const float *prev, float *h, rill_cuda_gru p, int64_t cur) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < cur * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    float *gr = g + r * 3 * D;
    float hp = prev ? prev[k] : 0.0f, u = gr[i];
    float c = ract(gr[2 * D + i], p.act);
    gr[2 * D + i] = c;
    h[k] = p.origin ? u * hp + c - u * c : hp - u * hp + u * c;
  }
}

__global__ void grad_output(const float *g, const float *prev, const float *dh, float *dg, float *prev_dh,
                            rill_cuda_gru p, int64_t cur) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < cur * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    const float *gr = g + r * 3 * D;
    float u = gr[i], c = gr[2 * D + i];
    float hp = prev ? prev[k] : 0.0f, go = dh[k];
    float du = p.origin ? go * (hp - c) : go * (c - hp);
    float dc = ract_grad(p.origin ? go * (1.0f - u) : go * u, c, p.act);
    if (prev_dh) prev_dh[k] += p.origin ? go * u : go * (1.0f - u);
    dg[r * 3 * D + i] = du;
    dg[r * 3 * D + 2 * D + i] = dc;
  }
}

__global__ void grad_gates(const float *g, const float *prev, const float *drh, float *dg, float *prev_dh,
                           rill_cuda_gru p, int64_t cur) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < cur * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    const float *gr = g + r * 3 * D;
    float u = gr[i], rs = gr[D + i];
    float hp = prev ? prev[k] : 0.0f, d = prev ? drh[k] : 0.0f;
    if (prev_dh) prev_dh[k] += d * rs;
    dg[r * 3 * D + i] = ract_grad(dg[r * 3 * D + i], u, p.gate);
    dg[r * 3 * D + D + i] = ract_grad(d * hp, rs, p.gate);
  }
}

// gru_unit's activations (Eigen's in Paddle), by its integer attribute: 0 identity,
// 1 sigmoid (unclipped), 2 tanh, 3 relu.
__device__ inline float unit_act(float v, int code) {
  switch (code) {
  case 1: return 1.0f / (1.0f + expf(-v));
  case 2: return tanhf(v);
  case 3: return v > 0.0f ? v : 0.0f;
  default: return v;
  }
}

__device__ inline float unit_act_grad(float dy, float y, int code) {
  switch (code) {
  case 1: return dy * y * (1.0f - y);
  case 2: return dy * (1.0f - y * y);
  case 3: return y > 0.0f ? dy : 0.0f;
  default: return dy;
  }
}

__global__ void unit_gates(float *g, const float *hp, float *rp, rill_cuda_gru p, int64_t n) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < n * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    float *gr = g + r * 3 * D;
    gr[i] = unit_act(gr[i], p.gate);
    gr[D + i] = unit_act(gr[D + i], p.gate);
    rp[k] = gr[D + i] * hp[k];
  }
}

__global__ void unit_output(float *g, const float *hp, float *h, rill_cuda_gru p, int64_t n) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < n * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    float *gr = g + r * 3 * D;
    float c = unit_act(gr[2 * D + i], p.act), u = gr[i], hv = hp[k];
    gr[2 * D + i] = c;
    h[k] = p.origin ? c + u * (hv - c) : u * (c - hv) + hv;
  }
}

__global__ void unit_grad_output(const float *g, const float *hp, const float *dh, float *dg, rill_cuda_gru p,
                                 int64_t n) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < n * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    const float *gr = g + r * 3 * D;
    float u = gr[i], c = gr[2 * D + i], hv = hp[k], d = dh[k];
    dg[r * 3 * D + i] = unit_act_grad(p.origin ? d * (hv - c) : d * (c - hv), u, p.gate);
    dg[r * 3 * D + 2 * D + i] = unit_act_grad(p.origin ? d * (1.0f - u) : d * u, c, p.act);
  }
}

__global__ void unit_grad_reset(const float *g, const float *hp, const float *drp, float *dg, rill_cuda_gru p,
                                int64_t n) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < n * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    dg[r * 3 * D + D + i] = unit_act_grad(drp[k] * hp[k], g[r * 3 * D + D + i], p.gate);
  }
}

__global__ void unit_grad_prev(const float *g, const float *drp, const float *dh, float *dhp, rill_cuda_gru p,
                               int64_t n) {
  const int64_t D = p.D;
  for (int64_t k = first_index(); k < n * D; k += grid_stride()) {
    int64_t r = k / D, i = k - r * D;
    float u = g[r * 3 * D + i], rs = g[r * 3 * D + D + i], d = dh[k];
    dhp[k] = drp[k] * rs + (p.origin ? d * u : d * (1.0f - u));
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_gru_gates_f32(float *g, const float *prev, float *rh, const rill_cuda_gru *p,
                                               int64_t cur, cudaStream_t s) {
  if (cur * p->D == 0) return cudaSuccess;
  gates<<<blocks_for(cur * p->D), kThreads, 0, s>>>(g, prev, rh, *p, cur);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_gru_output_f32(float *g, const float *prev, float *h, const rill_cuda_gru *p,
                                                int64_t cur, cudaStream_t s) {
  if (cur * p->D == 0) return cudaSuccess;
  output<<<blocks_for(cur * p->D), kThreads, 0, s>>>(g, prev, h, *p, cur);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_gru_grad_output_f32(const float *g, const float *prev, const float *dh, float *dg,
                                                     float *prev_dh, const rill_cuda_gru *p, int64_t cur,
                                                     cudaStream_t s) {
  if (cur * p->D == 0) return cudaSuccess;
  grad_output<<<blocks_for(cur * p->D), kThreads, 0, s>>>(g, prev, dh, dg, prev_dh, *p, cur);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_gru_grad_gates_f32(const float *g, const float *prev, const float *drh, float *dg,
                                                    float *prev_dh, const rill_cuda_gru *p, int64_t cur,
                                                    cudaStream_t s) {
  if (cur * p->D == 0) return cudaSuccess;
  grad_gates<<<blocks_for(cur * p->D), kThreads, 0, s>>>(g, prev, drh, dg, prev_dh, *p, cur);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_gru_unit_f32(int part, float *g, const float *hp, float *out, const rill_cuda_gru *p,
                                              int64_t n, cudaStream_t s) {
  if (n * p->D == 0) return cudaSuccess;
  if (part == RILL_CUDA_GRU_UNIT_GATES)
    unit_gates<<<blocks_for(n * p->D), kThreads, 0, s>>>(g, hp, out, *p, n);
  else
    unit_output<<<blocks_for(n * p->D), kThreads, 0, s>>>(g, hp, out, *p, n);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_gru_unit_grad_f32(int part, const float *g, const float *hp, const float *in,
                                                   float *out, const rill_cuda_gru *p, int64_t n, cudaStream_t s) {
  if (n * p->D == 0) return cudaSuccess;
  unsigned b = blocks_for(n * p->D);
  switch (part) {
  case RILL_CUDA_GRU_UNIT_GRAD_OUTPUT: unit_grad_output<<<b, kThreads, 0, s>>>(g, hp, in, out, *p, n); break;
  case RILL_CUDA_GRU_UNIT_GRAD_RESET: unit_grad_reset<<<b, kThreads, 0, s>>>(g, hp, in, out, *p, n); break;
  default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_gru_unit_grad_prev_f32(const float *g, const float *drp, const float *dh,
                                                        float *dhp, const rill_cuda_gru *p, int64_t n,
                                                        cudaStream_t s) {
  if (n * p->D == 0) return cudaSuccess;
  unit_grad_prev<<<blocks_for(n * p->D), kThreads, 0, s>>>(g, drp, dh, dhp, *p, n);
  return cudaGetLastError();
}
