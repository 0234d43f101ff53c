// pool2d's forward (one thread an output element, max or average over its window) and
// its gradient (one thread an input element), with kernels/cpu/pool_window.h's windows,
// the CPU's rule, NCHW or NHWC.
#include <cfloat>

#include "kernels/cpu/pool_window.h"
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

__global__ void pool2d_fwd(const float *x, float *y, rill_cuda_pool g) {
  int64_t total = g.n * g.c * g.oh * g.ow;
  for (int64_t idx = first_index(); idx < total; idx += grid_stride()) {
    int64_t i, j, base, step;  // the output row and column; the plane's first element and tap stride
    if (g.last) {
      int64_t c = idx % g.c, rest = idx / g.c;
      j = rest % g.ow;
      rest /= g.ow;
      i = rest % g.oh;
      base = (rest / g.oh) * g.h * g.w * g.c + c;
      step = g.c;
    } else {
      j = idx % g.ow;
      i = (idx / g.ow) % g.oh;
      base = (idx / (g.ow * g.oh)) * g.h * g.w;
      step = 1;
    }
    rill_pool_window wh = rill_pool_window_at(i, g.h, g.oh, g.kh, g.sh, g.pt, g.adaptive);
    rill_pool_window ww = rill_pool_window_at(j, g.w, g.ow, g.kw, g.sw, g.pl, g.adaptive);
    float v = g.max ? -FLT_MAX : 0.0f;
    for (int64_t a = wh.start; a < wh.end; a++)
      for (int64_t b = ww.start; b < ww.end; b++) {
        float t = x[base + (a * g.w + b) * step];
        v = g.max ? (t > v ? t : v) : v + t;
      }
    if (!g.max) {
      int64_t size = g.exclusive || g.adaptive ? (wh.end - wh.start) * (ww.end - ww.start)
                                               : wh.size * ww.size;
      v = size > 0 ? v / (float)size : 0.0f;
    }
    y[idx] = v;
  }
}

// The first output index along one dim whose window can hold input index a (from the
// unclipped window [o * s - pad, o * s - pad + k)); adaptive windows are tried from 0.
__device__ inline int64_t first_cover(int64_t a, int64_t k, int64_t s, int64_t pad, bool adaptive) {
  int64_t num = a + pad - k + 1;
  return adaptive || num <= 0 ? 0 : (num + s - 1) / s;
}

// The end of the output indices whose window can hold a.
__device__ inline int64_t end_cover(int64_t a, int64_t out, int64_t s, int64_t pad, bool adaptive) {
  if (adaptive) return out;
  int64_t e = (a + pad) / s + 1;
  return e < out ? e : out;
}

// X@GRAD gathered: each input element adds, over the windows that hold it in the order
// of the outputs (the CPU's order of accumulation), Out@GRAD / the divisor (avg) or
// Out@GRAD where it is the window's first element equal to Out (max).
__global__ void pool2d_bwd(const float *x, const float *y, const float *dy, float *dx, rill_cuda_pool g) {
  int64_t total = g.n * g.c * g.h * g.w;
  for (int64_t idx = first_index(); idx < total; idx += grid_stride()) {
    int64_t a, b, xbase, obase, step;
    if (g.last) {
      int64_t c = idx % g.c, rest = idx / g.c;
      b = rest % g.w;
      rest /= g.w;
      a = rest % g.h;
      int64_t n = rest / g.h;
      xbase = n * g.h * g.w * g.c + c;
      obase = n * g.oh * g.ow * g.c + c;
      step = g.c;
    } else {
      b = idx % g.w;
      a = (idx / g.w) % g.h;
      int64_t plane = idx / (g.w * g.h);
      xbase = plane * g.h * g.w;
      obase = plane * g.oh * g.ow;
      step = 1;
    }
    float acc = 0.0f;
    int64_t i1 = end_cover(a, g.oh, g.sh, g.pt, g.adaptive), j1 = end_cover(b, g.ow, g.sw, g.pl, g.adaptive);
    for (int64_t i = first_cover(a, g.kh, g.sh, g.pt, g.adaptive); i < i1; i++) {
      rill_pool_window wh = rill_pool_window_at(i, g.h, g.oh, g.kh, g.sh, g.pt, g.adaptive);
      if (a < wh.start || a >= wh.end) continue;
      for (int64_t j = first_cover(b, g.kw, g.sw, g.pl, g.adaptive); j < j1; j++) {
        rill_pool_window ww = rill_pool_window_at(j, g.w, g.ow, g.kw, g.sw, g.pl, g.adaptive);
        if (b < ww.start || b >= ww.end) continue;
        int64_t o = obase + (i * g.ow + j) * step;
        if (g.max) {
          float m = y[o];
          int64_t fa = -1, fb = -1;
          for (int64_t r = wh.start; r < wh.end && fa < 0; r++)
            for (int64_t q = ww.start; q < ww.end; q++)
              if (x[xbase + (r * g.w + q) * step] == m) {
                fa = r;
                fb = q;
                break;
              }
          if (fa == a && fb == b) acc += dy[o];
        } else {
          int64_t size = g.exclusive || g.adaptive ? (wh.end - wh.start) * (ww.end - ww.start)
                                                   : wh.size * ww.size;
          if (size > 0) acc += dy[o] / (float)size;
        }
      }
    }
    dx[xbase + (a * g.w + b) * step] = acc;
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_pool2d_grad_f32(const float *x, const float *y, const float *dy,
                                                 float *dx, const rill_cuda_pool *g, cudaStream_t s) {
  int64_t total = g->n * g->c * g->h * g->w;
  if (total == 0) return cudaSuccess;
  pool2d_bwd<<<blocks_for(total), kThreads, 0, s>>>(x, y, dy, dx, *g);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_pool2d_f32(const float *x, float *y, const rill_cuda_pool *g,
                                            cudaStream_t s) {
  int64_t total = g->n * g->c * g->oh * g->ow;
  if (total == 0) return cudaSuccess;
  pool2d_fwd<<<blocks_for(total), kThreads, 0, s>>>(x, y, *g);
  return cudaGetLastError();
}
