/* The cuDNN convolution of conv.h: descriptors (4-D for 2-D convolutions, N-D for 3-D),
 * the per-device algorithm cache, the passes, and uneven paddings on a grown copy. No
 * TF32 unless RILL_CUDA_TF32=1 (CUDNN_FMA_MATH). */
#include "kernels/cuda/conv.h"

#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"

#define DEFAULT_WORKSPACE_MB 512

size_t rill_cuda_conv_workspace_limit(const rill_kernel_ctx *ctx, size_t attr) {
  int64_t mb = ctx->attrs[attr].v.i;
  return (size_t)(mb > 0 ? mb : DEFAULT_WORKSPACE_MB) << 20;
}

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

/* Tensor t [n, ch, sp...] of g's layout (dims always in that logical order: the format
 * says where the channels lie in memory). */
static cudnnStatus_t tensor_desc(cudnnTensorDescriptor_t t, const rill_cuda_conv *g, int64_t ch, const int64_t *sp) {
  cudnnTensorFormat_t fmt = g->last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  if (g->nsp == 2) return cudnnSetTensor4dDescriptor(t, fmt, CUDNN_DATA_FLOAT, (int)g->n, (int)ch, (int)sp[0], (int)sp[1]);
  int dims[5] = {(int)g->n, (int)ch, (int)sp[0], (int)sp[1], (int)sp[2]};
  return cudnnSetTensorNdDescriptorEx(t, fmt, CUDNN_DATA_FLOAT, 5, dims);
}

/* The descriptors of g (its paddings even: lo is used for both sides). */
static cudnnStatus_t conv_desc_make(conv_desc *c, const rill_cuda_conv *g) {
  cudnnStatus_t s;
  if ((s = cudnnCreateTensorDescriptor(&c->x)) || (s = cudnnCreateTensorDescriptor(&c->y)) ||
      (s = cudnnCreateFilterDescriptor(&c->w)) || (s = cudnnCreateConvolutionDescriptor(&c->conv)))
    return s;
  if ((s = tensor_desc(c->x, g, g->c, g->in)) || (s = tensor_desc(c->y, g, g->m, g->out))) return s;
  int cg = (int)(g->c / g->groups);
  if (g->nsp == 2) {
    if ((s = cudnnSetFilter4dDescriptor(c->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)g->m, cg, (int)g->k[0],
                                        (int)g->k[1])) ||
        (s = cudnnSetConvolution2dDescriptor(c->conv, (int)g->lo[0], (int)g->lo[1], (int)g->s[0], (int)g->s[1],
                                             (int)g->d[0], (int)g->d[1], CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)))
      return s;
  } else {
    int fd[5] = {(int)g->m, cg, (int)g->k[0], (int)g->k[1], (int)g->k[2]};
    int pad[3], str[3], dil[3];
    for (int i = 0; i < 3; i++) {
      pad[i] = (int)g->lo[i];
      str[i] = (int)g->s[i];
      dil[i] = (int)g->d[i];
    }
    if ((s = cudnnSetFilterNdDescriptor(c->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 5, fd)) ||
        (s = cudnnSetConvolutionNdDescriptor(c->conv, 3, pad, str, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)))
      return s;
  }
  if ((s = cudnnSetConvolutionGroupCount(c->conv, (int)g->groups))) return s;
  return cudnnSetConvolutionMathType(c->conv, rill_cuda_allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
}

/* ---- the algorithm cache ----
 * One entry per (direction, shape, workspace cap, determinism asked, math mode,
 * search): the algorithm and its workspace. Open addressing over a fixed table; when
 * it is full, further shapes are asked about on every call (still correct). */
#define ALGO_SLOTS 512

enum { FWD, BWD_DATA, BWD_FILTER };

typedef struct algo_key {
  int64_t shape[21];
  int64_t limit;
  int32_t dir;
  uint8_t deterministic, tf32, exhaustive;
} algo_key;

typedef struct algo_entry {
  algo_key key;
  bool used;
  int algo;
  size_t bytes;
} algo_entry;

struct rill_cuda_conv_algos {
  algo_entry slot[ALGO_SLOTS];
};

void rill_cuda_conv_algos_free(struct rill_cuda_conv_algos *c) { rill_free(c); }

static bool exhaustive_search(void) {
  const char *v = getenv("RILL_CUDNN_EXHAUSTIVE");
  return v && strcmp(v, "1") == 0;
}

