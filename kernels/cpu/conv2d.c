/* CPU kernels of conv2d, depthwise_conv2d, conv2d_transpose and their gradients (NCHW, and
 * NHWC through transposes), all on the engine in conv_impl.inc (see kernels/cpu/conv.h for
 * the paths). */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/channel_last.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/conv_epi.h"
#include "kernels/cpu/gemm.h"
#include "framework/base/isa.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/sgemm.h"

int rill_conv_force_path = RILL_CONV_PATH_AUTO;

/* The im2col buffer holds a block of output rows: about rill_conv_col_budget bytes so
 * that the GEMM reads the unfolded block while it is still cached (4 MiB: a 1 MiB block
 * ran ResNet's 64-channel 56x56 layer at 0.56 of sgemm, 4 MiB at 0.81), but at least
 * COL_MIN_COLS columns so that each GEMM stays large enough to run at full speed. */
size_t rill_conv_col_budget = 4 * 1024 * 1024;
#define COL_MIN_COLS 1024

/* Output positions o in [0, out) whose input position o * s + off lies in [0, in):
 * [*lo, *hi), empty when *lo == *hi. Called per filter tap and row in the unfolding and
 * the direct loops: strides 1 and 2 divide by a constant (a shift), since a 64-bit
 * division costs 40 or more cycles (500 of them were a quarter of a 5x5 conv over a
 * 12x12 image). */
static inline int64_t div_by_stride(int64_t v, int64_t s) {
  return s == 1 ? v : s == 2 ? v / 2 : v / s;
}
static inline void valid_range(int64_t off, int64_t s, int64_t in, int64_t out, int64_t *lo,
                               int64_t *hi) {
  int64_t l = off >= 0 ? 0 : div_by_stride(-off + s - 1, s);
  int64_t h = in - 1 - off < 0 ? 0 : div_by_stride(in - 1 - off, s) + 1;
  if (h > out) h = out;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

/* ---- AVX2 + FMA (isa.h): the float engine's fast paths, and the engine itself
 * (conv_impl.inc) compiled again for AVX2 over them; a kernel takes them where
 * rill_cpu_avx2() says the CPU runs them. ---- */
#if RILL_X86_SIMD
RILL_AVX2_BEGIN

/* The even and odd elements of p[0..15], each as 8 lanes. */
static inline void deinterleave8(const float *p, __m256 *even, __m256 *odd) {
  __m256 a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);
  __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 a2 b0 b2 | a4 a6 b4 b6 */
  __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
  *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0)));
}

/* acc + the three taps of one filter row w3 over 8 output columns whose first input is
 * p, stride s (a constant where inlined). */
static inline __attribute__((always_inline)) __m256 dw3x3_taps(__m256 acc, const float *p,
                                                               const __m256 w3[3], int64_t s) {
  if (s == 1) {
    acc = _mm256_fmadd_ps(w3[0], _mm256_loadu_ps(p), acc);
    acc = _mm256_fmadd_ps(w3[1], _mm256_loadu_ps(p + 1), acc);
    return _mm256_fmadd_ps(w3[2], _mm256_loadu_ps(p + 2), acc);
  }
  __m256 e0, o0, e2, o2;
  deinterleave8(p, &e0, &o0);
  deinterleave8(p + 2, &e2, &o2);
  acc = _mm256_fmadd_ps(w3[0], e0, acc);
  acc = _mm256_fmadd_ps(w3[1], o0, acc);
  return _mm256_fmadd_ps(w3[2], e2, acc);
}

/* 8 output columns from o of one output row (see dw3x3_row). */
static inline __m256 dw3x3_acc(const float *const rows[3], const __m256 wv[9], int64_t s,
                               int64_t pl, int64_t o) {
  __m256 acc = _mm256_setzero_ps();
  for (int k = 0; k < 3; k++)
    if (rows[k]) acc = dw3x3_taps(acc, rows[k] + o * s - pl, wv + 3 * k, s);
  return acc;
}

static inline void dw3x3_chunk(const float *const rows[3], const __m256 wv[9], int64_t s,
                               int64_t pl, int64_t o, float *yr) {
  _mm256_storeu_ps(yr + o, dw3x3_acc(rows, wv, s, pl, o));
}

/* Output columns [o0, o1) of one row, scalar with bounds checks. */
static void dw3x3_cols(const rill_conv_geom *g, const float *const rows[3], const float *wk,
                       int64_t o0, int64_t o1, float *yr) {
  for (int64_t o = o0; o < o1; o++) {
    float acc = 0;
    int64_t iw0 = o * g->sw - g->pl;
    for (int k = 0; k < 3; k++) {
      if (!rows[k]) continue;
      for (int j = 0; j < 3; j++) {
        int64_t iw = iw0 + j;
        if (iw >= 0 && iw < g->w) acc += wk[3 * k + j] * rows[k][iw];
      }
    }
    yr[o] = acc;
  }
}

/* One output row of a 3x3 depthwise conv (one input and one output channel): rows[k] is
 * input row oh * sh - pt + k, NULL when it lies in the padding. Columns whose three taps
 * are all inside the row run 8 at a time, the last 8 of them overlapping the previous
 * chunk rather than falling back to scalar code; the borders run scalar. */
static void dw3x3_row(const rill_conv_geom *g, const float *const rows[3], const float *wk,
                      float *yr) {
  const int64_t s = g->sw, w = g->w, pl = g->pl, ow = g->ow;
  /* Interior: 0 <= o * s - pl and o * s - pl + 2 <= w - 1. */
  int64_t lo = (pl + s - 1) / s, hi = w - 3 + pl < 0 ? 0 : (w - 3 + pl) / s + 1;
  if (hi > ow) hi = ow;
  if (lo > hi) lo = hi;
  /* Last chunk start: 8 columns inside [lo, hi); for stride 2 the chunk reads 18 inputs
   * from o * 2 - pl, one more than it uses, which must lie inside the row too. */
  int64_t last = hi - 8;
  if (s == 2) {
    int64_t lim = (w - 1 - 17 + pl) >= 0 ? (w - 1 - 17 + pl) / 2 : -1;
    if (last > lim) last = lim;
  }
  if (last < lo) {
    dw3x3_cols(g, rows, wk, 0, ow, yr);
    return;
  }
  __m256 wv[9];
  for (int k = 0; k < 9; k++) wv[k] = _mm256_set1_ps(wk[k]);
  dw3x3_cols(g, rows, wk, 0, lo, yr);
  int64_t o = lo;
  for (; o <= last; o += 8) dw3x3_chunk(rows, wv, s, pl, o, yr);
  if (o < last + 8) { /* the columns up to last + 8, overlapping */
    dw3x3_chunk(rows, wv, s, pl, last, yr);
    o = last + 8;
  }
  dw3x3_cols(g, rows, wk, o, ow, yr);
}

/* The epilogue a depthwise kernel applies as it stores (conv2d_fusion's, conv_epi.h):
 * channel c's outputs become act((y + res) + bias[c]), clamp 1 (relu) or 2 (relu6). */
typedef struct dw_epi {
  const float *bias; /* per channel of the call, or NULL */
  const float *res;  /* the output's layout, or NULL */
  int clamp;
} dw_epi;

/* 8 outputs from column o of three padded rows, stride s (a constant where inlined):
 * the taps in the order of dw3x3_acc. */
static inline __attribute__((always_inline)) __m256 dw3x3_acc_padded(const float *r0, const float *r1,
                                                                    const float *r2, const __m256 wv[9],
                                                                    int64_t s, int64_t o) {
  const float *rows[3] = {r0, r1, r2};
  __m256 acc = _mm256_setzero_ps();
  _Pragma("GCC unroll 3") for (int k = 0; k < 3; k++) acc = dw3x3_taps(acc, rows[k] + o * s, wv + 3 * k, s);
  return acc;
}

/* The epilogue of 8 outputs (lanes of mask when masked). */
static inline __attribute__((always_inline)) __m256 dw_epi_apply(__m256 v, const float *res, bool has_bias,
                                                                 __m256 bias, int clamp, __m256i mask,
                                                                 bool masked) {
  if (res) v = _mm256_add_ps(v, masked ? _mm256_maskload_ps(res, mask) : _mm256_loadu_ps(res));
  if (has_bias) v = _mm256_add_ps(v, bias);
  if (clamp) v = _mm256_max_ps(_mm256_setzero_ps(), v); /* v second: NaN comes through */
  if (clamp == 2) v = _mm256_min_ps(_mm256_set1_ps(6.0f), v);
  return v;
}

/* One input row into a padded row (dst at its first input column): 8 floats at a time,
 * the last chunk through a masked load whose zero lanes land in the right padding. */
static inline __attribute__((always_inline)) void dw_copy_row(float *dst, const float *src, int64_t n,
                                                              int64_t full, __m256i inmask) {
  for (int64_t o = 0; o < full; o += 8) {
    __m256 v = _mm256_loadu_ps(src + o);
    /* opaque to the compiler, which would otherwise call memmove for these rows of 7
     * to 112 floats */
    __asm__("" : "+x"(v));
    _mm256_storeu_ps(dst + o, v);
  }
  if (full < n) _mm256_storeu_ps(dst + full, _mm256_maskload_ps(src + full, inmask));
}

/* One output row from three padded rows, the epilogue (when e) before each store. The
 * last chunk of the row is stored whole when spill (its extra lanes land on the next
 * output row, which the caller writes afterwards: a masked store is slow on some CPUs
 * and 7x7 rows have nothing else), else through the mask. */
static inline __attribute__((always_inline)) void dw_out_row(const float *r0, const float *r1, const float *r2,
                                                             const __m256 wv[9], int64_t s, int64_t ow,
                                                             float *yr, const float *rr, const dw_epi *e,
                                                             bool has_bias, __m256 bias, int clamp,
                                                             __m256i outmask, bool spill) {
  int64_t o = 0;
  for (; o + 8 <= ow; o += 8) {
    __m256 v = dw3x3_acc_padded(r0, r1, r2, wv, s, o);
    if (e) v = dw_epi_apply(v, rr ? rr + o : NULL, has_bias, bias, clamp, outmask, false);
    _mm256_storeu_ps(yr + o, v);
  }
  if (o < ow) {
    __m256 v = dw3x3_acc_padded(r0, r1, r2, wv, s, o);
    if (e) v = dw_epi_apply(v, rr ? rr + o : NULL, has_bias, bias, clamp, outmask, true);
    if (spill) _mm256_storeu_ps(yr + o, v);
    else _mm256_maskstore_ps(yr + o, outmask, v);
  }
}

/* Every 3x3 depthwise channel of a call goes through padded rows: each input row is
 * copied once (dw_copy_row), rows in the top or bottom padding are zero rows, the left
 * and right padding is zeroed once; every output then runs vectorised with no bounds
 * checks, the last chunk of a row stored through a mask, and the epilogue (when given)
 * applied before the store. Small images get a padded copy of the whole channel (up to
 * 3 * DW_RING_MAX floats), larger ones a ring of three rows. Rows read right after they
 * were written stall the loads on store forwarding (the loads straddle the stores), so
 * a whole copy is made before the channel is read, and the smallest images (up to
 * DW_DOUBLE floats: 14x14 and 7x7) copy the next channel while the current one is
 * computed, into a second buffer. Output rows are written in increasing address order,
 * the last chunk of each spilling onto the rows after it (dw_out_row), wherever the call
 * writes at least 8 more outputs after that row. A tap in the padding adds w * 0 to its
 * sum where the bounds-checked loops skip it: the same value. False (nothing written)
 * when a padded row would exceed DW_RING_MAX floats. Inlined with a constant stride. */
