/* conv3d CPU kernels: vol2col + GEMM (OpenBLAS). For each image and group, a block of
 * output depth slices is unfolded into a [C/g * kd*kh*kw, slices * OH*OW] column buffer
 * of at most ~4 MiB, then one GEMM with the group's filter rows writes those output
 * columns in place. A 1x1x1 filter with stride 1 and no padding multiplies the input
 * directly.
 *
 * conv3d_grad walks the same blocks: Filter@GRAD += Output@GRAD block x columns^T, and
 * Input@GRAD gets Filter^T x Output@GRAD block folded back (col2vol, summing the
 * overlapping taps). */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"
#include "operators/conv3d.h"

#define CONV3D_COL_BUDGET ((size_t)4 << 20)

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

#define CONV3D(T, DT, GEMM, COLS, NAME)                                                       \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                   \
    rill_tensor *x = NULL, *f = NULL, *out = NULL;                                            \
    RILL_TRY(rill_kin_need(ctx, CONV3D_IN_INPUT, 0, DT, &x));                                 \
    RILL_TRY(rill_kin_need(ctx, CONV3D_IN_FILTER, 0, DT, &f));                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                            \
    conv3d_geom g;                                                                            \
    const char *err = conv3d_geom_get(ctx->attrs, &x->dims, &f->dims, &g);                    \
    if (err) return rill_kernel_error(ctx, "Input (%s): %s", rill_kin_name(ctx, 0, 0), err);  \
    rill_dims od = {5, {g.n, g.m, g.out[0], g.out[1], g.out[2]}};                             \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                      \
    int64_t cg = g.c / g.groups, mg = g.m / g.groups;                                         \
    int64_t kvol = g.k[0] * g.k[1] * g.k[2], kc = cg * kvol;                                  \
    int64_t D = g.in[0], H = g.in[1], W = g.in[2], OD = g.out[0], OH = g.out[1], OW = g.out[2]; \
    int64_t ivol = D * H * W, ovol = OD * OH * OW, plane = OH * OW;                           \
    if (rill_tensor_numel(out) == 0) return NULL;                                             \
    if (kc > INT_MAX || ovol > INT_MAX || mg > INT_MAX)                                       \
      return rill_kernel_error(ctx, "Input (%s): convolution too large for BLAS",             \
                               rill_kin_name(ctx, 0, 0));                                     \
    T *xp = rill_tensor_ptr(x);                                                               \
    const T *fp = rill_tensor_ptr(f);                                                         \
    T *op = rill_tensor_ptr(out);                                                             \
    if (kc == 0) {                                                                            \
      memset(op, 0, rill_tensor_nbytes(out));                                                 \
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
    int64_t bd = (int64_t)(CONV3D_COL_BUDGET / sizeof(T)) / (kc * plane);                     \
    if (bd < 1) bd = 1;                                                                       \
    if (bd > OD) bd = OD;                                                                     \
    T *col = rill_aligned_alloc((size_t)(kc * bd * plane) * sizeof(T), RILL_TENSOR_ALIGN);    \
    if (!col) return rill_oom();                                                              \
    for (int64_t n = 0; n < g.n; n++)                                                         \
      for (int64_t gi = 0; gi < g.groups; gi++) {                                             \
        T *img = xp + (n * g.c + gi * cg) * ivol;                                             \
        for (int64_t od0 = 0; od0 < OD; od0 += bd) {                                          \
          int64_t nb = OD - od0 < bd ? OD - od0 : bd, ncols = nb * plane;                     \
          COLS(&g, cg, img, col, od0, nb, false);                                              \
          GEMM(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg, (int)ncols, (int)kc, 1,    \
               fp + gi * mg * kc, (int)kc, col, (int)ncols, 0,                                \
               op + (n * g.m + gi * mg) * ovol + od0 * plane, (int)ovol);                     \
        }                                                                                     \
      }                                                                                       \
    rill_free(col);                                                                           \
    return NULL;                                                                              \
  }

CONV3D(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, conv3d_cols_f32, rill_cpu_conv3d_fp32)
CONV3D(double, RILL_DTYPE_FP64, cblas_dgemm, conv3d_cols_f64, rill_cpu_conv3d_fp64)

static rill_status *conv3d_grad_out(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt,
                                    const rill_dims *want, rill_tensor **out) {
  *out = NULL;
  if (!rill_kout(ctx, slot, 0)) return NULL;
  RILL_TRY(rill_kout_need(ctx, slot, 0, dt, out));
  RILL_TRY(rill_kout_check_dims(ctx, slot, 0, *out, want));
  memset(rill_tensor_ptr(*out), 0, rill_tensor_nbytes(*out));
  return NULL;
}

