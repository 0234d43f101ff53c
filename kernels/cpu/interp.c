/* Interpolation CPU kernels (nearest for 4-D/5-D, bilinear for 4-D, trilinear for 5-D;
 * channel-first and channel-last).
 * Source indices and weights are computed once per output row and column, as Paddle
 * computes them (float ratios, truncation toward zero); the loops then only gather.
 * Indices are clamped to the input, which Paddle leaves unchecked when OutSize and a
 * scale disagree. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "operators/interp.h"

static rill_status *interp_plan_get(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                                    rill_tensor **out, interp_plan *p) {
  RILL_TRY(rill_kin_need(ctx, INTERP_IN_X, 0, dt, x));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, out));
  RILL_TRY(interp_kernel_plan(ctx, *x, p));
  rill_dims od = interp_out_dims(p);
  return rill_kout_check_dims(ctx, 0, 0, *out, &od);
}

/* Source tables of a plan, per output index along d, h, w (leading dims of a 4-D input
 * have extent 1): lo/hi source indices and the weight of hi; ind/outd the extents.
 * *buf and *wbuf are to be freed with rill_free. */
typedef struct interp_tables {
  int64_t ind[3], outd[3];
  int64_t *lo[3], *hi[3];
  float *w[3];
  int64_t *buf;
  float *wbuf;
} interp_tables;

static rill_status *interp_tables_make(const interp_plan *p, interp_tables *t) {
  int off = 3 - p->nsp;
  for (int i = 0; i < 3; i++) t->ind[i] = t->outd[i] = 1;
  for (int i = 0; i < p->nsp; i++) {
    t->ind[off + i] = p->in[i];
    t->outd[off + i] = p->out[i];
  }
  int64_t total = t->outd[0] + t->outd[1] + t->outd[2];
  t->buf = rill_malloc((size_t)total * 2 * sizeof *t->buf);
  t->wbuf = rill_malloc((size_t)total * sizeof *t->wbuf);
  if (!t->buf || !t->wbuf) {
    rill_free(t->buf);
    rill_free(t->wbuf);
    return rill_oom();
  }
  for (int a = 0, at = 0; a < 3; at += (int)t->outd[a], a++) {
    t->lo[a] = t->buf + at;
    t->hi[a] = t->buf + total + at;
    t->w[a] = t->wbuf + at;
  }
  for (int a = 0; a < 3; a++)
    for (int64_t k = 0; k < t->outd[a]; k++) interp_axis_src(p, a, k, &t->lo[a][k], &t->hi[a][k], &t->w[a][k]);
  return NULL;
}


/* Trilinear: each output blends the 8 corners around its source point, with the weights
 * of the bilinear tables along d, h and w. When grad is false out[o] is written from x;
 * when true, out[o] (Out@GRAD) is added into x (X@GRAD) with the same weights. */
#define TRILINEAR(T, SUF)                                                                      \
  static void trilinear_##SUF(const interp_plan *p, const interp_tables *tb, T *x, T *out,    \
                              bool grad) {                                                    \
    int64_t C = p->c, D = tb->ind[0], H = tb->ind[1], W = tb->ind[2];                          \
    int64_t OD = tb->outd[0], OH = tb->outd[1], OW = tb->outd[2];                              \
    bool cl = p->channel_last;                                                                 \
    int64_t xc = cl ? 1 : D * H * W, xs = cl ? C : 1, oc = cl ? 1 : OD * OH * OW, os = cl ? C : 1; \
    for (int64_t n = 0; n < p->n; n++)                                                         \
      for (int64_t c = 0; c < C; c++) {                                                        \
        T *xb = x + n * C * D * H * W + c * xc;                                                \
        T *ob = out + n * C * OD * OH * OW + c * oc;                                           \
        for (int64_t od = 0; od < OD; od++)                                                    \
          for (int64_t oh = 0; oh < OH; oh++)                                                  \
            for (int64_t ow = 0; ow < OW; ow++) {                                              \
              int64_t id[2] = {tb->lo[0][od], tb->hi[0][od]};                                  \
              int64_t ih[2] = {tb->lo[1][oh], tb->hi[1][oh]};                                  \
              int64_t iw[2] = {tb->lo[2][ow], tb->hi[2][ow]};                                  \
              float wd[2] = {1.f - tb->w[0][od], tb->w[0][od]};                                \
              float wh[2] = {1.f - tb->w[1][oh], tb->w[1][oh]};                                \
              float ww[2] = {1.f - tb->w[2][ow], tb->w[2][ow]};                                \
              T *o = ob + ((od * OH + oh) * OW + ow) * os;                                     \
              T v = 0;                                                                         \
              for (int a = 0; a < 2; a++)                                                      \
                for (int b = 0; b < 2; b++)                                                    \
                  for (int e = 0; e < 2; e++) {                                                \
                    T *src = xb + ((id[a] * H + ih[b]) * W + iw[e]) * xs;                      \
                    float wt = wd[a] * wh[b] * ww[e];                                          \
                    if (grad) *src += (T)(*o * wt);                                            \
                    else v += (T)(*src * wt);                                                  \
                  }                                                                            \
              if (!grad) *o = v;                                                               \
            }                                                                                  \
      }                                                                                        \
  }

