// Paddle 2.x's rnn op and Fluid 1.x's cudnn_lstm on the device (kernels/cuda/rnn.c): the
// bias of the input projection, the cell of a time step (keeping what the backward
// reads in Reserve when training), the dropout between layers, and the backward's gate
// gradients of a step, one thread a (row, unit), in the arithmetic of
// kernels/cpu/rnn_impl.inc.
#include <cmath>

#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

__device__ inline float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }

__global__ void bias(float *g, const float *bih, const float *bhh, int64_t rows, int64_t gh, int64_t nbh) {
  for (int64_t k = first_index(); k < rows * gh; k += grid_stride()) {
    int64_t j = k % gh;
    float v = g[k] + bih[j];
    g[k] = j < nbh ? v + bhh[j] : v;
  }
}

__global__ void step(int mode, const float *gx, const float *ph, const float *bhh_c, float *h, float *c, float *out,
                     int64_t ldo, int64_t n, int64_t H, const int64_t *lens, int64_t t, float *kept, int64_t S) {
  const int64_t GH = (mode == RILL_CUDA_RNN_LSTM ? 4 : mode == RILL_CUDA_RNN_GRU ? 3 : 1) * H;
  for (int64_t k = first_index(); k < n * H; k += grid_stride()) {
    int64_t b = k / H, j = k - b * H;
    float *kr = kept ? kept + b * S : nullptr;
    if (lens && t >= lens[b]) {  // past the sequence: zeros out (and kept), the state kept
      out[b * ldo + j] = 0.0f;
      for (int64_t m = 0; kr && m < S / H; m++) kr[m * H + j] = 0.0f;
      continue;
    }
    const float *x = gx + b * GH, *p = ph + b * GH;
    float o;
    if (mode == RILL_CUDA_RNN_LSTM) {
      float i = sigmoid(x[j] + p[j]), f = sigmoid(x[H + j] + p[H + j]);
      float g = tanhf(x[2 * H + j] + p[2 * H + j]), og = sigmoid(x[3 * H + j] + p[3 * H + j]);
      float cn = f * c[k] + i * g;
      c[k] = cn;
      o = og * tanhf(cn);
      if (kr) {  // the activated gates i, f, c~, o, then the new cell
        kr[j] = i, kr[H + j] = f, kr[2 * H + j] = g, kr[3 * H + j] = og;
        kr[4 * H + j] = cn;
      }
    } else if (mode == RILL_CUDA_RNN_GRU) {
      float r = sigmoid(x[j] + p[j]), z = sigmoid(x[H + j] + p[H + j]);
      float hc = p[2 * H + j] + bhh_c[j];
      float cand = tanhf(x[2 * H + j] + r * hc);
      o = (1 - z) * cand + z * h[k];
      if (kr) kr[j] = r, kr[H + j] = z, kr[2 * H + j] = cand, kr[3 * H + j] = hc;  // r, z, n, hc
    } else {
      float v = x[j] + p[j];
      o = mode == RILL_CUDA_RNN_RELU ? (v > 0 ? v : 0) : tanhf(v);
    }
    h[k] = o;
    out[b * ldo + j] = o;
  }
}

// y = x * mask / keep (y may be x): the dropout between layers, and its gradient.
__global__ void dropout(float *y, const float *x, const uint8_t *mask, float keep, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = mask[i] ? x[i] / keep : 0.0f;
}

