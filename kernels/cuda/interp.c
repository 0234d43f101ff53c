/* nearest_interp, bilinear_interp and their _v2 CUDA kernels, float32, both layouts: the
 * plan and the per-axis source tables are made on the host by the CPU's rules
 * (operators/interp.h; the size inputs are on the host, RILL_SLOT_HOST_DATA), copied to
 * the device with the launch, and the device code gathers (device/interp.cu). */
#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"
#include "operators/interp.h"

rill_status *rill_cuda_interp_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, INTERP_IN_X, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &out));
  interp_plan p;
  RILL_TRY(interp_kernel_plan(ctx, x, &p));
  rill_dims od = interp_out_dims(&p);
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));
  if (p.method == INTERP_TRILINEAR)
    return rill_kernel_error(ctx, "trilinear interpolation has no CUDA kernel (input X (%s))", rill_kin_name(ctx, 0, 0));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  rill_cuda_interp g = {.n = p.n, .c = p.c, .d = 1, .h = 1, .w = 1, .od = 1, .oh = 1, .ow = 1,
                        .bilinear = p.method == INTERP_BILINEAR, .channel_last = p.channel_last};
  int64_t *in_ext[3] = {&g.d, &g.h, &g.w}, *out_ext[3] = {&g.od, &g.oh, &g.ow};
  for (int i = 0; i < p.nsp; i++) {
    *in_ext[3 - p.nsp + i] = p.in[i];
    *out_ext[3 - p.nsp + i] = p.out[i];
  }
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
