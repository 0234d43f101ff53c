// grid_sampler and its gradient (launch.h): the source coordinates of each sampled
// position computed in double from Grid by the CPU kernel's own functions
// (kernels/cpu/grid_sample_coord.h), then the corners read or written in its order.
#include <math.h>

#include "kernels/cpu/grid_sample_coord.h"
#include "kernels/cuda/device/grid.cuh"
#include "kernels/cuda/launch.h"

using namespace rill_cuda;

namespace {

// The bilinear corners of source point (sx, sy): offsets in the plane and weights, a
// corner outside the plane at offset 0 with weight 0; k = 0..3 is (x0, y0), (x1, y0),
// (x0, y1), (x1, y1).
struct corners {
  int64_t off[4];
  double w[4], wx, wy;
  bool in[4];
  __device__ corners(double sx, double sy, int64_t h, int64_t w_) {
    double fx = floor(sx), fy = floor(sy);
    wx = sx - fx;
    wy = sy - fy;
    int64_t x0 = (int64_t)fx, y0 = (int64_t)fy;
    w[0] = (1 - wx) * (1 - wy);
    w[1] = wx * (1 - wy);
    w[2] = (1 - wx) * wy;
    w[3] = wx * wy;
    for (int k = 0; k < 4; k++) {
      int64_t cx = x0 + (k & 1), cy = y0 + (k >> 1);
      in[k] = cx >= 0 && cx < w_ && cy >= 0 && cy < h;
      off[k] = in[k] ? cy * w_ + cx : 0;
      if (!in[k]) w[k] = 0;
    }
  }
};

// The nearest source of (sx, sy): its offset, or -1 outside the plane.
__device__ inline int64_t nearest_offset(double sx, double sy, int64_t h, int64_t w) {
  double rx = round(sx), ry = round(sy);
  if (rx < 0 || rx > (double)(w - 1) || ry < 0 || ry > (double)(h - 1)) return -1;
  return (int64_t)ry * w + (int64_t)rx;
}

__global__ void sample(const float *x, const float *grid, float *out, rill_cuda_grid_sample p) {
  int64_t plane = p.oh * p.ow, ip = p.h * p.w, numel = p.n * p.c * plane;
  for (int64_t o = first_index(); o < numel; o += grid_stride()) {
    int64_t pos = o % plane, nc = o / plane, n = nc / p.c;
    const float *g = grid + (n * plane + pos) * 2;
    double sx = rill_grid_source((double)g[0], p.w, p.align_corners, p.pad);
    double sy = rill_grid_source((double)g[1], p.h, p.align_corners, p.pad);
    const float *s = x + nc * ip;
    if (p.nearest) {
      int64_t off = nearest_offset(sx, sy, p.h, p.w);
      out[o] = off < 0 ? 0.0f : s[off];
      continue;
    }
    corners k(sx, sy, p.h, p.w);
    out[o] = (float)(s[k.off[0]] * k.w[0] + s[k.off[1]] * k.w[1] + s[k.off[2]] * k.w[2] + s[k.off[3]] * k.w[3]);
  }
}

// X@GRAD, a thread an (n, c) plane: zeroed, then every sampled position's share added
// in raster order, corners in order, each share rounded to float as the CPU adds it.
__global__ void sample_grad_x(const float *grid, const float *dout, float *dx, rill_cuda_grid_sample p) {
  int64_t plane = p.oh * p.ow, ip = p.h * p.w, planes = p.n * p.c;
  for (int64_t nc = first_index(); nc < planes; nc += grid_stride()) {
    int64_t n = nc / p.c;
    float *d = dx + nc * ip;
    const float *go = dout + nc * plane;
    for (int64_t i = 0; i < ip; i++) d[i] = 0.0f;
    for (int64_t pos = 0; pos < plane; pos++) {
      const float *g = grid + (n * plane + pos) * 2;
      double sx = rill_grid_source((double)g[0], p.w, p.align_corners, p.pad);
      double sy = rill_grid_source((double)g[1], p.h, p.align_corners, p.pad);
      if (p.nearest) {
        int64_t off = nearest_offset(sx, sy, p.h, p.w);
        if (off >= 0) d[off] += go[pos];
        continue;
      }
      corners k(sx, sy, p.h, p.w);
      double gv = (double)go[pos];
      for (int c = 0; c < 4; c++)
        if (k.in[c]) d[k.off[c]] += (float)(gv * k.w[c]);
    }
  }
}

// Grid@GRAD, a thread a sampled position: the weights' derivatives times the pixels
// read and Output@GRAD, summed over corners then channels as the CPU sums them.
__global__ void sample_grad_grid(const float *x, const float *grid, const float *dout, float *dgrid,
                                 rill_cuda_grid_sample p) {
  int64_t plane = p.oh * p.ow, ip = p.h * p.w, total = p.n * plane;
  for (int64_t t = first_index(); t < total; t += grid_stride()) {
    int64_t n = t / plane, pos = t % plane;
    if (p.nearest) {
      dgrid[t * 2] = dgrid[t * 2 + 1] = 0.0f;
      continue;
    }
    double gx = (double)grid[t * 2], gy = (double)grid[t * 2 + 1];
    double sx = rill_grid_source(gx, p.w, p.align_corners, p.pad), sy = rill_grid_source(gy, p.h, p.align_corners, p.pad);
    corners k(sx, sy, p.h, p.w);
    double dwx[4] = {-(1 - k.wy), 1 - k.wy, -k.wy, k.wy}, dwy[4] = {-(1 - k.wx), -k.wx, 1 - k.wx, k.wx};
    double ddx = 0, ddy = 0;
    const float *src = x + n * p.c * ip, *go = dout + n * p.c * plane + pos;
    for (int c4 = 0; c4 < 4; c4++) {
      if (!k.in[c4]) continue;
      for (int64_t c = 0; c < p.c; c++) {
        double gv = (double)go[c * plane], v = (double)src[c * ip + k.off[c4]];
        ddx += gv * v * dwx[c4];
        ddy += gv * v * dwy[c4];
      }
    }
    dgrid[t * 2] = (float)(ddx * rill_grid_source_slope(gx, p.w, p.align_corners, p.pad));
    dgrid[t * 2 + 1] = (float)(ddy * rill_grid_source_slope(gy, p.h, p.align_corners, p.pad));
  }
}

}  // namespace

extern "C" cudaError_t rill_cuda_grid_sample_f32(const float *x, const float *grid, float *out,
                                                 const rill_cuda_grid_sample *p, cudaStream_t s) {
  int64_t numel = p->n * p->c * p->oh * p->ow;
  if (numel == 0) return cudaSuccess;
  sample<<<blocks_for(numel), kThreads, 0, s>>>(x, grid, out, *p);
  return cudaGetLastError();
}

extern "C" cudaError_t rill_cuda_grid_sample_grad_f32(const float *x, const float *grid, const float *dout, float *dx,
                                                      float *dgrid, const rill_cuda_grid_sample *p, cudaStream_t s) {
  if (p->pad == RILL_GRID_PAD_REFLECT) return cudaErrorInvalidValue;
  if (dx && p->n * p->c * p->h * p->w > 0) {
    sample_grad_x<<<blocks_for(p->n * p->c), kThreads, 0, s>>>(grid, dout, dx, *p);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  if (dgrid && p->n * p->oh * p->ow > 0) {
    sample_grad_grid<<<blocks_for(p->n * p->oh * p->ow), kThreads, 0, s>>>(x, grid, dout, dgrid, *p);
    return cudaGetLastError();
  }
  return cudaSuccess;
}