#define DW_RING_MAX 2048
#define DW_DOUBLE 1024

static inline __attribute__((always_inline)) bool dw3x3_ring_s(const rill_conv_geom *g, const float *x,
                                                               const float *w, float *y, int64_t nch,
                                                               const dw_epi *e, const int64_t s) {
  const int64_t chunks = (g->ow + 7) / 8, ow = g->ow, oh_n = g->oh, hw = g->h * g->w;
  const int64_t pw = 8 * chunks * s + 18, ph = (g->oh - 1) * s + 3;
  if (pw > DW_RING_MAX) return false;
  /* columns of an input row that land in the padded row (a row wider than the outputs
   * need is cut), copied in full chunks and a masked last one */
  int64_t n = g->w + g->pl <= pw ? g->w : pw - g->pl, full = n / 8 * 8, n8 = (n + 7) / 8 * 8;
  if (n <= 0 || g->pl + n8 > pw) return false;
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i inmask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - full)), lanes);
  const __m256i outmask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(ow - (chunks - 1) * 8)), lanes);
  const bool all = ph * pw <= 3 * DW_RING_MAX; /* a padded copy of the channel, else a ring */
  const bool dbl = ph * pw <= DW_DOUBLE;         /* two copies, the next one made ahead */
  const int clamp = e ? e->clamp : 0;
  const bool has_bias = e && e->bias;
  /* input rows [i0, i1) land in padded rows [i0 + pt, i1 + pt) */
  const int64_t i0 = 0, i1 = g->h + g->pt <= ph ? g->h : ph - g->pt;
  float ring[3 * DW_RING_MAX];
  memset(ring, 0, (size_t)((all ? (dbl ? 2 : 1) * ph : 3) * pw) * sizeof(float));
  if (all && nch > 0)
    for (int64_t ih = i0; ih < i1; ih++)
      dw_copy_row(ring + (ih + g->pt) * pw + g->pl, x + ih * g->w, n, full, inmask);
  for (int64_t ch = 0; ch < nch; ch++) {
    const float *xc = x + ch * hw, *wc = w + ch * 9;
    float *yc = y + ch * oh_n * ow;
    const float *rc = e && e->res ? e->res + ch * oh_n * ow : NULL;
    __m256 wv[9];
    for (int k = 0; k < 9; k++) wv[k] = _mm256_set1_ps(wc[k]);
    __m256 bias = has_bias ? _mm256_set1_ps(e->bias[ch]) : _mm256_setzero_ps();
    if (all) {
      float *cur = ring + (dbl && (ch & 1) ? ph * pw : 0);
      if (!dbl && ch > 0)
        for (int64_t ih = i0; ih < i1; ih++)
          dw_copy_row(cur + (ih + g->pt) * pw + g->pl, xc + ih * g->w, n, full, inmask);
      if (dbl && ch + 1 < nch) {
        float *next = ring + ((ch + 1) & 1 ? ph * pw : 0);
        for (int64_t ih = i0; ih < i1; ih++)
          dw_copy_row(next + (ih + g->pt) * pw + g->pl, xc + hw + ih * g->w, n, full, inmask);
      }
      for (int64_t oh = 0; oh < oh_n; oh++) {
        const float *r0 = cur + oh * s * pw;
        dw_out_row(r0, r0 + pw, r0 + 2 * pw, wv, s, ow, yc + oh * ow, rc ? rc + oh * ow : NULL, e,
                   has_bias, bias, clamp, outmask, (nch - ch) * oh_n * ow - (oh + 1) * ow >= 8);
      }
      continue;
    }
    int64_t have = -1; /* the last padded row copied into the ring */
    for (int64_t oh = 0; oh < oh_n; oh++) {
      for (int64_t r = have + 1; r < oh * s + 3; r++) {
        have = r;
        float *dst = ring + (r % 3) * pw + g->pl;
        int64_t ih = r - g->pt;
        if (ih < 0 || ih >= g->h)
          for (int64_t o = 0; o < n8; o += 8) _mm256_storeu_ps(dst + o, _mm256_setzero_ps());
        else
          dw_copy_row(dst, xc + ih * g->w, n, full, inmask);
      }
      int64_t r = oh * s;
      dw_out_row(ring + (r % 3) * pw, ring + ((r + 1) % 3) * pw, ring + ((r + 2) % 3) * pw, wv, s, ow,
                 yc + oh * ow, rc ? rc + oh * ow : NULL, e, has_bias, bias, clamp, outmask,
                 (nch - ch) * oh_n * ow - (oh + 1) * ow >= 8);
    }
  }
  return true;
}

RILL_AVX2_END

/* The padded-ring depthwise kernel above on AVX-512: 16 output columns per vector, the
 * last chunk of each row and of each copied input row through masks. Every output is the
 * same chain of FMAs over the 9 taps in the same order and the same epilogue, so y is bit
 * for bit dw3x3_ring_s's; stride 2 deinterleaves 32 inputs with two permutes. */
RILL_AVX512_BEGIN
static inline __attribute__((always_inline)) __m512 dw16_taps(__m512 acc, const float *p,
                                                              const __m512 w3[3], int64_t s) {
  if (s == 1) {
    acc = _mm512_fmadd_ps(w3[0], _mm512_loadu_ps(p), acc);
    acc = _mm512_fmadd_ps(w3[1], _mm512_loadu_ps(p + 1), acc);
    return _mm512_fmadd_ps(w3[2], _mm512_loadu_ps(p + 2), acc);
  }
  const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  __m512 a = _mm512_loadu_ps(p), b = _mm512_loadu_ps(p + 16);
  __m512 c = _mm512_loadu_ps(p + 2), d = _mm512_loadu_ps(p + 18);
  acc = _mm512_fmadd_ps(w3[0], _mm512_permutex2var_ps(a, ev, b), acc);
  acc = _mm512_fmadd_ps(w3[1], _mm512_permutex2var_ps(a, od, b), acc);
  return _mm512_fmadd_ps(w3[2], _mm512_permutex2var_ps(c, ev, d), acc);
}

static inline __attribute__((always_inline)) void dw16_copy_row(float *dst, const float *src, int64_t n,
                                                                int64_t full, __mmask16 inmask) {
  for (int64_t o = 0; o < full; o += 16) {
    __m512 v = _mm512_loadu_ps(src + o);
    __asm__("" : "+v"(v));
    _mm512_storeu_ps(dst + o, v);
  }
  if (full < n) _mm512_storeu_ps(dst + full, _mm512_maskz_loadu_ps(inmask, src + full));
}

static inline __attribute__((always_inline)) void dw16_out_row(const float *r0, const float *r1,
                                                               const float *r2, const __m512 wv[9], int64_t s,
                                                               int64_t ow, float *yr, const float *rr,
                                                               const dw_epi *e, bool has_bias, __m512 bias,
                                                               int clamp, __mmask16 outmask) {
  const float *rows[3] = {r0, r1, r2};
  for (int64_t o = 0; o < ow; o += 16) {
    bool tail = o + 16 > ow;
    __mmask16 m = tail ? outmask : (__mmask16)0xffff;
    __m512 v = _mm512_setzero_ps();
    _Pragma("GCC unroll 3") for (int k = 0; k < 3; k++) v = dw16_taps(v, rows[k] + o * s, wv + 3 * k, s);
    if (e) {
      if (rr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, rr + o));
      if (has_bias) v = _mm512_add_ps(v, bias);
      if (clamp) v = _mm512_max_ps(_mm512_setzero_ps(), v); /* v second: NaN comes through */
      if (clamp == 2) v = _mm512_min_ps(_mm512_set1_ps(6.0f), v);
    }
    _mm512_mask_storeu_ps(yr + o, m, v);
  }
}

/* dw3x3_ring_s with 16 columns per vector: padded rows of 16 * chunks * s + 34 floats. */
static inline __attribute__((always_inline)) bool dw16_ring_s(const rill_conv_geom *g, const float *x,
                                                              const float *w, float *y, int64_t nch,
                                                              const dw_epi *e, const int64_t s) {
  const int64_t chunks = (g->ow + 15) / 16, ow = g->ow, oh_n = g->oh, hw = g->h * g->w;
  const int64_t pw = 16 * chunks * s + 34, ph = (g->oh - 1) * s + 3;
  if (pw > DW_RING_MAX) return false;
  int64_t n = g->w + g->pl <= pw ? g->w : pw - g->pl, full = n / 16 * 16, n16 = (n + 15) / 16 * 16;
  if (n <= 0 || g->pl + n16 > pw) return false;
  const __mmask16 inmask = (__mmask16)((1u << (n - full)) - 1u);
  const __mmask16 outmask = (__mmask16)((1u << (ow - (chunks - 1) * 16)) - 1u);
  const bool all = ph * pw <= 3 * DW_RING_MAX;
  const bool dbl = ph * pw <= DW_DOUBLE;
  const int clamp = e ? e->clamp : 0;
  const bool has_bias = e && e->bias;
  const int64_t i1 = g->h + g->pt <= ph ? g->h : ph - g->pt;
  float ring[3 * DW_RING_MAX];
  memset(ring, 0, (size_t)((all ? (dbl ? 2 : 1) * ph : 3) * pw) * sizeof(float));
  if (all && nch > 0)
    for (int64_t ih = 0; ih < i1; ih++)
      dw16_copy_row(ring + (ih + g->pt) * pw + g->pl, x + ih * g->w, n, full, inmask);
  for (int64_t ch = 0; ch < nch; ch++) {
    const float *xc = x + ch * hw, *wc = w + ch * 9;
    float *yc = y + ch * oh_n * ow;
    const float *rc = e && e->res ? e->res + ch * oh_n * ow : NULL;
    __m512 wv[9];
    for (int k = 0; k < 9; k++) wv[k] = _mm512_set1_ps(wc[k]);
    __m512 bias = has_bias ? _mm512_set1_ps(e->bias[ch]) : _mm512_setzero_ps();
    if (all) {
      float *cur = ring + (dbl && (ch & 1) ? ph * pw : 0);
      if (!dbl && ch > 0)
        for (int64_t ih = 0; ih < i1; ih++)
          dw16_copy_row(cur + (ih + g->pt) * pw + g->pl, xc + ih * g->w, n, full, inmask);
      if (dbl && ch + 1 < nch) {
        float *next = ring + ((ch + 1) & 1 ? ph * pw : 0);
        for (int64_t ih = 0; ih < i1; ih++)
          dw16_copy_row(next + (ih + g->pt) * pw + g->pl, xc + hw + ih * g->w, n, full, inmask);
      }
      for (int64_t oh = 0; oh < oh_n; oh++) {
        const float *r0 = cur + oh * s * pw;
        dw16_out_row(r0, r0 + pw, r0 + 2 * pw, wv, s, ow, yc + oh * ow, rc ? rc + oh * ow : NULL, e,
                     has_bias, bias, clamp, outmask);
      }
      continue;
    }
    int64_t have = -1;
    for (int64_t oh = 0; oh < oh_n; oh++) {
      for (int64_t r = have + 1; r < oh * s + 3; r++) {
        have = r;
        float *dst = ring + (r % 3) * pw + g->pl;
        int64_t ih = r - g->pt;
        if (ih < 0 || ih >= g->h)
          for (int64_t o = 0; o < n16; o += 16) _mm512_storeu_ps(dst + o, _mm512_setzero_ps());
        else
          dw16_copy_row(dst, xc + ih * g->w, n, full, inmask);
      }
      int64_t r = oh * s;
      dw16_out_row(ring + (r % 3) * pw, ring + ((r + 1) % 3) * pw, ring + ((r + 2) % 3) * pw, wv, s, ow,
                   yc + oh * ow, rc ? rc + oh * ow : NULL, e, has_bias, bias, clamp, outmask);
    }
  }
  return true;
}

