// pool2d's forward: one thread per output element, max or average over its window
// (kernels/cpu/pool_window.h, the CPU's rule), NCHW or NHWC.
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

}  // namespace

extern "C" cudaError_t rill_cuda_pool2d_f32(const float *x, float *y, const rill_cuda_pool *g,
                                            cudaStream_t s) {
  int64_t total = g->n * g->c * g->oh * g->ow;
  if (total == 0) return cudaSuccess;
  pool2d_fwd<<<blocks_for(total), kThreads, 0, s>>>(x, y, *g);
  return cudaGetLastError();
}
