/* pool2d and pool2d_grad CPU kernels (NCHW, or NHWC walked in place with the channels
 * innermost: no scratch copy), with Paddle's windows (pool_window.h), clipped to the image.
 * avg divides by the clipped size when exclusive or adaptive, else by kh * kw (padding
 * and a ceil_mode overhang past it counted alike, as Paddle 1.8 does). */
#include <float.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/isa.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/pool_window.h"
#include "operators/nn.h"

typedef rill_pool_window window;

/* The windows of every output row and column, computed once per call; [j0, j1) are the
 * output columns whose window is whole (kw wide, inside the image, at j * sw - pl): the
 * inner loops over them need no clipping. */
typedef struct pool_plan {
  window *rows, *cols;
  int64_t j0, j1;
} pool_plan;

static rill_status *pool_plan_make(rill_kernel_ctx *ctx, const rill_pool_geom *g, pool_plan *pl) {
  size_t n = (size_t)(g->oh + g->ow);
  window *w = rill_malloc((n ? n : 1) * sizeof *w);
  if (!w)
    return rill_kernel_error(ctx, "out of memory for %zu pooling windows of input X (%s)", n,
                             rill_kin_name(ctx, 0, 0));
  pl->rows = w;
  pl->cols = w + g->oh;
  for (int64_t i = 0; i < g->oh; i++)
    pl->rows[i] = rill_pool_window_at(i, g->h, g->oh, g->kh, g->sh, g->pt, g->adaptive);
  pl->j0 = g->ow;
  pl->j1 = g->ow;
  for (int64_t j = 0; j < g->ow; j++) {
    window c = rill_pool_window_at(j, g->w, g->ow, g->kw, g->sw, g->pl, g->adaptive);
    pl->cols[j] = c;
    bool whole = !g->adaptive && c.end - c.start == g->kw &&
                 c.start == j * g->sw - g->pl;
    if (whole && pl->j0 == g->ow) pl->j0 = j;
    if (whole) pl->j1 = j + 1;
  }
  /* whole windows form one contiguous run; anything else is handled as the edges */
  for (int64_t j = pl->j0; j < pl->j1; j++) {
    window c = pl->cols[j];
    if (c.end - c.start != g->kw || c.start != j * g->sw - g->pl) {
      pl->j1 = pl->j0;
      break;
    }
  }
  return NULL;
}

static inline int64_t pool_divisor(const rill_pool_geom *g, window wh, window ww) {
  return g->exclusive || g->adaptive ? (wh.end - wh.start) * (ww.end - ww.start)
                                     : wh.size * ww.size;
}