static bool dw3x3_ring_avx512(const rill_conv_geom *g, const float *x, const float *w, float *y,
                              int64_t nch, const dw_epi *e) {
  return g->sw == 1 ? dw16_ring_s(g, x, w, y, nch, e, 1) : dw16_ring_s(g, x, w, y, nch, e, 2);
}
RILL_AVX512_END

RILL_AVX2_BEGIN

/* The padded-ring kernel on the widest vectors the CPU runs (both give the same bits). */
static bool dw3x3_ring(const rill_conv_geom *g, const float *x, const float *w, float *y, int64_t nch,
                       const dw_epi *e) {
  if (rill_cpu_avx512() && dw3x3_ring_avx512(g, x, w, y, nch, e)) return true;
  return g->sw == 1 ? dw3x3_ring_s(g, x, w, y, nch, e, 1) : dw3x3_ring_s(g, x, w, y, nch, e, 2);
}

/* y = conv(x, w) for nch consecutive channels of a depthwise 3x3 conv with stride 1 or 2
 * and no dilation (x [nch, h, w], w [nch, 1, 3, 3], y [nch, oh, ow]), with the epilogue
 * e when not NULL (dw3x3_ring only: false when it cannot take the geometry); false
 * (nothing written) for any other geometry. */
static bool dw3x3_f32(const rill_conv_geom *g, const float *x, const float *w, float *y, int64_t nch,
                      const dw_epi *e) {
  if (g->kh != 3 || g->kw != 3 || g->dh != 1 || g->dw != 1 || g->sh != g->sw ||
      (g->sw != 1 && g->sw != 2) || g->oh <= 0 || g->ow <= 0)
    return false;
  if (dw3x3_ring(g, x, w, y, nch, e)) return true;
  if (e) return false;
  for (int64_t ch = 0; ch < nch; ch++) {
    const float *xc = x + ch * g->h * g->w;
    for (int64_t oh = 0; oh < g->oh; oh++) {
      const float *rows[3];
      for (int k = 0; k < 3; k++) {
        int64_t ih = oh * g->sh - g->pt + k;
        rows[k] = ih >= 0 && ih < g->h ? xc + ih * g->w : NULL;
      }
      dw3x3_row(g, rows, w + ch * 9, y + ch * g->oh * g->ow + oh * g->ow);
    }
  }
  return true;
}
#define DW_FAST(g, x, w, y, nch) dw3x3_f32(g, x, w, y, nch, NULL)

/* d[i] = s[2 i] for i in a prefix of [0, n), 8 at a time; reads s[0 .. 2 i + 15] per
 * chunk, so a chunk runs only while that stays inside s[0 .. 2 (n - 1)]. The im2col of
 * stride-2 convs (first layers: 3 input channels, so im2col is most of their cost). */
static int64_t gather2_f32(float *restrict d, const float *restrict s, int64_t n) {
  int64_t i = 0;
  for (; i + 9 <= n; i += 8) {
    __m256 e, o;
    deinterleave8(s + 2 * i, &e, &o);
    _mm256_storeu_ps(d + i, e);
  }
  return i;
}
#define GATHER2(d, s, n) gather2_f32(d, s, n)

/* An epilogue applied as the small-K GEMM stores c (conv2d_fusion's bias, residual and
 * clamp, kernels/cpu/conv_epi.h): row i of c becomes (c + res) + bias[i], then clamped
 * at 0 (clamp 1) or to [0, 6] (clamp 2). res has c's layout with its own stride. */
typedef struct sk_epi {
  const float *bias; /* per row of c, or NULL */
  const float *res;  /* or NULL */
  int64_t ldr;
  int clamp;
} sk_epi;

/* One block of c = a b (row-major, no transposes) for the small-K GEMM below: mb (1..4)
 * rows of c by nv (1..3) vectors of 8 columns, the last vector masked when tail. Inlined
 * with constant mb, nv and tail, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void smallk_block(
    int mb, int nv, bool tail, __m256i mask, int64_t kk, const float *a, int64_t lda,
    const float *b, int64_t ldb, float *c, int64_t ldc, const sk_epi *e) {
  __m256 acc[4][3];
  _Pragma("GCC unroll 4") for (int i = 0; i < mb; i++)
    _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) acc[i][v] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kk; k++) {
    __m256 bv[3];
    _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++)
      bv[v] = tail && v == nv - 1 ? _mm256_maskload_ps(b + k * ldb + 8 * v, mask)
                                  : _mm256_loadu_ps(b + k * ldb + 8 * v);
    _Pragma("GCC unroll 4") for (int i = 0; i < mb; i++) {
      __m256 ai = _mm256_broadcast_ss(a + i * lda + k);
      _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) acc[i][v] = _mm256_fmadd_ps(ai, bv[v], acc[i][v]);
    }
  }
  if (e) {
    __m256 zero = _mm256_setzero_ps(), six = _mm256_set1_ps(6.0f);
    _Pragma("GCC unroll 4") for (int i = 0; i < mb; i++) {
      __m256 bi = e->bias ? _mm256_set1_ps(e->bias[i]) : zero;
      _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) {
        __m256 t = acc[i][v];
        if (e->res) {
          const float *r = e->res + i * e->ldr + 8 * v;
          t = _mm256_add_ps(t, tail && v == nv - 1 ? _mm256_maskload_ps(r, mask) : _mm256_loadu_ps(r));
        }
        if (e->bias) t = _mm256_add_ps(t, bi);
        if (e->clamp) t = _mm256_max_ps(zero, t); /* t second: NaN comes through */
        if (e->clamp == 2) t = _mm256_min_ps(six, t);
        acc[i][v] = t;
      }
    }
  }
  _Pragma("GCC unroll 4") for (int i = 0; i < mb; i++)
    _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) {
      if (tail && v == nv - 1) _mm256_maskstore_ps(c + i * ldc + 8 * v, mask, acc[i][v]);
      else _mm256_storeu_ps(c + i * ldc + 8 * v, acc[i][v]);
    }
}

/* The epilogue of the rows from i on (its bias and residual advanced to them). */
static inline sk_epi *sk_epi_at(const sk_epi *e, sk_epi *tmp, int64_t i, int64_t j) {
  if (!e) return NULL;
  *tmp = *e;
  if (tmp->bias) tmp->bias += i;
  if (tmp->res) tmp->res += i * e->ldr + j;
  return tmp;
}

/* Rows mb of c for the columns [j, j + 24): full blocks of 4 rows, then one row at a
 * time. */
static inline __attribute__((always_inline)) void smallk_cols(
    int nv, bool tail, __m256i mask, int64_t m, int64_t kk, const float *a, int64_t lda,
    const float *b, int64_t ldb, float *c, int64_t ldc, const sk_epi *e, int64_t j) {
  int64_t i = 0;
  sk_epi t;
  for (; i + 4 <= m; i += 4)
    smallk_block(4, nv, tail, mask, kk, a + i * lda, lda, b, ldb, c + i * ldc, ldc, sk_epi_at(e, &t, i, j));
  for (; i < m; i++)
    smallk_block(1, nv, tail, mask, kk, a + i * lda, lda, b, ldb, c + i * ldc, ldc, sk_epi_at(e, &t, i, j));
}

/* c = a b for a k too small for a GEMM library to earn back its packing (first layers:
 * 3 channels x 3 x 3 taps = 27; 1x1 convs over few channels): each block of 24 columns of
 * b is read from cache by every 4 rows of a, c is written once, nothing is copied. With
 * e, its epilogue is applied to each block as it is stored. Every element of c is the
 * same sum over k in order, whichever block holds it, so c does not depend on how the
 * caller splits it into rows or columns. */
static void smallk_sgemm_avx2(int64_t m, int64_t n, int64_t kk, const float *a, int64_t lda,
                              const float *b, int64_t ldb, float *c, int64_t ldc, const sk_epi *e) {
  int64_t j = 0;
  __m256i all = _mm256_set1_epi32(-1);
  for (; j + 24 <= n; j += 24) smallk_cols(3, false, all, m, kk, a, lda, b + j, ldb, c + j, ldc, e, j);
  if (j < n) {
    int64_t r = n - j, nv = (r + 7) / 8, last = r - 8 * (nv - 1);
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)last), lanes);
    if (nv == 3) smallk_cols(3, true, mask, m, kk, a, lda, b + j, ldb, c + j, ldc, e, j);
    else if (nv == 2) smallk_cols(2, true, mask, m, kk, a, lda, b + j, ldb, c + j, ldc, e, j);
    else smallk_cols(1, true, mask, m, kk, a, lda, b + j, ldb, c + j, ldc, e, j);
  }
}
RILL_AVX2_END

/* The same kernel on AVX-512: blocks of 4 rows by 48 columns (3 vectors of 16), the
 * last columns through masked loads and stores. Each element of c is the same chain of
 * FMAs over k in order and the same epilogue as above, so c is bit for bit the AVX2
 * kernel's; only the blocks are wider. */
RILL_AVX512_BEGIN
static inline __attribute__((always_inline)) void smallk_block16(
    int mb, int nv, bool tail, __mmask16 mask, int64_t kk, const float *a, int64_t lda,
    const float *b, int64_t ldb, float *c, int64_t ldc, const sk_epi *e) {
  __m512 acc[4][3];
  _Pragma("GCC unroll 4") for (int i = 0; i < mb; i++)
    _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) acc[i][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kk; k++) {
    __m512 bv[3];
    _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++)
      bv[v] = tail && v == nv - 1 ? _mm512_maskz_loadu_ps(mask, b + k * ldb + 16 * v)
                                  : _mm512_loadu_ps(b + k * ldb + 16 * v);
    _Pragma("GCC unroll 4") for (int i = 0; i < mb; i++) {
      __m512 ai = _mm512_set1_ps(a[i * lda + k]);
      _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
    }
  }
  if (e) {
    __m512 zero = _mm512_setzero_ps(), six = _mm512_set1_ps(6.0f);
    _Pragma("GCC unroll 4") for (int i = 0; i < mb; i++) {
      __m512 bi = e->bias ? _mm512_set1_ps(e->bias[i]) : zero;
      _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) {
        __m512 t = acc[i][v];
        if (e->res) {
          const float *r = e->res + i * e->ldr + 16 * v;
          t = _mm512_add_ps(t, tail && v == nv - 1 ? _mm512_maskz_loadu_ps(mask, r) : _mm512_loadu_ps(r));
        }
        if (e->bias) t = _mm512_add_ps(t, bi);
        if (e->clamp) t = _mm512_max_ps(zero, t); /* t second: NaN comes through */
        if (e->clamp == 2) t = _mm512_min_ps(six, t);
        acc[i][v] = t;
      }
    }
  }
  _Pragma("GCC unroll 4") for (int i = 0; i < mb; i++)
    _Pragma("GCC unroll 3") for (int v = 0; v < nv; v++) {
      if (tail && v == nv - 1) _mm512_mask_storeu_ps(c + i * ldc + 16 * v, mask, acc[i][v]);
      else _mm512_storeu_ps(c + i * ldc + 16 * v, acc[i][v]);
    }
}

