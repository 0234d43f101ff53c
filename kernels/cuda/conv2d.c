/* conv2d and depthwise_conv2d CUDA kernels, float32, NCHW or NHWC (the filter OIHW in
 * both, as Paddle keeps it: cuDNN's KCRS beside NHWC tensors), on cuDNN: the geometry from
 * operators/nn.h (strides, dilations, groups, paddings with Paddle's SAME and VALID),
 * the algorithm picked by cuDNN's heuristics (or, with RILL_CUDNN_EXHAUSTIVE=1, by
 * timing every algorithm once) among those whose workspace fits workspace_size_MB (512
 * when unset), and kept per device and shape, so each shape is asked about once; the
 * workspace from the caching allocator. No TF32 unless RILL_CUDA_TF32=1
 * (CUDNN_FMA_MATH). Asymmetric paddings (Paddle's SAME at stride 2, four-value
 * paddings), which cuDNN does not take, convolve a zero-padded copy of the input. The
 * Bias and ResidualData inputs
 * of the plain op are errors naming them. */
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cuda/cuda.h"
#include "operators/fused_act.h"
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
  cudnnTensorFormat_t fmt = g->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  if ((s = cudnnCreateTensorDescriptor(&c->x)) || (s = cudnnCreateTensorDescriptor(&c->y)) ||
      (s = cudnnCreateFilterDescriptor(&c->w)) || (s = cudnnCreateConvolutionDescriptor(&c->conv)))
    return s;
  if ((s = cudnnSetTensor4dDescriptor(c->x, fmt, CUDNN_DATA_FLOAT, (int)g->n, (int)g->c, (int)g->h, (int)g->w)) ||
      (s = cudnnSetTensor4dDescriptor(c->y, fmt, CUDNN_DATA_FLOAT, (int)g->n, (int)g->m, (int)g->oh, (int)g->ow)) ||
      (s = cudnnSetFilter4dDescriptor(c->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)g->m, (int)(g->c / g->groups),
                                      (int)g->kh, (int)g->kw)) ||
      (s = cudnnSetConvolution2dDescriptor(c->conv, (int)g->pt, (int)g->pl, (int)g->sh, (int)g->sw, (int)g->dh,
                                           (int)g->dw, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)) ||
      (s = cudnnSetConvolutionGroupCount(c->conv, (int)g->groups)))
    return s;
  return cudnnSetConvolutionMathType(c->conv, rill_cuda_allow_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH);
}

/* The workspace cap: attribute workspace_size_MB (at position `attr`),
 * DEFAULT_WORKSPACE_MB when unset. */
static size_t workspace_limit(const rill_kernel_ctx *ctx, size_t attr) {
  int64_t mb = ctx->attrs[attr].v.i;
  return (size_t)(mb > 0 ? mb : DEFAULT_WORKSPACE_MB) << 20;
}

/* ---- the algorithm cache ----
 * One entry per (direction, geometry, workspace cap, determinism asked, math mode,
 * search): the algorithm and its workspace. Open addressing over a fixed table; when
 * it is full, further shapes are asked about on every call (still correct). */
#define ALGO_SLOTS 512

enum { FWD, BWD_DATA, BWD_FILTER };

