/* The cuDNN convolution the 2-D and 3-D convolution kernels share (conv2d.c, conv3d.c):
 * a convolution of any of their ops in one shape, its descriptors, the per-device cache
 * of algorithms, and the forward and backward passes with Paddle's uneven paddings
 * (which cuDNN does not take) done on a zero-grown copy. */
#ifndef RILL_KERNELS_CUDA_CONV_H
#define RILL_KERNELS_CUDA_CONV_H

#include "kernels/cuda/cuda.h"

/* A convolution in convolution terms: the image x [n, c, in...] (channels last: [n,
 * in..., c]), the filter [m, c / groups, k...] in either layout, the output y [n, m,
 * out...]. A transposed op is described as the convolution whose data gradient it is
 * (its Output the image, its Input y). Per spatial dim, outermost first (d, h, w; 2-D:
 * h, w), the extents, filter extents, strides, dilations and the paddings before (lo)
 * and after (hi). */
typedef struct rill_cuda_conv {
  int nsp; /* spatial dims: 2 or 3 */
  bool last;
  int64_t n, c, m, groups;
  int64_t in[3], out[3], k[3], s[3], d[3], lo[3], hi[3];
} rill_cuda_conv;

/* The workspace cap of an op: its attribute workspace_size_MB (at position `attr`), 512
 * MiB when unset. */
size_t rill_cuda_conv_workspace_limit(const rill_kernel_ctx *ctx, size_t attr);

/* An epilogue cuDNN fuses into the forward convolution: y = relu(conv + res +
 * bias[channel]), res optional (cudnnConvolutionBiasActivationForward; 2-D only). */
typedef struct rill_cuda_conv_fused {
  const float *bias, *res;
} rill_cuda_conv_fused;

/* y = the convolution of x by w (with `fused`, its epilogue too), on d's stream and
 * cuDNN handle under d's lock: the algorithm from cuDNN's heuristics (or, with
 * RILL_CUDNN_EXHAUSTIVE=1, from timing each once) among those whose workspace fits
 * `limit`, kept per device and shape; uneven paddings through a zero-grown copy of x. */
rill_status *rill_cuda_conv_forward(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g, size_t limit,
                                    const float *x, const float *w, float *y, const rill_cuda_conv_fused *fused);

/* From y's gradient dy: x's gradient into dx and w's into dw, either NULL; x is read
 * only for dw, w only for dx. Each with the first deterministic algorithm of cuDNN's
 * heuristics that fits `limit` (two runs give the same bits). Uneven paddings: dw
 * against the grown x, dx computed in the grown shape and its interior copied out. A
 * transposed convolution's Output is this dx of its Input (as dy). */
rill_status *rill_cuda_conv_backward(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g, size_t limit,
                                     const float *x, const float *w, const float *dy, float *dx, float *dw);

/* The gradients of a transposed convolution g (its Input x, Filter w, Output@GRAD dy):
 * Input@GRAD into dx, the convolution of dy; Filter@GRAD into dw, the convolution's
 * filter gradient with dy as its image and x as its output's gradient; either NULL. */
rill_status *rill_cuda_conv_transpose_backward(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g,
                                               size_t limit, const float *x, const float *w, const float *dy,
                                               float *dx, float *dw);

/* Zeroes the wanted gradients dx and dw (either NULL) on d's stream: what a gradient op
 * writes when no gradient flows through an empty tensor. */
rill_status *rill_cuda_conv_zero_grads(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_tensor *dx, rill_tensor *dw);

#endif