static inline __attribute__((always_inline)) void smallk_cols16(
    int nv, bool tail, __mmask16 mask, int64_t m, int64_t kk, const float *a, int64_t lda,
    const float *b, int64_t ldb, float *c, int64_t ldc, const sk_epi *e, int64_t j) {
  int64_t i = 0;
  sk_epi t;
  for (; i + 4 <= m; i += 4)
    smallk_block16(4, nv, tail, mask, kk, a + i * lda, lda, b, ldb, c + i * ldc, ldc, sk_epi_at(e, &t, i, j));
  for (; i < m; i++)
    smallk_block16(1, nv, tail, mask, kk, a + i * lda, lda, b, ldb, c + i * ldc, ldc, sk_epi_at(e, &t, i, j));
}

static void smallk_sgemm_avx512(int64_t m, int64_t n, int64_t kk, const float *a, int64_t lda,
                                const float *b, int64_t ldb, float *c, int64_t ldc, const sk_epi *e) {
  int64_t j = 0;
  for (; j + 48 <= n; j += 48) smallk_cols16(3, false, 0xffff, m, kk, a, lda, b + j, ldb, c + j, ldc, e, j);
  if (j < n) {
    int64_t r = n - j, nv = (r + 15) / 16, last = r - 16 * (nv - 1);
    __mmask16 mask = (__mmask16)((1u << last) - 1u);
    if (nv == 3) smallk_cols16(3, true, mask, m, kk, a, lda, b + j, ldb, c + j, ldc, e, j);
    else if (nv == 2) smallk_cols16(2, true, mask, m, kk, a, lda, b + j, ldb, c + j, ldc, e, j);
    else smallk_cols16(1, true, mask, m, kk, a, lda, b + j, ldb, c + j, ldc, e, j);
  }
}
RILL_AVX512_END

RILL_AVX2_BEGIN
/* The small-K GEMM on the widest vectors the CPU runs (both give the same bits). */
static void smallk_sgemm(int64_t m, int64_t n, int64_t kk, const float *a, int64_t lda,
                         const float *b, int64_t ldb, float *c, int64_t ldc, const sk_epi *e) {
  if (rill_cpu_avx512()) smallk_sgemm_avx512(m, n, kk, a, lda, b, ldb, c, ldc, e);
  else smallk_sgemm_avx2(m, n, kk, a, lda, b, ldb, c, ldc, e);
}

/* Columns [j0, n) of c = a b (with e's epilogue) as dot products, for the last column or
 * two of a small image's GEMM (7x7: 49 = 6 x 8 + 1), which the kernel above would run
 * as a masked vector of mostly idle lanes in every block of 4 rows, at the cost of a
 * whole vector. Each column of b is gathered once; 4 rows at a time run a sum each over
 * k in 8 interleaved partial sums, added in a fixed order, then the last k % 8 terms in
 * order: the result depends on a, b and k only. DOT_MAX_K bounds k (the caller runs
 * the kernel above beyond it). */
#define DOT_MAX_K 4096

static inline float hsum8(__m256 v) {
  float t[8];
  _mm256_storeu_ps(t, v);
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

static inline float sk_epi_scalar(float v, const sk_epi *e, int64_t i, int64_t j) {
  if (!e) return v;
  if (e->res) v += e->res[i * e->ldr + j];
  if (e->bias) v += e->bias[i];
  /* v where the compare fails: a NaN comes through, as from max / min above */
  if (e->clamp) v = v < 0.0f ? 0.0f : v;
  if (e->clamp == 2) v = v > 6.0f ? 6.0f : v;
  return v;
}

static void dot_cols(int64_t m, int64_t j0, int64_t n, int64_t kk, const float *a, int64_t lda,
                     const float *b, int64_t ldb, float *c, int64_t ldc, const sk_epi *e) {
  float col[DOT_MAX_K];
  const int64_t k8 = kk / 8 * 8;
  for (int64_t j = j0; j < n; j++) {
    for (int64_t k = 0; k < kk; k++) col[k] = b[k * ldb + j];
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      const float *a0 = a + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
      __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
      for (int64_t k = 0; k < k8; k += 8) {
        __m256 bv = _mm256_loadu_ps(col + k);
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a0 + k), bv, s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a1 + k), bv, s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a2 + k), bv, s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a3 + k), bv, s3);
      }
      float v[4] = {hsum8(s0), hsum8(s1), hsum8(s2), hsum8(s3)};
      const float *ar[4] = {a0, a1, a2, a3};
      for (int r = 0; r < 4; r++) {
        for (int64_t k = k8; k < kk; k++) v[r] = fmaf(ar[r][k], col[k], v[r]);
        c[(i + r) * ldc + j] = sk_epi_scalar(v[r], e, i + r, j);
      }
    }
    for (; i < m; i++) {
      const float *ai = a + i * lda;
      __m256 s0 = _mm256_setzero_ps();
      for (int64_t k = 0; k < k8; k += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(ai + k), _mm256_loadu_ps(col + k), s0);
      float v = hsum8(s0);
      for (int64_t k = k8; k < kk; k++) v = fmaf(ai[k], col[k], v);
      c[i * ldc + j] = sk_epi_scalar(v, e, i, j);
    }
  }
}

/* The engine's float GEMM: c = a b with a small k (at most SMALLK_MAX) in a forward conv's
 * im2col path (smallk_on, set by conv_fwd_run: first layers) runs the kernel above;
 * everything else (transposes, accumulation, larger k, and the 1x1 path, whose GEMMs over
 * few channels are bound by memory and gain from OpenBLAS's threads) goes to OpenBLAS. */
#define SMALLK_MAX 32
static _Thread_local bool smallk_on;
/* The threads of the conv being run, for the GEMMs of a conv that runs whole. */
static _Thread_local int64_t conv_threads = 1;
static _Thread_local const rill_device_services *conv_dev;
static void conv_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m, int n,
                       int kk, float alpha, const float *a, int lda, const float *b, int ldb,
                       float beta, float *c, int ldc) {
  if (order == CblasRowMajor && ta == CblasNoTrans && tb == CblasNoTrans && alpha == 1.0f &&
      beta == 0.0f && kk >= 1 && kk <= SMALLK_MAX && smallk_on) {
    smallk_sgemm(m, n, kk, a, lda, b, ldb, c, ldc, NULL);
    return;
  }
  rill_sgemm_cblas(conv_dev, conv_threads, order, ta, tb, m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc);
}
/* 8 elements from s to d (unfold's row chunks) in one 256-bit move. */
#define COPY8(d, s) _mm256_storeu_ps(d, _mm256_loadu_ps(s))

static void unfold_rows_f32_avx2(const rill_conv_geom *g, int64_t c_g, const float *x, float *col,
                                 int64_t r0, int64_t r1, int64_t ldc);
#define UNFOLD_ROWS unfold_rows_f32_avx2

#define T float
#define SUF f32_avx2
#define GEMM conv_sgemm
#include "kernels/cpu/conv_impl.inc"
#undef T
#undef SUF
#undef GEMM
#undef DW_FAST
#undef GATHER2
#undef COPY8
#undef UNFOLD_ROWS

/* The unfolding of a conv that runs whole, by ranges of its input channels on the
 * conv's threads: a copy bound by memory that the split GEMM after it would otherwise
 * wait for on one thread (ResNet-50's 3x3 convs ran 1.3x to 1.5x faster on 2 threads
 * than on 1 with it inline). Each channel writes its own kh * kw rows of col, ldc apart
 * (rows' spills stay inside their own row), so the parts never touch the same
 * element, and the copy is the same whatever the split. */
#define UNFOLD_PART_FLOATS (64 * 1024)
typedef struct unfold_split {
  const rill_conv_geom *g;
  const float *x;
  float *col;
  int64_t r0, r1, ldc, chunk, c_g;
} unfold_split;

static bool unfold_part(void *arg, int64_t i, int slot) {
  const unfold_split *s = arg;
  const rill_conv_geom *g = s->g;
  (void)slot;
  int64_t c0 = i * s->chunk, c1 = c0 + s->chunk < s->c_g ? c0 + s->chunk : s->c_g;
  unfold_f32_avx2(g, c1 - c0, s->x + c0 * g->h * g->w, 0, 1, s->r0, s->r1,
                  s->col + c0 * g->kh * g->kw * s->ldc, s->ldc);
  return true;
}

static void unfold_rows_f32_avx2(const rill_conv_geom *g, int64_t c_g, const float *x, float *col,
                                 int64_t r0, int64_t r1, int64_t ldc) {
  int64_t per_channel = g->kh * g->kw * (r1 - r0) * g->ow;
  int64_t chunk = per_channel >= UNFOLD_PART_FLOATS ? 1 : UNFOLD_PART_FLOATS / per_channel;
  unfold_split s = {.g = g, .x = x, .col = col, .r0 = r0, .r1 = r1, .ldc = ldc, .chunk = chunk, .c_g = c_g};
  (void)rill_dev_parallel_for(conv_dev, conv_threads, (c_g + chunk - 1) / chunk, unfold_part, &s);
}

RILL_AVX2_END
#endif

/* ---- The baseline engine: float and double ---- */
#define DW_FAST(g, x, w, y, nch) false
#define GATHER2(d, s, n) 0
#define COPY8(d, s) memcpy(d, s, 8 * sizeof(T))
#define UNFOLD_ROWS(g, c_g, x, col, r0, r1, ldc) FN(unfold)(g, c_g, x, 0, 1, r0, r1, col, ldc)

#define T float
#define SUF f32
#define GEMM cblas_sgemm
#include "kernels/cpu/conv_impl.inc"
#undef T
#undef SUF
#undef GEMM

#define T double
#define SUF f64
#define GEMM cblas_dgemm
#include "kernels/cpu/conv_impl.inc"
#undef T
#undef SUF
#undef GEMM

static int conv_pick(const rill_conv_geom *g) {
  bool one = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pb == 0 &&
             g->pl == 0 && g->pr == 0;
  switch (rill_conv_force_path) {
  case RILL_CONV_PATH_IM2COL: return RILL_CONV_PATH_IM2COL;
  case RILL_CONV_PATH_DIRECT: return RILL_CONV_PATH_DIRECT;
  case RILL_CONV_PATH_DIRECT_GENERIC: return RILL_CONV_PATH_DIRECT_GENERIC;
  case RILL_CONV_PATH_1X1: return one ? RILL_CONV_PATH_1X1 : RILL_CONV_PATH_IM2COL;
  default: break;
  }
  if (one) return RILL_CONV_PATH_1X1;
  /* Depthwise (one input and at most two output channels per group): GEMM degenerates
   * to matrix-vector products. With more channels per group the GEMM wins even when the
   * groups are small (bench_conv: groups of 4 x 4 run 4x faster through im2col). */
  if (g->c / g->groups == 1 && g->m / g->groups <= 2) return RILL_CONV_PATH_DIRECT;
  return RILL_CONV_PATH_IM2COL;
}

