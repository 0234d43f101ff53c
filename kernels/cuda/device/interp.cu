// nearest and bilinear interpolation: one thread an output element, its sources read
// from per-axis tables the host made as the CPU kernel makes them (launch.h), so both
// pick the same source elements and weights; the blend is the CPU's, term by term.
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

__global__ void interp(const float *x, float *out, rill_cuda_interp p) {
  int64_t total_axes = p.od + p.oh + p.ow;
  const int64_t *lo_d = p.tables, *lo_h = lo_d + p.od, *lo_w = lo_h + p.oh;
  const int64_t *hi_h = p.tables + total_axes + p.od, *hi_w = hi_h + p.oh;
  const float *wts = (const float *)(p.tables + 2 * total_axes);
  const float *w_h = wts + p.od, *w_w = w_h + p.oh;
  int64_t numel = p.n * p.c * p.od * p.oh * p.ow;
  // element strides of x: channel, then one spatial step (w)
  int64_t xc = p.channel_last ? 1 : p.d * p.h * p.w, xs = p.channel_last ? p.c : 1;
  for (int64_t o = first_index(); o < numel; o += grid_stride()) {
    int64_t rem = o, n, c = 0, od, oh, ow;
    if (p.channel_last) {
      c = rem % p.c;
      rem /= p.c;
    }
    ow = rem % p.ow;
    rem /= p.ow;
    oh = rem % p.oh;
    rem /= p.oh;
    od = rem % p.od;
    rem /= p.od;
    if (!p.channel_last) {
      c = rem % p.c;
      rem /= p.c;
    }
    n = rem;
    const float *xb = x + n * p.c * p.d * p.h * p.w + c * xc;
    if (!p.bilinear) {
      out[o] = xb[((lo_d[od] * p.h + lo_h[oh]) * p.w + lo_w[ow]) * xs];
      continue;
    }
    int64_t h0 = lo_h[oh], h1 = hi_h[oh], w0 = lo_w[ow], w1 = hi_w[ow];
    float dn = w_h[oh], ds = 1.f - dn, dw = w_w[ow], de = 1.f - dw;
    out[o] = xb[(h0 * p.w + w0) * xs] * ds * de + xb[(h1 * p.w + w0) * xs] * dn * de +
             xb[(h0 * p.w + w1) * xs] * ds * dw + xb[(h1 * p.w + w1) * xs] * dn * dw;
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_interp_f32(const float *x, float *out, const rill_cuda_interp *p, cudaStream_t s) {
  int64_t numel = p->n * p->c * p->od * p->oh * p->ow;
  if (numel == 0) return cudaSuccess;
  if (p->bilinear && p->d != 1) return cudaErrorInvalidValue;
  interp<<<blocks_for(numel), kThreads, 0, s>>>(x, out, *p);
  return cudaGetLastError();
}
