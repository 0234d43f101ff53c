/* pool3d and pool3d_grad CPU kernels (NCDHW or NDHWC: one strided walk, each (sample,
 * channel) volume read at element stride 1 or, channel last, C; no scratch copy), with
 * pool2d's windows per dim (pool_window.h), clipped to the volume. avg divides by the
 * clipped volume when exclusive or adaptive, else by kd * kh * kw (padding and a ceil_mode
 * overhang past it counted alike, as Paddle 1.8 does). max's gradient goes to the first element of the window
 * (d, h, w order) equal to Out. */
#include <float.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/pool_window.h"
#include "operators/pool3d.h"

typedef rill_pool_window window;

/* Where volume p (= sample * C + channel) starts in a tensor of `vol` spatial elements per
 * volume; its spatial elements then lie 1 apart, or C apart when channel last. */
static int64_t pool3d_base(const pool3d_geom *g, int64_t p, int64_t vol) {
  return g->last ? (p / g->c) * vol * g->c + p % g->c : p * vol;
}

static int64_t pool3d_divisor(const pool3d_geom *g, const window w[3]) {
  int64_t v = 1;
  for (int i = 0; i < 3; i++) v *= g->exclusive || g->adaptive ? w[i].end - w[i].start : w[i].size;
  return v;
}

/* The windows of every output index per dim: w[0..OD), then OH, then OW entries. */
static rill_status *pool3d_plan(rill_kernel_ctx *ctx, const pool3d_geom *g, window **plan) {
  size_t n = (size_t)(g->out[0] + g->out[1] + g->out[2]);
  window *w = rill_malloc((n ? n : 1) * sizeof *w);
  if (!w) return rill_oom();
  window *at = w;
  for (int i = 0; i < 3; i++)
    for (int64_t o = 0; o < g->out[i]; o++)
      *at++ = rill_pool_window_at(o, g->in[i], g->out[i], g->k[i], g->s[i], g->p[2 * i],
                                  g->adaptive);
  *plan = w;
  (void)ctx;
  return NULL;
}

static rill_status *pool3d_setup(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                                 pool3d_geom *g) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  const char *err = pool3d_geom_get(ctx->attrs, &(*x)->dims, g);
  if (err) return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), err);
  return NULL;
}

#define POOL3D(T, SUF, LOWEST)                                                                \
  static void pool3d_fwd_##SUF(const pool3d_geom *g, const window *plan, const T *x, T *y) {  \
    int64_t D = g->in[0], H = g->in[1], W = g->in[2];                                         \
    const window *wd = plan, *wh = plan + g->out[0], *ww = wh + g->out[1];                    \
    int64_t st = g->last ? g->c : 1, ovol = g->out[0] * g->out[1] * g->out[2];                \
    for (int64_t p = 0; p < g->n * g->c; p++) {                                               \
      const T *xp = x + pool3d_base(g, p, D * H * W);                                         \
      T *yp = y + pool3d_base(g, p, ovol);                                                    \
      for (int64_t a = 0; a < g->out[0]; a++)                                                 \
        for (int64_t b = 0; b < g->out[1]; b++)                                               \
          for (int64_t c = 0; c < g->out[2]; c++, yp += st) {                                 \
            window w[3] = {wd[a], wh[b], ww[c]};                                              \
            T v = g->max ? LOWEST : 0;                                                        \
            for (int64_t i = w[0].start; i < w[0].end; i++)                                   \
              for (int64_t j = w[1].start; j < w[1].end; j++) {                               \
                const T *r = xp + (i * H + j) * W * st;                                       \
                for (int64_t k = w[2].start; k < w[2].end; k++) {                             \
                  if (g->max) v = r[k * st] > v ? r[k * st] : v;                              \
                  else v += r[k * st];                                                        \
                }                                                                             \
              }                                                                               \
            if (!g->max) {                                                                    \
              int64_t size = pool3d_divisor(g, w);                                            \
              v = size > 0 ? v / (T)size : 0;                                                 \
            }                                                                                 \
            *yp = v;                                                                          \
          }                                                                                   \
    }                                                                                         \
  }                                                                                           \
  static void pool3d_bwd_##SUF(const pool3d_geom *g, const window *plan, const T *x,          \
                               const T *y, const T *dy, T *dx) {                              \
    int64_t D = g->in[0], H = g->in[1], W = g->in[2];                                         \
    const window *wd = plan, *wh = plan + g->out[0], *ww = wh + g->out[1];                    \
    int64_t st = g->last ? g->c : 1, ovol = g->out[0] * g->out[1] * g->out[2];                \
    memset(dx, 0, (size_t)(g->n * g->c * D * H * W) * sizeof(T));                             \
    for (int64_t p = 0; p < g->n * g->c; p++) {                                               \
      const T *xp = x + pool3d_base(g, p, D * H * W);                                         \
      T *dxp = dx + pool3d_base(g, p, D * H * W);                                             \
      const T *yp = y + pool3d_base(g, p, ovol), *dyp = dy + pool3d_base(g, p, ovol);         \
      for (int64_t a = 0; a < g->out[0]; a++)                                                 \
        for (int64_t b = 0; b < g->out[1]; b++)                                               \
          for (int64_t c = 0; c < g->out[2]; c++, yp += st, dyp += st) {                      \
            window w[3] = {wd[a], wh[b], ww[c]};                                              \
            if (g->max) {                                                                     \
              int64_t at = -1;                                                                \
              for (int64_t i = w[0].start; i < w[0].end && at < 0; i++)                       \
                for (int64_t j = w[1].start; j < w[1].end && at < 0; j++)                     \
                  for (int64_t k = w[2].start; k < w[2].end; k++)                             \
                    if (xp[((i * H + j) * W + k) * st] == *yp) {                              \
                      at = ((i * H + j) * W + k) * st;                                        \
                      break;                                                                  \
                    }                                                                         \
              if (at >= 0) dxp[at] += *dyp;                                                   \
              continue;                                                                       \
            }                                                                                 \
            int64_t size = pool3d_divisor(g, w);                                              \
            if (size <= 0) continue;                                                          \
            T s = *dyp / (T)size;                                                             \
            for (int64_t i = w[0].start; i < w[0].end; i++)                                   \
              for (int64_t j = w[1].start; j < w[1].end; j++)                                 \
                for (int64_t k = w[2].start; k < w[2].end; k++)                               \
                  dxp[((i * H + j) * W + k) * st] += s;                                       \
          }                                                                                   \
    }                                                                                         \
  }