static rill_status *conv_geom_for(rill_kernel_ctx *ctx, bool transpose, bool allow_nhwc,
                                  const rill_tensor *x, const rill_tensor *f, rill_conv_geom *g) {
  char err[256];
  if (!rill_nn_conv_geom_fmt(ctx->attrs, transpose, allow_nhwc, &x->dims, &f->dims, g, err, sizeof err)) {
    rill_status *st = rill_kernel_error(ctx, "Input (%s), Filter (%s): %s", rill_kin_name(ctx, 0, 0),
                                        rill_kin_name(ctx, 1, 0), err);
    if (!strstr(err, "UNIMPLEMENTED")) return st;
    rill_status *u = rill_error(RILL_UNIMPLEMENTED, "%s", rill_status_message(st));
    rill_status_destroy(st);
    return u;
  }
  int64_t c_g = g->c / g->groups, k = c_g * g->kh * g->kw, p = g->oh * g->ow;
  if (k > INT_MAX || p > INT_MAX || g->m > INT_MAX || (int64_t)g->ow * k > INT_MAX)
    return rill_kernel_error(ctx, "convolution of %lld x %lld x %lld is too large for BLAS",
                             (long long)g->m, (long long)k, (long long)p);
  return NULL;
}

/* Optional gradient output (slot, 0): NULL when absent (@EMPTY@), else checked. */
static rill_status *grad_out(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt, const rill_dims *want,
                             rill_tensor **out) {
  *out = NULL;
  if (!rill_kout(ctx, slot, 0)) return NULL;
  RILL_TRY(rill_kout_need(ctx, slot, 0, dt, out));
  return rill_kout_check_dims(ctx, slot, 0, *out, want);
}

static rill_status *check_dy(rill_kernel_ctx *ctx, const rill_tensor *dy, const rill_dims *want) {
  if (rill_dims_equal(&dy->dims, want)) return NULL;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  return rill_kernel_error(ctx, "input Output@GRAD (%s) has shape %s, the forward output is %s",
                           rill_kin_name(ctx, 3, 0), rill_dims_str(&dy->dims, a, sizeof a),
                           rill_dims_str(want, b, sizeof b));
}