// The gate gradients of step t of one layer and direction, one thread a (row, unit):
// rnn_impl.inc's backward step. dh and dc hold the gradients carried to this step; the
// thread writes its row's gate gradients gx (and, GRU, the hidden side's gh), the
// previous h it used (hp), dc for the step before, and tb, what dh becomes before the
// gates' product by W_hh is added to it.
__global__ void back_step(rill_cuda_rnn_back p, int64_t t, const float *dh, float *dc, float *tb, float *gx, float *gh,
                          float *hp) {
  const int64_t H = p.hidden, n = p.n, S = p.S, W = p.ldy;
  const int64_t GH = (p.mode == RILL_CUDA_RNN_LSTM ? 4 : p.mode == RILL_CUDA_RNN_GRU ? 3 : 1) * H;
  const int64_t G = GH / H;
  for (int64_t k = first_index(); k < n * H; k += grid_stride()) {
    int64_t b = k / H, j = k - b * H;
    float *gxr = gx + b * GH, *ghr = gh + b * GH;
    if (p.lens && t >= p.lens[b]) {  // no gradient here: the carried state's passes on
      for (int64_t m = 0; m < G; m++) gxr[m * H + j] = ghr[m * H + j] = 0.0f;
      hp[k] = 0.0f;
      tb[k] = dh[k];
      continue;
    }
    int64_t pt = p.dir == 0 ? t - 1 : t + 1;
    if (pt < 0 || pt >= p.T || (p.lens && pt >= p.lens[b])) pt = -1;
    float hpv = pt < 0 ? p.h0[b * H + j] : p.y[(pt * n + b) * W + j];
    hp[k] = hpv;
    float dhv = dh[k] + (p.dy ? p.dy[(t * n + b) * W + j] : 0.0f);
    const float *kr = p.kept + (t * n + b) * S;
    if (p.mode == RILL_CUDA_RNN_LSTM) {
      float cp = pt < 0 ? p.c0[b * H + j] : p.kept[(pt * n + b) * S + 4 * H + j];
      float ig = kr[j], fg = kr[H + j], cand = kr[2 * H + j], og = kr[3 * H + j];
      float tc = tanhf(kr[4 * H + j]);
      float dct = dc[k] + dhv * og * (1 - tc * tc);
      gxr[j] = dct * cand * ig * (1 - ig);
      gxr[H + j] = dct * cp * fg * (1 - fg);
      gxr[2 * H + j] = dct * ig * (1 - cand * cand);
      gxr[3 * H + j] = dhv * tc * og * (1 - og);
      dc[k] = dct * fg;
      tb[k] = 0.0f;
    } else if (p.mode == RILL_CUDA_RNN_GRU) {
      float rg = kr[j], zg = kr[H + j], nv = kr[2 * H + j], hc = kr[3 * H + j];
      float dn = dhv * (1 - zg) * (1 - nv * nv);
      float dr = dn * hc * rg * (1 - rg), dz = dhv * (hpv - nv) * zg * (1 - zg);
      gxr[j] = ghr[j] = dr;
      gxr[H + j] = ghr[H + j] = dz;
      gxr[2 * H + j] = dn;
      ghr[2 * H + j] = dn * rg;
      tb[k] = dhv * zg;
    } else {
      float hv = p.y[(t * n + b) * W + j];
      gxr[j] = p.mode == RILL_CUDA_RNN_RELU ? (hv > 0 ? dhv : 0.0f) : dhv * (1 - hv * hv);
      tb[k] = 0.0f;
    }
  }
}

// m = v != 0: cudnn_lstm's mask as Reserve keeps it (0 / 1 floats).
__global__ void mask_of(uint8_t *m, const float *v, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) m[i] = v[i] != 0.0f;
}

}  // namespace

extern "C" cudaError_t rill_cuda_rnn_mask_of_f32(uint8_t *m, const float *v, int64_t n, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  mask_of<<<blocks_for(n), kThreads, 0, s>>>(m, v, n);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_rnn_dropout_f32(float *y, const float *x, const uint8_t *mask, float keep, int64_t n,
                                                 cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  dropout<<<blocks_for(n), kThreads, 0, s>>>(y, x, mask, keep, n);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_rnn_back_step_f32(const rill_cuda_rnn_back *p, int64_t t, const float *dh, float *dc,
                                                   float *tb, float *gx, float *gh, float *hp, cudaStream_t s) {
  if (p->n * p->hidden == 0) return cudaSuccess;
  back_step<<<blocks_for(p->n * p->hidden), kThreads, 0, s>>>(*p, t, dh, dc, tb, gx, gh, hp);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_rnn_bias_f32(float *g, const float *bih, const float *bhh, int64_t rows, int64_t gh,
                                              int64_t nbh, cudaStream_t s) {
  if (rows * gh == 0) return cudaSuccess;
  bias<<<blocks_for(rows * gh), kThreads, 0, s>>>(g, bih, bhh, rows, gh, nbh);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_rnn_step_f32(int mode, const float *gx, const float *ph, const float *bhh_c, float *h,
                                              float *c, float *out, int64_t ldo, int64_t n, int64_t hidden,
                                              const int64_t *lens, int64_t t, float *kept, int64_t kept_row,
                                              cudaStream_t s) {
  if (n * hidden == 0) return cudaSuccess;
  step<<<blocks_for(n * hidden), kThreads, 0, s>>>(mode, gx, ph, bhh_c, h, c, out, ldo, n, hidden, lens, t, kept,
                                                   kept_row);
  return cudaGetLastError();
}