static algo_key key_of(int dir, const rill_cuda_conv *g, size_t limit, bool deterministic) {
  algo_key k;
  memset(&k, 0, sizeof k); /* padding too: keys are compared as bytes */
  int64_t *v = k.shape;
  *v++ = g->nsp;
  *v++ = g->last;
  *v++ = g->n;
  *v++ = g->c;
  *v++ = g->m;
  *v++ = g->groups;
  for (int i = 0; i < g->nsp; i++) {
    *v++ = g->in[i];
    *v++ = g->k[i];
    *v++ = g->s[i];
    *v++ = g->d[i];
    *v++ = g->lo[i];
  }
  k.limit = (int64_t)limit;
  k.dir = dir;
  k.deterministic = deterministic;
  k.tf32 = rill_cuda_allow_tf32();
  k.exhaustive = exhaustive_search();
  return k;
}

/* The entry of key k (under d's lock): found (used), or the free slot to fill, or NULL
 * when the table is full. */
static algo_entry *algo_slot(rill_cuda_dev *d, const algo_key *k) {
  if (!d->conv_algos && !(d->conv_algos = rill_calloc(1, sizeof *d->conv_algos))) return NULL;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof *k; i++) h = (h ^ ((const uint8_t *)k)[i]) * 1099511628211ull;
  for (size_t probe = 0; probe < ALGO_SLOTS; probe++) {
    algo_entry *e = &d->conv_algos->slot[(h + probe) % ALGO_SLOTS];
    if (!e->used || memcmp(&e->key, k, sizeof *k) == 0) return e;
  }
  return NULL;
}

/* The index in cuDNN's ranked `perf` (got entries) of the first algorithm that ran and
 * fits `limit`, a deterministic one first when `deterministic` (so that two runs give
 * the same bits); -1 when none fits. */
#define PICK_ALGO(perf, got, limit, deterministic)                                                  \
  ({                                                                                                \
    int pick_ = -1;                                                                                 \
    for (int pass_ = (deterministic) ? 0 : 1; pass_ < 2 && pick_ < 0; pass_++)                      \
      for (int i_ = 0; i_ < (got) && pick_ < 0; i_++)                                               \
        if ((perf)[i_].status == CUDNN_STATUS_SUCCESS && (perf)[i_].memory <= (limit) &&            \
            (pass_ == 1 || (perf)[i_].determinism == CUDNN_DETERMINISTIC))                          \
          pick_ = i_;                                                                               \
    pick_;                                                                                          \
  })

/* After an algorithm query (status s, `pick` from PICK_ALGO, its workspace `bytes`): the
 * error naming the step (`what`), or NULL with *ws the workspace (NULL for none). */
static rill_status *algo_workspace(rill_kernel_ctx *ctx, rill_cuda_dev *d, cudnnStatus_t s, int pick, size_t bytes,
                                   size_t limit, const char *what, void **ws) {
  *ws = NULL;
  if (s) return rill_kernel_error(ctx, "cuDNN (%s): %s", what, cudnnGetErrorString(s));
  if (pick < 0)
    return rill_kernel_error(ctx, "cuDNN has no %s algorithm for this convolution within a %zu MiB workspace "
                             "(workspace_size_MB)", what, limit >> 20);
  if (bytes && !(*ws = rill_cuda_mem_alloc(d, bytes)))
    return rill_kernel_error(ctx, "out of device memory for a %zu-byte cuDNN workspace (%s)", bytes, what);
  return NULL;
}

/* cuDNN's fused convolution, bias, residual and relu (NaN propagated, as the CPU's relu
 * keeps it) on the descriptors of c. */
static cudnnStatus_t fused_forward(rill_cuda_dev *d, const conv_desc *c, const rill_cuda_conv *g,
                                   const rill_cuda_conv_fused *f, const float *x, const float *w, float *y,
                                   cudnnConvolutionFwdAlgo_t algo, void *ws, size_t bytes) {
  cudnnTensorDescriptor_t bias = NULL;
  cudnnActivationDescriptor_t act = NULL;
  cudnnStatus_t s;
  if (g->nsp != 2) return CUDNN_STATUS_NOT_SUPPORTED;
  if (!(s = cudnnCreateTensorDescriptor(&bias)) &&
      !(s = cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, (int)g->m, 1, 1)) &&
      !(s = cudnnCreateActivationDescriptor(&act)) &&
      !(s = cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0))) {
    const float one = 1.0f, zero = 0.0f;
    /* Without a residual, z is y itself, scaled by 0 (cuDNN requires a z). */
    s = cudnnConvolutionBiasActivationForward(d->dnn, &one, c->x, x, c->w, w, c->conv, algo, ws, bytes,
                                              f->res ? &one : &zero, c->y, f->res ? (const void *)f->res : y, bias,
                                              f->bias, act, c->y, y);
  }
  if (act) cudnnDestroyActivationDescriptor(act);
  if (bias) cudnnDestroyTensorDescriptor(bias);
  return s;
}