#define CONV3D_GRAD(T, DT, GEMM, COLS, NAME)                                                  \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                   \
    rill_tensor *x = NULL, *f = NULL, *dy = NULL, *dx = NULL, *df = NULL;                     \
    RILL_TRY(rill_kin_need(ctx, CONV3D_IN_INPUT, 0, DT, &x));                                 \
    RILL_TRY(rill_kin_need(ctx, CONV3D_IN_FILTER, 0, DT, &f));                                \
    RILL_TRY(rill_kin_need(ctx, CONV3D_GRAD_IN_DOUT, 0, DT, &dy));                            \
    conv3d_geom g;                                                                            \
    const char *err = conv3d_geom_get(ctx->attrs, &x->dims, &f->dims, &g);                    \
    if (err) return rill_kernel_error(ctx, "Input (%s): %s", rill_kin_name(ctx, 0, 0), err);  \
    rill_dims od = {5, {g.n, g.m, g.out[0], g.out[1], g.out[2]}};                             \
    RILL_TRY(rill_kin_check_dims(ctx, CONV3D_GRAD_IN_DOUT, dy, &od));                         \
    RILL_TRY(conv3d_grad_out(ctx, 0, DT, &x->dims, &dx));                                     \
    RILL_TRY(conv3d_grad_out(ctx, 1, DT, &f->dims, &df));                                     \
    int64_t cg = g.c / g.groups, mg = g.m / g.groups;                                         \
    int64_t kc = cg * g.k[0] * g.k[1] * g.k[2];                                               \
    int64_t OD = g.out[0], plane = g.out[1] * g.out[2], ovol = OD * plane;                    \
    int64_t ivol = g.in[0] * g.in[1] * g.in[2];                                               \
    if ((!dx && !df) || kc == 0 || rill_tensor_numel(dy) == 0) return NULL;                   \
    if (kc > INT_MAX || ovol > INT_MAX || mg > INT_MAX)                                       \
      return rill_kernel_error(ctx, "Input (%s): convolution too large for BLAS",             \
                               rill_kin_name(ctx, 0, 0));                                     \
    int64_t bd = (int64_t)(CONV3D_COL_BUDGET / sizeof(T)) / (kc * plane);                     \
    if (bd < 1) bd = 1;                                                                       \
    if (bd > OD) bd = OD;                                                                     \
    T *col = rill_aligned_alloc((size_t)(kc * bd * plane) * sizeof(T), RILL_TENSOR_ALIGN);    \
    if (!col) return rill_oom();                                                              \
    const T *fp = rill_tensor_ptr(f), *dyp = rill_tensor_ptr(dy);                             \
    T *xp = rill_tensor_ptr(x), *dxp = dx ? rill_tensor_ptr(dx) : NULL;                       \
    T *dfp = df ? rill_tensor_ptr(df) : NULL;                                                 \
    for (int64_t n = 0; n < g.n; n++)                                                         \
      for (int64_t gi = 0; gi < g.groups; gi++) {                                             \
        int64_t img = (n * g.c + gi * cg) * ivol;                                             \
        for (int64_t od0 = 0; od0 < OD; od0 += bd) {                                          \
          int64_t nb = OD - od0 < bd ? OD - od0 : bd, ncols = nb * plane;                     \
          const T *dyb = dyp + (n * g.m + gi * mg) * ovol + od0 * plane;                      \
          if (df) {                                                                           \
            COLS(&g, cg, xp + img, col, od0, nb, false);                                      \
            GEMM(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mg, (int)kc, (int)ncols, 1,    \
                 dyb, (int)ovol, col, (int)ncols, 1, dfp + gi * mg * kc, (int)kc);            \
          }                                                                                   \
          if (dx) {                                                                           \
            GEMM(CblasRowMajor, CblasTrans, CblasNoTrans, (int)kc, (int)ncols, (int)mg, 1,    \
                 fp + gi * mg * kc, (int)kc, dyb, (int)ovol, 0, col, (int)ncols);             \
            COLS(&g, cg, dxp + img, col, od0, nb, true);                                      \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
    rill_free(col);                                                                           \
    return NULL;                                                                              \
  }

CONV3D_GRAD(float, RILL_DTYPE_FP32, RILL_KERNEL_SGEMM, conv3d_cols_f32, rill_cpu_conv3d_grad_fp32)
CONV3D_GRAD(double, RILL_DTYPE_FP64, cblas_dgemm, conv3d_cols_f64, rill_cpu_conv3d_grad_fp64)