typedef struct algo_key {
  int64_t geom[15];
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

static algo_key key_of(int dir, const rill_conv_geom *g, size_t limit, bool deterministic) {
  algo_key k;
  memset(&k, 0, sizeof k); /* padding too: keys are compared as bytes */
  const int64_t v[15] = {g->n,  g->c,  g->h,  g->w,  g->m,  g->kh, g->kw, g->groups,
                         g->sh, g->sw, g->dh, g->dw, g->pt, g->pl, g->nhwc};
  memcpy(k.geom, v, sizeof v);
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

/* An epilogue cuDNN fuses into the convolution: y = relu(conv + res + bias[channel]),
 * res optional (cudnnConvolutionBiasActivationForward takes relu, and identity with one
 * algorithm only, so only relu is fused). */
typedef struct conv_fused {
  const float *bias, *res;
} conv_fused;

/* cuDNN's fused convolution, bias, residual and relu (NaN propagated, as the CPU's relu
 * keeps it) on the descriptors of c. */
static cudnnStatus_t fused_forward(rill_cuda_dev *d, const conv_desc *c, const rill_conv_geom *g,
                                   const conv_fused *f, const float *x, const float *w, float *y,
                                   cudnnConvolutionFwdAlgo_t algo, void *ws, size_t bytes) {
  cudnnTensorDescriptor_t bias = NULL;
  cudnnActivationDescriptor_t act = NULL;
  cudnnStatus_t s;
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

/* Runs the convolution under d's lock (the cuDNN handle is d's), its workspace capped
 * at `limit` bytes; with `fused`, its epilogue too. */
static rill_status *conv_forward(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_conv_geom *g, size_t limit,
                                 const float *x, const float *w, float *y, const conv_fused *fused) {
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

/* The geometry of Input x and Filter f under the op's attributes (NHWC refused unless
 * allow_nhwc, as the CPU kernel refuses it); for a transposed convolution
 * (`transpose`), in convolution terms. */
static rill_status *conv_geom(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *f, bool transpose,
                              bool allow_nhwc, rill_conv_geom *g) {
  char err[256];
  if (!rill_nn_conv_geom_fmt(ctx->attrs, transpose, allow_nhwc, &x->dims, &f->dims, g, err, sizeof err))
    return rill_kernel_error(ctx, "%s", err);
  return NULL;
}

/* ---- asymmetric paddings ----
 * cuDNN pads both sides of an axis alike. A convolution padded unevenly runs on a copy
 * of its input grown by the paddings (zeros around it) with no padding of its own: the
 * same sums over the same taps. Its data gradient is computed in the grown shape and
 * its interior copied out (the border's gradient is the padding's, dropped). A
 * transposed convolution, being the data gradient, is computed the same way. */

static bool asymmetric(const rill_conv_geom *g) { return g->pt != g->pb || g->pl != g->pr; }

/* g over its input grown by its paddings, unpadded. */
static rill_conv_geom grown(const rill_conv_geom *g) {
  rill_conv_geom gg = *g;
  gg.h = g->h + g->pt + g->pb;
  gg.w = g->w + g->pl + g->pr;
  gg.pt = gg.pb = gg.pl = gg.pr = 0;
  return gg;
}

/* Copies packed x [n, c, h, w] (NHWC: [n, h, w, c]) into the interior of the grown
 * tensor (`into`) or the interior back out into packed x (!into), on d's stream. */
static rill_status *interior_copy(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_conv_geom *g, float *x,
                                  float *big, bool into) {
  int64_t gh = g->h + g->pt + g->pb, gw = g->w + g->pl + g->pr;
  rill_cuda_perm p = {.numel = g->n * g->c * g->h * g->w, .scatter = into};
  bool ok = g->nhwc ? rill_cuda_walk_add(&p, g->n, gh * gw * g->c) && rill_cuda_walk_add(&p, g->h, gw * g->c) &&
                          rill_cuda_walk_add(&p, g->w * g->c, 1)
                    : rill_cuda_walk_add(&p, g->n * g->c, gh * gw) && rill_cuda_walk_add(&p, g->h, gw) &&
                          rill_cuda_walk_add(&p, g->w, 1);
  if (!ok) return rill_kernel_error(ctx, "padding walk of more than %d dims", RILL_CUDA_BCAST_DIMS);
  float *at = big + (g->pt * gw + g->pl) * (g->nhwc ? g->c : 1);
  cudaError_t e = into ? rill_cuda_permute(x, at, &p, sizeof(float), d->stream)
                       : rill_cuda_permute(at, x, &p, sizeof(float), d->stream);
  return rill_cuda_kernel_check(ctx, e, into ? "padding the input" : "cropping Input@GRAD");
}

/* A block from d's pool for g's grown input, zeroed when `zero`; NULL with the error. */
static rill_status *grown_block(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_conv_geom *g, bool zero,
                                float **out) {
  rill_conv_geom gg = grown(g);
  size_t bytes = (size_t)(gg.n * gg.c * gg.h * gg.w) * sizeof(float);
  if (!(*out = rill_cuda_mem_alloc(d, bytes)))
    return rill_kernel_error(ctx, "out of device memory for the %zu-byte padded copy of input Input (%s)", bytes,
                             rill_kin_name(ctx, RILL_CONV2D_IN_INPUT, 0));
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
static rill_status *padded_input(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_conv_geom *g, const float *x,
                                 const float **use, float **copy) {
  *use = x;
  *copy = NULL;
  if (!asymmetric(g)) return NULL;
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

/* conv_forward, through a padded copy of x when g's paddings are uneven. */
static rill_status *conv_forward_any(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_conv_geom *g, size_t limit,
                                     const float *x, const float *w, float *y, const conv_fused *fused) {
  const float *use;
  float *copy;
  RILL_TRY(padded_input(ctx, d, g, x, &use, &copy));
  rill_conv_geom gg = copy ? grown(g) : *g;
  rill_status *st = conv_forward(ctx, d, &gg, limit, use, w, y, fused);
  rill_cuda_mem_free(d, copy); /* queued behind the convolution */
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
  RILL_TRY(conv_geom(ctx, x, f, false, true, &g));
  rill_dims want = rill_nn_conv_out_dims(&g);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_OUT_OUTPUT, 0, out, &want));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return conv_forward_any(ctx, d, &g, workspace_limit(ctx, RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB), rill_tensor_ptr(x),
                          rill_tensor_ptr(f), rill_tensor_ptr(out), NULL);
}

/* ---- conv2d_fusion ---- */

_Static_assert(RILL_SAME_POS(RILL_CONV2D_FUSION_ATTR_WORKSPACE_SIZE_MB, RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_CONV2D_FUSION_IN_INPUT, RILL_CONV2D_IN_INPUT) &&
                   RILL_SAME_POS(RILL_CONV2D_FUSION_IN_FILTER, RILL_CONV2D_IN_FILTER) &&
                   RILL_FUSED_IDENTITY == 0 && RILL_FUSED_RELU == 1 && RILL_FUSED_RELU6 == 2 &&
                   RILL_FUSED_SIGMOID == 3 && RILL_FUSED_TANH == 4,
               "conv2d_fusion reads conv2d's geometry; the epilogue numbers the activations as fused_act.h");

/* conv2d_fusion (the inference passes' conv + bias [+ residual] + activation), float32,
 * NCHW: with relu, one cuDNN call (cudnnConvolutionBiasActivationForward); with the
 * other activations, the convolution on cuDNN, then one epilogue pass in place, in the
 * CPU kernel's order (bias, residual, activation). */
rill_status *rill_cuda_conv2d_fusion_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *f = NULL, *b = NULL, *res = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_FUSION_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_FUSION_IN_FILTER, 0, RILL_DTYPE_FP32, &f));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_FUSION_IN_BIAS, 0, RILL_DTYPE_FP32, &b));
  if (rill_kin(ctx, RILL_CONV2D_FUSION_IN_RESIDUAL_DATA, 0))
    RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_FUSION_IN_RESIDUAL_DATA, 0, RILL_DTYPE_FP32, &res));
  RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_FUSION_OUT_OUTPUT, 0, RILL_DTYPE_FP32, &out));
  rill_fused_act act = rill_fused_act_of(&ctx->attrs[RILL_CONV2D_FUSION_ATTR_ACTIVATION], false);
  if (act == RILL_FUSED_UNKNOWN)
    return rill_kernel_error(ctx, "activation '%s' is not supported (identity, relu, relu6, sigmoid, tanh)",
                             ctx->attrs[RILL_CONV2D_FUSION_ATTR_ACTIVATION].v.s);
  rill_conv_geom g;
  RILL_TRY(conv_geom(ctx, x, f, false, false, &g));
  rill_dims want = rill_nn_conv_out_dims(&g);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_FUSION_OUT_OUTPUT, 0, out, &want));
  if (rill_tensor_numel(b) != g.m)
    return rill_kernel_error(ctx, "Bias (%s) holds %lld values for %lld output channels",
                             rill_kin_name(ctx, RILL_CONV2D_FUSION_IN_BIAS, 0), (long long)rill_tensor_numel(b),
                             (long long)g.m);
  if (res && !rill_dims_equal(&res->dims, &out->dims))
    return rill_kernel_error(ctx, "ResidualData (%s) does not have the output's shape",
                             rill_kin_name(ctx, RILL_CONV2D_FUSION_IN_RESIDUAL_DATA, 0));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  size_t limit = workspace_limit(ctx, RILL_CONV2D_FUSION_ATTR_WORKSPACE_SIZE_MB);
  if (act == RILL_FUSED_RELU) {
    conv_fused fused = {rill_tensor_ptr(b), res ? rill_tensor_ptr(res) : NULL};
    return conv_forward_any(ctx, d, &g, limit, rill_tensor_ptr(x), rill_tensor_ptr(f), rill_tensor_ptr(out), &fused);
  }
  RILL_TRY(conv_forward_any(ctx, d, &g, limit, rill_tensor_ptr(x), rill_tensor_ptr(f), rill_tensor_ptr(out), NULL));
  return rill_cuda_kernel_check(ctx,
                                rill_cuda_conv_epilogue_f32(rill_tensor_ptr(out), rill_tensor_ptr(b),
                                                            res ? rill_tensor_ptr(res) : NULL, rill_tensor_numel(out),
                                                            g.m, g.oh * g.ow, (int)act, d->stream),
                                "conv2d_fusion epilogue launch");
}