POOL3D(float, f32, -FLT_MAX)
POOL3D(double, f64, -DBL_MAX)

static rill_status *pool3d_forward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *x, *y;
  pool3d_geom g;
  RILL_TRY(pool3d_setup(ctx, dt, &x, &g));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &y));
  rill_dims od = pool3d_dims(&g, g.out);
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &od));
  if (rill_tensor_numel(y) == 0) return NULL;
  window *plan;
  RILL_TRY(pool3d_plan(ctx, &g, &plan));
  if (dt == RILL_DTYPE_FP32) pool3d_fwd_f32(&g, plan, rill_tensor_ptr(x), rill_tensor_ptr(y));
  else pool3d_fwd_f64(&g, plan, rill_tensor_ptr(x), rill_tensor_ptr(y));
  rill_free(plan);
  return NULL;
}

static rill_status *pool3d_backward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *x, *y, *dy, *dx;
  pool3d_geom g;
  RILL_TRY(pool3d_setup(ctx, dt, &x, &g));
  if (!rill_kout(ctx, 0, 0)) return NULL;
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, &y));
  RILL_TRY(rill_kin_need(ctx, 2, 0, dt, &dy));
  rill_dims od = pool3d_dims(&g, g.out);
  RILL_TRY(rill_kin_check_dims(ctx, 1, y, &od));
  RILL_TRY(rill_kin_check_dims(ctx, 2, dy, &od));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));
  window *plan;
  RILL_TRY(pool3d_plan(ctx, &g, &plan));
  if (dt == RILL_DTYPE_FP32)
    pool3d_bwd_f32(&g, plan, rill_tensor_ptr(x), rill_tensor_ptr(y), rill_tensor_ptr(dy),
                   rill_tensor_ptr(dx));
  else
    pool3d_bwd_f64(&g, plan, rill_tensor_ptr(x), rill_tensor_ptr(y), rill_tensor_ptr(dy),
                   rill_tensor_ptr(dx));
  rill_free(plan);
  return NULL;
}

rill_status *rill_cpu_pool3d_fp32(rill_kernel_ctx *ctx) { return pool3d_forward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_pool3d_fp64(rill_kernel_ctx *ctx) { return pool3d_forward(ctx, RILL_DTYPE_FP64); }
rill_status *rill_cpu_pool3d_grad_fp32(rill_kernel_ctx *ctx) { return pool3d_backward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_pool3d_grad_fp64(rill_kernel_ctx *ctx) { return pool3d_backward(ctx, RILL_DTYPE_FP64); }