/* The engine's function `name` for dtype dt, float on AVX2 where the CPU has it. */
#if RILL_X86_SIMD
#define ENGINE_F32(name, ...) (rill_cpu_avx2() ? name##_f32_avx2(__VA_ARGS__) : name##_f32(__VA_ARGS__))
#else
#define ENGINE_F32(name, ...) name##_f32(__VA_ARGS__)
#endif
#define ENGINE(dt, name, ...) \
  ((dt) == RILL_DTYPE_FP32 ? ENGINE_F32(name, __VA_ARGS__) : name##_f64(__VA_ARGS__))

/* ---- The forward in fixed parts over the kernel pool (parts.c) ----
 * A conv of one image is cut into parts that depend on its geometry only, each run by
 * whichever of the executor's threads takes it (rill_dev_parallel_for);
 * with an epilogue (conv2d_fusion's bias, residual and activation) each part applies it
 * to its own outputs while they are still in cache (inside the GEMM's stores on the
 * small-K kernel). A part computes every one of its outputs with the same code whatever
 * the split, so the result is bit for bit the same for any number of threads.
 *   direct - contiguous ranges of groups (depthwise channels), each a conv of its own;
 *   1x1    - (float, AVX2) one image's GEMM y = w x by ranges of columns (output
 *            positions) or, when the image is small (7x7 layers), of rows (output
 *            channels), on the small-K kernel reading w and x in place; a small
 *            image's GEMM of medium size (as for im2col below) by blocks of rows on
 *            OpenBLAS, one thread each;
 *   im2col - (float, AVX2) blocks of output rows, each unfolded into its thread's
 *            buffer and multiplied: by the small-K kernel when k = c * kh * kw <=
 *            SMALLK_MAX (first layers); by OpenBLAS on one thread when the image's
 *            GEMM is of medium size (kernels/cpu/gemm.h: mnist_conv_bn's 5x5 conv
 *            over 20 channels of 12x12, 1.6 M multiply-adds).
 * Other convs run whole (OpenBLAS threads their GEMMs), then the epilogue in one pass.
 * PART_MACS is about the work of one part: enough to pay for handing it to another
 * thread (a spinning worker takes a part within a microsecond) and small enough that a
 * thread the machine does not schedule holds up little. */
#define PART_MACS (1 << 17)
/* A 1x1 conv whose weights exceed this many floats stays on OpenBLAS when split by
 * columns (the small-K kernel would read all of w again for every block of 24 or 48
 * columns). */
#define FAST_1X1_MAX_W (64 * 1024)
/* 1x1 convs with at least this many output positions are split by columns. */
#define FAST_1X1_COLS 192

enum { FWD_DIRECT, FWD_1X1, FWD_IM2COL };

typedef struct fwd_split {
  const rill_conv_geom *g;
  rill_dtype dt;
  int path, kind;
  const void *x, *w;
  void *y;
  const rill_conv_epi *epi; /* float only; NULL: none */
  int64_t per_img;          /* parts per image */
  int64_t chunk;            /* groups (direct), columns or rows (1x1), output rows (im2col) */
  bool by_cols;             /* 1x1 */
  float *col;               /* im2col: col_n floats per slot */
  bool blas;                /* im2col: the blocks' GEMMs on OpenBLAS (else small-K) */
  size_t col_n;
} fwd_split;

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

#if RILL_X86_SIMD
RILL_AVX2_BEGIN
/* The small-K GEMM's share of an epilogue: bias, residual, relu / relu6 in its stores;
 * sigmoid and tanh are left to a pass (rill_epi_apply with only the activation). */
static const sk_epi *sk_epi_for(const rill_conv_epi *e, const float *bias, const float *res, int64_t ldr,
                                sk_epi *out) {
  if (!e) return NULL;
  *out = (sk_epi){.bias = e->bias ? bias : NULL, .res = e->res ? res : NULL, .ldr = ldr,
                  .clamp = e->act == RILL_FUSED_RELU ? 1 : e->act == RILL_FUSED_RELU6 ? 2 : 0};
  return out;
}

static void sk_epi_rest(const rill_conv_epi *e, float *y, int64_t ldy, int64_t rows, int64_t cols) {
  if (!e || (e->act != RILL_FUSED_SIGMOID && e->act != RILL_FUSED_TANH)) return;
  rill_conv_epi act = {.act = e->act};
  rill_epi_apply(&act, y, NULL, ldy, 0, rows, 0, cols);
}

/* A 3x3 depthwise range of fwd_part with the epilogue in its stores; false when the
 * geometry or the activation is not one it takes. */
static bool fwd_part_dw_avx2(const fwd_split *s, const rill_conv_geom *sub, int64_t img, int64_t g0,
                             int64_t g1, const float *x, const float *w, float *y) {
  const rill_conv_geom *g = s->g;
  int64_t p = g->oh * g->ow;
  if (s->path != RILL_CONV_PATH_DIRECT || g->c != g->groups || g->m != g->groups ||
      (s->epi->act != RILL_FUSED_IDENTITY && s->epi->act != RILL_FUSED_RELU &&
       s->epi->act != RILL_FUSED_RELU6))
    return false;
  dw_epi e = {.bias = s->epi->bias ? s->epi->bias + g0 : NULL,
              .res = s->epi->res ? s->epi->res + (img * g->m + g0) * p : NULL,
              .clamp = s->epi->act == RILL_FUSED_RELU ? 1 : s->epi->act == RILL_FUSED_RELU6 ? 2 : 0};
  return dw3x3_f32(sub, x, w, y, g1 - g0, &e);
}

/* Part j of image img of a 1x1 or im2col split (fwd_plan plans these only where the CPU
 * has AVX2). */
static bool fwd_part_gemm_avx2(const fwd_split *s, int64_t img, int64_t j, int slot) {
  const rill_conv_geom *g = s->g;
  int64_t p = g->oh * g->ow, hw = g->h * g->w;
  const float *x = (const float *)s->x + img * g->c * hw, *w = s->w;
  float *y = (float *)s->y + img * g->m * p;
  const float *res = s->epi && s->epi->res ? s->epi->res + img * g->m * p : NULL;
  const float *bias = s->epi ? s->epi->bias : NULL;
  sk_epi e;
  if (s->kind == FWD_1X1) {
    int64_t r0 = 0, r1 = g->m, c0 = 0, c1 = p;
    if (s->by_cols) {
      c0 = j * s->chunk;
      c1 = min64(p, c0 + s->chunk);
    } else {
      r0 = j * s->chunk;
      r1 = min64(g->m, r0 + s->chunk);
    }
    float *yb = y + r0 * p + c0;
    if (s->blas) {
      rill_sgemm(NULL, 1, CblasNoTrans, CblasNoTrans, r1 - r0, c1 - c0, g->c, 1.0f, w + r0 * g->c, g->c, x + c0, p,
                 0.0f, yb, p);
      if (s->epi) rill_epi_apply(s->epi, y, res, p, r0, r1, c0, c1);
      return true;
    }
    const sk_epi *ep = sk_epi_for(s->epi, bias ? bias + r0 : NULL, res ? res + r0 * p + c0 : NULL, p, &e);
    /* split by rows, every part holds the image's last columns: one or two of them
     * as dot products (the same columns whatever the split) */
    int64_t tail = !s->by_cols && (c1 - c0) % 8 <= 2 && g->c <= DOT_MAX_K ? (c1 - c0) % 8 : 0;
    smallk_sgemm(r1 - r0, c1 - c0 - tail, g->c, w + r0 * g->c, g->c, x + c0, p, yb, p, ep);
    if (tail) dot_cols(r1 - r0, c1 - c0 - tail, c1 - c0, g->c, w + r0 * g->c, g->c, x + c0, p, yb, p, ep);
    sk_epi_rest(s->epi, yb, p, r1 - r0, c1 - c0);
    return true;
  }
  /* FWD_IM2COL */
  int64_t k = g->c * g->kh * g->kw, r0 = j * s->chunk, r1 = min64(g->oh, r0 + s->chunk);
  int64_t nc = (r1 - r0) * g->ow;
  float *col = s->col + (size_t)slot * s->col_n;
  im2col_f32_avx2(g, g->c, x, col, r0, r1);
  float *yb = y + r0 * g->ow;
  if (s->blas) {
    rill_sgemm(NULL, 1, CblasNoTrans, CblasNoTrans, g->m, nc, k, 1.0f, w, k, col, nc, 0.0f, yb, p);
    if (s->epi) rill_epi_apply(s->epi, y, res, p, 0, g->m, r0 * g->ow, r1 * g->ow);
    return true;
  }
  smallk_sgemm(g->m, nc, k, w, k, col, nc, yb, p,
               sk_epi_for(s->epi, bias, res ? res + r0 * g->ow : NULL, p, &e));
  sk_epi_rest(s->epi, yb, p, g->m, nc);
  return true;
}
RILL_AVX2_END
#endif

static bool fwd_part(void *arg, int64_t i, int slot) {
  const fwd_split *s = arg;
  const rill_conv_geom *g = s->g;
  int64_t img = i / s->per_img, j = i % s->per_img;
  int64_t p = g->oh * g->ow, hw = g->h * g->w;
  if (s->kind == FWD_DIRECT) {
    int64_t c_g = g->c / g->groups, m_g = g->m / g->groups, k = c_g * g->kh * g->kw;
    int64_t g0 = j * s->chunk, g1 = min64(g->groups, g0 + s->chunk);
    size_t es = s->dt == RILL_DTYPE_FP32 ? 4 : 8;
    rill_conv_geom sub = *g;
    sub.n = 1;
    sub.groups = g1 - g0;
    sub.c = c_g * sub.groups;
    sub.m = m_g * sub.groups;
    const char *x = (const char *)s->x + (size_t)((img * g->c + g0 * c_g) * hw) * es;
    const char *w = (const char *)s->w + (size_t)(g0 * m_g * k) * es;
    char *y = (char *)s->y + (size_t)((img * g->m + g0 * m_g) * p) * es;
#if RILL_X86_SIMD
    /* a 3x3 depthwise range with the epilogue in its stores */
    if (s->epi && rill_cpu_avx2() &&
        fwd_part_dw_avx2(s, &sub, img, g0, g1, (const float *)x, (const float *)w, (float *)y))
      return true;
#endif
    /* The direct path allocates nothing, so it cannot fail. */
    (void)ENGINE(s->dt, conv_fwd, &sub, (const void *)x, (const void *)w, (void *)y, s->path);
    if (s->epi) {
      float *yi = (float *)s->y + img * g->m * p;
      const float *ri = s->epi->res ? s->epi->res + img * g->m * p : NULL;
      rill_epi_apply(s->epi, yi, ri, p, g0 * m_g, g1 * m_g, 0, p);
    }
    return true;
  }
#if RILL_X86_SIMD
  return fwd_part_gemm_avx2(s, img, j, slot);
#else
  (void)slot;
  return false;
#endif
}

/* Plans the split of one image's forward (fills kind, chunk, per_img, by_cols); false
 * when the conv runs whole. */
static bool fwd_plan(fwd_split *s) {
  const rill_conv_geom *g = s->g;
  int64_t c_g = g->c / g->groups, m_g = g->m / g->groups, p = g->oh * g->ow;
  int64_t k = c_g * g->kh * g->kw;
  if (p <= 0 || k <= 0 || g->m <= 0) return false;
  if (s->path == RILL_CONV_PATH_DIRECT || s->path == RILL_CONV_PATH_DIRECT_GENERIC) {
    int64_t per_group = m_g * p * k;
    s->kind = FWD_DIRECT;
    s->chunk = per_group >= PART_MACS ? 1 : PART_MACS / per_group;
    s->per_img = (g->groups + s->chunk - 1) / s->chunk;
    /* An odd count of parts, or a short last one, leaves one of two threads waiting for
     * the other at the end of the op (gesture_rec's 7x7 layer of 480 channels: 297 and
     * 183; its 14x14 one of 192: 74, 74 and 44). Such a split is spread over the next
     * even count of parts of equal size (2 x 240, 4 x 48). */
    if (s->per_img > 1 && (s->per_img % 2 || g->groups % s->chunk)) {
      int64_t want = s->per_img + s->per_img % 2;
      s->chunk = (g->groups + want - 1) / want;
      s->per_img = (g->groups + s->chunk - 1) / s->chunk;
    }
    return true;
  }
#if RILL_X86_SIMD
  if (s->dt != RILL_DTYPE_FP32 || g->groups != 1 || !rill_cpu_avx2()) return false;
  if (s->path == RILL_CONV_PATH_1X1) {
    s->kind = FWD_1X1;
    s->by_cols = p >= FAST_1X1_COLS;
    double macs1 = (double)g->m * (double)p * (double)g->c;
    if (!s->by_cols && macs1 >= RILL_BLAS_SPLIT_MIN && macs1 <= RILL_BLAS_SPLIT_MAX) {
      /* small images (7x7: 49 columns, two of the small-K kernel's blocks and a column
       * of dot products): OpenBLAS on one thread per block of rows runs them in
       * 0.8x-0.99x the time (gesture_rec's 160 -> 1280 channels: 118 -> 103 us) */
      int64_t parts = (int64_t)((macs1 + RILL_BLAS_PART_MACS - 1) / RILL_BLAS_PART_MACS);
      parts += parts % 2;
      s->blas = true;
      s->chunk = (g->m + parts - 1) / parts;
      s->per_img = (g->m + s->chunk - 1) / s->chunk;
      return true;
    }
    if (s->by_cols) {
      if (g->m * g->c > FAST_1X1_MAX_W) return false;
      /* whole blocks of the small-K kernel: 48 columns on AVX-512, 24 on AVX2 */
      int64_t nb = rill_cpu_avx512() ? 48 : 24, blocks = PART_MACS / (g->m * g->c * nb);
      s->chunk = nb * (blocks < 1 ? 1 : blocks);
      s->per_img = (p + s->chunk - 1) / s->chunk;
    } else {
      int64_t rows = PART_MACS / (p * g->c);
      s->chunk = 4 * (rows < 4 ? 1 : rows / 4);
      s->per_img = (g->m + s->chunk - 1) / s->chunk;
    }
    return true;
  }
  if (s->path == RILL_CONV_PATH_IM2COL && k <= SMALLK_MAX) {
    int64_t rows = PART_MACS / (g->m * k * g->ow), least = (256 + g->ow - 1) / g->ow;
    s->kind = FWD_IM2COL;
    s->chunk = rows < least ? least : rows;
    if (s->chunk > g->oh) s->chunk = g->oh;
    s->per_img = (g->oh + s->chunk - 1) / s->chunk;
    s->col_n = (size_t)(k * s->chunk * g->ow) + UNFOLD_SPILL;
    return true;
  }
  double macs = (double)g->m * (double)p * (double)k;
  if (s->path == RILL_CONV_PATH_IM2COL && macs >= RILL_BLAS_SPLIT_MIN && macs <= RILL_BLAS_SPLIT_MAX) {
    int64_t parts = (int64_t)((macs + RILL_BLAS_PART_MACS - 1) / RILL_BLAS_PART_MACS);
    parts += parts % 2;
    s->kind = FWD_IM2COL;
    s->blas = true;
    s->chunk = (g->oh + parts - 1) / parts;
    /* few rows of wide images: a block of one row may be beyond the threshold */
    if ((double)g->m * (double)(s->chunk * g->ow) * (double)k > RILL_BLAS_PART_MACS) return false;
    s->per_img = (g->oh + s->chunk - 1) / s->chunk;
    s->col_n = (size_t)(k * s->chunk * g->ow) + UNFOLD_SPILL;
    return true;
  }
#endif
  return false;
}

/* The epilogue of a conv that runs whole, by ranges of output channels of each image
 * on the conv's threads (a pass over the output, and the residual, bound by memory). */
#define EPI_PART_FLOATS (32 * 1024)
typedef struct epi_split {
  const rill_conv_epi *epi;
  float *y;
  int64_t m, p, chunk, per_img;
} epi_split;

static bool epi_part(void *arg, int64_t i, int slot) {
  const epi_split *s = arg;
  (void)slot;
  int64_t img = i / s->per_img, r0 = i % s->per_img * s->chunk, r1 = min64(s->m, r0 + s->chunk);
  const float *res = s->epi->res ? s->epi->res + img * s->m * s->p : NULL;
  rill_epi_apply(s->epi, s->y + img * s->m * s->p, res, s->p, r0, r1, 0, s->p);
  return true;
}

/* y = conv(x, w) for the whole batch, then the epilogue (float only) when given. False
 * when out of memory. */
static bool conv_fwd_run(rill_kernel_ctx *ctx, rill_dtype dt, const rill_conv_geom *g,
                         const void *x, const void *w, void *y, int path, const rill_conv_epi *epi) {
  int64_t threads = rill_dev_threads(ctx->dev);
  fwd_split s = {.g = g, .dt = dt, .path = path, .x = x, .w = w, .y = y, .epi = epi};
  if (fwd_plan(&s)) {
    int64_t parts = g->n * s.per_img;
    if (threads > parts) threads = parts;
    /* Small first layers (mnist_conv_bn's: 3 parts, ~8 us) ran 10-20% slower split than
     * inline, beside OpenBLAS's threads in the same model: an im2col conv takes a
     * second thread only from two parts a thread. */
    if (s.kind == FWD_IM2COL && !s.blas && threads > parts / 2) threads = parts / 2;
    if (threads > RILL_DEVICE_MAX_THREADS) threads = RILL_DEVICE_MAX_THREADS;
    if (threads < 1) threads = 1;
    if (s.kind == FWD_IM2COL) {
      s.col = rill_aligned_alloc((size_t)threads * s.col_n * sizeof(float), RILL_TENSOR_ALIGN);
      if (!s.col) return false;
    }
    bool ok = rill_dev_parallel_for(ctx->dev, threads, parts, fwd_part, &s);
    rill_free(s.col);
    return ok;
  }
  /* OpenBLAS may thread the GEMMs of a conv that runs whole (rill_sgemm, which the
   * float engine on AVX2 calls, uses the pool itself) */
  if ((dt == RILL_DTYPE_FP64 || !rill_cpu_avx2()) && path != RILL_CONV_PATH_DIRECT &&
      path != RILL_CONV_PATH_DIRECT_GENERIC &&
      (double)g->m / (double)g->groups * (double)(g->oh * g->ow) * (double)(g->c / g->groups * g->kh * g->kw) >=
          RILL_BLAS_THREADED_GEMM)
    rill_dev_quiet(ctx->dev);
#if RILL_X86_SIMD
  smallk_on = path == RILL_CONV_PATH_IM2COL && rill_cpu_avx2();
  bool ok = ENGINE(dt, conv_fwd, g, x, w, y, path);
  smallk_on = false;
#else
  bool ok = ENGINE(dt, conv_fwd, g, x, w, y, path);
#endif
  if (ok && epi) {
    int64_t p = g->oh * g->ow, chunk = p >= EPI_PART_FLOATS ? 1 : EPI_PART_FLOATS / p;
    epi_split es = {.epi = epi, .y = y, .m = g->m, .p = p, .chunk = chunk,
                    .per_img = (g->m + chunk - 1) / chunk};
    (void)rill_dev_parallel_for(ctx->dev, threads, g->n * es.per_img, epi_part, &es);
  }
  return ok;
}

/* Batches of small images (MNIST-sized convs): each image's GEMM is below the size from
 * which OpenBLAS threads a GEMM (2^18 multiply-adds), so a batch runs image after image
 * on one core. Such a batch is cut into chunks of images (image_chunk, which depends on
 * the geometry only) that the executor's threads take one at a time (rill_dev_parallel_for).
 * The forward and the data gradient compute every image with the same code whichever
 * thread takes it, so the output does not depend on the threads. The filter gradient
 * sums over images: each chunk is summed into a partial gradient of its own, and the
 * partials are added in chunk order, so the sum is the same bit for bit for every
 * thread count (one thread included). */
#define SPLIT_IMAGE_MACS (1 << 18)
#define SPLIT_MIN_IMAGES 4
#define CHUNK_COL_BYTES (128 * 1024)
#define CHUNK_MAX_IMAGES 8

/* Images per chunk: as many as keep the chunk's unfolded images within CHUNK_COL_BYTES
 * (in L2 while the GEMM reads them), 1 to CHUNK_MAX_IMAGES. Depends on the geometry only. */
static int64_t image_chunk(const rill_conv_geom *g, rill_dtype dt) {
  size_t es = dt == RILL_DTYPE_FP32 ? sizeof(float) : sizeof(double);
  double col = (double)((g->c / g->groups) * g->kh * g->kw) * (double)(g->oh * g->ow) * (double)es;
  int64_t nb = (int64_t)(CHUNK_COL_BYTES / col);
  return nb < 1 ? 1 : nb > CHUNK_MAX_IMAGES ? CHUNK_MAX_IMAGES : nb;
}

bool rill_conv_split_images = true;

static bool conv_split_images(const rill_conv_geom *g, int path) {
  if (!rill_conv_split_images || path != RILL_CONV_PATH_IM2COL || g->n < SPLIT_MIN_IMAGES)
    return false;
  double macs = (double)g->m * (double)(g->oh * g->ow) * (double)(g->kh * g->kw) *
                (double)(g->c / g->groups);
  return macs < SPLIT_IMAGE_MACS;
}

enum { SPLIT_FWD, SPLIT_DATA, SPLIT_FILTER };

typedef struct image_split {
  const rill_conv_geom *g;
  rill_dtype dt;
  int path, kind;
  const void *x, *w, *dy; /* the inputs of the kind */
  void *out;              /* y, dx, or the partial filter gradients */
  char *col;              /* per slot: col_n elements (forward, filter gradient) */
  size_t col_n;
} image_split;

/* Chunk c of the batch (image_chunk images, the last one shorter). */
static bool image_split_run(void *arg, int64_t c, int slot) {
  const image_split *s = arg;
  const rill_conv_geom *g = s->g;
  size_t es = s->dt == RILL_DTYPE_FP32 ? sizeof(float) : sizeof(double);
  int64_t k = (g->c / g->groups) * g->kh * g->kw, p = g->oh * g->ow;
  size_t in_img = (size_t)(g->c * g->h * g->w) * es, out_img = (size_t)(g->m * p) * es;
  int64_t chunk = image_chunk(g, s->dt);
  int64_t a = c * chunk, nb = g->n - a < chunk ? g->n - a : chunk;
  const char *x = s->x, *dy = s->dy;
  char *out = s->out;
  if (s->kind == SPLIT_DATA) {
    rill_conv_geom sub = *g;
    sub.n = nb;
    return ENGINE(s->dt, conv_bwd_data, &sub, (const void *)(dy + (size_t)a * out_img), s->w,
                  (void *)(out + (size_t)a * in_img), s->path);
  }
  void *col = s->col + (size_t)slot * s->col_n * es;
  const void *xi = x + (size_t)a * in_img;
  bool f32 = s->dt == RILL_DTYPE_FP32;
  if (s->kind == SPLIT_FWD) {
    void *yi = out + (size_t)a * out_img;
    if (f32) ENGINE_F32(conv_fwd_images, g, nb, xi, s->w, yi, col);
    else conv_fwd_images_f64(g, nb, xi, s->w, yi, col);
  } else {
    const void *dyi = dy + (size_t)a * out_img;
    void *dw = out + (size_t)c * (size_t)(g->m * k) * es;
    if (f32) ENGINE_F32(conv_bwd_filter_images, g, nb, xi, dyi, dw, col);
    else conv_bwd_filter_images_f64(g, nb, xi, dyi, dw, col);
  }
  return true;
}

/* The forward, data gradient or filter gradient of a batch that conv_split_images
 * accepts, split over the executor's threads. False when out of memory. */
static bool conv_images_run(rill_kernel_ctx *ctx, rill_dtype dt, const rill_conv_geom *g, int kind,
                            const void *x, const void *w, const void *dy, void *out, int path) {
  int64_t threads = rill_dev_threads(ctx->dev);
  size_t es = dt == RILL_DTYPE_FP32 ? sizeof(float) : sizeof(double);
  int64_t chunk = image_chunk(g, dt), chunks = (g->n + chunk - 1) / chunk;
  if (threads > chunks) threads = chunks;
  if (threads > RILL_DEVICE_MAX_THREADS) threads = RILL_DEVICE_MAX_THREADS;
  if (threads < 1) threads = 1;
  image_split s = {.g = g, .dt = dt, .path = path, .kind = kind, .x = x, .w = w, .dy = dy, .out = out};
  if (kind == SPLIT_DATA) return rill_dev_parallel_for(ctx->dev, threads, chunks, image_split_run, &s);
  /* one unfolded chunk per thread; for the filter gradient, a partial per chunk */
  size_t len = (size_t)(g->m * (g->c / g->groups) * g->kh * g->kw);
  s.col_n = (size_t)((g->c / g->groups) * g->kh * g->kw * chunk * g->oh * g->ow) + UNFOLD_SPILL;
  size_t parts_n = kind == SPLIT_FILTER ? (size_t)chunks * len : 0;
  char *buf = rill_aligned_alloc(((size_t)threads * s.col_n + parts_n) * es, RILL_TENSOR_ALIGN);
  if (!buf) return false;
  s.col = buf;
  void *parts = buf + (size_t)threads * s.col_n * es;
  if (kind == SPLIT_FILTER) s.out = parts;
  bool ok = rill_dev_parallel_for(ctx->dev, threads, chunks, image_split_run, &s);
  if (ok && kind == SPLIT_FILTER && dt == RILL_DTYPE_FP32) {
    const float *p = parts;
    float *dw = out;
    for (size_t i = 0; i < len; i++) {
      float v = p[i];
      for (int64_t c = 1; c < chunks; c++) v += p[(size_t)c * len + i];
      dw[i] = v;
    }
  } else if (ok && kind == SPLIT_FILTER) {
    const double *p = parts;
    double *dw = out;
    for (size_t i = 0; i < len; i++) {
      double v = p[i];
      for (int64_t c = 1; c < chunks; c++) v += p[(size_t)c * len + i];
      dw[i] = v;
    }
  }
  rill_free(buf);
  return ok;
}

/* The NCHW forward of x into y (epi: conv2d_fusion's epilogue, float only). */
static bool conv_forward_nchw(rill_kernel_ctx *ctx, rill_dtype dt, const rill_conv_geom *g, const void *x,
                              const void *w, void *y, const rill_conv_epi *epi) {
  int path = conv_pick(g);
  if (!conv_split_images(g, path)) return conv_fwd_run(ctx, dt, g, x, w, y, path, epi);
  bool ok = conv_images_run(ctx, dt, g, SPLIT_FWD, x, w, NULL, y, path);
  if (ok && epi) {
    int64_t p = g->oh * g->ow;
    float *yp = y;
    for (int64_t n = 0; n < g->n; n++)
      rill_epi_apply(epi, yp + n * g->m * p, epi->res ? epi->res + n * g->m * p : NULL, p, 0, g->m, 0, p);
  }
  return ok;
}

/* The forward of conv2d (transpose false) or of conv2d_transpose (true: the conv's data
 * gradient) from x into y. NHWC runs on NCHW copies between rill_swap_last2 transposes:
 * conv2d reads the image side [N, H, W, C] and writes the conv output side [N, OH, OW, M],
 * conv2d_transpose the reverse. The epilogue takes NCHW only (conv_geom_for refuses NHWC
 * with one). */
static rill_status *conv_image_layout(rill_kernel_ctx *ctx, rill_dtype dt, const rill_conv_geom *g,
                                      bool transpose, const rill_tensor *x, const rill_tensor *f,
                                      rill_tensor *y, const rill_conv_epi *epi) {
  const void *xp = rill_tensor_ptr(x), *fp = rill_tensor_ptr(f);
  if (!g->nhwc) {
    bool ok = transpose ? ENGINE(dt, conv_bwd_data, g, xp, fp, rill_tensor_ptr(y), conv_pick(g))
                        : conv_forward_nchw(ctx, dt, g, xp, fp, rill_tensor_ptr(y), epi);
    return ok ? NULL : rill_oom();
  }
  int64_t hw = g->h * g->w, ohw = g->oh * g->ow;
  int64_t in_px = transpose ? ohw : hw, in_ch = transpose ? g->m : g->c;
  int64_t out_px = transpose ? hw : ohw, out_ch = transpose ? g->c : g->m;
  void *xs = rill_layout_scratch(dt, g->n * in_ch * in_px);
  void *ys = rill_layout_scratch(dt, g->n * out_ch * out_px);
  bool ok = xs && ys;
  if (ok) {
    rill_swap_last2(dt, xp, xs, g->n, in_px, in_ch);
    ok = transpose ? ENGINE(dt, conv_bwd_data, g, xs, fp, ys, conv_pick(g))
                   : conv_forward_nchw(ctx, dt, g, xs, fp, ys, NULL);
  }
  if (ok) rill_swap_last2(dt, ys, rill_tensor_ptr(y), g->n, out_ch, out_px);
  rill_free(xs);
  rill_free(ys);
  return ok ? NULL : rill_oom();
}

static rill_status *conv_forward(rill_kernel_ctx *ctx, rill_dtype dt, const rill_conv_epi *epi) {
  conv_dev = ctx->dev;
  conv_threads = rill_dev_threads(ctx->dev);
  rill_tensor *x, *f, *y;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, &f));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &y));
  if (rill_kin(ctx, 2, 0) || rill_kin(ctx, 3, 0))
    return rill_kernel_error(ctx, "Bias / ResidualData inputs are not supported: add the bias "
                             "with elementwise_add");
  rill_conv_geom g;
  /* the fused epilogue (conv2d_fusion) takes NCHW only */
  RILL_TRY(conv_geom_for(ctx, false, epi == NULL, x, f, &g));
  rill_dims od = rill_nn_conv_out_dims(&g);
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &od));
  if (rill_overlaps(rill_tensor_ptr(y), rill_tensor_nbytes(y), rill_tensor_ptr(x), rill_tensor_nbytes(x)))
    return rill_kernel_error(ctx, "output Output (%s) must not share memory with Input (%s)",
                             rill_kout_name(ctx, 0, 0), rill_kin_name(ctx, 0, 0));
  return conv_image_layout(ctx, dt, &g, false, x, f, y, epi);
}