/* ---- conv2d_grad, depthwise_conv2d_grad ---- */

_Static_assert(RILL_SAME_POS(RILL_CONV2D_GRAD_ATTR_WORKSPACE_SIZE_MB, RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_GRAD_ATTR_WORKSPACE_SIZE_MB, RILL_CONV2D_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_GRAD_IN_OUTPUT_GRAD, RILL_CONV2D_GRAD_IN_OUTPUT_GRAD) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_GRAD_OUT_FILTER_GRAD, RILL_CONV2D_GRAD_OUT_FILTER_GRAD),
               "one gradient kernel serves conv2d and depthwise_conv2d: their slots and attributes must agree");

/* Input@GRAD (dx) and Filter@GRAD (dw), either NULL, under d's lock: cuDNN's backward
 * data and backward filter, each with the first deterministic algorithm of its
 * heuristics that fits the workspace cap (so two runs give the same bits). */
static rill_status *conv_backward(rill_kernel_ctx *ctx, rill_cuda_dev *d, const rill_conv_geom *g, size_t limit,
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

/* The operands of a convolution's gradient op (conv2d_grad and conv2d_transpose_grad
 * keep them at the same positions): Input, Filter and Output@GRAD, the gradients wanted
 * (NULL when not) checked against Input's and Filter's shapes, the geometry (`transpose`:
 * the transposed op's, in convolution terms) and the device. */
_Static_assert(RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_IN_INPUT, RILL_CONV2D_GRAD_IN_INPUT) &&
                   RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_IN_FILTER, RILL_CONV2D_GRAD_IN_FILTER) &&
                   RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_IN_OUTPUT_GRAD, RILL_CONV2D_GRAD_IN_OUTPUT_GRAD) &&
                   RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_OUT_INPUT_GRAD, RILL_CONV2D_GRAD_OUT_INPUT_GRAD) &&
                   RILL_SAME_POS(RILL_CONV2D_TRANSPOSE_GRAD_OUT_FILTER_GRAD, RILL_CONV2D_GRAD_OUT_FILTER_GRAD),
               "the convolution gradients keep their operands at the same positions");
