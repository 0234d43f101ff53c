// nearest and bilinear interpolation: one thread an output element, its sources read
// from per-axis tables the host made as the CPU kernel makes them (launch.h), so both
// pick the same source elements and weights; the blend is the CPU's, term by term. The
// gradient gathers too, one thread an input element, from the inverted tables.
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

// The coordinates of element i of a [n, c, d, h, w] tensor (channel_last: [n, d, h, w, c]).
__device__ inline void coords(int64_t i, int64_t cs, int64_t ds, int64_t hs, int64_t ws, bool channel_last, int64_t *n,
                              int64_t *c, int64_t *d, int64_t *h, int64_t *w) {
  if (channel_last) {
    *c = i % cs;
    i /= cs;
  }
  *w = i % ws;
  i /= ws;
  *h = i % hs;
  i /= hs;
  *d = i % ds;
  i /= ds;
  if (!channel_last) {
    *c = i % cs;
    i /= cs;
  }
  *n = i;
}

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
    int64_t n, c, od, oh, ow;
    coords(o, p.c, p.od, p.oh, p.ow, p.channel_last, &n, &c, &od, &oh, &ow);
    const float *xb = x + n * p.c * p.d * p.h * p.w + c * xc;
    if (p.trilinear) {  // the 8 corners, each weighed wd * wh * ww, in the CPU's order
      const int64_t *hi_d = p.tables + total_axes;
      const float *w_d = wts;
      int64_t id[2] = {lo_d[od], hi_d[od]}, ih[2] = {lo_h[oh], hi_h[oh]}, iw[2] = {lo_w[ow], hi_w[ow]};
      float wd[2] = {1.f - w_d[od], w_d[od]}, wh[2] = {1.f - w_h[oh], w_h[oh]}, ww[2] = {1.f - w_w[ow], w_w[ow]};
      float v = 0.0f;
      for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
          for (int e = 0; e < 2; e++) {
            float wt = wd[a] * wh[b] * ww[e];
            v += xb[((id[a] * p.h + ih[b]) * p.w + iw[e]) * xs] * wt;
          }
      out[o] = v;
      continue;
    }
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

// Walks input index i's entries along one axis a group at a time: each group is one
// output index k, with whether i is its lo source and whether it is its hi one.
struct axis_walk {
  const int64_t *e, *end;
  __device__ axis_walk(const rill_cuda_interp_grad &p, int a, int64_t i)
      : e(p.entry[a] + p.first[a][i]), end(p.entry[a] + p.first[a][i + 1]) {}
  __device__ bool next(int64_t *k, bool *lo, bool *hi) {
    if (e == end) return false;
    *k = *e >> 1;
    *lo = *hi = false;
    for (; e != end && (*e >> 1) == *k; e++) *(*e & 1 ? hi : lo) = true;
    return true;
  }
};

__global__ void interp_grad(const float *g, float *dx, rill_cuda_interp_grad p) {
  int64_t numel = p.n * p.c * p.d * p.h * p.w;
  // element strides of Out@GRAD: channel, then one spatial step (w)
  int64_t gc = p.channel_last ? 1 : p.od * p.oh * p.ow, gs = p.channel_last ? p.c : 1;
  for (int64_t i = first_index(); i < numel; i += grid_stride()) {
    int64_t n, c, xd, xh, xw;
    coords(i, p.c, p.d, p.h, p.w, p.channel_last, &n, &c, &xd, &xh, &xw);
    const float *gb = g + n * p.c * p.od * p.oh * p.ow + c * gc;
    float s = 0.0f;
    int64_t od, oh, ow;
    bool dlo, dhi, hlo, hhi, wlo, whi;
    for (axis_walk wd(p, 0, xd); wd.next(&od, &dlo, &dhi);)
      for (axis_walk wh(p, 1, xh); wh.next(&oh, &hlo, &hhi);) {
        float dn = p.weight[1][oh], ds = 1.f - dn;
        for (axis_walk ww(p, 2, xw); ww.next(&ow, &wlo, &whi);) {
          float v = gb[((od * p.oh + oh) * p.ow + ow) * gs];
          if (p.trilinear) {  // d, then h, then w, lo before hi: the CPU's order
            float wdd = p.weight[0][od], whh = p.weight[1][oh], www = p.weight[2][ow];
            bool dm[2] = {dlo, dhi}, hm[2] = {hlo, hhi}, wm[2] = {wlo, whi};
            float wd[2] = {1.f - wdd, wdd}, wh[2] = {1.f - whh, whh}, wv[2] = {1.f - www, www};
            for (int a = 0; a < 2; a++)
              for (int b = 0; b < 2; b++)
                for (int e = 0; e < 2; e++)
                  if (dm[a] && hm[b] && wm[e]) {
                    float wt = wd[a] * wh[b] * wv[e];
                    s += v * wt;
                  }
            continue;
          }
          if (!p.bilinear) {
            s += v;
            continue;
          }
          float dw = p.weight[2][ow], de = 1.f - dw;
          if (wlo && hlo) s += v * ds * de;
          if (wlo && hhi) s += v * dn * de;
          if (whi && hlo) s += v * ds * dw;
          if (whi && hhi) s += v * dn * dw;
        }
      }
    dx[i] = s;
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_interp_grad_f32(const float *dout, float *dx, const rill_cuda_interp_grad *p,
                                                 cudaStream_t s) {
  int64_t numel = p->n * p->c * p->d * p->h * p->w;
  if (numel == 0) return cudaSuccess;
  if (p->bilinear && p->d != 1) return cudaErrorInvalidValue;
  interp_grad<<<blocks_for(numel), kThreads, 0, s>>>(dout, dx, *p);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_interp_f32(const float *x, float *out, const rill_cuda_interp *p, cudaStream_t s) {
  int64_t numel = p->n * p->c * p->od * p->oh * p->ow;
  if (numel == 0) return cudaSuccess;
  if (p->bilinear && p->d != 1) return cudaErrorInvalidValue;
  interp<<<blocks_for(numel), kThreads, 0, s>>>(x, out, *p);
  return cudaGetLastError();
}