rill_status *rill_cpu_conv2d_epi_fp32(rill_kernel_ctx *ctx, const rill_conv_epi *epi) {
  return conv_forward(ctx, RILL_DTYPE_FP32, epi);
}

/* The NCHW gradients: dx (may be NULL) from dy and w, dw (may be NULL) from x and dy. */
static bool conv_backward_nchw(rill_kernel_ctx *ctx, rill_dtype dt, const rill_conv_geom *g, const void *x,
                               const void *w, const void *dy, void *dx, void *dw) {
  int path = conv_pick(g);
  if (conv_split_images(g, path)) {
    if (dx && !conv_images_run(ctx, dt, g, SPLIT_DATA, NULL, w, dy, dx, path)) return false;
    return !dw || conv_images_run(ctx, dt, g, SPLIT_FILTER, x, NULL, dy, dw, path);
  }
  if (dx && !ENGINE(dt, conv_bwd_data, g, dy, w, dx, path)) return false;
  return !dw || ENGINE(dt, conv_bwd_filter, g, x, dy, dw, path);
}

static rill_status *conv_backward(rill_kernel_ctx *ctx, rill_dtype dt) {
  conv_dev = ctx->dev;
  conv_threads = rill_dev_threads(ctx->dev);
  rill_tensor *x, *f, *dy, *dx, *df;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, &f));
  RILL_TRY(rill_kin_need(ctx, 3, 0, dt, &dy));
  rill_conv_geom g;
  RILL_TRY(conv_geom_for(ctx, false, true, x, f, &g));
  rill_dims od = rill_nn_conv_out_dims(&g);
  RILL_TRY(check_dy(ctx, dy, &od));
  RILL_TRY(grad_out(ctx, 0, dt, &x->dims, &dx));
  RILL_TRY(grad_out(ctx, 1, dt, &f->dims, &df));
  void *dfp = df ? rill_tensor_ptr(df) : NULL;
  if (!g.nhwc)
    return conv_backward_nchw(ctx, dt, &g, rill_tensor_ptr(x), rill_tensor_ptr(f), rill_tensor_ptr(dy),
                              dx ? rill_tensor_ptr(dx) : NULL, dfp)
               ? NULL
               : rill_oom();
  if (!dx && !df) return NULL;
  int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
  void *dys = rill_layout_scratch(dt, g.n * g.m * ohw);
  void *xs = df ? rill_layout_scratch(dt, g.n * g.c * hw) : NULL;
  void *dxs = dx ? rill_layout_scratch(dt, g.n * g.c * hw) : NULL;
  bool ok = dys && (!df || xs) && (!dx || dxs);
  if (ok) {
    rill_swap_last2(dt, rill_tensor_ptr(dy), dys, g.n, ohw, g.m);
    if (xs) rill_swap_last2(dt, rill_tensor_ptr(x), xs, g.n, hw, g.c);
    ok = conv_backward_nchw(ctx, dt, &g, xs, rill_tensor_ptr(f), dys, dxs, dfp);
  }
  if (ok && dx) rill_swap_last2(dt, dxs, rill_tensor_ptr(dx), g.n, g.c, hw);
  rill_free(dys);
  rill_free(xs);
  rill_free(dxs);
  return ok ? NULL : rill_oom();
}