typedef struct conv_grad_args {
  rill_tensor *x, *f, *dy, *dx, *dw;
  rill_conv_geom g;
  rill_cuda_dev *d;
} conv_grad_args;

/* Fills *a; *done when nothing is left to compute (no gradient wanted, or none flows
 * through an empty tensor: the wanted ones are then zeroed). */
static rill_status *conv_grad_args_get(rill_kernel_ctx *ctx, bool transpose, conv_grad_args *a, bool *done) {
  memset(a, 0, sizeof *a);
  *done = true;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_GRAD_IN_INPUT, 0, RILL_DTYPE_FP32, &a->x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_GRAD_IN_FILTER, 0, RILL_DTYPE_FP32, &a->f));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_GRAD_IN_OUTPUT_GRAD, 0, RILL_DTYPE_FP32, &a->dy));
  if (rill_kout(ctx, RILL_CONV2D_GRAD_OUT_INPUT_GRAD, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_GRAD_OUT_INPUT_GRAD, 0, RILL_DTYPE_FP32, &a->dx));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_GRAD_OUT_INPUT_GRAD, 0, a->dx, &a->x->dims));
  }
  if (rill_kout(ctx, RILL_CONV2D_GRAD_OUT_FILTER_GRAD, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_GRAD_OUT_FILTER_GRAD, 0, RILL_DTYPE_FP32, &a->dw));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_GRAD_OUT_FILTER_GRAD, 0, a->dw, &a->f->dims));
  }
  if (!a->dx && !a->dw) return NULL;
  RILL_TRY(conv_geom(ctx, a->x, a->f, transpose, true, &a->g));
  /* Output@GRAD has the forward's output shape: the convolution's output, or its input
   * for the transposed op. */
  rill_dims want = transpose ? rill_nn_convt_out_dims(&a->g) : rill_nn_conv_out_dims(&a->g);
  RILL_TRY(rill_kin_check_dims(ctx, RILL_CONV2D_GRAD_IN_OUTPUT_GRAD, a->dy, &want));
  RILL_TRY(rill_cuda_kernel_dev(ctx, a->dx ? a->dx : a->dw, &a->d));
  if (rill_tensor_numel(a->dy) && rill_tensor_numel(a->x)) {
    *done = false;
    return NULL;
  }
  cudaError_t e = cudaSuccess;
  if (a->dx && rill_tensor_nbytes(a->dx))
    e = cudaMemsetAsync(rill_tensor_ptr(a->dx), 0, rill_tensor_nbytes(a->dx), a->d->stream);
  if (e == cudaSuccess && a->dw && rill_tensor_nbytes(a->dw))
    e = cudaMemsetAsync(rill_tensor_ptr(a->dw), 0, rill_tensor_nbytes(a->dw), a->d->stream);
  return rill_cuda_kernel_check(ctx, e, "clearing the gradients");
}

