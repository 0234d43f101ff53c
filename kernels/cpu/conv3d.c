/* conv3d CPU kernels: vol2col + GEMM (OpenBLAS). For each image and group, a block of
 * output depth slices is unfolded into a [C/g * kd*kh*kw, slices * OH*OW] column buffer
 * of at most ~4 MiB, then one GEMM with the group's filter rows writes those output
 * columns in place. A 1x1x1 filter with stride 1 and no padding multiplies the input
 * directly.
 *
 * conv3d_grad walks the same blocks: Filter@GRAD += Output@GRAD block x columns^T, and
 * Input@GRAD gets Filter^T x Output@GRAD block folded back (col2vol, summing the
 * overlapping taps).
 *
 * NDHWC runs the same code between transposes: channel-last Input / Output@GRAD (and
 * Output for conv3d_transpose) are copied to channel-first scratch tensors, and the
 * channel-first results transposed back; the Filter is OIDHW in both layouts. */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/channel_last.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
#include "operators/conv3d.h"

#define CONV3D_COL_BUDGET ((size_t)4 << 20)

/* Output depth slices per column block: as many as CONV3D_COL_BUDGET bytes of columns
 * (kc rows of plane entries per slice, esize bytes each) hold, at least 1, at most od. */
static int64_t conv3d_block_depth(size_t esize, int64_t kc, int64_t plane, int64_t od) {
  int64_t bd = (int64_t)(CONV3D_COL_BUDGET / esize) / (kc * plane);
  if (bd < 1) bd = 1;
  return bd > od ? od : bd;
}

/* The columns of output depth slices [od0, od0 + nb) of one group's image: when back is
 * false, col[kc][nb * plane] is filled from img; when true, col is added into img. */
#define CONV3D_COLS(T, SUFFIX)                                                                \
  static void conv3d_cols_##SUFFIX(const conv3d_geom *g, int64_t cg, T *img, T *col,          \
                                   int64_t od0, int64_t nb, bool back) {                      \
    int64_t D = g->in[0], H = g->in[1], W = g->in[2], OH = g->out[1], OW = g->out[2];         \
    int64_t ncols = nb * OH * OW;                                                             \
    T *row = col;                                                                             \
    for (int64_t ci = 0; ci < cg; ci++)                                                       \
      for (int64_t a = 0; a < g->k[0]; a++)                                                   \
        for (int64_t b = 0; b < g->k[1]; b++)                                                 \
          for (int64_t c = 0; c < g->k[2]; c++, row += ncols) {                               \
            T *dst = row;                                                                     \
            for (int64_t o0 = od0; o0 < od0 + nb; o0++) {                                     \
              int64_t id = o0 * g->s[0] - g->p[0] + a * g->d[0];                              \
              for (int64_t o1 = 0; o1 < OH; o1++, dst += OW) {                                \
                int64_t ih = o1 * g->s[1] - g->p[2] + b * g->d[1];                            \
                if (id < 0 || id >= D || ih < 0 || ih >= H) {                                 \
                  if (!back) memset(dst, 0, (size_t)OW * sizeof(T));                          \
                  continue;                                                                   \
                }                                                                             \
                T *src = img + (ci * D + id) * H * W + ih * W;                                \
                int64_t iw0 = -g->p[4] + c * g->d[2];                                         \
                for (int64_t o2 = 0; o2 < OW; o2++) {                                         \
                  int64_t iw = iw0 + o2 * g->s[2];                                            \
                  bool in = iw >= 0 && iw < W;                                                \
                  if (back) {                                                                 \
                    if (in) src[iw] += dst[o2];                                               \
                  } else {                                                                    \
                    dst[o2] = in ? src[iw] : (T)0;                                            \
                  }                                                                           \
                }                                                                             \
              }                                                                               \
            }                                                                                 \
          }                                                                                   \
  }

CONV3D_COLS(float, f32)
CONV3D_COLS(double, f64)