TRILINEAR(float, f32)
TRILINEAR(double, f64)

#define INTERP(T, DT, TRI, NAME)                                                                \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *x = NULL, *out = NULL;                                                    \
    interp_plan p;                                                                         \
    RILL_TRY(interp_plan_get(ctx, DT, &x, &out, &p));                                      \
    if (rill_tensor_numel(out) == 0) return NULL;                                          \
    const T *xp = rill_tensor_ptr(x);                                                      \
    T *op = rill_tensor_ptr(out);                                                          \
    interp_tables tb;                                                                      \
    RILL_TRY(interp_tables_make(&p, &tb));                                                 \
    if (p.method == INTERP_TRILINEAR) {                                                    \
      TRI(&p, &tb, (T *)rill_tensor_ptr(x), op, false);                                    \
      rill_free(tb.buf);                                                                   \
      rill_free(tb.wbuf);                                                                  \
      return NULL;                                                                         \
    }                                                                                      \
    int64_t C = p.c, *ind = tb.ind, *outd = tb.outd;                                       \
    int64_t **lo = tb.lo, **hi = tb.hi;                                                    \
    float **w = tb.w;                                                                      \
    int64_t D = ind[0], H = ind[1], W = ind[2], OD = outd[0], OH = outd[1], OW = outd[2];  \
    bool bil = p.method == INTERP_BILINEAR;                                                \
    if (!p.channel_last) {                                                                 \
      for (int64_t nc = 0; nc < p.n * C; nc++) {                                           \
        const T *src = xp + nc * D * H * W;                                                \
        T *dst = op + nc * OD * OH * OW;                                                   \
        for (int64_t od = 0; od < OD; od++)                                                \
          for (int64_t oh = 0; oh < OH; oh++) {                                            \
            const T *r0 = src + (lo[0][od] * H + lo[1][oh]) * W;                           \
            T *drow = dst + (od * OH + oh) * OW;                                           \
            if (!bil) {                                                                    \
              for (int64_t ow = 0; ow < OW; ow++) drow[ow] = r0[lo[2][ow]];                \
            } else {                                                                       \
              const T *r1 = src + hi[1][oh] * W;                                           \
              float dn = w[1][oh], ds = 1.f - dn;                                          \
              for (int64_t ow = 0; ow < OW; ow++) {                                        \
                float dw = w[2][ow], de = 1.f - dw;                                        \
                int64_t xw = lo[2][ow], xe = hi[2][ow];                                    \
                drow[ow] = (T)(r0[xw] * ds * de + r1[xw] * dn * de + r0[xe] * ds * dw +    \
                               r1[xe] * dn * dw);                                          \
              }                                                                            \
            }                                                                              \
          }                                                                                \
      }                                                                                    \
    } else {                                                                               \
      for (int64_t n = 0; n < p.n; n++)                                                    \
        for (int64_t od = 0; od < OD; od++)                                                \
          for (int64_t oh = 0; oh < OH; oh++)                                              \
            for (int64_t ow = 0; ow < OW; ow++) {                                          \
              T *dst = op + (((n * OD + od) * OH + oh) * OW + ow) * C;                     \
              const T *a = xp + (((n * D + lo[0][od]) * H + lo[1][oh]) * W + lo[2][ow]) * C; \
              if (!bil) {                                                                  \
                for (int64_t c = 0; c < C; c++) dst[c] = a[c];                             \
              } else {                                                                     \
                const T *b = xp + ((n * H + hi[1][oh]) * W + lo[2][ow]) * C;               \
                const T *e = xp + ((n * H + lo[1][oh]) * W + hi[2][ow]) * C;               \
                const T *f = xp + ((n * H + hi[1][oh]) * W + hi[2][ow]) * C;               \
                float dn = w[1][oh], ds = 1.f - dn, dw = w[2][ow], de = 1.f - dw;          \
                for (int64_t c = 0; c < C; c++)                                            \
                  dst[c] = (T)(a[c] * ds * de + b[c] * dn * de + e[c] * ds * dw +          \
                               f[c] * dn * dw);                                            \
              }                                                                            \
            }                                                                              \
    }                                                                                      \
    rill_free(tb.buf);                                                                     \
    rill_free(tb.wbuf);                                                                    \
    return NULL;                                                                           \
  }

