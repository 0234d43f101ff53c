/* conv2d and depthwise_conv2d CUDA kernels, float32, NCHW, on cuDNN: the geometry from
 * operators/nn.h (strides, dilations, groups, paddings with Paddle's SAME and VALID),
 * the algorithm picked by cuDNN's heuristics among those whose workspace fits
 * workspace_size_MB (512 when unset), the workspace from the caching allocator. No TF32
 * unless RILL_CUDA_TF32=1 (CUDNN_FMA_MATH). Asymmetric paddings, and the Bias and
 * ResidualData inputs of the fused form, are errors naming them. */
#include "kernels/cuda/cuda.h"
#include "operators/nn.h"

#define DEFAULT_WORKSPACE_MB 512

_Static_assert(RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_ATTR_WORKSPACE_SIZE_MB, RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_IN_BIAS, RILL_CONV2D_IN_BIAS) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_IN_RESIDUAL_DATA, RILL_CONV2D_IN_RESIDUAL_DATA),
               "one kernel serves conv2d and depthwise_conv2d: their slots and attributes must agree");

typedef struct conv_desc {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
} conv_desc;

static void conv_desc_destroy(conv_desc *c) {
  if (c->x) cudnnDestroyTensorDescriptor(c->x);
  if (c->y) cudnnDestroyTensorDescriptor(c->y);
  if (c->w) cudnnDestroyFilterDescriptor(c->w);
  if (c->conv) cudnnDestroyConvolutionDescriptor(c->conv);
}

static cudnnStatus_t conv_desc_make(conv_desc *c, const rill_conv_geom *g) {
  cudnnStatus_t s;
  if ((s = cudnnCreateTensorDescriptor(&c->x)) || (s = cudnnCreateTensorDescriptor(&c->y)) ||
      (s = cudnnCreateFilterDescriptor(&c->w)) || (s = cudnnCreateConvolutionDescriptor(&c->conv)))
    return s;
  if ((s = cudnnSetTensor4dDescriptor(c->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)g->n, (int)g->c, (int)g->h,
                                      (int)g->w)) ||
      (s = cudnnSetTensor4dDescriptor(c->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, (int)g->n, (int)g->m, (int)g->oh,
                                      (int)g->ow)) ||
      (s = cudnnSetFilter4dDescriptor(c->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)g->m, (int)(g->c / g->groups),
                                      (int)g->kh, (int)g->kw)) ||
      (s = cudnnSetConvolution2dDescriptor(c->conv, (int)g->pt, (int)g->pl, (int)g->sh, (int)g->sw, (int)g->dh,
                                           (int)g->dw, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)) ||
      (s = cudnnSetConvolutionGroupCount(c->conv, (int)g->groups)))
    return s;
  return cudnnSetConvolutionMathType(c->conv, rill_cuda_allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
}

/* Runs the convolution under d's lock (the cuDNN handle is d's). */
static rill_status *conv_forward(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_conv_geom *g, const float *x,
                                 const float *w, float *y) {
  conv_desc c = {0};
  size_t limit = (size_t)(ctx->attrs[RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB].v.i > 0
                              ? ctx->attrs[RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB].v.i
                              : DEFAULT_WORKSPACE_MB) << 20;
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int got = 0, pick = -1;
  void *ws = NULL;
  rill_status *st = NULL;
  pthread_mutex_lock(&d->lock);
  cudnnStatus_t s = conv_desc_make(&c, g);
  if (!s)
    s = cudnnGetConvolutionForwardAlgorithm_v7(d->dnn, c.x, c.w, c.conv, c.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                               &got, perf);
  for (int i = 0; !s && i < got && pick < 0; i++)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) pick = i;
  if (s) {
    st = rill_kernel_error(ctx, "cuDNN: %s", cudnnGetErrorString(s));
  } else if (pick < 0) {
    st = rill_kernel_error(ctx, "cuDNN has no algorithm for this convolution within a %zu MiB workspace "
                           "(workspace_size_MB)", limit >> 20);
  } else {
    size_t bytes = perf[pick].memory;
    if (bytes && !(ws = rill_cuda_mem_alloc(d, bytes)))
      st = rill_kernel_error(ctx, "out of device memory for a %zu-byte cuDNN workspace", bytes);
    const float one = 1.0f, zero = 0.0f;
    if (!st && (s = cudnnConvolutionForward(d->dnn, &one, c.x, x, c.w, w, c.conv, perf[pick].algo, ws, bytes, &zero,
                                            c.y, y)))
      st = rill_kernel_error(ctx, "cudnnConvolutionForward: %s", cudnnGetErrorString(s));
    /* Freed once queued: the next user of the block is queued behind this convolution. */
    rill_cuda_mem_free(d, ws);
  }
  conv_desc_destroy(&c);
  pthread_mutex_unlock(&d->lock);
  return st;
}

rill_status *rill_cuda_conv2d_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *f = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_IN_FILTER, 0, RILL_DTYPE_FP32, &f));
  RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_OUT_OUTPUT, 0, RILL_DTYPE_FP32, &out));
  if (rill_kin(ctx, RILL_CONV2D_IN_BIAS, 0) || rill_kin(ctx, RILL_CONV2D_IN_RESIDUAL_DATA, 0))
    return rill_kernel_error(ctx, "the CUDA kernel takes no Bias or ResidualData input");
  rill_conv_geom g;
  char err[256];
  if (!rill_nn_conv_geom(ctx->attrs, false, &x->dims, &f->dims, &g, err, sizeof err))
    return rill_kernel_error(ctx, "%s", err);
  if (g.pt != g.pb || g.pl != g.pr)
    return rill_kernel_error(ctx, "the CUDA kernel takes symmetric paddings only; they are top %lld, bottom %lld, "
                             "left %lld, right %lld", (long long)g.pt, (long long)g.pb, (long long)g.pl,
                             (long long)g.pr);
  rill_dims want = {.n = 4, .d = {g.n, g.m, g.oh, g.ow}};
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_OUT_OUTPUT, 0, out, &want));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return conv_forward(ctx, d, &g, rill_tensor_ptr(x), rill_tensor_ptr(f), rill_tensor_ptr(out));
}