/* conv2d_grad_grad (NCHW): DDOutput = conv(DDInput, Filter) + conv(Input, DDFilter),
 * DInput = the data gradient of DOutput through DDFilter, DFilter = the filter gradient
 * of DOutput over DDInput, as Paddle's Conv2DDoubleGradKernel; an absent DDInput or
 * DDFilter is zero. */
static rill_status *conv_double_grad(rill_kernel_ctx *ctx, rill_dtype dt) {
  conv_dev = ctx->dev;
  conv_threads = rill_dev_threads(ctx->dev);
  rill_tensor *x, *f, *dy, *dd[2] = {NULL, NULL}, *ddy, *dx, *df;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, &f));
  RILL_TRY(rill_kin_need(ctx, 2, 0, dt, &dy));
  rill_conv_geom g;
  RILL_TRY(conv_geom_for(ctx, false, false, x, f, &g));
  rill_dims od = rill_nn_conv_out_dims(&g);
  if (!rill_dims_equal(&dy->dims, &od)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input DOutput (%s) has shape %s, the forward output is %s",
                             rill_kin_name(ctx, 2, 0), rill_dims_str(&dy->dims, a, sizeof a),
                             rill_dims_str(&od, b, sizeof b));
  }
  for (size_t i = 0; i < 2; i++) {
    if (!rill_kin(ctx, 3 + i, 0)) continue;
    RILL_TRY(rill_kin_need(ctx, 3 + i, 0, dt, &dd[i]));
    if (!rill_dims_equal(&dd[i]->dims, i ? &f->dims : &x->dims))
      return rill_kernel_error(ctx, "input %s (%s) does not have the shape of %s (%s)",
                               i ? "DDFilter" : "DDInput", rill_kin_name(ctx, 3 + i, 0),
                               i ? "Filter" : "Input", rill_kin_name(ctx, i, 0));
  }
  RILL_TRY(grad_out(ctx, 0, dt, &od, &ddy));
  RILL_TRY(grad_out(ctx, 1, dt, &x->dims, &dx));
  RILL_TRY(grad_out(ctx, 2, dt, &f->dims, &df));
  const void *xp = rill_tensor_ptr(x), *fp = rill_tensor_ptr(f), *dyp = rill_tensor_ptr(dy);
  const void *ddxp = dd[0] ? rill_tensor_ptr(dd[0]) : NULL, *ddfp = dd[1] ? rill_tensor_ptr(dd[1]) : NULL;
  bool ok = true;
  if (ddy && !ddxp && !ddfp) memset(rill_tensor_ptr(ddy), 0, rill_tensor_nbytes(ddy));
  if (ddy && (ddxp || ddfp))
    ok = conv_forward_nchw(ctx, dt, &g, ddxp ? ddxp : xp, ddxp ? fp : ddfp, rill_tensor_ptr(ddy), NULL);
  if (ok && ddy && ddxp && ddfp) {
    int64_t n = rill_tensor_numel(ddy);
    void *tmp = rill_layout_scratch(dt, n);
    ok = tmp && conv_forward_nchw(ctx, dt, &g, xp, ddfp, tmp, NULL);
    if (ok && dt == RILL_DTYPE_FP32)
      for (int64_t i = 0; i < n; i++) ((float *)rill_tensor_ptr(ddy))[i] += ((const float *)tmp)[i];
    else if (ok)
      for (int64_t i = 0; i < n; i++) ((double *)rill_tensor_ptr(ddy))[i] += ((const double *)tmp)[i];
    rill_free(tmp);
  }
  if (ok && dx && !ddfp) memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));
  if (ok && df && !ddxp) memset(rill_tensor_ptr(df), 0, rill_tensor_nbytes(df));
  if (ok && ((dx && ddfp) || (df && ddxp)))
    ok = conv_backward_nchw(ctx, dt, &g, ddxp, ddfp, dyp, dx && ddfp ? rill_tensor_ptr(dx) : NULL,
                            df && ddxp ? rill_tensor_ptr(df) : NULL);
  return ok ? NULL : rill_oom();
}

/* conv2d_transpose: its Output is the image of the equivalent conv, its Input the conv
 * output, so the forward is the conv's data gradient. NHWC runs between transposes as
 * conv2d's does (rill_swap_last2), with the roles of the two sides exchanged. */
static rill_status *convt_forward(rill_kernel_ctx *ctx, rill_dtype dt) {
  conv_dev = ctx->dev;
  conv_threads = rill_dev_threads(ctx->dev);
  rill_tensor *x, *f, *y;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, &f));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &y));
  if (rill_kin(ctx, 2, 0))
    return rill_kernel_error(ctx, "the Bias input is not supported: add the bias with elementwise_add");
  rill_conv_geom g;
  RILL_TRY(conv_geom_for(ctx, true, true, x, f, &g));
  rill_dims od = rill_nn_convt_out_dims(&g);
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, y, &od));
  if (rill_overlaps(rill_tensor_ptr(y), rill_tensor_nbytes(y), rill_tensor_ptr(x), rill_tensor_nbytes(x)))
    return rill_kernel_error(ctx, "output Output (%s) must not share memory with Input (%s)",
                             rill_kout_name(ctx, 0, 0), rill_kin_name(ctx, 0, 0));
  return conv_image_layout(ctx, dt, &g, true, x, f, y, NULL);
}

static rill_status *convt_backward(rill_kernel_ctx *ctx, rill_dtype dt) {
  conv_dev = ctx->dev;
  conv_threads = rill_dev_threads(ctx->dev);
  rill_tensor *x, *f, *dy, *dx, *df;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, &f));
  RILL_TRY(rill_kin_need(ctx, 3, 0, dt, &dy));
  rill_conv_geom g;
  RILL_TRY(conv_geom_for(ctx, true, true, x, f, &g));
  rill_dims od = rill_nn_convt_out_dims(&g);
  RILL_TRY(check_dy(ctx, dy, &od));
  RILL_TRY(grad_out(ctx, 0, dt, &x->dims, &dx));
  RILL_TRY(grad_out(ctx, 1, dt, &f->dims, &df));
  if (!dx && !df) return NULL;
  int path = conv_pick(&g);
  /* NHWC: Output@GRAD [N, H, W, C], Input and Input@GRAD [N, OH, OW, M] through NCHW
   * copies; Filter@GRAD needs none */
  int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
  void *dys = NULL, *xs = NULL, *dxs = NULL;
  bool ok = true;
  if (g.nhwc) {
    dys = rill_layout_scratch(dt, g.n * g.c * hw);
    xs = df ? rill_layout_scratch(dt, g.n * g.m * ohw) : NULL;
    dxs = dx ? rill_layout_scratch(dt, g.n * g.m * ohw) : NULL;
    ok = dys && (!df || xs) && (!dx || dxs);
    if (ok) {
      rill_swap_last2(dt, rill_tensor_ptr(dy), dys, g.n, hw, g.c);
      if (xs) rill_swap_last2(dt, rill_tensor_ptr(x), xs, g.n, ohw, g.m);
    }
  }
  const void *dyp = g.nhwc ? dys : rill_tensor_ptr(dy), *xp = g.nhwc ? xs : rill_tensor_ptr(x);
  void *dxp = g.nhwc ? dxs : dx ? rill_tensor_ptr(dx) : NULL;
  if (ok && dx) ok = ENGINE(dt, conv_fwd, &g, dyp, rill_tensor_ptr(f), dxp, path);
  if (ok && df) ok = ENGINE(dt, conv_bwd_filter, &g, dyp, xp, rill_tensor_ptr(df), path);
  if (ok && dx && g.nhwc) rill_swap_last2(dt, dxs, rill_tensor_ptr(dx), g.n, g.m, ohw);
  rill_free(dys);
  rill_free(xs);
  rill_free(dxs);
  return ok ? NULL : rill_oom();
}

rill_status *rill_cpu_conv2d_fp32(rill_kernel_ctx *ctx) { return conv_forward(ctx, RILL_DTYPE_FP32, NULL); }
rill_status *rill_cpu_conv2d_fp64(rill_kernel_ctx *ctx) { return conv_forward(ctx, RILL_DTYPE_FP64, NULL); }
rill_status *rill_cpu_conv2d_grad_fp32(rill_kernel_ctx *ctx) { return conv_backward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_conv2d_grad_fp64(rill_kernel_ctx *ctx) { return conv_backward(ctx, RILL_DTYPE_FP64); }
rill_status *rill_cpu_conv2d_grad_grad_fp32(rill_kernel_ctx *ctx) { return conv_double_grad(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_conv2d_grad_grad_fp64(rill_kernel_ctx *ctx) { return conv_double_grad(ctx, RILL_DTYPE_FP64); }
/* depthwise_conv2d: the same engine; conv_pick sends groups == channels to the direct
 * path (one output channel per group) and anything else to the general paths. */
rill_status *rill_cpu_depthwise_conv2d_fp32(rill_kernel_ctx *ctx) { return conv_forward(ctx, RILL_DTYPE_FP32, NULL); }
rill_status *rill_cpu_depthwise_conv2d_fp64(rill_kernel_ctx *ctx) { return conv_forward(ctx, RILL_DTYPE_FP64, NULL); }
rill_status *rill_cpu_depthwise_conv2d_grad_fp32(rill_kernel_ctx *ctx) { return conv_backward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_depthwise_conv2d_grad_fp64(rill_kernel_ctx *ctx) { return conv_backward(ctx, RILL_DTYPE_FP64); }
rill_status *rill_cpu_conv2d_transpose_fp32(rill_kernel_ctx *ctx) { return convt_forward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_conv2d_transpose_fp64(rill_kernel_ctx *ctx) { return convt_forward(ctx, RILL_DTYPE_FP64); }
rill_status *rill_cpu_conv2d_transpose_grad_fp32(rill_kernel_ctx *ctx) { return convt_backward(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cpu_conv2d_transpose_grad_fp64(rill_kernel_ctx *ctx) { return convt_backward(ctx, RILL_DTYPE_FP64); }