/* The forward pass of an evenly padded g under d's lock. */
static rill_status *forward_even(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g, size_t limit,
                                 const float *x, const float *w, float *y, const rill_cuda_conv_fused *fused) {
  conv_desc c = {0};
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int got = 0, pick = -1;
  void *ws = NULL;
  rill_status *st = NULL;
  pthread_mutex_lock(&d->lock);
  cudnnStatus_t s = conv_desc_make(&c, g);
  algo_key key = key_of(FWD, g, limit, false);
  algo_entry *e = s ? NULL : algo_slot(d, &key);
  if (e && e->used) {
    perf[0].algo = (cudnnConvolutionFwdAlgo_t)e->algo;
    perf[0].memory = e->bytes;
    pick = 0;
  } else if (!s) {
    s = key.exhaustive ? cudnnFindConvolutionForwardAlgorithm(d->dnn, c.x, c.w, c.conv, c.y,
                                                              CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf)
                       : cudnnGetConvolutionForwardAlgorithm_v7(d->dnn, c.x, c.w, c.conv, c.y,
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf);
    if (!s) pick = PICK_ALGO(perf, got, limit, false);
    if (e && pick >= 0) *e = (algo_entry){.key = key, .used = true, .algo = perf[pick].algo, .bytes = perf[pick].memory};
  }
  size_t bytes = pick >= 0 ? perf[pick].memory : 0;
  st = algo_workspace(ctx, d, s, pick, bytes, limit, "forward", &ws);
  const float one = 1.0f, zero = 0.0f;
  if (!st && fused && (s = fused_forward(d, &c, g, fused, x, w, y, perf[pick].algo, ws, bytes)))
    st = rill_kernel_error(ctx, "cudnnConvolutionBiasActivationForward: %s", cudnnGetErrorString(s));
  else if (!st && !fused &&
           (s = cudnnConvolutionForward(d->dnn, &one, c.x, x, c.w, w, c.conv, perf[pick].algo, ws, bytes, &zero, c.y,
                                        y)))
    st = rill_kernel_error(ctx, "cudnnConvolutionForward: %s", cudnnGetErrorString(s));
  /* Freed once queued: the next user of the block is queued behind this convolution. */
  rill_cuda_mem_free(d, ws);
  conv_desc_destroy(&c);
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* The backward passes of an evenly padded g under d's lock (dx, dw either NULL). */
static rill_status *backward_even(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g, size_t limit,
                                  const float *x, const float *w, const float *dy, float *dx, float *dw) {
  conv_desc c = {0};
  const float one = 1.0f, zero = 0.0f;
  rill_status *st = NULL;
  pthread_mutex_lock(&d->lock);
  cudnnStatus_t s = conv_desc_make(&c, g);
  if (s) st = rill_kernel_error(ctx, "cuDNN: %s", cudnnGetErrorString(s));
  if (!st && dx) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int got = 0, pick = -1;
    algo_key key = key_of(BWD_DATA, g, limit, true);
    algo_entry *e = algo_slot(d, &key);
    if (e && e->used) {
      perf[0].algo = (cudnnConvolutionBwdDataAlgo_t)e->algo;
      perf[0].memory = e->bytes;
      pick = 0;
    } else {
      s = key.exhaustive ? cudnnFindConvolutionBackwardDataAlgorithm(d->dnn, c.w, c.y, c.conv, c.x,
                                                                     CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf)
                         : cudnnGetConvolutionBackwardDataAlgorithm_v7(d->dnn, c.w, c.y, c.conv, c.x,
                                                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf);
      if (!s) pick = PICK_ALGO(perf, got, limit, true);
      if (e && pick >= 0) *e = (algo_entry){.key = key, .used = true, .algo = perf[pick].algo, .bytes = perf[pick].memory};
    }
    void *ws = NULL;
    size_t bytes = pick >= 0 ? perf[pick].memory : 0;
    st = algo_workspace(ctx, d, s, pick, bytes, limit, "backward data", &ws);
    if (!st && (s = cudnnConvolutionBackwardData(d->dnn, &one, c.w, w, c.y, dy, c.conv, perf[pick].algo, ws, bytes,
                                                 &zero, c.x, dx)))
      st = rill_kernel_error(ctx, "cudnnConvolutionBackwardData: %s", cudnnGetErrorString(s));
    rill_cuda_mem_free(d, ws); /* queued behind the convolution that uses it */
  }
  if (!st && dw) {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int got = 0, pick = -1;
    algo_key key = key_of(BWD_FILTER, g, limit, true);
    algo_entry *e = algo_slot(d, &key);
    if (e && e->used) {
      perf[0].algo = (cudnnConvolutionBwdFilterAlgo_t)e->algo;
      perf[0].memory = e->bytes;
      pick = 0;
    } else {
      s = key.exhaustive
              ? cudnnFindConvolutionBackwardFilterAlgorithm(d->dnn, c.x, c.y, c.conv, c.w,
                                                            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf)
              : cudnnGetConvolutionBackwardFilterAlgorithm_v7(d->dnn, c.x, c.y, c.conv, c.w,
                                                              CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, perf);
      if (!s) pick = PICK_ALGO(perf, got, limit, true);
      if (e && pick >= 0) *e = (algo_entry){.key = key, .used = true, .algo = perf[pick].algo, .bytes = perf[pick].memory};
    }
    void *ws = NULL;
    size_t bytes = pick >= 0 ? perf[pick].memory : 0;
    st = algo_workspace(ctx, d, s, pick, bytes, limit, "backward filter", &ws);
    if (!st && (s = cudnnConvolutionBackwardFilter(d->dnn, &one, c.x, x, c.y, dy, c.conv, perf[pick].algo, ws, bytes,
                                                   &zero, c.w, dw)))
      st = rill_kernel_error(ctx, "cudnnConvolutionBackwardFilter: %s", cudnnGetErrorString(s));
    rill_cuda_mem_free(d, ws);
  }
  conv_desc_destroy(&c);
  pthread_mutex_unlock(&d->lock);
  return st;
}

