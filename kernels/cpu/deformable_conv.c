/* deformable_conv (with Mask) and deformable_conv_v1 CPU kernels: per image, a
 * deformable unfolding (every tap sampled bilinearly at its offset position, times the
 * mask) followed by one GEMM per group; the gradient runs the GEMMs backwards and
 * differentiates the sampling for Input, Offset and Mask. */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/grad_out.h"
#include "kernels/cpu/kernels.h"
#include "operators/nn.h"

typedef struct dcn_geom {
  rill_conv_geom g;
  int64_t dg, taps, plane, kc; /* deformable groups, kh * kw, OH * OW, C / groups * taps */
} dcn_geom;

/* Reads and checks the inputs (Mask at slot 2 when `mask`; Filter after it). */
static rill_status *dcn_inputs(rill_kernel_ctx *ctx, rill_dtype dt, bool mask, rill_tensor **t,
                               dcn_geom *d) {
  size_t nin = mask ? 4 : 3;
  for (size_t s = 0; s < nin; s++) RILL_TRY(rill_kin_need(ctx, s, 0, dt, &t[s]));
  rill_tensor *x = t[0], *off = t[1], *m = mask ? t[2] : NULL, *f = t[nin - 1];
  char err[256];
  if (!rill_nn_conv_geom(ctx->attrs, false, &x->dims, &f->dims, &d->g, err, sizeof err))
    return rill_kernel_error(ctx, "Input (%s), Filter (%s): %s", rill_kin_name(ctx, 0, 0),
                             rill_kin_name(ctx, nin - 1, 0), err);
  d->dg = ctx->attrs[RILL_DEFORMABLE_CONV_ATTR_DEFORMABLE_GROUPS].v.i;
  if (d->dg < 1 || d->g.c % d->dg)
    return rill_kernel_error(ctx, "attribute deformable_groups %lld must be >= 1 and divide "
                             "input Input's (%s) %lld channels", (long long)d->dg,
                             rill_kin_name(ctx, 0, 0), (long long)d->g.c);
  d->taps = d->g.kh * d->g.kw;
  d->plane = d->g.oh * d->g.ow;
  d->kc = d->g.c / d->g.groups * d->taps;
  for (int k = 0; k < (mask ? 2 : 1); k++) {
    rill_tensor *v = k ? m : off;
    rill_dims want = {4, {d->g.n, (k ? 1 : 2) * d->dg * d->taps, d->g.oh, d->g.ow}};
    bool ok = v->dims.n == 4;
    for (int i = 0; ok && i < 4; i++) ok = v->dims.d[i] == want.d[i];
    if (!ok) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx, "input %s (%s) has shape %s, expected %s", k ? "Mask" : "Offset",
                               rill_kin_name(ctx, k ? 2 : 1, 0), rill_dims_str(&v->dims, a, sizeof a),
                               rill_dims_str(&want, b, sizeof b));
    }
  }
  if (d->kc > INT_MAX || d->plane > INT_MAX || d->g.m > INT_MAX)
    return rill_kernel_error(ctx, "Input (%s): convolution too large for BLAS",
                             rill_kin_name(ctx, 0, 0));
  return NULL;
}

/* Bilinear corners of (h, w) in an H x W image: offsets and weights, offset -1 and
 * weight 0 for a corner outside. Returns false when (h, w) lies outside (-1, H) x (-1, W). */
static bool dcn_corners(double h, double w, int64_t H, int64_t W, int64_t off[4], double wt[4],
                        double *lh, double *lw) {
  for (int k = 0; k < 4; k++) off[k] = -1, wt[k] = 0;
  if (!(h > -1 && w > -1 && h < (double)H && w < (double)W)) return false;
  double fh = floor(h), fw = floor(w);
  int64_t h0 = (int64_t)fh, w0 = (int64_t)fw;
  *lh = h - fh;
  *lw = w - fw;
  double hh = 1 - *lh, hw = 1 - *lw;
  double ws[4] = {hh * hw, hh * *lw, *lh * hw, *lh * *lw};
  for (int k = 0; k < 4; k++) {
    int64_t y = h0 + (k >> 1), x = w0 + (k & 1);
    if (y >= 0 && y < H && x >= 0 && x < W) {
      off[k] = y * W + x;
      wt[k] = ws[k];
    }
  }
  return true;
}