#define POOL(T, SUF, LOWEST)                                                                   \
  /* One output value of the window (wh, ww). */                                               \
  static inline T pool_one_##SUF(const rill_pool_geom *g, const T *xp, window wh, window ww) { \
    if (g->max) {                                                                              \
      T v = LOWEST;                                                                            \
      for (int64_t a = wh.start; a < wh.end; a++)                                              \
        for (int64_t b = ww.start; b < ww.end; b++)                                            \
          if (xp[a * g->w + b] > v) v = xp[a * g->w + b];                                      \
      return v;                                                                                \
    }                                                                                          \
    T v = 0;                                                                                   \
    for (int64_t a = wh.start; a < wh.end; a++)                                                \
      for (int64_t b = ww.start; b < ww.end; b++) v += xp[a * g->w + b];                       \
    int64_t size = pool_divisor(g, wh, ww);                                                    \
    return size > 0 ? v / (T)size : 0;                                                         \
  }                                                                                            \
  static void pool_fwd_##SUF(const rill_pool_geom *g, const pool_plan *pl, const T *x, T *y) { \
    const int64_t kw = g->kw, sw = g->sw, off = -g->pl;                                        \
    for (int64_t p = 0; p < g->n * g->c; p++) {                                                \
      const T *xp = x + p * g->h * g->w;                                                       \
      T *yp = y + p * g->oh * g->ow;                                                           \
      for (int64_t i = 0; i < g->oh; i++) {                                                    \
        window wh = pl->rows[i];                                                               \
        T *yr = yp + i * g->ow;                                                                \
        for (int64_t j = 0; j < pl->j0; j++) yr[j] = pool_one_##SUF(g, xp, wh, pl->cols[j]);   \
        if (pl->j1 > pl->j0) {                                                                 \
          /* whole windows: rows of the window outer, columns inner, no clipping */            \
          int64_t size = pool_divisor(g, wh, pl->cols[pl->j0]);                                \
          for (int64_t j = pl->j0; j < pl->j1; j++) yr[j] = g->max ? LOWEST : 0;               \
          for (int64_t a = wh.start; a < wh.end; a++) {                                        \
            const T *xr = xp + a * g->w + off;                                                 \
            if (g->max) {                                                                      \
              for (int64_t j = pl->j0; j < pl->j1; j++)                                        \
                for (int64_t b = 0; b < kw; b++)                                               \
                  yr[j] = xr[j * sw + b] > yr[j] ? xr[j * sw + b] : yr[j];                     \
            } else {                                                                           \
              for (int64_t j = pl->j0; j < pl->j1; j++)                                        \
                for (int64_t b = 0; b < kw; b++) yr[j] += xr[j * sw + b];                      \
            }                                                                                  \
          }                                                                                    \
          if (!g->max)                                                                         \
            for (int64_t j = pl->j0; j < pl->j1; j++) yr[j] = size > 0 ? yr[j] / (T)size : 0;  \
        }                                                                                      \
        for (int64_t j = pl->j1 > pl->j0 ? pl->j1 : pl->j0; j < g->ow; j++)                   \
          yr[j] = pool_one_##SUF(g, xp, wh, pl->cols[j]);                                      \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  static void pool_bwd_##SUF(const rill_pool_geom *g, const pool_plan *pl, const T *x,         \
                             const T *y, const T *dy, T *dx) {                                 \
    memset(dx, 0, (size_t)(g->n * g->c * g->h * g->w) * sizeof(T));                            \
    for (int64_t p = 0; p < g->n * g->c; p++) {                                                \
      const T *xp = x + p * g->h * g->w, *yp = y + p * g->oh * g->ow,                          \
              *dyp = dy + p * g->oh * g->ow;                                                   \
      T *dxp = dx + p * g->h * g->w;                                                           \
      for (int64_t i = 0; i < g->oh; i++) {                                                    \
        window wh = pl->rows[i];                                                               \
        for (int64_t j = 0; j < g->ow; j++) {                                                  \
          window ww = pl->cols[j];                                                             \
          T d = dyp[i * g->ow + j];                                                            \
          if (g->max) {                                                                        \
            /* the first element of the window (row-major) equal to the max takes it;     \
             * scanned backwards with selects, not branches: which element is the max is   \
             * data, and a mispredicted branch per window costs more than the scan */      \
            T m = yp[i * g->ow + j];                                                           \
            int64_t at = -1;                                                                   \
            for (int64_t a = wh.end - 1; a >= wh.start; a--)                                   \
              for (int64_t b = ww.end - 1; b >= ww.start; b--)                                 \
                at = xp[a * g->w + b] == m ? a * g->w + b : at;                                \
            if (at >= 0) dxp[at] += d;                                                         \
          } else {                                                                             \
            int64_t size = pool_divisor(g, wh, ww);                                            \
            if (size <= 0) continue;                                                           \
            T s = d / (T)size;                                                                 \
            for (int64_t a = wh.start; a < wh.end; a++)                                        \
              for (int64_t b = ww.start; b < ww.end; b++) dxp[a * g->w + b] += s;              \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }

POOL(float, f32, -FLT_MAX)
POOL(double, f64, -DBL_MAX)

/* Channel last (NHWC): the same windows and the same order of taps per channel as the
 * NCHW loops, so each (sample, channel) plane gets the NCHW results; the plane's elements
 * lie C apart, and the C channels of a pixel are contiguous, so the innermost loop runs
 * over the channels of one tap. */
#define POOL_LAST(T, SUF, LOWEST)                                                              \
  static void pool_fwd_last_##SUF(const rill_pool_geom *g, const pool_plan *pl, const T *x,   \
                                  T *y) {                                                      \
    const int64_t C = g->c;                                                                    \
    for (int64_t n = 0; n < g->n; n++) {                                                       \
      const T *xp = x + n * g->h * g->w * C;                                                   \
      for (int64_t i = 0; i < g->oh; i++) {                                                    \
        window wh = pl->rows[i];                                                               \
        for (int64_t j = 0; j < g->ow; j++) {                                                  \
          window ww = pl->cols[j];                                                             \
          T *yo = y + ((n * g->oh + i) * g->ow + j) * C;                                       \
          for (int64_t c = 0; c < C; c++) yo[c] = g->max ? LOWEST : 0;                         \
          for (int64_t a = wh.start; a < wh.end; a++)                                          \
            for (int64_t b = ww.start; b < ww.end; b++) {                                      \
              const T *xr = xp + (a * g->w + b) * C;                                           \
              if (g->max) {                                                                    \
                for (int64_t c = 0; c < C; c++) yo[c] = xr[c] > yo[c] ? xr[c] : yo[c];         \
              } else {                                                                         \
                for (int64_t c = 0; c < C; c++) yo[c] += xr[c];                                \
              }                                                                                \
            }                                                                                  \
          if (!g->max) {                                                                       \
            int64_t size = pool_divisor(g, wh, ww);                                            \
            for (int64_t c = 0; c < C; c++) yo[c] = size > 0 ? yo[c] / (T)size : 0;            \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  static void pool_bwd_last_##SUF(const rill_pool_geom *g, const pool_plan *pl, const T *x,   \
                                  const T *y, const T *dy, T *dx) {                            \
    const int64_t C = g->c;                                                                    \
    memset(dx, 0, (size_t)(g->n * g->h * g->w * C) * sizeof(T));                               \
    for (int64_t n = 0; n < g->n; n++) {                                                       \
      const T *xp = x + n * g->h * g->w * C;                                                   \
      T *dxp = dx + n * g->h * g->w * C;                                                       \
      for (int64_t i = 0; i < g->oh; i++) {                                                    \
        window wh = pl->rows[i];                                                               \
        for (int64_t j = 0; j < g->ow; j++) {                                                  \
          window ww = pl->cols[j];                                                             \
          int64_t o = ((n * g->oh + i) * g->ow + j) * C;                                       \
          const T *yo = y + o, *dyo = dy + o;                                                  \
          if (g->max) {                                                                        \
            /* per channel, the first element of the window (row-major) equal to the max */   \
            for (int64_t c = 0; c < C; c++) {                                                  \
              int64_t at = -1;                                                                 \
              for (int64_t a = wh.start; a < wh.end && at < 0; a++)                            \
                for (int64_t b = ww.start; b < ww.end; b++)                                    \
                  if (xp[(a * g->w + b) * C + c] == yo[c]) {                                   \
                    at = (a * g->w + b) * C + c;                                               \
                    break;                                                                     \
                  }                                                                            \
              if (at >= 0) dxp[at] += dyo[c];                                                  \
            }                                                                                  \
            continue;                                                                          \
          }                                                                                    \
          int64_t size = pool_divisor(g, wh, ww);                                              \
          if (size <= 0) continue;                                                             \
          for (int64_t a = wh.start; a < wh.end; a++)                                          \
            for (int64_t b = ww.start; b < ww.end; b++) {                                      \
              T *dr = dxp + (a * g->w + b) * C;                                                \
              for (int64_t c = 0; c < C; c++) dr[c] += dyo[c] / (T)size;                       \
            }                                                                                  \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }

POOL_LAST(float, f32, -FLT_MAX)
POOL_LAST(double, f64, -DBL_MAX)

#if RILL_X86_SIMD
RILL_AVX2_BEGIN
/* 2x2 max pooling with stride 2 whose windows all lie inside the image (LeNet's and
 * VGG's): 8 outputs at a time from two input rows, the four taps in the scalar loop's
 * order through max(x, v) = x > v ? x : v, which is exactly its `if (x > v) v = x` (NaN
 * taps skipped, ties keep the earlier tap), so the results are bit for bit the same. */
static bool pool_max2x2_avx2(const rill_pool_geom *g, const float *x, float *y) {
  if (g->last || !g->max || g->adaptive || g->kh != 2 || g->kw != 2 || g->sh != 2 || g->sw != 2 ||
      g->pt != 0 || g->pl != 0 || 2 * g->oh > g->h || 2 * g->ow > g->w)
    return false;
  const __m256 lowest = _mm256_set1_ps(-FLT_MAX);
  for (int64_t p = 0; p < g->n * g->c; p++)
    for (int64_t i = 0; i < g->oh; i++) {
      const float *a = x + (p * g->h + 2 * i) * g->w, *b = a + g->w;
      float *yr = y + (p * g->oh + i) * g->ow;
      int64_t j = 0;
      for (; j + 8 <= g->ow; j += 8) {
        __m256 a0 = _mm256_loadu_ps(a + 2 * j), a1 = _mm256_loadu_ps(a + 2 * j + 8);
        __m256 b0 = _mm256_loadu_ps(b + 2 * j), b1 = _mm256_loadu_ps(b + 2 * j + 8);
        /* even and odd columns: shuffle within lanes, then order the 64-bit pairs */
        __m256 ae = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
        __m256 ao = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
        __m256 be = _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0));
        __m256 bo = _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1));
        __m256 v = _mm256_max_ps(ae, lowest);
        v = _mm256_max_ps(ao, v);
        v = _mm256_max_ps(be, v);
        v = _mm256_max_ps(bo, v);
        v = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
        _mm256_storeu_ps(yr + j, v);
      }
      for (; j < g->ow; j++) {
        float v = -FLT_MAX;
        const float t[4] = {a[2 * j], a[2 * j + 1], b[2 * j], b[2 * j + 1]};
        for (int k = 0; k < 4; k++)
          if (t[k] > v) v = t[k];
        yr[j] = v;
      }
    }
  return true;
}
RILL_AVX2_END
#endif
/* False, with nothing written, where pool_max2x2_avx2 does not apply or the CPU has no
 * AVX2: the general loop runs. */
static bool pool_max2x2_f32(const rill_pool_geom *g, const float *x, float *y) {
#if RILL_X86_SIMD
  if (rill_cpu_avx2()) return pool_max2x2_avx2(g, x, y);
#endif
  (void)g, (void)x, (void)y;
  return false;
}

/* The gradient of 2x2 max pooling with stride 2 whose windows tile the image exactly
 * (LeNet's): every input element lies in one window, so each is written once, with no
 * memset first and no window clipping. The first tap in row-major order equal to the
 * max takes the gradient, as in pool_bwd, and it is written as 0 + dy as pool_bwd adds
 * it to a zeroed dx, so the result is bit for bit pool_bwd's. */
#define POOL_BWD2X2(T, SUF)                                                                    \
  static void pool_bwd2x2_##SUF(const rill_pool_geom *g, const T *x, const T *y, const T *dy, \
                                T *dx) {                                                       \
    const int64_t w = g->w, ow = g->ow, oh = g->oh;                                            \
    for (int64_t p = 0; p < g->n * g->c; p++) {                                                \
      const T *xp = x + p * g->h * w, *yp = y + p * oh * ow, *dyp = dy + p * oh * ow;          \
      T *dxp = dx + p * g->h * w;                                                              \
      for (int64_t i = 0; i < oh; i++) {                                                       \
        const T *x0 = xp + 2 * i * w, *x1 = x0 + w;                                            \
        T *d0 = dxp + 2 * i * w, *d1 = d0 + w;                                                 \
        for (int64_t j = 0; j < ow; j++) {                                                     \
          T m = yp[i * ow + j], d = (T)0 + dyp[i * ow + j];                                    \
          bool a = x0[2 * j] == m, b = !a && x0[2 * j + 1] == m;                               \
          bool c = !a && !b && x1[2 * j] == m, e = !a && !b && !c && x1[2 * j + 1] == m;       \
          d0[2 * j] = a ? d : 0;                                                               \
          d0[2 * j + 1] = b ? d : 0;                                                           \
          d1[2 * j] = c ? d : 0;                                                               \
          d1[2 * j + 1] = e ? d : 0;                                                           \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }
POOL_BWD2X2(float, f32) /* where the CPU has AVX2: pool_bwd2x2_avx_f32 */
POOL_BWD2X2(double, f64)

#if RILL_X86_SIMD
RILL_AVX2_BEGIN
/* pool_bwd2x2 for float32, 8 outputs at a time (rows of fewer than 8 outputs run the
 * scalar loop): the four taps deinterleaved as in pool_max2x2_f32 (lanes in its shuffled order, so the max and dy are permuted to it),
 * ordered compares (NaN equals nothing, as ==) masked so only the first equal tap takes
 * 0 + dy, and the even and odd columns interleaved back. */
static void pool_bwd2x2_avx_f32(const rill_pool_geom *g, const float *x, const float *y,
                                const float *dy, float *dx) {
  const int64_t w = g->w, ow = g->ow, oh = g->oh;
  const __m256 zero = _mm256_setzero_ps();
#define P64(v) _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)))
  for (int64_t p = 0; p < g->n * g->c; p++) {
    const float *xp = x + p * g->h * w, *yp = y + p * oh * ow, *dyp = dy + p * oh * ow;
    float *dxp = dx + p * g->h * w;
    for (int64_t i = 0; i < oh; i++) {
      const float *x0 = xp + 2 * i * w, *x1 = x0 + w;
      float *d0 = dxp + 2 * i * w, *d1 = d0 + w;
      int64_t j = 0;
      /* the last chunk overlaps the one before it (its outputs written again, the same) */
      for (; j < ow && ow >= 8; j = j + 16 <= ow ? j + 8 : (j + 8 < ow ? ow - 8 : ow)) {
        __m256 a0 = _mm256_loadu_ps(x0 + 2 * j), a1 = _mm256_loadu_ps(x0 + 2 * j + 8);
        __m256 b0 = _mm256_loadu_ps(x1 + 2 * j), b1 = _mm256_loadu_ps(x1 + 2 * j + 8);
        __m256 ae = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0));
        __m256 ao = _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1));
        __m256 be = _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0));
        __m256 bo = _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1));
        __m256 m = P64(_mm256_loadu_ps(yp + i * ow + j));
        __m256 d = _mm256_add_ps(zero, P64(_mm256_loadu_ps(dyp + i * ow + j)));
        __m256 ea = _mm256_cmp_ps(ae, m, _CMP_EQ_OQ), taken = ea;
        __m256 eb = _mm256_andnot_ps(taken, _mm256_cmp_ps(ao, m, _CMP_EQ_OQ));
        taken = _mm256_or_ps(taken, eb);
        __m256 ec = _mm256_andnot_ps(taken, _mm256_cmp_ps(be, m, _CMP_EQ_OQ));
        taken = _mm256_or_ps(taken, ec);
        __m256 ee = _mm256_andnot_ps(taken, _mm256_cmp_ps(bo, m, _CMP_EQ_OQ));
        /* back to natural order, then even/odd interleaved per row */
        __m256 va = P64(_mm256_and_ps(ea, d)), vb = P64(_mm256_and_ps(eb, d));
        __m256 vc = P64(_mm256_and_ps(ec, d)), ve = P64(_mm256_and_ps(ee, d));
        __m256 l = _mm256_unpacklo_ps(va, vb), h = _mm256_unpackhi_ps(va, vb);
        _mm256_storeu_ps(d0 + 2 * j, _mm256_permute2f128_ps(l, h, 0x20));
        _mm256_storeu_ps(d0 + 2 * j + 8, _mm256_permute2f128_ps(l, h, 0x31));
        l = _mm256_unpacklo_ps(vc, ve), h = _mm256_unpackhi_ps(vc, ve);
        _mm256_storeu_ps(d1 + 2 * j, _mm256_permute2f128_ps(l, h, 0x20));
        _mm256_storeu_ps(d1 + 2 * j + 8, _mm256_permute2f128_ps(l, h, 0x31));
      }
      for (; j < ow; j++) {
        float m = yp[i * ow + j], d = 0.0f + dyp[i * ow + j];
        bool a = x0[2 * j] == m, b = !a && x0[2 * j + 1] == m;
        bool c = !a && !b && x1[2 * j] == m, e = !a && !b && !c && x1[2 * j + 1] == m;
        d0[2 * j] = a ? d : 0;
        d0[2 * j + 1] = b ? d : 0;
        d1[2 * j] = c ? d : 0;
        d1[2 * j + 1] = e ? d : 0;
      }
    }
  }
#undef P64
}
RILL_AVX2_END
#endif

static void pool_bwd2x2_any_f32(const rill_pool_geom *g, const float *x, const float *y, const float *dy,
                                float *dx) {
#if RILL_X86_SIMD
  if (rill_cpu_avx2()) {
    pool_bwd2x2_avx_f32(g, x, y, dy, dx);
    return;
  }
#endif
  pool_bwd2x2_f32(g, x, y, dy, dx);
}

static bool pool_tiles2x2(const rill_pool_geom *g) {
  return !g->last && g->max && !g->adaptive && g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 &&
         g->pt == 0 && g->pl == 0 && g->h == 2 * g->oh && g->w == 2 * g->ow;
}

/* Batches large enough are split by images over the executor's threads, which take one
 * image at a time (rill_dev_parallel_for); each image's planes are computed by the same code
 * whichever thread runs them, so the result does not depend on the threads. Below POOL_SPLIT_ELEMS input elements a thread costs more than
 * it saves. */
#define POOL_SPLIT_ELEMS (1 << 16)

typedef struct pool_split {
  const rill_pool_geom *g;
  const pool_plan *pl;
  rill_dtype dt;
  const void *x, *y, *dy;
  void *out; /* y (forward) or dx */
} pool_split;

/* Image `lo` of the batch. */
static bool pool_split_run(void *arg, int64_t lo, int slot) {
  (void)slot;
  const pool_split *s = arg;
  rill_pool_geom sub = *s->g;
  sub.n = 1;
  size_t es = s->dt == RILL_DTYPE_FP32 ? sizeof(float) : sizeof(double);
  size_t in = (size_t)(sub.c * sub.h * sub.w) * es * (size_t)lo, o = (size_t)(sub.c * sub.oh * sub.ow) * es * (size_t)lo;
  const char *x = s->x, *y = s->y, *dy = s->dy;
  char *out = s->out;
  if (sub.last) {
    if (!dy && s->dt == RILL_DTYPE_FP32)
      pool_fwd_last_f32(&sub, s->pl, (const float *)(x + in), (float *)(out + o));
    else if (!dy)
      pool_fwd_last_f64(&sub, s->pl, (const double *)(x + in), (double *)(out + o));
    else if (s->dt == RILL_DTYPE_FP32)
      pool_bwd_last_f32(&sub, s->pl, (const float *)(x + in), (const float *)(y + o),
                        (const float *)(dy + o), (float *)(out + in));
    else
      pool_bwd_last_f64(&sub, s->pl, (const double *)(x + in), (const double *)(y + o),
                        (const double *)(dy + o), (double *)(out + in));
  } else if (!dy) {
    if (s->dt == RILL_DTYPE_FP32) pool_fwd_f32(&sub, s->pl, (const float *)(x + in), (float *)(out + o));
    else pool_fwd_f64(&sub, s->pl, (const double *)(x + in), (double *)(out + o));
  } else if (pool_tiles2x2(&sub)) {
    if (s->dt == RILL_DTYPE_FP32)
      pool_bwd2x2_any_f32(&sub, (const float *)(x + in), (const float *)(y + o), (const float *)(dy + o),
                      (float *)(out + in));
    else
      pool_bwd2x2_f64(&sub, (const double *)(x + in), (const double *)(y + o),
                      (const double *)(dy + o), (double *)(out + in));
  } else if (s->dt == RILL_DTYPE_FP32) {
    pool_bwd_f32(&sub, s->pl, (const float *)(x + in), (const float *)(y + o), (const float *)(dy + o),
                 (float *)(out + in));
  } else {
    pool_bwd_f64(&sub, s->pl, (const double *)(x + in), (const double *)(y + o),
                 (const double *)(dy + o), (double *)(out + in));
  }
  return true;
}

/* The forward (dy NULL: out = y) or the gradient (out = dx) over the images of the
 * batch, split over the executor's threads when it is large enough. */
static void pool_images_run(rill_kernel_ctx *ctx, rill_dtype dt, const rill_pool_geom *g,
                            const pool_plan *pl, const void *x, const void *y, const void *dy,
                            void *out) {
  int64_t threads = rill_dev_threads(ctx->dev);
  if (g->n * g->c * g->h * g->w < POOL_SPLIT_ELEMS) threads = 1;
  pool_split s = {.g = g, .pl = pl, .dt = dt, .x = x, .y = y, .dy = dy, .out = out};
  (void)rill_dev_parallel_for(ctx->dev, threads, g->n, pool_split_run, &s);
}

/* Average pooling whose one window is the whole image (global pooling: MobileNet's
 * head): each plane summed in eight interleaved partial sums, which the compiler
 * vectorises, instead of one chain of dependent adds (one add latency per element).
 * False for any other geometry. */
static bool pool_global_avg_f32(const rill_pool_geom *g, const float *x, float *y) {
  if (g->last || g->max || g->oh != 1 || g->ow != 1 || g->kh != g->h || g->kw != g->w || g->pt || g->pb ||
      g->pl || g->pr || g->h * g->w <= 0)
    return false;
  const int64_t hw = g->h * g->w;
  for (int64_t p = 0; p < g->n * g->c; p++) {
    const float *restrict xp = x + p * hw;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= hw; i += 8)
      for (int j = 0; j < 8; j++) acc[j] += xp[i + j];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < hw; i++) s += xp[i];
    y[p] = s / (float)hw;
  }
  return true;
}