#define CONV3D_FWD(T, SUF, GEMM)                                                              \
  static rill_status *conv3d_fwd_##SUF(rill_kernel_ctx *ctx, const conv3d_geom *gp, T *xp,    \
                                       const T *fp, T *op) {                                  \
    conv3d_geom g = *gp;                                                                      \
    int64_t cg = g.c / g.groups, mg = g.m / g.groups;                                         \
    int64_t kvol = g.k[0] * g.k[1] * g.k[2], kc = cg * kvol;                                  \
    int64_t D = g.in[0], H = g.in[1], W = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2]; \
    int64_t ivol = D * H * W, ovol = OD * OH * OW, plane = OH * OW;                           \
    if (g.n * g.m * ovol == 0) return NULL;                                                   \
    if (kc > INT_MAX || ovol > INT_MAX || mg > INT_MAX)                                       \
      return rill_kernel_error(ctx, "Input (%s): convolution too large for BLAS",             \
                               rill_kin_name(ctx, 0, 0));                                     \
    if (kc == 0) {                                                                            \
      memset(op, 0, (size_t)(g.n * g.m * ovol) * sizeof(T));                                  \
      return NULL;                                                                            \
    }                                                                                         \
    bool pointwise = kvol == 1;                                                               \
    for (int i = 0; i < 3; i++)                                                               \
      pointwise = pointwise && g.s[i] == 1 && g.p[2 * i] == 0 && g.p[2 * i + 1] == 0;         \
    if (pointwise) {                                                                          \
      for (int64_t n = 0; n < g.n; n++)                                                       \
        for (int64_t gi = 0; gi < g.groups; gi++)                                             \
          GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg, (int)ovol, (int)kc, 1,     \
               fp + gi * mg * kc, (int)kc, xp + (n * g.c + gi * cg) * ivol, (int)ivol, 0,     \
               op + (n * g.m + gi * mg) * ovol, (int)ovol);                                   \
      return NULL;                                                                            \
    }                                                                                         \
    int64_t bd = conv3d_block_depth(sizeof(T), kc, plane, OD);                                \
    T *col = rill_aligned_alloc((size_t)(kc * bd * plane) * sizeof(T), RILL_TENSOR_ALIGN);    \
    if (!col) return rill_oom();                                                              \
    for (int64_t n = 0; n < g.n; n++)                                                         \
      for (int64_t gi = 0; gi < g.groups; gi++) {                                             \
        T *img = xp + (n * g.c + gi * cg) * ivol;                                             \
        for (int64_t od0 = 0; od0 < OD; od0 += bd) {                                          \
          int64_t nb = OD - od0 < bd ? OD - od0 : bd, ncols = nb * plane;                     \
          conv3d_cols_##SUF(&g, cg, img, col, od0, nb, false);                                \
          GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg, (int)ncols, (int)kc, 1,    \
               fp + gi * mg * kc, (int)kc, col, (int)ncols, 0,                                \
               op + (n * g.m + gi * mg) * ovol + od0 * plane, (int)ovol);                     \
        }                                                                                     \
      }                                                                                       \
    rill_free(col);                                                                           \
    return NULL;                                                                              \
  }