/* The sample position of tap (i, j) of channel block dgi at output p of image n. */
#define DCN_POS(d, offp, n, dgi, tap, p, i, j, h, w)                                          \
  do {                                                                                        \
    const int64_t oy_ = (p) / (d)->g.ow, ox_ = (p) % (d)->g.ow;                               \
    const int64_t ob_ = (((n) * (d)->dg + (dgi)) * 2 * (d)->taps + 2 * (tap)) * (d)->plane + (p); \
    h = (double)(oy_ * (d)->g.sh - (d)->g.pt + (i) * (d)->g.dh) + (double)(offp)[ob_];        \
    w = (double)(ox_ * (d)->g.sw - (d)->g.pl + (j) * (d)->g.dw) + (double)(offp)[ob_ + (d)->plane]; \
  } while (0)

#define DCN_MASK_AT(d, mp, n, dgi, tap, p)                                                    \
  ((mp) ? (double)(mp)[(((n) * (d)->dg + (dgi)) * (d)->taps + (tap)) * (d)->plane + (p)] : 1.0)

/* Unfolds image n into col [C * taps, plane]. */
#define DCN_COLS(T, SUF)                                                                      \
  static void dcn_cols_##SUF(const dcn_geom *d, int64_t n, const T *xp, const T *offp,       \
                             const T *mp, T *col) {                                           \
    int64_t H = d->g.h, W = d->g.w, cpd = d->g.c / d->dg;                                     \
    for (int64_t c = 0; c < d->g.c; c++) {                                                    \
      const T *img = xp + (n * d->g.c + c) * H * W;                                           \
      int64_t dgi = c / cpd;                                                                  \
      for (int64_t i = 0; i < d->g.kh; i++)                                                   \
        for (int64_t j = 0; j < d->g.kw; j++) {                                               \
          int64_t tap = i * d->g.kw + j;                                                      \
          T *row = col + (c * d->taps + tap) * d->plane;                                      \
          for (int64_t p = 0; p < d->plane; p++) {                                            \
            double h, w, lh, lw, wt[4];                                                       \
            int64_t off[4];                                                                   \
            DCN_POS(d, offp, n, dgi, tap, p, i, j, h, w);                                     \
            double v = 0;                                                                     \
            if (dcn_corners(h, w, H, W, off, wt, &lh, &lw))                                   \
              for (int k = 0; k < 4; k++)                                                     \
                if (off[k] >= 0) v += wt[k] * (double)img[off[k]];                            \
            row[p] = (T)(v * DCN_MASK_AT(d, mp, n, dgi, tap, p));                             \
          }                                                                                   \
        }                                                                                     \
    }                                                                                         \
  }

DCN_COLS(float, f32)
DCN_COLS(double, f64)

#define DCN_FWD(T, SUF, DT, GEMM, NAME, MASK)                                                 \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                   \
    rill_tensor *t[4] = {0}, *out = NULL;                                                     \
    dcn_geom d;                                                                               \
    RILL_TRY(dcn_inputs(ctx, DT, MASK, t, &d));                                               \
    rill_dims od = {4, {d.g.n, d.g.m, d.g.oh, d.g.ow}};                                       \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                            \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                      \
    const T *xp = rill_tensor_ptr(t[0]), *offp = rill_tensor_ptr(t[1]);                       \
    const T *mp = MASK ? (const T *)rill_tensor_ptr(t[2]) : NULL;                             \
    const T *fp = rill_tensor_ptr(t[MASK ? 3 : 2]);                                           \
    T *op = rill_tensor_ptr(out);                                                             \
    int64_t mg = d.g.m / d.g.groups, P = d.plane;                                             \
    if (d.g.n * d.g.m * P == 0) return NULL;                                                  \
    T *col = rill_aligned_alloc((size_t)(d.g.c * d.taps * P) * sizeof(T), RILL_TENSOR_ALIGN); \
    if (!col) return rill_oom();                                                              \
    for (int64_t n = 0; n < d.g.n; n++) {                                                     \
      dcn_cols_##SUF(&d, n, xp, offp, mp, col);                                               \
      for (int64_t gi = 0; gi < d.g.groups; gi++)                                             \
        GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg, (int)P, (int)d.kc, 1,        \
             fp + gi * mg * d.kc, (int)d.kc, col + gi * d.kc * P, (int)P, 0,                  \
             op + (n * d.g.m + gi * mg) * P, (int)P);                                         \
    }                                                                                         \
    rill_free(col);                                                                           \
    return NULL;                                                                              \
  }

