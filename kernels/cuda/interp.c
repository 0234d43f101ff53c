/* nearest_interp, bilinear_interp, their _v2 forms, trilinear_interp and their
 * gradients, CUDA kernels, float32, both layouts: the plan and the per-axis source tables are made on the host by
 * the CPU's rules (operators/interp.h; the size inputs are on the host,
 * RILL_SLOT_HOST_DATA), copied to the device with the launch, and the device code
 * gathers (device/interp.cu). */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"
#include "operators/interp.h"

/* The extents of the three axes (d, h, w) of X and of Out: 1 along the axes a 4-D X
 * lacks. */
static void axes_of(const interp_plan *p, int64_t in[3], int64_t out[3]) {
  for (int a = 0; a < 3; a++) {
    int i = a - (3 - p->nsp);
    in[a] = i < 0 ? 1 : p->in[i];
    out[a] = i < 0 ? 1 : p->out[i];
  }
}

rill_status *rill_cuda_interp_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, INTERP_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &out));
  interp_plan p;
  RILL_TRY(interp_kernel_plan(ctx, x, &p));
  rill_dims od = interp_out_dims(&p);
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  int64_t in[3], ext[3];
  axes_of(&p, in, ext);
  rill_cuda_interp g = {.n = p.n, .c = p.c, .d = in[0], .h = in[1], .w = in[2], .od = ext[0], .oh = ext[1],
                        .ow = ext[2], .bilinear = p.method == INTERP_BILINEAR,
                        .trilinear = p.method == INTERP_TRILINEAR, .channel_last = p.channel_last};
  const int64_t *out_ext[3] = {&g.od, &g.oh, &g.ow};
  /* lo[d] lo[h] lo[w] hi[d] hi[h] hi[w] as int64, then the weights as float */
  int64_t total = g.od + g.oh + g.ow;
  size_t bytes = (size_t)total * (2 * sizeof(int64_t) + sizeof(float));
  int64_t *host = rill_malloc(bytes);
  if (!host) return rill_oom();
  float *w = (float *)(host + 2 * total);
  for (int a = 0, at = 0; a < 3; at += (int)*out_ext[a], a++)
    for (int64_t k = 0; k < *out_ext[a]; k++) interp_axis_src(&p, a, k, &host[at + k], &host[total + at + k], &w[at + k]);
  void *dev = rill_cuda_mem_alloc(d, bytes);
  if (!dev) {
    rill_free(host);
    return rill_kernel_error(ctx, "out of device memory for %zu bytes of interpolation tables", bytes);
  }
  /* from pageable memory: staged before the call returns, so host may go */
  cudaError_t e = cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, d->stream);
  rill_free(host);
  g.tables = dev;
  if (e == cudaSuccess) e = rill_cuda_interp_f32(rill_tensor_ptr(x), rill_tensor_ptr(out), &g, d->stream);
  rill_cuda_mem_free(d, dev); /* its next user is queued behind the launch */
  return rill_cuda_kernel_check(ctx, e, "interpolation launch");
}

/* The gradients: X@GRAD gathers from Out@GRAD through the per-axis tables inverted on
 * the host (launch.h, rill_cuda_interp_grad), in the CPU kernel's order of addition. */