/* ---- uneven paddings ----
 * cuDNN pads both sides of an axis alike. A convolution padded unevenly runs on a copy
 * of its image grown by the paddings (zeros around it) with no padding of its own: the
 * same sums over the same taps. Its data gradient is computed in the grown shape and
 * its interior copied out (the border's gradient is the padding's, dropped). */

static bool uneven(const rill_cuda_conv *g) {
  for (int i = 0; i < g->nsp; i++)
    if (g->lo[i] != g->hi[i]) return true;
  return false;
}

/* g over its image grown by its paddings, unpadded. */
static rill_cuda_conv grown(const rill_cuda_conv *g) {
  rill_cuda_conv gg = *g;
  for (int i = 0; i < g->nsp; i++) {
    gg.in[i] = g->in[i] + g->lo[i] + g->hi[i];
    gg.lo[i] = gg.hi[i] = 0;
  }
  return gg;
}

static int64_t image_numel(const rill_cuda_conv *g) {
  int64_t n = g->n * g->c;
  for (int i = 0; i < g->nsp; i++) n *= g->in[i];
  return n;
}

/* Copies the packed image x into the interior of the grown one (`into`), or the
 * interior back out into packed x (!into), on d's stream. */
static rill_status *interior_copy(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g, float *x,
                                  float *big, bool into) {
  rill_cuda_conv gg = grown(g);
  int64_t inner = g->last ? g->c : 1; /* elements per spatial position */
  int64_t stride[3], offset = 0, run = inner; /* the grown spatial dims' strides, in elements */
  for (int i = g->nsp - 1; i >= 0; i--) {
    stride[i] = run;
    run *= gg.in[i];
  }
  /* run: the grown elements of a sample (channels last) or of one of its channels */
  rill_cuda_perm p = {.numel = image_numel(g), .scatter = into};
  bool ok = g->last ? rill_cuda_walk_add(&p, g->n, run) : rill_cuda_walk_add(&p, g->n * g->c, run);
  for (int i = 0; ok && i < g->nsp; i++) {
    offset += g->lo[i] * stride[i];
    ok = i + 1 < g->nsp ? rill_cuda_walk_add(&p, g->in[i], stride[i])
                        : rill_cuda_walk_add(&p, g->in[i] * inner, 1); /* the last dim and the channels: one run */
  }
  if (!ok) return rill_kernel_error(ctx, "padding walk of more than %d dims", RILL_CUDA_BCAST_DIMS);
  float *at = big + offset;
  cudaError_t e = into ? rill_cuda_permute(x, at, &p, sizeof(float), d->stream)
                       : rill_cuda_permute(at, x, &p, sizeof(float), d->stream);
  return rill_cuda_kernel_check(ctx, e, into ? "padding the input" : "cropping the input's gradient");
}