static rill_status *pool_geom(rill_kernel_ctx *ctx, const rill_tensor *x, rill_pool_geom *g) {
  char err[256];
  if (rill_nn_pool_geom(ctx->attrs, &x->dims, g, err, sizeof err)) return NULL;
  return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), err);
}

static rill_status *pool_forward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *x, *y;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &x));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &y));
  rill_pool_geom g;
  RILL_TRY(pool_geom(ctx, x, &g));
  rill_dims od = rill_nn_pool_dims(&g, g.oh, g.ow);
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &od));
  if (rill_overlaps(rill_tensor_ptr(y), rill_tensor_nbytes(y), rill_tensor_ptr(x), rill_tensor_nbytes(x)))
    return rill_kernel_error(ctx, "output Out (%s) must not share memory with X (%s)",
                             rill_kout_name(ctx, 0, 0), rill_kin_name(ctx, 0, 0));
  if (dt == RILL_DTYPE_FP32 && (pool_max2x2_f32(&g, rill_tensor_ptr(x), rill_tensor_ptr(y)) ||
                                pool_global_avg_f32(&g, rill_tensor_ptr(x), rill_tensor_ptr(y))))
    return NULL;
  pool_plan pl;
  RILL_TRY(pool_plan_make(ctx, &g, &pl));
  pool_images_run(ctx, dt, &g, &pl, rill_tensor_ptr(x), NULL, NULL, rill_tensor_ptr(y));
  rill_free(pl.rows);
  return NULL;
}