DCN_FWD(float, f32, RILL_DTYPE_FP32, cblas_sgemm, rill_cpu_deformable_conv_fp32, true)
DCN_FWD(double, f64, RILL_DTYPE_FP64, cblas_dgemm, rill_cpu_deformable_conv_fp64, true)
DCN_FWD(float, f32, RILL_DTYPE_FP32, cblas_sgemm, rill_cpu_deformable_conv_v1_fp32, false)
DCN_FWD(double, f64, RILL_DTYPE_FP64, cblas_dgemm, rill_cpu_deformable_conv_v1_fp64, false)

/* From dcol [C * taps, plane] of image n: Input@GRAD (scattered with the bilinear weights
 * times the mask), Offset@GRAD (the weights' derivatives), Mask@GRAD (the plain sample). */
#define DCN_COLS_BACK(T, SUF)                                                                 \
  static void dcn_cols_back_##SUF(const dcn_geom *d, int64_t n, const T *xp, const T *offp,  \
                                  const T *mp, const T *dcol, T *dxp, T *doffp, T *dmp) {     \
    int64_t H = d->g.h, W = d->g.w, cpd = d->g.c / d->dg;                                     \
    for (int64_t c = 0; c < d->g.c; c++) {                                                    \
      const T *img = xp + (n * d->g.c + c) * H * W;                                           \
      T *dimg = dxp ? dxp + (n * d->g.c + c) * H * W : NULL;                                  \
      int64_t dgi = c / cpd;                                                                  \
      for (int64_t i = 0; i < d->g.kh; i++)                                                   \
        for (int64_t j = 0; j < d->g.kw; j++) {                                               \
          int64_t tap = i * d->g.kw + j;                                                      \
          const T *row = dcol + (c * d->taps + tap) * d->plane;                               \
          for (int64_t p = 0; p < d->plane; p++) {                                            \
            double h, w, lh = 0, lw = 0, wt[4];                                               \
            int64_t off[4];                                                                   \
            DCN_POS(d, offp, n, dgi, tap, p, i, j, h, w);                                     \
            if (!dcn_corners(h, w, H, W, off, wt, &lh, &lw)) continue;                        \
            double g = (double)row[p], m = DCN_MASK_AT(d, mp, n, dgi, tap, p);                \
            double v[4];                                                                      \
            for (int k = 0; k < 4; k++) v[k] = off[k] >= 0 ? (double)img[off[k]] : 0;            \
            if (dimg)                                                                         \
              for (int k = 0; k < 4; k++)                                                     \
                if (off[k] >= 0) dimg[off[k]] += (T)(g * m * wt[k]);                          \
            if (dmp)                                                                          \
              dmp[((n * d->dg + dgi) * d->taps + tap) * d->plane + p] +=                      \
                  (T)(g * (wt[0] * v[0] + wt[1] * v[1] + wt[2] * v[2] + wt[3] * v[3]));       \
            if (doffp) {                                                                      \
              double hh = 1 - lh, hw = 1 - lw;                                                \
              double ddh = -hw * v[0] - lw * v[1] + hw * v[2] + lw * v[3];                    \
              double ddw = -hh * v[0] + hh * v[1] - lh * v[2] + lh * v[3];                    \
              int64_t ob = ((n * d->dg + dgi) * 2 * d->taps + 2 * tap) * d->plane + p;        \
              doffp[ob] += (T)(g * m * ddh);                                                  \
              doffp[ob + d->plane] += (T)(g * m * ddw);                                       \
            }                                                                                 \
          }                                                                                   \
        }                                                                                     \
    }                                                                                         \
  }

DCN_COLS_BACK(float, f32)
DCN_COLS_BACK(double, f64)

