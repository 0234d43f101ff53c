// Paddle 2.x's rnn op on the device, inference (kernels/cuda/rnn.c): the bias of the
// input projection, and the cell of a time step, one thread a (row, unit), in the
// arithmetic of kernels/cpu/rnn_impl.inc's forward.
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
                     int64_t ldo, int64_t n, int64_t H, const int64_t *lens, int64_t t) {
  const int64_t GH = (mode == RILL_CUDA_RNN_LSTM ? 4 : mode == RILL_CUDA_RNN_GRU ? 3 : 1) * H;
  for (int64_t k = first_index(); k < n * H; k += grid_stride()) {
    int64_t b = k / H, j = k - b * H;
    if (lens && t >= lens[b]) {  // past the sequence: zeros out, the state kept
      out[b * ldo + j] = 0.0f;
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
    } else if (mode == RILL_CUDA_RNN_GRU) {
      float r = sigmoid(x[j] + p[j]), z = sigmoid(x[H + j] + p[H + j]);
      float hc = p[2 * H + j] + bhh_c[j];
      float cand = tanhf(x[2 * H + j] + r * hc);
      o = (1 - z) * cand + z * h[k];
    } else {
      float v = x[j] + p[j];
      o = mode == RILL_CUDA_RNN_RELU ? (v > 0 ? v : 0) : tanhf(v);
    }
    h[k] = o;
    out[b * ldo + j] = o;
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_rnn_bias_f32(float *g, const float *bih, const float *bhh, int64_t rows, int64_t gh,
                                              int64_t nbh, cudaStream_t s) {
  if (rows * gh == 0) return cudaSuccess;
  bias<<<blocks_for(rows * gh), kThreads, 0, s>>>(g, bih, bhh, rows, gh, nbh);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_rnn_step_f32(int mode, const float *gx, const float *ph, const float *bhh_c, float *h,
                                              float *c, float *out, int64_t ldo, int64_t n, int64_t hidden,
                                              const int64_t *lens, int64_t t, cudaStream_t s) {
  if (n * hidden == 0) return cudaSuccess;
  step<<<blocks_for(n * hidden), kThreads, 0, s>>>(mode, gx, ph, bhh_c, h, c, out, ldo, n, hidden, lens, t);
  return cudaGetLastError();
}