/* A block from d's pool for g's grown image, zeroed when `zero`; NULL with the error. */
static rill_status *grown_block(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g, bool zero,
                                float **out) {
  rill_cuda_conv gg = grown(g);
  size_t bytes = (size_t)image_numel(&gg) * sizeof(float);
  if (!(*out = rill_cuda_mem_alloc(d, bytes)))
    return rill_kernel_error(ctx, "out of device memory for the %zu-byte padded copy of the input", bytes);
  cudaError_t e = zero ? cudaMemsetAsync(*out, 0, bytes, d->stream) : cudaSuccess;
  rill_status *st = rill_cuda_kernel_check(ctx, e, "clearing the padded input");
  if (st) {
    rill_cuda_mem_free(d, *out);
    *out = NULL;
  }
  return st;
}

/* The grown copy of x (its padding zeros), or x itself when g's paddings are even. The
 * caller frees a copy (*copy) once its users are queued. */
static rill_status *padded_input(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g, const float *x,
                                 const float **use, float **copy) {
  *use = x;
  *copy = NULL;
  if (!uneven(g)) return NULL;
  RILL_TRY(grown_block(ctx, d, g, true, copy));
  rill_status *st = interior_copy(ctx, d, g, (float *)x, *copy, true);
  if (st) {
    rill_cuda_mem_free(d, *copy);
    *copy = NULL;
    return st;
  }
  *use = *copy;
  return NULL;
}

rill_status *rill_cuda_conv_forward(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g, size_t limit,
                                    const float *x, const float *w, float *y, const rill_cuda_conv_fused *fused) {
  const float *use;
  float *copy;
  RILL_TRY(padded_input(ctx, d, g, x, &use, &copy));
  rill_cuda_conv gg = copy ? grown(g) : *g;
  rill_status *st = forward_even(ctx, d, &gg, limit, use, w, y, fused);
  rill_cuda_mem_free(d, copy); /* queued behind the convolution */
  return st;
}

rill_status *rill_cuda_conv_backward(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g, size_t limit,
                                     const float *x, const float *w, const float *dy, float *dx, float *dw) {
  if (!uneven(g)) return backward_even(ctx, d, g, limit, x, w, dy, dx, dw);
  float *xcopy = NULL, *dbig = NULL;
  rill_status *st = dw ? padded_input(ctx, d, g, x, &x, &xcopy) : NULL;
  if (!st && dx) st = grown_block(ctx, d, g, false, &dbig);
  rill_cuda_conv gg = grown(g);
  if (!st) st = backward_even(ctx, d, &gg, limit, x, w, dy, dbig, dw);
  if (!st && dx) st = interior_copy(ctx, d, g, dx, dbig, false);
  rill_cuda_mem_free(d, xcopy); /* both queued behind their last users */
  rill_cuda_mem_free(d, dbig);
  return st;
}

rill_status *rill_cuda_conv_transpose_backward(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_cuda_conv *g,
                                               size_t limit, const float *x, const float *w, const float *dy,
                                               float *dx, float *dw) {
  if (dx) RILL_TRY(rill_cuda_conv_forward(ctx, d, g, limit, dy, w, dx, NULL));
  return dw ? rill_cuda_conv_backward(ctx, d, g, limit, dy, NULL, x, NULL, dw) : NULL;
}

rill_status *rill_cuda_conv_zero_grads(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_tensor *dx, rill_tensor *dw) {
  cudaError_t e = cudaSuccess;
  if (dx && rill_tensor_nbytes(dx)) e = cudaMemsetAsync(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx), d->stream);
  if (e == cudaSuccess && dw && rill_tensor_nbytes(dw))
    e = cudaMemsetAsync(rill_tensor_ptr(dw), 0, rill_tensor_nbytes(dw), d->stream);
  return rill_cuda_kernel_check(ctx, e, "clearing the gradients");
}