rill_status *rill_cuda_interp_grad_fp32(rill_kernel_ctx *ctx) {
  if (!rill_kout(ctx, 0, 0)) return NULL; /* X@GRAD not wanted */
  rill_tensor *x = rill_kin(ctx, INTERP_IN_X, 0), *dout = NULL, *dx = NULL;
  if (!x) return rill_kernel_error(ctx, "input X is missing");
  RILL_TRY(rill_kin_need(ctx, INTERP_IN_DOUT, 0, RILL_DTYPE_FP32, &dout));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));
  interp_plan p;
  RILL_TRY(interp_kernel_plan(ctx, x, &p));
  rill_dims gd = interp_out_dims(&p);
  RILL_TRY(rill_kin_check_dims(ctx, INTERP_IN_DOUT, dout, &gd));
  if (rill_tensor_numel(dx) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  if (rill_tensor_numel(dout) == 0)
    return rill_cuda_kernel_check(ctx, cudaMemsetAsync(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx), d->stream),
                                  "zeroing X@GRAD");
  int64_t in[3], ext[3];
  axes_of(&p, in, ext);
  bool bilinear = p.method == INTERP_BILINEAR, trilinear = p.method == INTERP_TRILINEAR;
  rill_cuda_interp_grad g = {.n = p.n, .c = p.c, .d = in[0], .h = in[1], .w = in[2], .od = ext[0], .oh = ext[1],
                             .ow = ext[2], .bilinear = bilinear, .trilinear = trilinear, .channel_last = p.channel_last};
  /* per axis: first[in + 1] and entry[2 ext] (int64), then every axis's weights (float) */
  size_t words = 0, nweights = 0;
  for (int a = 0; a < 3; a++) {
    words += (size_t)(in[a] + 1 + 2 * ext[a]);
    nweights += (size_t)ext[a];
  }
  size_t bytes = words * sizeof(int64_t) + nweights * sizeof(float);
  int64_t *host = rill_calloc(1, bytes);
  if (!host) return rill_oom();
  int64_t *first[3], *entry[3];
  float *weight[3];
  size_t at = 0, wat = 0;
  for (int a = 0; a < 3; a++) {
    first[a] = host + at;
    entry[a] = first[a] + in[a] + 1;
    at += (size_t)(in[a] + 1 + 2 * ext[a]);
    weight[a] = (float *)(host + words) + wat;
    wat += (size_t)ext[a];
    /* hi sources exist along the bilinear and trilinear axes only */
    bool both = (bilinear || trilinear) && a >= 3 - p.nsp;
    int64_t lo, hi;
    for (int64_t k = 0; k < ext[a]; k++) { /* count each input index's entries */
      interp_axis_src(&p, a, k, &lo, &hi, &weight[a][k]);
      first[a][lo + 1]++;
      if (both) first[a][hi + 1]++;
    }
    for (int64_t i = 0; i < in[a]; i++) first[a][i + 1] += first[a][i];
    /* then place them, k ascending and lo before hi, each input index from its start */
    int64_t *fill = rill_malloc((size_t)(in[a] ? in[a] : 1) * sizeof *fill);
    if (!fill) {
      rill_free(host);
      return rill_oom();
    }
    memcpy(fill, first[a], (size_t)in[a] * sizeof *fill);
    for (int64_t k = 0; k < ext[a]; k++) {
      float unused;
      interp_axis_src(&p, a, k, &lo, &hi, &unused);
      entry[a][fill[lo]++] = 2 * k;
      if (both) entry[a][fill[hi]++] = 2 * k + 1;
    }
    rill_free(fill);
  }
  char *dev = rill_cuda_mem_alloc(d, bytes);
  if (!dev) {
    rill_free(host);
    return rill_kernel_error(ctx, "out of device memory for %zu bytes of interpolation tables", bytes);
  }
  /* from pageable memory: staged before the call returns, so host may go */
  cudaError_t e = cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, d->stream);
  for (int a = 0; a < 3; a++) {
    g.first[a] = (const int64_t *)(dev + ((char *)first[a] - (char *)host));
    g.entry[a] = (const int64_t *)(dev + ((char *)entry[a] - (char *)host));
    g.weight[a] = (const float *)(dev + ((char *)weight[a] - (char *)host));
  }
  rill_free(host);
  if (e == cudaSuccess) e = rill_cuda_interp_grad_f32(rill_tensor_ptr(dout), rill_tensor_ptr(dx), &g, d->stream);
  rill_cuda_mem_free(d, dev); /* its next user is queued behind the launch */
  return rill_cuda_kernel_check(ctx, e, "interpolation gradient launch");
}