#define CONV3D_BWD(T, SUF, GEMM)                                                              \
  /* dx and df (either may be NULL) are overwritten */                                        \
  static rill_status *conv3d_bwd_##SUF(rill_kernel_ctx *ctx, const conv3d_geom *gp, T *xp,    \
                                       const T *fp, const T *dyp, T *dxp, T *dfp) {           \
    conv3d_geom g = *gp;                                                                      \
    int64_t cg = g.c / g.groups, mg = g.m / g.groups;                                         \
    int64_t kc = cg * g.k[0] * g.k[1] * g.k[2];                                               \
    int64_t OD = g.out[0], plane = g.out[1] * g.out[2], ovol = OD * plane;                    \
    int64_t ivol = g.in[0] * g.in[1] * g.in[2];                                               \
    if (dxp) memset(dxp, 0, (size_t)(g.n * g.c * ivol) * sizeof(T));                          \
    if (dfp) memset(dfp, 0, (size_t)(g.m * kc) * sizeof(T));                                  \
    if ((!dxp && !dfp) || kc == 0 || g.n * g.m * ovol == 0) return NULL;                      \
    if (kc > INT_MAX || ovol > INT_MAX || mg > INT_MAX)                                       \
      return rill_kernel_error(ctx, "Input (%s): convolution too large for BLAS",             \
                               rill_kin_name(ctx, 0, 0));                                     \
    int64_t bd = conv3d_block_depth(sizeof(T), kc, plane, OD);                                \
    T *col = rill_aligned_alloc((size_t)(kc * bd * plane) * sizeof(T), RILL_TENSOR_ALIGN);    \
    if (!col) return rill_oom();                                                              \
    for (int64_t n = 0; n < g.n; n++)                                                         \
      for (int64_t gi = 0; gi < g.groups; gi++) {                                             \
        int64_t img = (n * g.c + gi * cg) * ivol;                                             \
        for (int64_t od0 = 0; od0 < OD; od0 += bd) {                                          \
          int64_t nb = OD - od0 < bd ? OD - od0 : bd, ncols = nb * plane;                     \
          const T *dyb = dyp + (n * g.m + gi * mg) * ovol + od0 * plane;                      \
          if (dfp) {                                                                          \
            conv3d_cols_##SUF(&g, cg, xp + img, col, od0, nb, false);                         \
            GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mg, (int)kc, (int)ncols, 1,    \
                 dyb, (int)ovol, col, (int)ncols, 1, dfp + gi * mg * kc, (int)kc);            \
          }                                                                                   \
          if (dxp) {                                                                          \
            GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)kc, (int)ncols, (int)mg, 1,    \
                 fp + gi * mg * kc, (int)kc, dyb, (int)ovol, 0, col, (int)ncols);             \
            conv3d_cols_##SUF(&g, cg, dxp + img, col, od0, nb, true);                         \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
    rill_free(col);                                                                           \
    return NULL;                                                                              \
  }

CONV3D_FWD(float, f32, RILL_KERNEL_SGEMM)
CONV3D_FWD(double, f64, cblas_dgemm)
CONV3D_BWD(float, f32, RILL_KERNEL_SGEMM)
CONV3D_BWD(double, f64, cblas_dgemm)

#define CONV3D_RUN(dt, fn, ...) \
  ((dt) == RILL_DTYPE_FP32 ? fn##_f32(__VA_ARGS__) : fn##_f64(__VA_ARGS__))

static rill_status *conv3d_grad_out(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt,
                                    const rill_dims *want, rill_tensor **out) {
  *out = NULL;
  if (!rill_kout(ctx, slot, 0)) return NULL;
  RILL_TRY(rill_kout_need(ctx, slot, 0, dt, out));
  return rill_kout_check_dims(ctx, slot, 0, *out, want);
}

static void *conv3d_ptr(rill_tensor *t) { return t ? rill_tensor_ptr(t) : NULL; }

/* Channel-last tensors are met through channel-first scratch copies: cl holds them until
 * conv3d_cl_free. */
typedef struct conv3d_cl {
  rill_dtype dt;
  bool last;
  int64_t n;
  void *buf[4];
  int nbuf;
  bool oom;
} conv3d_cl;

/* t's data as [n, ch, vol] (NULL for an absent t): t itself when channels are first, else
 * a scratch copy of t transposed (copy) or left unset for an output (!copy). */
static void *conv3d_cf(conv3d_cl *cl, rill_tensor *t, int64_t ch, int64_t vol, bool copy) {
  if (!t) return NULL;
  if (!cl->last) return rill_tensor_ptr(t);
  void *s = rill_layout_scratch(cl->dt, cl->n * ch * vol);
  if (!s) {
    cl->oom = true;
    return NULL;
  }
  cl->buf[cl->nbuf++] = s;
  if (copy) rill_swap_last2(cl->dt, rill_tensor_ptr(t), s, cl->n, vol, ch);
  return s;
}

/* Writes the channel-first result s of output t back into t (channel last only). */
static void conv3d_cl_back(const conv3d_cl *cl, const void *s, rill_tensor *t, int64_t ch, int64_t vol) {
  if (cl->last && t && s) rill_swap_last2(cl->dt, s, rill_tensor_ptr(t), cl->n, ch, vol);
}

static void conv3d_cl_free(conv3d_cl *cl) {
  for (int i = 0; i < cl->nbuf; i++) rill_free(cl->buf[i]);
}

static int64_t conv3d_vol(const int64_t e[3]) { return e[0] * e[1] * e[2]; }

static rill_status *conv3d_forward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *x = NULL, *f = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, CONV3D_IN_INPUT, 0, dt, &x));
  RILL_TRY(rill_kin_need(ctx, CONV3D_IN_FILTER, 0, dt, &f));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &out));
  conv3d_geom g;
  const char *err = conv3d_geom_get(ctx->attrs, &x->dims, &f->dims, &g);
  if (err) return rill_kernel_error(ctx, "Input (%s): %s", rill_kin_name(ctx, 0, 0), err);
  rill_dims od = conv3d_dims(&g, g.m, g.out);
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));
  int64_t ivol = conv3d_vol(g.in), ovol = conv3d_vol(g.out);
  conv3d_cl cl = {.dt = dt, .last = g.last, .n = g.n};
  void *xp = conv3d_cf(&cl, x, g.c, ivol, true), *op = conv3d_cf(&cl, out, g.m, ovol, false);
  rill_status *st = cl.oom ? rill_oom() : CONV3D_RUN(dt, conv3d_fwd, ctx, &g, xp, rill_tensor_ptr(f), op);
  if (!st) conv3d_cl_back(&cl, op, out, g.m, ovol);
  conv3d_cl_free(&cl);
  return st;
}