INTERP(float, RILL_DTYPE_FP32, trilinear_f32, rill_cpu_interp_fp32)
INTERP(double, RILL_DTYPE_FP64, trilinear_f64, rill_cpu_interp_fp64)

/* <op>_grad: zeroes X@GRAD and adds each Out@GRAD element to the X elements the forward
 * read it from, with the same weights. X is read for its shape only. */
#define INTERP_GRAD(T, DT, TRI, NAME)                                                           \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *x, *dout, *dx;                                                            \
    interp_plan p;                                                                         \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                                \
    x = rill_kin(ctx, INTERP_IN_X, 0);                                                     \
    if (!x) return rill_kernel_error(ctx, "input X is missing");                          \
    RILL_TRY(rill_kin_need(ctx, INTERP_IN_DOUT, 0, DT, &dout));                       \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                          \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                               \
    RILL_TRY(interp_kernel_plan(ctx, x, &p));                                                  \
    rill_dims gd = interp_out_dims(&p);                                                    \
    RILL_TRY(rill_kin_check_dims(ctx, INTERP_IN_DOUT, dout, &gd));                         \
    T *gx = rill_tensor_ptr(dx);                                                           \
    const T *g = rill_tensor_ptr(dout);                                                    \
    memset(gx, 0, (size_t)rill_tensor_numel(dx) * sizeof(T));                              \
    if (rill_tensor_numel(dout) == 0) return NULL;                                         \
    interp_tables tb;                                                                      \
    RILL_TRY(interp_tables_make(&p, &tb));                                                 \
    if (p.method == INTERP_TRILINEAR) {                                                    \
      TRI(&p, &tb, gx, (T *)rill_tensor_ptr(dout), true);                                  \
      rill_free(tb.buf);                                                                   \
      rill_free(tb.wbuf);                                                                  \
      return NULL;                                                                         \
    }                                                                                      \
    int64_t C = p.c, D = tb.ind[0], H = tb.ind[1], W = tb.ind[2];                          \
    int64_t OD = tb.outd[0], OH = tb.outd[1], OW = tb.outd[2];                             \
    bool bil = p.method == INTERP_BILINEAR, cl = p.channel_last;                           \
    /* element strides of X and Out@GRAD: channel, spatial position */                     \
    int64_t xc = cl ? 1 : D * H * W, xs = cl ? C : 1, oc = cl ? 1 : OD * OH * OW, os = cl ? C : 1; \
    for (int64_t n = 0; n < p.n; n++)                                                      \
      for (int64_t c = 0; c < C; c++) {                                                    \
        T *xb = gx + n * C * D * H * W + c * xc;                                           \
        const T *gb = g + n * C * OD * OH * OW + c * oc;                                   \
        for (int64_t od = 0; od < OD; od++)                                                \
          for (int64_t oh = 0; oh < OH; oh++)                                              \
            for (int64_t ow = 0; ow < OW; ow++) {                                          \
              T v = gb[((od * OH + oh) * OW + ow) * os];                                   \
              int64_t d0 = tb.lo[0][od], h0 = tb.lo[1][oh], w0 = tb.lo[2][ow];             \
              if (!bil) {                                                                  \
                xb[((d0 * H + h0) * W + w0) * xs] += v;                                    \
                continue;                                                                  \
              }                                                                            \
              int64_t h1 = tb.hi[1][oh], w1 = tb.hi[2][ow];                                \
              float dn = tb.w[1][oh], ds = 1.f - dn, dw = tb.w[2][ow], de = 1.f - dw;      \
              xb[(h0 * W + w0) * xs] += (T)(v * ds * de);                                  \
              xb[(h1 * W + w0) * xs] += (T)(v * dn * de);                                  \
              xb[(h0 * W + w1) * xs] += (T)(v * ds * dw);                                  \
              xb[(h1 * W + w1) * xs] += (T)(v * dn * dw);                                  \
            }                                                                              \
      }                                                                                    \
    rill_free(tb.buf);                                                                     \
    rill_free(tb.wbuf);                                                                    \
    return NULL;                                                                           \
  }

INTERP_GRAD(float, RILL_DTYPE_FP32, trilinear_f32, rill_cpu_interp_grad_fp32)
INTERP_GRAD(double, RILL_DTYPE_FP64, trilinear_f64, rill_cpu_interp_grad_fp64)