static rill_status *pool_backward(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *x, *y, *dy, *dx;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, &y));
  RILL_TRY(rill_kin_need(ctx, 2, 0, dt, &dy));
  if (!rill_kout(ctx, 0, 0)) return NULL;
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));
  rill_pool_geom g;
  RILL_TRY(pool_geom(ctx, x, &g));
  rill_dims od = rill_nn_pool_dims(&g, g.oh, g.ow);
  if (!rill_dims_equal(&y->dims, &od) || !rill_dims_equal(&dy->dims, &od)) {
    char a[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "inputs Out (%s) and Out@GRAD (%s) must have the pooled shape %s",
                             rill_kin_name(ctx, 1, 0), rill_kin_name(ctx, 2, 0),
                             rill_dims_str(&od, a, sizeof a));
  }
  pool_plan pl;
  RILL_TRY(pool_plan_make(ctx, &g, &pl));
  pool_images_run(ctx, dt, &g, &pl, rill_tensor_ptr(x), rill_tensor_ptr(y), rill_tensor_ptr(dy),
                  rill_tensor_ptr(dx));
  rill_free(pl.rows);
  return NULL;
}

rill_status *rill_cpu_pool2d_fp32(rill_kernel_ctx *ctx) { return pool_forward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_pool2d_fp64(rill_kernel_ctx *ctx) { return pool_forward(ctx, RILL_DTYPE_FP64); }
rill_status *rill_cpu_pool2d_grad_fp32(rill_kernel_ctx *ctx) { return pool_backward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_pool2d_grad_fp64(rill_kernel_ctx *ctx) { return pool_backward(ctx, RILL_DTYPE_FP64); }