/* What conv3d_grad and conv3d_transpose_grad share: Input, Filter and Output@GRAD of
 * dtype dt, the geometry (conv3d_transpose's when transpose), Output@GRAD checked against
 * the forward's output, and the gradient outputs (NULL where not wanted). */
static rill_status *conv3d_grad_setup(rill_kernel_ctx *ctx, rill_dtype dt, bool transpose,
                                      conv3d_geom *g, rill_tensor **x, rill_tensor **f,
                                      rill_tensor **dy, rill_tensor **dx, rill_tensor **df) {
  RILL_TRY(rill_kin_need(ctx, CONV3D_IN_INPUT, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, CONV3D_IN_FILTER, 0, dt, f));
  RILL_TRY(rill_kin_need(ctx, CONV3D_GRAD_IN_DOUT, 0, dt, dy));
  const rill_dims *xd = &(*x)->dims, *fd = &(*f)->dims;
  const char *err = transpose ? conv3d_transpose_geom_get(ctx->attrs, xd, fd, g)
                              : conv3d_geom_get(ctx->attrs, xd, fd, g);
  if (err) return rill_kernel_error(ctx, "Input (%s): %s", rill_kin_name(ctx, 0, 0), err);
  rill_dims od = transpose ? conv3d_dims(g, g->c, g->in) : conv3d_dims(g, g->m, g->out);
  RILL_TRY(rill_kin_check_dims(ctx, CONV3D_GRAD_IN_DOUT, *dy, &od));
  RILL_TRY(conv3d_grad_out(ctx, 0, dt, xd, dx));
  return conv3d_grad_out(ctx, 1, dt, fd, df);
}

static rill_status *conv3d_backward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *x = NULL, *f = NULL, *dy = NULL, *dx = NULL, *df = NULL;
  conv3d_geom g;
  RILL_TRY(conv3d_grad_setup(ctx, dt, false, &g, &x, &f, &dy, &dx, &df));
  if (!dx && !df) return NULL;
  int64_t ivol = conv3d_vol(g.in), ovol = conv3d_vol(g.out);
  conv3d_cl cl = {.dt = dt, .last = g.last, .n = g.n};
  /* Input is read only for Filter@GRAD */
  void *xp = conv3d_cf(&cl, df ? x : NULL, g.c, ivol, true);
  void *dyp = conv3d_cf(&cl, dy, g.m, ovol, true), *dxp = conv3d_cf(&cl, dx, g.c, ivol, false);
  rill_status *st = cl.oom ? rill_oom()
                           : CONV3D_RUN(dt, conv3d_bwd, ctx, &g, xp, rill_tensor_ptr(f), dyp, dxp,
                                        conv3d_ptr(df));
  if (!st) conv3d_cl_back(&cl, dxp, dx, g.c, ivol);
  conv3d_cl_free(&cl);
  return st;
}