/* conv2d_grad and depthwise_conv2d_grad CUDA kernel, float32, NCHW or NHWC: Input@GRAD and
 * Filter@GRAD (either may be absent) from Input, Filter and Output@GRAD. */
rill_status *rill_cuda_conv2d_grad_fp32(rill_kernel_ctx *ctx) {
  conv_grad_args a;
  bool done;
  RILL_TRY(conv_grad_args_get(ctx, false, &a, &done));
  if (done) return NULL;
  size_t limit = workspace_limit(ctx, RILL_CONV2D_GRAD_ATTR_WORKSPACE_SIZE_MB);
  float *dx = a.dx ? rill_tensor_ptr(a.dx) : NULL, *dw = a.dw ? rill_tensor_ptr(a.dw) : NULL;
  if (!asymmetric(&a.g))
    return conv_backward(ctx, a.d, &a.g, limit, rill_tensor_ptr(a.x), rill_tensor_ptr(a.f), rill_tensor_ptr(a.dy),
                         dx, dw);
  /* uneven paddings: the filter's gradient against the padded input, the input's
   * computed in the padded shape and cropped */
  const float *x = rill_tensor_ptr(a.x);
  float *xcopy = NULL, *dbig = NULL;
  rill_status *st = dw ? padded_input(ctx, a.d, &a.g, x, &x, &xcopy) : NULL;
  if (!st && dx) st = grown_block(ctx, a.d, &a.g, false, &dbig);
  rill_conv_geom gg = grown(&a.g);
  if (!st) st = conv_backward(ctx, a.d, &gg, limit, x, rill_tensor_ptr(a.f), rill_tensor_ptr(a.dy), dbig, dw);
  if (!st && dx) st = interior_copy(ctx, a.d, &a.g, dx, dbig, false);
  rill_cuda_mem_free(a.d, xcopy); /* both queued behind their last users */
  rill_cuda_mem_free(a.d, dbig);
  return st;
}

/* ---- conv2d_transpose, depthwise_conv2d_transpose and their gradients ----
 * A transposed convolution is the gradient of a convolution with respect to its input:
 * in the geometry rill_nn_conv_geom gives it, the transposed op's Output is the
 * convolution's input, its Input the convolution's output, and its Filter [C_in, C_out /
 * groups, kh, kw] the convolution's filter. So Output = cuDNN's backward data of Input;
 * its Input@GRAD = the forward convolution of Output@GRAD, and its Filter@GRAD = the
 * backward filter of Output@GRAD against Input. */

