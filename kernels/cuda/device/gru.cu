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