#define DCN_BWD(T, SUF, DT, GEMM, NAME, MASK)                                                 \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                   \
    rill_tensor *t[4] = {0}, *dy = NULL, *dx = NULL, *doff = NULL, *dm = NULL, *df = NULL;    \
    dcn_geom d;                                                                               \
    RILL_TRY(dcn_inputs(ctx, DT, MASK, t, &d));                                               \
    size_t nin = MASK ? 4 : 3;                                                                \
    rill_dims od = {4, {d.g.n, d.g.m, d.g.oh, d.g.ow}};                                       \
    RILL_TRY(rill_kin_need(ctx, nin, 0, DT, &dy));                                            \
    RILL_TRY(rill_kin_check_dims(ctx, nin, dy, &od));                                         \
    RILL_TRY(rill_kout_zeroed(ctx, 0, DT, &t[0]->dims, &dx));                                 \
    RILL_TRY(rill_kout_zeroed(ctx, 1, DT, &t[1]->dims, &doff));                               \
    if (MASK) RILL_TRY(rill_kout_zeroed(ctx, 2, DT, &t[2]->dims, &dm));                       \
    RILL_TRY(rill_kout_zeroed(ctx, nin - 1, DT, &t[nin - 1]->dims, &df));                     \
    const T *xp = rill_tensor_ptr(t[0]), *offp = rill_tensor_ptr(t[1]);                       \
    const T *mp = MASK ? (const T *)rill_tensor_ptr(t[2]) : NULL;                             \
    const T *fp = rill_tensor_ptr(t[nin - 1]), *dyp = rill_tensor_ptr(dy);                    \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *doffp = doff ? (T *)rill_tensor_ptr(doff) : NULL; \
    T *dmp = dm ? (T *)rill_tensor_ptr(dm) : NULL, *dfp = df ? (T *)rill_tensor_ptr(df) : NULL; \
    int64_t mg = d.g.m / d.g.groups, P = d.plane;                                             \
    bool want_col = dxp || doffp || dmp;                                                      \
    if (d.g.n * d.g.m * P == 0 || d.kc == 0 || (!want_col && !dfp)) return NULL;              \
    size_t colsz = (size_t)(d.g.c * d.taps * P) * sizeof(T);                                  \
    T *col = rill_aligned_alloc(colsz, RILL_TENSOR_ALIGN);                                    \
    T *dcol = want_col ? rill_aligned_alloc(colsz, RILL_TENSOR_ALIGN) : NULL;                 \
    if (!col || (want_col && !dcol)) {                                                        \
      rill_free(col);                                                                         \
      rill_free(dcol);                                                                        \
      return rill_oom();                                                                      \
    }                                                                                         \
    for (int64_t n = 0; n < d.g.n; n++) {                                                     \
      const T *dyn = dyp + n * d.g.m * P;                                                     \
      if (dfp) {                                                                              \
        dcn_cols_##SUF(&d, n, xp, offp, mp, col);                                             \
        for (int64_t gi = 0; gi < d.g.groups; gi++)                                           \
          GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mg, (int)d.kc, (int)P, 1,        \
               dyn + gi * mg * P, (int)P, col + gi * d.kc * P, (int)P, 1,                     \
               dfp + gi * mg * d.kc, (int)d.kc);                                              \
      }                                                                                       \
      if (!want_col) continue;                                                                \
      for (int64_t gi = 0; gi < d.g.groups; gi++)                                             \
        GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d.kc, (int)P, (int)mg, 1,          \
             fp + gi * mg * d.kc, (int)d.kc, dyn + gi * mg * P, (int)P, 0,                    \
             dcol + gi * d.kc * P, (int)P);                                                   \
      dcn_cols_back_##SUF(&d, n, xp, offp, mp, dcol, dxp, doffp, dmp);                        \
    }                                                                                         \
    rill_free(col);                                                                           \
    rill_free(dcol);                                                                          \
    return NULL;                                                                              \
  }

DCN_BWD(float, f32, RILL_DTYPE_FP32, cblas_sgemm, rill_cpu_deformable_conv_grad_fp32, true)
DCN_BWD(double, f64, RILL_DTYPE_FP64, cblas_dgemm, rill_cpu_deformable_conv_grad_fp64, true)
DCN_BWD(float, f32, RILL_DTYPE_FP32, cblas_sgemm, rill_cpu_deformable_conv_v1_grad_fp32, false)
DCN_BWD(double, f64, RILL_DTYPE_FP64, cblas_dgemm, rill_cpu_deformable_conv_v1_grad_fp64, false)