_Static_assert(RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_IN_INPUT, RILL_CONV2D_TRANSPOSE_IN_INPUT) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_IN_FILTER, RILL_CONV2D_TRANSPOSE_IN_FILTER) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_ATTR_WORKSPACE_SIZE_MB,
                                 RILL_CONV2D_TRANSPOSE_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_GRAD_ATTR_WORKSPACE_SIZE_MB,
                                 RILL_CONV2D_TRANSPOSE_GRAD_ATTR_WORKSPACE_SIZE_MB) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_GRAD_IN_OUTPUT_GRAD,
                                 RILL_CONV2D_TRANSPOSE_GRAD_IN_OUTPUT_GRAD) &&
                   RILL_SAME_POS(RILL_DEPTHWISE_CONV2D_TRANSPOSE_GRAD_OUT_FILTER_GRAD,
                                 RILL_CONV2D_TRANSPOSE_GRAD_OUT_FILTER_GRAD),
               "one kernel serves conv2d_transpose and its depthwise form: their slots and attributes must agree");

rill_status *rill_cuda_conv2d_transpose_fp32(rill_kernel_ctx *ctx) {
  rill_tensor *x = NULL, *f = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_TRANSPOSE_IN_INPUT, 0, RILL_DTYPE_FP32, &x));
  RILL_TRY(rill_kin_need(ctx, RILL_CONV2D_TRANSPOSE_IN_FILTER, 0, RILL_DTYPE_FP32, &f));
  RILL_TRY(rill_kout_need(ctx, RILL_CONV2D_TRANSPOSE_OUT_OUTPUT, 0, RILL_DTYPE_FP32, &out));
  if (rill_kin(ctx, RILL_CONV2D_TRANSPOSE_IN_BIAS, 0)) return rill_kernel_error(ctx, "the Bias input must be absent");
  rill_conv_geom g;
  RILL_TRY(conv_geom(ctx, x, f, true, true, &g));
  rill_dims want = rill_nn_convt_out_dims(&g);
  RILL_TRY(rill_kout_check_dims(ctx, RILL_CONV2D_TRANSPOSE_OUT_OUTPUT, 0, out, &want));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  size_t limit = workspace_limit(ctx, RILL_CONV2D_TRANSPOSE_ATTR_WORKSPACE_SIZE_MB);
  if (!asymmetric(&g))
    return conv_backward(ctx, d, &g, limit, NULL, rill_tensor_ptr(f), rill_tensor_ptr(x), rill_tensor_ptr(out), NULL);
  /* uneven paddings: computed in the grown shape, its interior copied out */
  float *big = NULL;
  RILL_TRY(grown_block(ctx, d, &g, false, &big));
  rill_conv_geom gg = grown(&g);
  rill_status *st = conv_backward(ctx, d, &gg, limit, NULL, rill_tensor_ptr(f), rill_tensor_ptr(x), big, NULL);
  if (!st) st = interior_copy(ctx, d, &g, rill_tensor_ptr(out), big, false);
  rill_cuda_mem_free(d, big); /* queued behind its last user */
  return st;
}

rill_status *rill_cuda_conv2d_transpose_grad_fp32(rill_kernel_ctx *ctx) {
  conv_grad_args a;
  bool done;
  RILL_TRY(conv_grad_args_get(ctx, true, &a, &done));
  if (done) return NULL;
  size_t limit = workspace_limit(ctx, RILL_CONV2D_TRANSPOSE_GRAD_ATTR_WORKSPACE_SIZE_MB);
  if (a.dx)
    RILL_TRY(conv_forward_any(ctx, a.d, &a.g, limit, rill_tensor_ptr(a.dy), rill_tensor_ptr(a.f),
                              rill_tensor_ptr(a.dx), NULL));
  if (!a.dw) return NULL;
  /* Filter@GRAD: Output@GRAD (the convolution's input side) padded when uneven */
  const float *dy;
  float *copy;
  RILL_TRY(padded_input(ctx, a.d, &a.g, rill_tensor_ptr(a.dy), &dy, &copy));
  rill_conv_geom gg = copy ? grown(&a.g) : a.g;
  rill_status *st = conv_backward(ctx, a.d, &gg, limit, dy, NULL, rill_tensor_ptr(a.x), NULL, rill_tensor_ptr(a.dw));
  rill_cuda_mem_free(a.d, copy); /* queued behind the convolution */
  return st;
}