rill_status *rill_cpu_conv3d_fp32(rill_kernel_ctx *ctx) { return conv3d_forward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_conv3d_fp64(rill_kernel_ctx *ctx) { return conv3d_forward(ctx, RILL_DTYPE_FP64); }
rill_status *rill_cpu_conv3d_grad_fp32(rill_kernel_ctx *ctx) { return conv3d_backward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_conv3d_grad_fp64(rill_kernel_ctx *ctx) { return conv3d_backward(ctx, RILL_DTYPE_FP64); }

/* conv3d_transpose: its Output is the equivalent conv3d's image and its Input the conv's
 * output, so the forward is the conv's data gradient, Input@GRAD the conv of
 * Output@GRAD, and Filter@GRAD the conv's filter gradient with Output@GRAD as image. */
static rill_status *convt3d_forward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *x = NULL, *f = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, CONV3D_IN_INPUT, 0, dt, &x));
  RILL_TRY(rill_kin_need(ctx, CONV3D_IN_FILTER, 0, dt, &f));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &out));
  if (rill_kin(ctx, 2, 0))
    return rill_kernel_error(ctx, "input Bias is not supported: add the bias with elementwise_add");
  conv3d_geom g;
  const char *err = conv3d_transpose_geom_get(ctx->attrs, &x->dims, &f->dims, &g);
  if (err) return rill_kernel_error(ctx, "Input (%s): %s", rill_kin_name(ctx, 0, 0), err);
  rill_dims od = conv3d_dims(&g, g.c, g.in);
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));
  int64_t ivol = conv3d_vol(g.in), ovol = conv3d_vol(g.out);
  conv3d_cl cl = {.dt = dt, .last = g.last, .n = g.n};
  void *xp = conv3d_cf(&cl, x, g.m, ovol, true), *op = conv3d_cf(&cl, out, g.c, ivol, false);
  rill_status *st = cl.oom ? rill_oom()
                           : CONV3D_RUN(dt, conv3d_bwd, ctx, &g, NULL, rill_tensor_ptr(f), xp, op, NULL);
  if (!st) conv3d_cl_back(&cl, op, out, g.c, ivol);
  conv3d_cl_free(&cl);
  return st;
}

static rill_status *convt3d_backward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *x = NULL, *f = NULL, *dy = NULL, *dx = NULL, *df = NULL;
  conv3d_geom g;
  RILL_TRY(conv3d_grad_setup(ctx, dt, true, &g, &x, &f, &dy, &dx, &df));
  if (!dx && !df) return NULL;
  int64_t ivol = conv3d_vol(g.in), ovol = conv3d_vol(g.out);
  conv3d_cl cl = {.dt = dt, .last = g.last, .n = g.n};
  /* Input is read only for Filter@GRAD */
  void *dyp = conv3d_cf(&cl, dy, g.c, ivol, true), *xp = conv3d_cf(&cl, df ? x : NULL, g.m, ovol, true);
  void *dxp = conv3d_cf(&cl, dx, g.m, ovol, false);
  rill_status *st = cl.oom ? rill_oom() : NULL;
  if (!st && dx) st = CONV3D_RUN(dt, conv3d_fwd, ctx, &g, dyp, rill_tensor_ptr(f), dxp);
  if (!st && df)
    st = CONV3D_RUN(dt, conv3d_bwd, ctx, &g, dyp, rill_tensor_ptr(f), xp, NULL, rill_tensor_ptr(df));
  if (!st) conv3d_cl_back(&cl, dxp, dx, g.m, ovol);
  conv3d_cl_free(&cl);
  return st;
}

rill_status *rill_cpu_conv3d_transpose_fp32(rill_kernel_ctx *ctx) { return convt3d_forward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_conv3d_transpose_fp64(rill_kernel_ctx *ctx) { return convt3d_forward(ctx, RILL_DTYPE_FP64); }
rill_status *rill_cpu_conv3d_transpose_grad_fp32(rill_kernel_ctx *ctx) { return convt3d_backward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_conv3d_transpose_grad_fp64(rill_kernel_ctx *ctx) { return convt3d_backward(ctx, RILL_DTYPE_FP64); }
