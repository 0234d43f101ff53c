/* Interpolation CPU kernels (nearest for 4-D/5-D, bilinear for 4-D; NCHW and NHWC).
 * Source indices and weights are computed once per output row and column, as Paddle
 * computes them (float ratios, truncation toward zero); the loops then only gather.
 * Indices are clamped to the input, which Paddle leaves unchecked when OutSize and a
 * scale disagree. */
#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "operators/interp.h"

static rill_status *interp_plan_get(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                                    rill_tensor **out, interp_plan *p) {
  RILL_TRY(rill_kin_need(ctx, INTERP_IN_X, 0, dt, x));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, out));
  bool v2 = ctx->schema->attrs[INTERP_A_SCALE].type == RILL_ATTR_FLOATS;
  size_t nsize = ctx->nin[INTERP_IN_SIZE_TENSOR];
  const rill_tensor *sizes[3] = {0};
  for (size_t i = 0; i < nsize && i < 3; i++) sizes[i] = rill_kin(ctx, INTERP_IN_SIZE_TENSOR, i);
  const char *err = interp_resolve(ctx->attrs, v2, &(*x)->dims, rill_kin(ctx, INTERP_IN_OUT_SIZE, 0) != NULL,
                                   rill_kin(ctx, INTERP_IN_OUT_SIZE, 0), nsize, sizes,
                                   rill_kin(ctx, INTERP_IN_SCALE, 0) != NULL,
                                   rill_kin(ctx, INTERP_IN_SCALE, 0), true, p);
  if (err) return rill_kernel_error(ctx, "%s (input X (%s))", err, rill_kin_name(ctx, 0, 0));
  rill_dims od = interp_out_dims(p);
  return rill_kout_check_dims(ctx, 0, 0, *out, &od);
}

/* Nearest source index of output index k. */
static int64_t nearest_src(const interp_plan *p, int i, int64_t k) {
  int64_t s = p->align_corners ? (int64_t)(int)(p->ratio[i] * (float)k + 0.5f)
                               : (int64_t)(int)(p->ratio[i] * (float)k);
  return s < p->in[i] ? s : p->in[i] - 1;
}

/* Bilinear source rows: lo/hi indices and the weight of hi (Paddle's BilinearInterpolation). */
static void bilinear_src(const interp_plan *p, int i, int64_t k, int64_t *lo, int64_t *hi,
                         float *w_hi) {
  bool half = p->align_mode == 0 && !p->align_corners;
  float r = p->ratio[i];
  int64_t n = half ? (int64_t)(int)(r * (k + 0.5) - 0.5) : (int64_t)(int)(r * (float)k);
  if (n < 0) n = 0;
  if (n > p->in[i] - 1) n = p->in[i] - 1;
  *lo = n;
  *hi = n + 1 < p->in[i] - 1 ? n + 1 : p->in[i] - 1;
  float src = (float)(r * (k + 0.5) - 0.5);
  if (src < 0) src = 0;
  *w_hi = half ? src - (float)n : r * (float)k - (float)n;
}

#define INTERP(T, DT, NAME)                                                                \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *x = NULL, *out = NULL;                                                    \
    interp_plan p;                                                                         \
    RILL_TRY(interp_plan_get(ctx, DT, &x, &out, &p));                                      \
    if (rill_tensor_numel(out) == 0) return NULL;                                          \
    const T *xp = rill_tensor_ptr(x);                                                      \
    T *op = rill_tensor_ptr(out);                                                          \
    int64_t ind[3] = {1, 1, 1}, outd[3] = {1, 1, 1};                                       \
    int off = 3 - p.nsp;                                                                   \
    for (int i = 0; i < p.nsp; i++) {                                                      \
      ind[off + i] = p.in[i];                                                              \
      outd[off + i] = p.out[i];                                                            \
    }                                                                                      \
    int64_t C = p.c, total = outd[0] + outd[1] + outd[2];                                  \
    int64_t *idx = rill_malloc((size_t)total * 2 * sizeof *idx);                           \
    float *wt = rill_malloc((size_t)total * sizeof *wt);                                   \
    if (!idx || !wt) {                                                                     \
      rill_free(idx);                                                                      \
      rill_free(wt);                                                                       \
      return rill_oom();                                                                   \
    }                                                                                      \
    int64_t *lo[3] = {idx, idx + outd[0], idx + outd[0] + outd[1]};                        \
    int64_t *hi[3] = {lo[0] + total, lo[1] + total, lo[2] + total};                        \
    float *w[3] = {wt, wt + outd[0], wt + outd[0] + outd[1]};                              \
    for (int a = 0; a < 3; a++)                                                            \
      for (int64_t k = 0; k < outd[a]; k++) {                                              \
        if (a < off) {                                                                     \
          lo[a][k] = hi[a][k] = 0;                                                         \
          w[a][k] = 0;                                                                     \
        } else if (p.method == INTERP_NEAREST) {                                           \
          lo[a][k] = hi[a][k] = nearest_src(&p, a - off, k);                               \
          w[a][k] = 0;                                                                     \
        } else {                                                                           \
          bilinear_src(&p, a - off, k, &lo[a][k], &hi[a][k], &w[a][k]);                    \
        }                                                                                  \
      }                                                                                    \
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
    rill_free(idx);                                                                        \
    rill_free(wt);                                                                         \
    return NULL;                                                                           \
  }

INTERP(float, RILL_DTYPE_FP32, rill_cpu_interp_fp32)
INTERP(double, RILL_DTYPE_FP64, rill_cpu_interp_fp64)
