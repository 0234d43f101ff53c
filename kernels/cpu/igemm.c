/* int8 convolution with int32 sums: packing, the three microkernels and the split over
 * the kernel pool (igemm.h, doc/design/int8.md). */
#include "kernels/cpu/igemm.h"

#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/isa.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/quant_levels.h"

#define MR RILL_I8_MR
#define NR_MAX 32
/* Bytes of packed activations a part keeps (its panels stay in L2). */
#define PART_PANEL_BYTES (256 * 1024)
/* The fewest products a run of weight rows keeps when the rows split (conv_run). */
#define ROW_RUN_MIN (1024 * 1024)

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

rill_i8_path rill_i8_path_for_cpu(void) {
  if (rill_cpu_avx512_vnni()) return RILL_I8_VNNI;
  if (rill_cpu_avx2()) return RILL_I8_AVX2;
  return RILL_I8_SCALAR;
}

const char *rill_i8_path_name(rill_i8_path path) {
  switch (path) {
    case RILL_I8_VNNI: return "avx512-vnni";
    case RILL_I8_AVX2: return "avx2";
    default: return "scalar";
  }
}

static int nr_of(rill_i8_path path) { return path == RILL_I8_VNNI ? 32 : 8; }

/* ------------------------------------------------------------------ packing ----- */

void rill_i8_weights_free(rill_i8_weights *w) {
  if (!w) return;
  rill_free(w->a);
  rill_free(w->rowsum);
  w->a = NULL;
  w->rowsum = NULL;
}

static bool is_level(float v, float lo, float hi) { return v >= lo && v <= hi && v == (float)(int)v; }

rill_i8_pack_result rill_i8_weights_pack(const float *w, int64_t m, int64_t k, int64_t groups, bool trans,
                                         rill_i8_weights *o, int64_t *bad) {
  memset(o, 0, sizeof *o);
  if (trans) groups = 1;
  o->trans = trans;
  int64_t mg = m / groups, mgp = round_up(mg, MR), kp = round_up(k, 4);
  o->src = w;
  o->m = m;
  o->k = k;
  o->groups = groups;
  o->mg = mg;
  o->mgp = mgp;
  o->kp = kp;
  size_t abytes = (size_t)(groups * mgp * kp);
  o->a = rill_aligned_alloc(abytes ? abytes : 1, 64);
  o->rowsum = rill_calloc((size_t)(groups * mgp) + 1, sizeof *o->rowsum);
  if (!o->a || !o->rowsum) {
    rill_i8_weights_free(o);
    return RILL_I8_OOM;
  }
  memset(o->a, 0, abytes);
  for (int64_t g = 0; g < groups; g++)
    for (int64_t r = 0; r < mg; r++) {
      int64_t row = g * mg + r;
      /* element kk of the row: w[row k + kk], or w[kk m + row] transposed */
      int64_t at = trans ? row : row * k, step = trans ? m : 1;
      int8_t *blk = o->a + (g * mgp + r / MR * MR) * kp;
      int64_t i = r % MR;
      int32_t sum = 0;
      for (int64_t kk = 0; kk < k; kk++, at += step) {
        if (!is_level(w[at], -127.0f, 127.0f)) {
          *bad = at;
          rill_i8_weights_free(o);
          return RILL_I8_NOT_LEVEL;
        }
        int v = (int)w[at];
        blk[(kk >> 2) * MR * 4 + i * 4 + (kk & 3)] = (int8_t)v;
        sum += v;
      }
      o->rowsum[g * mgp + r] = sum;
    }
  return RILL_I8_PACKED;
}

bool rill_i8_from_levels(const float *x, int64_t n, int8_t *out, int64_t *bad) {
  int64_t i = 0;
  bool ok = true;
#if RILL_X86_SIMD
  /* SSE2 (the x86-64 baseline), 16 values at a time: in range (NaN is not), integral,
   * converted and narrowed; the first bad value is found again below. */
  const __m128 lo = _mm_set1_ps(-128.0f), hi = _mm_set1_ps(127.0f);
  __m128 good = _mm_castsi128_ps(_mm_set1_epi32(-1));
  for (; i + 16 <= n; i += 16) {
    __m128i q[4];
    for (int r = 0; r < 4; r++) {
      __m128 v = _mm_loadu_ps(x + i + 4 * r);
      __m128 in = _mm_and_ps(_mm_cmpge_ps(v, lo), _mm_cmple_ps(v, hi));
      __m128 c = _mm_and_ps(v, in);
      q[r] = _mm_cvttps_epi32(c);
      good = _mm_and_ps(good, _mm_and_ps(in, _mm_cmpeq_ps(_mm_cvtepi32_ps(q[r]), c)));
    }
    __m128i w = _mm_packs_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3]));
    _mm_storeu_si128((__m128i *)(out + i), w);
  }
  ok = _mm_movemask_ps(good) == 0xf;
#endif
  for (; i < n && ok; i++) {
    ok = is_level(x[i], -128.0f, 127.0f);
    out[i] = ok ? (int8_t)(int)x[i] : 0;
  }
  if (ok) return true;
  for (i = 0; i < n; i++)
    if (!is_level(x[i], -128.0f, 127.0f)) break;
  *bad = i;
  return false;
}

#if RILL_X86_SIMD
/* Whether x[0, n) (n a multiple of 64) are all levels, 64 at a time: in [-128, 127] and
 * unchanged by truncation (NaN fails both). */
RILL_AVX512_BEGIN
static bool check_levels_avx512(const float *x, int64_t n) {
  const __m512 lo = _mm512_set1_ps(-128.0f), hi = _mm512_set1_ps(127.0f);
  __mmask16 good = 0xffff;
  for (int64_t i = 0; i < n; i += 64)
    for (int r = 0; r < 4; r++) {
      __m512 v = _mm512_loadu_ps(x + i + 16 * r);
      __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      good &= _mm512_cmp_ps_mask(v, lo, _CMP_GE_OQ) & _mm512_cmp_ps_mask(v, hi, _CMP_LE_OQ) &
              _mm512_cmp_ps_mask(t, v, _CMP_EQ_OQ);
    }
  return good == 0xffff;
}
RILL_AVX512_END
#endif

bool rill_i8_check_levels(const float *x, int64_t n, int64_t *bad) {
  int64_t i = 0;
  bool ok = true;
#if RILL_X86_SIMD
  if (rill_cpu_avx512()) {
    i = n / 64 * 64;
    ok = check_levels_avx512(x, i);
  }
  const __m128 lo = _mm_set1_ps(-128.0f), hi = _mm_set1_ps(127.0f);
  __m128 good = _mm_castsi128_ps(_mm_set1_epi32(-1));
  for (; ok && i + 16 <= n; i += 16)
    for (int r = 0; r < 4; r++) {
      __m128 v = _mm_loadu_ps(x + i + 4 * r);
      __m128 in = _mm_and_ps(_mm_cmpge_ps(v, lo), _mm_cmple_ps(v, hi));
      __m128 c = _mm_and_ps(v, in);
      good = _mm_and_ps(good, _mm_and_ps(in, _mm_cmpeq_ps(_mm_cvtepi32_ps(_mm_cvttps_epi32(c)), c)));
    }
  ok = ok && _mm_movemask_ps(good) == 0xf;
#endif
  for (; i < n && ok; i++) ok = is_level(x[i], -128.0f, 127.0f);
  if (ok) return true;
  for (i = 0; i < n; i++)
    if (!is_level(x[i], -128.0f, 127.0f)) break;
  *bad = i;
  return false;
}

/* n float levels (checked already) to int8. */
static void levels_to_i8(const float *x, int64_t n, int8_t *out) {
  int64_t i = 0;
#if RILL_X86_SIMD
  for (; i + 16 <= n; i += 16) {
    __m128i q[4];
    for (int r = 0; r < 4; r++) q[r] = _mm_cvttps_epi32(_mm_loadu_ps(x + i + 4 * r));
    _mm_storeu_si128((__m128i *)(out + i), _mm_packs_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3])));
  }
#endif
  for (; i < n; i++) out[i] = (int8_t)(int)x[i];
}

rill_i8_quant rill_i8_quant_make(float s, int bit_length, int round_type) {
  return (rill_i8_quant){.s = s, .inv = rill_quant_inv_scale(s), .bin = rill_quant_bin_count(bit_length),
                         .round_type = round_type};
}

#if RILL_X86_SIMD
/* quant_to_i8's round_type 1 over the first multiple of 16 of n with AVX-512: the count
 * done; *ok false when a level there is outside int8. */
RILL_AVX512_BEGIN
static int64_t quant_to_i8_avx512(const float *x, int64_t n, const rill_i8_quant *q, int8_t *out, bool *ok) {
  const __m512 sv = _mm512_set1_ps(q->s), ns = _mm512_set1_ps(-q->s), binv = _mm512_set1_ps(q->bin * q->inv);
  const __m512 lo = _mm512_set1_ps(-128.0f), hi = _mm512_set1_ps(127.0f);
  __mmask16 good = 0xffff;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 l = rill_quant16_away(_mm512_loadu_ps(x + i), sv, ns, binv);
    good &= _mm512_cmp_ps_mask(l, lo, _CMP_GE_OQ) & _mm512_cmp_ps_mask(l, hi, _CMP_LE_OQ);
    _mm_storeu_si128((__m128i *)(out + i), _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(l)));
  }
  *ok = good == 0xffff;
  return i;
}
RILL_AVX512_END
#endif

/* n floats to their int8 levels under q (a folded fake quantize op): false when a level
 * is not in [-128, 127] (that value then stored as anything). round_type 1 takes 16 at
 * a time with AVX-512 or SSE2, rill_quant16_away's and rill_quant4_away's lanes being
 * the scalar arithmetic. */
static bool quant_to_i8(const float *x, int64_t n, const rill_i8_quant *q, int8_t *out) {
  int64_t i = 0;
  bool ok = true;
#if RILL_X86_SIMD
  if (q->round_type == 1 && rill_cpu_avx512()) i = quant_to_i8_avx512(x, n, q, out, &ok);
  else if (q->round_type == 1) {
    const __m128 sv = _mm_set1_ps(q->s), ns = _mm_set1_ps(-q->s), binv = _mm_set1_ps(q->bin * q->inv);
    const __m128 lo = _mm_set1_ps(-128.0f), hi = _mm_set1_ps(127.0f);
    __m128 good = _mm_castsi128_ps(_mm_set1_epi32(-1));
    for (; i + 16 <= n; i += 16) {
      __m128i v[4];
      for (int r = 0; r < 4; r++) {
        __m128 l = rill_quant4_away(_mm_loadu_ps(x + i + 4 * r), sv, ns, binv);
        good = _mm_and_ps(good, _mm_and_ps(_mm_cmpge_ps(l, lo), _mm_cmple_ps(l, hi)));
        v[r] = _mm_cvttps_epi32(l);
      }
      _mm_storeu_si128((__m128i *)(out + i), _mm_packs_epi16(_mm_packs_epi32(v[0], v[1]), _mm_packs_epi32(v[2], v[3])));
    }
    ok = _mm_movemask_ps(good) == 0xf;
  }
#endif
  for (; i < n; i++) {
    float l = rill_quant_one(x[i], q->s, q->inv, q->bin, q->round_type);
    bool in = l >= -128.0f && l <= 127.0f;
    ok = ok && in;
    out[i] = in ? (int8_t)(int)l : 0;
  }
  return ok;
}

bool rill_i8_quant_to_i8(const float *x, int64_t n, const rill_i8_quant *q, int8_t *out, int64_t *bad) {
  if (quant_to_i8(x, n, q, out)) return true;
  int64_t i = 0;
  for (; i < n; i++) {
    float l = rill_quant_one(x[i], q->s, q->inv, q->bin, q->round_type);
    if (!(l >= -128.0f && l <= 127.0f)) break;
  }
  *bad = i;
  return false;
}

/* Rows k of src (row stride ld, `width` valid columns) into a panel of nr columns:
 * dst[q][j][t] = src[(4q + t) ld + j], zero for k >= kk or j >= width. */
static void pack_panel(const int8_t *src, int64_t ld, int64_t kk, int64_t width, int nr, int8_t *dst) {
  static const int8_t zero[NR_MAX] = {0};
  int64_t kq = round_up(kk, 4) / 4;
  for (int64_t q = 0; q < kq; q++) {
    const int8_t *r[4];
    for (int t = 0; t < 4; t++) r[t] = 4 * q + t < kk ? src + (4 * q + t) * ld : zero;
    int8_t *d = dst + q * nr * 4;
    int64_t j = 0;
#if RILL_X86_SIMD
    /* SSE2, the x86-64 baseline: bytes of rows 0/1 and 2/3 paired, then the pairs. */
    for (; j + 16 <= width && j + 16 <= nr; j += 16) {
      __m128i r0 = _mm_loadu_si128((const __m128i *)(r[0] + j)), r1 = _mm_loadu_si128((const __m128i *)(r[1] + j));
      __m128i r2 = _mm_loadu_si128((const __m128i *)(r[2] + j)), r3 = _mm_loadu_si128((const __m128i *)(r[3] + j));
      __m128i lo01 = _mm_unpacklo_epi8(r0, r1), hi01 = _mm_unpackhi_epi8(r0, r1);
      __m128i lo23 = _mm_unpacklo_epi8(r2, r3), hi23 = _mm_unpackhi_epi8(r2, r3);
      _mm_storeu_si128((__m128i *)(d + j * 4), _mm_unpacklo_epi16(lo01, lo23));
      _mm_storeu_si128((__m128i *)(d + j * 4 + 16), _mm_unpackhi_epi16(lo01, lo23));
      _mm_storeu_si128((__m128i *)(d + j * 4 + 32), _mm_unpacklo_epi16(hi01, hi23));
      _mm_storeu_si128((__m128i *)(d + j * 4 + 48), _mm_unpackhi_epi16(hi01, hi23));
    }
    for (; j + 8 <= width && j + 8 <= nr; j += 8) {
      __m128i r0 = _mm_loadl_epi64((const __m128i *)(r[0] + j)), r1 = _mm_loadl_epi64((const __m128i *)(r[1] + j));
      __m128i r2 = _mm_loadl_epi64((const __m128i *)(r[2] + j)), r3 = _mm_loadl_epi64((const __m128i *)(r[3] + j));
      __m128i p01 = _mm_unpacklo_epi8(r0, r1), p23 = _mm_unpacklo_epi8(r2, r3);
      _mm_storeu_si128((__m128i *)(d + j * 4), _mm_unpacklo_epi16(p01, p23));
      _mm_storeu_si128((__m128i *)(d + j * 4 + 16), _mm_unpackhi_epi16(p01, p23));
    }
#endif
    for (; j < nr; j++)
      for (int t = 0; t < 4; t++) d[j * 4 + t] = j < width ? r[t][j] : 0;
  }
}

/* The image an int8 op reads: int8 levels, or float levels (checked already) that each
 * part converts where it unfolds them, so that no int8 copy of the whole image is made,
 * or (with quant) floats that each part quantizes there, noting in bad[its thread's slot]
 * a level outside int8. */
typedef struct i8_src {
  const int8_t *i8;
  const float *f32;
  const rill_i8_quant *quant;
  bool *bad; /* RILL_DEVICE_MAX_THREADS flags, with quant */
} i8_src;

/* n values of x's floats from f into int8 (by thread slot `slot`). */
static void src_to_i8(const i8_src *x, int slot, const float *f, int64_t n, int8_t *out) {
  if (!x->quant) levels_to_i8(f, n, out);
  else if (!quant_to_i8(f, n, x->quant, out)) x->bad[slot] = true;
}

/* n bytes of s, `step` apart, into dst; stride 2 (the strided convs of ResNet-like
 * models) 16 at a time with SSE2: the even bytes of 32 are the low bytes of 16 words. */
static void gather_bytes(const int8_t *s, int64_t step, int64_t n, int8_t *dst) {
  int64_t e = 0;
#if RILL_X86_SIMD
  if (step == 2) {
    const __m128i low = _mm_set1_epi16(0x00ff);
    for (; e + 17 <= n; e += 16) {
      __m128i a = _mm_and_si128(_mm_loadu_si128((const __m128i *)(s + 2 * e)), low);
      __m128i b = _mm_and_si128(_mm_loadu_si128((const __m128i *)(s + 2 * e + 16)), low);
      _mm_storeu_si128((__m128i *)(dst + e), _mm_packus_epi16(a, b));
    }
  }
#endif
  for (; e < n; e++) dst[e] = s[e * step];
}

/* Columns [n0, n0 + wd) of the unfolded image of cg channels at x into col [K, wd]: per
 * kernel row and run of output columns, the padding on either side is found once (the
 * columns whose input column lies in [0, w)) and the inside copied with the stride. */
static void im2col_i8(const int8_t *x, const rill_conv_geom *g, int64_t cg, int64_t n0, int64_t wd, int8_t *col) {
  for (int64_t c = 0; c < cg; c++)
    for (int64_t ki = 0; ki < g->kh; ki++)
      for (int64_t kj = 0; kj < g->kw; kj++) {
        int8_t *row = col + ((c * g->kh + ki) * g->kw + kj) * wd;
        const int8_t *src = x + c * g->h * g->w;
        int64_t n = n0, j = 0;
        while (j < wd) {
          int64_t oh = n / g->ow, ow = n % g->ow, run = min64(g->ow - ow, wd - j);
          int64_t ih = oh * g->sh - g->pt + ki * g->dh, iw0 = ow * g->sw - g->pl + kj * g->dw;
          if (ih < 0 || ih >= g->h) {
            memset(row + j, 0, (size_t)run);
          } else {
            int64_t sw = g->sw; /* columns e of the run with 0 <= iw0 + e sw < w: [lo, hi) */
            int64_t lo = iw0 >= 0 ? 0 : min64(run, (-iw0 + sw - 1) / sw);
            int64_t hi = max64(lo, iw0 >= g->w ? 0 : min64(run, (g->w - iw0 + sw - 1) / sw));
            memset(row + j, 0, (size_t)lo);
            if (hi > lo) {
              const int8_t *s = src + ih * g->w + iw0 + lo * sw;
              if (sw == 1) memcpy(row + j + lo, s, (size_t)(hi - lo));
              else gather_bytes(s, sw, hi - lo, row + j + lo);
            }
            memset(row + j + hi, 0, (size_t)(run - hi));
          }
          j += run;
          n += run;
        }
      }
}

/* The input rows [*r0, *r0 + *rows) that output columns [n0, n0 + wd) read. */
static void band_of(const rill_conv_geom *g, int64_t n0, int64_t wd, int64_t *r0, int64_t *rows) {
  int64_t oh0 = n0 / g->ow, oh1 = (n0 + wd - 1) / g->ow;
  int64_t lo = max64(0, oh0 * g->sh - g->pt), hi = min64(g->h, oh1 * g->sh - g->pt + (g->kh - 1) * g->dh + 1);
  *r0 = lo;
  *rows = max64(0, hi - lo);
}

/* -------------------------------------------------------------- microkernels ----- */
/* tile [MR, nr] = a (a block of MR weight rows) x b (a panel), kq steps of 4 bytes. */

static void ukr_scalar(const int8_t *a, const int8_t *b, int64_t kq, const int32_t *rowsum,
                       int32_t *tile) {
  (void)rowsum;
  int32_t acc[MR][8] = {{0}};
  for (int64_t q = 0; q < kq; q++) {
    const int8_t *aq = a + q * MR * 4, *bq = b + q * 8 * 4;
    for (int i = 0; i < MR; i++)
      for (int j = 0; j < 8; j++) {
        int32_t s = 0;
        for (int t = 0; t < 4; t++) s += (int32_t)aq[i * 4 + t] * (int32_t)bq[j * 4 + t];
        acc[i][j] += s;
      }
  }
  for (int i = 0; i < MR; i++) memcpy(tile + i * 8, acc[i], sizeof acc[i]);
}

#if RILL_X86_SIMD
static int32_t load4(const int8_t *p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

RILL_AVX2_BEGIN
static void ukr_avx2(const int8_t *a, const int8_t *b, int64_t kq, const int32_t *rowsum, int32_t *tile) {
  (void)rowsum;
  __m256i acc[MR];
  for (int i = 0; i < MR; i++) acc[i] = _mm256_setzero_si256();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t q = 0; q < kq; q++) {
    __m256i bv = _mm256_loadu_si256((const __m256i *)(b + q * 32));
    __m256i ab = _mm256_abs_epi8(bv);
    const int8_t *aq = a + q * MR * 4;
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {
      __m256i w = _mm256_sign_epi8(_mm256_set1_epi32(load4(aq + i * 4)), bv);
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(ab, w), ones));
    }
  }
  for (int i = 0; i < MR; i++) _mm256_storeu_si256((__m256i *)(tile + i * 8), acc[i]);
}
RILL_AVX2_END

RILL_AVX512VNNI_BEGIN
static void ukr_vnni(const int8_t *a, const int8_t *b, int64_t kq, const int32_t *rowsum, int32_t *tile) {
  __m512i acc[MR][2];
  for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_si512();
  const __m512i flip = _mm512_set1_epi8((char)0x80);
  for (int64_t q = 0; q < kq; q++) {
    __m512i b0 = _mm512_xor_si512(_mm512_loadu_si512(b + q * 128), flip);
    __m512i b1 = _mm512_xor_si512(_mm512_loadu_si512(b + q * 128 + 64), flip);
    const int8_t *aq = a + q * MR * 4;
    _Pragma("GCC unroll 8") for (int i = 0; i < MR; i++) {
      __m512i w = _mm512_set1_epi32(load4(aq + i * 4));
      acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], b0, w);
      acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], b1, w);
    }
  }
  for (int i = 0; i < MR; i++) {
    __m512i comp = _mm512_set1_epi32(128 * rowsum[i]);
    _mm512_storeu_si512(tile + i * 32, _mm512_sub_epi32(acc[i][0], comp));
    _mm512_storeu_si512(tile + i * 32 + 16, _mm512_sub_epi32(acc[i][1], comp));
  }
}
RILL_AVX512VNNI_END

/* One column (a batch-1 mul): out [MR] = a (a block of MR weight rows) x the column,
 * whose kq steps of 4 bytes are pre-flipped to unsigned (x + 128) and expanded in xe:
 * each 64 bytes hold step 2i broadcast to the low 8 lanes and step 2i + 1 to the high
 * 8, so one vpdpbusd takes two steps of all 8 rows (the packed block's 64 bytes). */
RILL_AVX512VNNI_BEGIN
static void gemv_vnni(const int8_t *a, const int8_t *xe, int64_t kq, const int32_t *rowsum, int32_t *out) {
  __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
  int64_t q = 0;
  for (; q + 4 <= kq; q += 4) {
    acc0 = _mm512_dpbusd_epi32(acc0, _mm512_loadu_si512(xe + q * 32), _mm512_loadu_si512(a + q * 32));
    acc1 = _mm512_dpbusd_epi32(acc1, _mm512_loadu_si512(xe + q * 32 + 64), _mm512_loadu_si512(a + q * 32 + 64));
  }
  for (; q + 2 <= kq; q += 2)
    acc0 = _mm512_dpbusd_epi32(acc0, _mm512_loadu_si512(xe + q * 32), _mm512_loadu_si512(a + q * 32));
  acc0 = _mm512_add_epi32(acc0, acc1);
  __m256i s = _mm256_add_epi32(_mm512_castsi512_si256(acc0), _mm512_extracti64x4_epi64(acc0, 1));
  if (q < kq) /* an odd last step: its low half */
    s = _mm256_dpbusd_epi32(s, _mm256_loadu_si256((const __m256i *)(xe + q * 32)),
                            _mm256_loadu_si256((const __m256i *)(a + q * 32)));
  __m256i comp = _mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)rowsum), 7);
  _mm256_storeu_si256((__m256i *)out, _mm256_sub_epi32(s, comp));
}
RILL_AVX512VNNI_END
#endif

typedef void (*ukr_fn)(const int8_t *, const int8_t *, int64_t, const int32_t *, int32_t *);

static ukr_fn ukr_for(rill_i8_path path) {
#if RILL_X86_SIMD
  if (path == RILL_I8_VNNI) return ukr_vnni;
  if (path == RILL_I8_AVX2) return ukr_avx2;
#endif
  (void)path;
  return ukr_scalar;
}

/* ---------------------------------------------------------------- the conv ----- */

typedef struct conv_job {
  const rill_conv_geom *g;
  i8_src x;
  const rill_i8_weights *w;
  const rill_i8_out *y;
  ukr_fn ukr;
  bool gemv; /* one column: the VNNI matrix-vector kernel */
  int nr;
  bool direct; /* 1x1, stride 1, no padding: the image is its own im2col */
  int64_t cg, kk, npos, nc, chunks;
  int64_t blocks, bper, bruns; /* weight row blocks per group, blocks per run, runs */
  size_t panel_bytes, col_bytes, band_bytes; /* band: the input rows of a chunk, from float levels */
  size_t gemv_bytes;                         /* the expanded column of gemv_vnni */
  int8_t *scratch[RILL_DEVICE_MAX_THREADS];
} conv_job;

/* Rows [row0, row0 + rows) of the tile into y at off (row stride ldy). */
static void store_tile(const int32_t *tile, int nr, int64_t row0, int64_t rows, int64_t cols,
                       const rill_i8_out *y, int64_t off, int64_t ldy) {
  for (int64_t i = 0; i < rows; i++) {
    const int32_t *t = tile + i * nr;
    if (y->f32) {
      float *o = y->f32 + off + i * ldy, s = y->scale, r = y->range;
      if (y->row_scale) {
        float rs = y->row_scale[row0 + i];
        if (y->no_scale)
          for (int64_t j = 0; j < cols; j++) o[j] = (float)t[j] * rs / r;
        else
          for (int64_t j = 0; j < cols; j++) o[j] = (float)t[j] * rs * s / r;
      } else {
        for (int64_t j = 0; j < cols; j++) o[j] = (float)t[j] * s / r;
      }
    } else {
      memcpy(y->i32 + off + i * ldy, t, (size_t)cols * sizeof *t);
    }
  }
}

/* Part = (image, group, chunk of output positions). */
static bool conv_part(void *arg, int64_t part, int slot) {
  conv_job *j = arg;
  const rill_conv_geom *g = j->g;
  const rill_i8_weights *w = j->w;
  int64_t brun = part % j->bruns;
  part /= j->bruns;
  int64_t chunk = part % j->chunks, rest = part / j->chunks;
  int64_t grp = rest % g->groups, img = rest / g->groups;
  int64_t n0 = chunk * j->nc, wd = min64(j->nc, j->npos - n0);
  if (!j->scratch[slot]) {
    j->scratch[slot] = rill_aligned_alloc(j->panel_bytes + j->col_bytes + j->band_bytes + j->gemv_bytes + 1, 64);
    if (!j->scratch[slot]) return false;
  }
  int8_t *panels = j->scratch[slot], *col = panels + j->panel_bytes, *band = col + j->col_bytes;
  int64_t base = (img * g->c + grp * j->cg) * g->h * g->w, hw = g->h * g->w;
  const int8_t *src;
  int64_t ld;
  if (j->direct && j->x.i8) {
    src = j->x.i8 + base + n0;
    ld = hw;
  } else if (j->direct) { /* float levels: this chunk's columns of each channel */
    for (int64_t k = 0; k < j->kk; k++) src_to_i8(&j->x, slot, j->x.f32 + base + k * hw + n0, wd, col + k * wd);
    src = col;
    ld = wd;
  } else if (j->x.i8) {
    im2col_i8(j->x.i8 + base, g, j->cg, n0, wd, col);
    src = col;
    ld = wd;
  } else {
    /* float levels: the band of input rows this chunk reads, converted once per
     * channel, then unfolded as an image of that many rows */
    int64_t r0, rows;
    band_of(g, n0, wd, &r0, &rows);
    for (int64_t c = 0; c < j->cg; c++)
      src_to_i8(&j->x, slot, j->x.f32 + base + c * hw + r0 * g->w, rows * g->w, band + c * rows * g->w);
    rill_conv_geom gb = *g;
    gb.h = rows;
    gb.pt = g->pt + r0;
    im2col_i8(band, &gb, j->cg, n0, wd, col);
    src = col;
    ld = wd;
  }
  int nr = j->nr;
  int64_t npanels = (wd + nr - 1) / nr, kp = w->kp;
  for (int64_t p = 0; p < npanels; p++) pack_panel(src + p * nr, ld, j->kk, min64(nr, wd - p * nr), nr, panels + p * kp * nr);
  int32_t tile[MR * NR_MAX];
#if RILL_X86_SIMD
  if (j->gemv && wd == 1) {
    int8_t *xe = band + j->band_bytes;
    int64_t kq = kp / 4;
    for (int64_t q = 0; q < kq; q++) { /* step q: 8 copies, in the low or high half of 64 bytes */
      uint32_t v;
      memcpy(&v, panels + q * nr * 4, sizeof v);
      v ^= 0x80808080u;
      for (int r = 0; r < MR; r++) memcpy(xe + (q / 2) * 64 + (q % 2) * 32 + r * 4, &v, sizeof v);
    }
    for (int64_t rb = brun * j->bper; rb < min64(j->blocks, (brun + 1) * j->bper); rb++) {
      int64_t row0 = grp * w->mg + rb * MR;
      gemv_vnni(w->a + (grp * w->mgp + rb * MR) * kp, xe, kq, w->rowsum + grp * w->mgp + rb * MR, tile);
      store_tile(tile, 1, row0, min64(MR, w->mg - rb * MR), 1, j->y, (img * g->m + row0) * j->npos + n0, j->npos);
    }
    return true;
  }
#endif
  for (int64_t rb = brun * j->bper; rb < min64(j->blocks, (brun + 1) * j->bper); rb++) {
    const int8_t *ab = w->a + (grp * w->mgp + rb * MR) * kp;
    const int32_t *rs = w->rowsum + grp * w->mgp + rb * MR;
    int64_t rows = min64(MR, w->mg - rb * MR);
    for (int64_t p = 0; p < npanels; p++) {
      j->ukr(ab, panels + p * kp * nr, kp / 4, rs, tile);
      int64_t off = (img * g->m + grp * w->mg + rb * MR) * j->npos + n0 + p * nr;
      store_tile(tile, nr, grp * w->mg + rb * MR, rows, min64(nr, wd - p * nr), j->y, off, j->npos);
    }
  }
  return true;
}

/* ---------------------------------------------------------- depthwise ----- */
/* A conv whose groups each read one input channel (depthwise: groups == C, each group
 * with `mult` output channels) runs direct, since the GEMM would have one row per
 * group. Per input channel its padded image is made once in int16, split by the phases
 * of the strides: padded row r sh + a, column q sw + b at plane[((a sw + b) rq + r) pq
 * + q]. Output (oy, ox)'s tap (ky, kx) is then at a fixed offset from oy pq + ox, so
 * every tap is one unit-stride run over the whole output taken with row pitch pq (the
 * columns from ow to pq are computed and dropped); the sums are int32. */

/* Outputs per block of the taps' loop in plain C (baseline, AVX2): its int32 sums stay
 * in L1. */
#define DW_BLOCK 512

/* acc[i] = sum over taps t of w[t] s[off[t] + i], i < n (a multiple of 64): int16
 * products summed in int32 (each at most 128 x 127: exact in any order). */
static inline __attribute__((always_inline)) void dw_plane_body(int32_t *restrict acc, const int16_t *s,
                                                                 const int64_t *off, const int16_t *w,
                                                                 int64_t taps, int64_t n) {
  for (int64_t i0 = 0; i0 < n; i0 += DW_BLOCK) {
    int64_t len = n - i0 < DW_BLOCK ? n - i0 : DW_BLOCK;
    int32_t *restrict a = acc + i0;
    memset(a, 0, (size_t)len * sizeof *a);
    for (int64_t t = 0; t < taps; t++) {
      const int16_t *restrict st = s + off[t] + i0;
      int32_t wt = w[t];
      for (int64_t i = 0; i < len; i++) a[i] += wt * (int32_t)st[i];
    }
  }
}

/* d[q] = x[q sw] for q in [qlo, qhi): float levels (checked already) to int16. */
static inline __attribute__((always_inline)) void dw_fill_body(int16_t *restrict d, const float *restrict x,
                                                                int64_t sw, int64_t qlo, int64_t qhi) {
  if (sw == 1)
    for (int64_t q = qlo; q < qhi; q++) d[q] = (int16_t)(int32_t)x[q];
  else
    for (int64_t q = qlo; q < qhi; q++) d[q] = (int16_t)(int32_t)x[q * sw];
}

/* The dequantizing store of one output channel: rows of ow sums, pitch pq, into o
 * (rows of ow), in store_tile's order of factors. */
static inline __attribute__((always_inline)) void dw_store_body(const int32_t *restrict acc, int64_t pq,
                                                                 int64_t oh, int64_t ow, const rill_i8_out *y,
                                                                 int64_t row, float *restrict o) {
  float s = y->scale, r = y->range, rs = y->row_scale ? y->row_scale[row] : 1.0f;
  for (int64_t oy = 0; oy < oh; oy++, o += ow, acc += pq) {
    if (y->row_scale && y->no_scale)
      for (int64_t j = 0; j < ow; j++) o[j] = (float)acc[j] * rs / r;
    else if (y->row_scale)
      for (int64_t j = 0; j < ow; j++) o[j] = (float)acc[j] * rs * s / r;
    else
      for (int64_t j = 0; j < ow; j++) o[j] = (float)acc[j] * s / r;
  }
}

typedef struct dw_fns {
  void (*plane)(int32_t *, const int16_t *, const int64_t *, const int16_t *, int64_t, int64_t);
  void (*fill)(int16_t *, const float *, int64_t, int64_t, int64_t);
  void (*store)(const int32_t *, int64_t, int64_t, int64_t, const rill_i8_out *, int64_t, float *);
} dw_fns;

#define DW_FNS(sfx)                                                                                           \
  static void dw_fill_##sfx(int16_t *d, const float *x, int64_t sw, int64_t qlo, int64_t qhi) {               \
    dw_fill_body(d, x, sw, qlo, qhi);                                                                         \
  }                                                                                                           \
  static void dw_store_##sfx(const int32_t *acc, int64_t pq, int64_t oh, int64_t ow, const rill_i8_out *y,    \
                             int64_t row, float *o) {                                                         \
    dw_store_body(acc, pq, oh, ow, y, row, o);                                                                \
  }

DW_FNS(scalar)
static void dw_plane_scalar(int32_t *acc, const int16_t *s, const int64_t *off, const int16_t *w, int64_t taps,
                            int64_t n) {
  dw_plane_body(acc, s, off, w, taps, n);
}
#if RILL_X86_SIMD
RILL_AVX2_BEGIN
DW_FNS(avx2)
static void dw_plane_avx2(int32_t *acc, const int16_t *s, const int64_t *off, const int16_t *w, int64_t taps,
                          int64_t n) {
  dw_plane_body(acc, s, off, w, taps, n);
}
RILL_AVX2_END
RILL_AVX512_BEGIN
DW_FNS(avx512)
/* 64 outputs at a time in four registers over all taps: each tap's 64 int16 values
 * times its weight in 16 bits (vpmullw: the product of levels fits), each half widened
 * and added in 32. */
static void dw_plane_avx512(int32_t *acc, const int16_t *s, const int64_t *off, const int16_t *w, int64_t taps,
                            int64_t n) {
  for (int64_t i = 0; i < n; i += 64) {
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t t = 0; t < taps; t++) {
      const int16_t *st = s + off[t] + i;
      __m512i wv = _mm512_set1_epi16(w[t]);
      __m512i p0 = _mm512_mullo_epi16(_mm512_loadu_si512(st), wv);
      __m512i p1 = _mm512_mullo_epi16(_mm512_loadu_si512(st + 32), wv);
      a0 = _mm512_add_epi32(a0, _mm512_cvtepi16_epi32(_mm512_castsi512_si256(p0)));
      a1 = _mm512_add_epi32(a1, _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(p0, 1)));
      a2 = _mm512_add_epi32(a2, _mm512_cvtepi16_epi32(_mm512_castsi512_si256(p1)));
      a3 = _mm512_add_epi32(a3, _mm512_cvtepi16_epi32(_mm512_extracti64x4_epi64(p1, 1)));
    }
    _mm512_storeu_si512(acc + i, a0);
    _mm512_storeu_si512(acc + i + 16, a1);
    _mm512_storeu_si512(acc + i + 32, a2);
    _mm512_storeu_si512(acc + i + 48, a3);
  }
}
RILL_AVX512_END
#endif
#undef DW_FNS

static dw_fns dw_fns_for(rill_i8_path path) {
#if RILL_X86_SIMD
  if (path == RILL_I8_VNNI) return (dw_fns){dw_plane_avx512, dw_fill_avx512, dw_store_avx512};
  if (path == RILL_I8_AVX2) return (dw_fns){dw_plane_avx2, dw_fill_avx2, dw_store_avx2};
#endif
  (void)path;
  return (dw_fns){dw_plane_scalar, dw_fill_scalar, dw_store_scalar};
}

typedef struct dw_job {
  const rill_conv_geom *g;
  i8_src x;
  const rill_i8_weights *w;
  const rill_i8_out *y;
  dw_fns fn;
  int64_t mult, taps, rq, pq; /* padded rows and columns per phase */
  int64_t chans, runs;        /* input channels per part, parts per image */
  size_t plane_elems, acc_elems, wt_elems, chan_bytes, scratch_bytes;
  void *scratch[RILL_DEVICE_MAX_THREADS];
} dw_job;

/* Part = (image, run of `chans` input channels). */
static bool dw_part(void *arg, int64_t part, int slot) {
  dw_job *j = arg;
  const rill_conv_geom *g = j->g;
  const rill_i8_weights *w = j->w;
  int64_t img = part / j->runs, c0 = part % j->runs * j->chans, c1 = min64(g->c, c0 + j->chans);
  if (!j->scratch[slot]) {
    j->scratch[slot] = rill_aligned_alloc(j->scratch_bytes, 64);
    if (!j->scratch[slot]) return false;
  }
  int64_t sh = g->sh, sw = g->sw, rq = j->rq, pq = j->pq, taps = j->taps;
  int16_t *plane = j->scratch[slot];
  int32_t *acc = (int32_t *)(plane + j->plane_elems);
  int16_t *wt = (int16_t *)(acc + j->acc_elems);
  int64_t *off = (int64_t *)(wt + j->wt_elems);
  int8_t *chan8 = (int8_t *)(off + taps); /* with quant: an input channel's levels */
  for (int64_t ky = 0, t = 0; ky < g->kh; ky++)
    for (int64_t kx = 0; kx < g->kw; kx++, t++) {
      int64_t row = ky * g->dh, col = kx * g->dw;
      off[t] = ((row % sh * sw + col % sw) * rq + row / sh) * pq + col / sw;
    }
  for (int64_t c = c0; c < c1; c++) {
    const int64_t xoff = (img * g->c + c) * g->h * g->w;
    memset(plane, 0, j->plane_elems * sizeof *plane);
    if (j->x.quant) src_to_i8(&j->x, slot, j->x.f32 + xoff, g->h * g->w, chan8);
    for (int64_t ih = 0; ih < g->h; ih++) {
      int64_t r = ih + g->pt; /* the padded row */
      if (r >= rq * sh) break;
      const int8_t *src8 = j->x.quant ? chan8 + ih * g->w : j->x.i8 ? j->x.i8 + xoff + ih * g->w : NULL;
      for (int64_t b = 0; b < sw; b++) {
        int64_t first = b - g->pl; /* the input column of q = 0 */
        int64_t qlo = first >= 0 ? 0 : (-first + sw - 1) / sw;
        int64_t qhi = min64(pq, (g->w - first + sw - 1) / sw);
        int16_t *d = plane + ((r % sh * sw + b) * rq + r / sh) * pq;
        const int64_t at = xoff + ih * g->w + first;
        if (src8 && sw == 1)
          for (int64_t q = qlo; q < qhi; q++) d[q] = src8[first + q];
        else if (src8)
          for (int64_t q = qlo; q < qhi; q++) d[q] = src8[first + q * sw];
        else if (qhi > qlo)
          j->fn.fill(d, j->x.f32 + at, sw, qlo, qhi);
      }
    }
    for (int64_t mo = 0; mo < j->mult; mo++) {
      int64_t oc = c * j->mult + mo;
      /* the filter row: its element t in the packed blocks (group c, row mo) */
      const int8_t *blk = w->a + (c * w->mgp + mo / MR * MR) * w->kp;
      for (int64_t t = 0; t < taps; t++) wt[t] = blk[(t >> 2) * MR * 4 + (mo % MR) * 4 + (t & 3)];
      j->fn.plane(acc, plane, off, wt, taps, round_up(g->oh * pq, 64));
      int64_t at = (img * g->m + oc) * g->oh * g->ow;
      if (j->y->f32)
        j->fn.store(acc, pq, g->oh, g->ow, j->y, oc, j->y->f32 + at);
      else
        for (int64_t oy = 0; oy < g->oh; oy++)
          memcpy(j->y->i32 + at + oy * g->ow, acc + oy * pq, (size_t)g->ow * sizeof *acc);
    }
  }
  return true;
}

static bool dw_run(const rill_device_services *dev, int64_t threads, rill_i8_path path, const rill_conv_geom *g,
                   i8_src x, const rill_i8_weights *w, const rill_i8_out *y) {
  dw_job j = {.g = g, .x = x, .w = w, .y = y, .fn = dw_fns_for(path), .mult = g->m / g->c};
  j.taps = g->kh * g->kw;
  int64_t ph = (g->oh - 1) * g->sh + (g->kh - 1) * g->dh + 1, pw = (g->ow - 1) * g->sw + (g->kw - 1) * g->dw + 1;
  j.rq = (ph + g->sh - 1) / g->sh;
  j.pq = (pw + g->sw - 1) / g->sw;
  int64_t t = threads < 1 ? 1 : threads;
  /* runs of channels: about four parts per thread over all images, unless a part would
   * then sum fewer than 16k products */
  int64_t per_chan = max64(1, g->oh * g->ow * j.taps * j.mult);
  int64_t want = max64(1, (4 * t + g->n - 1) / g->n);
  j.chans = min64(g->c, max64((g->c + want - 1) / want, (16 * 1024 + per_chan - 1) / per_chan));
  j.runs = (g->c + j.chans - 1) / j.chans;
  /* the last output row's dropped columns (and the rest of its 64) read up to pq + 64 +
   * the widest tap offset past the end of a phase: a zeroed margin */
  j.plane_elems =
      (size_t)round_up(g->sh * g->sw * j.rq * j.pq + j.pq + 64 + g->kw * g->dw + g->kh * g->dh * j.pq, 32);
  j.acc_elems = (size_t)round_up(g->oh * j.pq, 64);
  j.wt_elems = (size_t)round_up(j.taps, 32);
  j.scratch_bytes = j.plane_elems * sizeof(int16_t) + j.acc_elems * sizeof(int32_t) +
                    j.wt_elems * sizeof(int16_t) + (size_t)j.taps * sizeof(int64_t);
  j.chan_bytes = x.quant ? (size_t)(g->h * g->w) : 0;
  j.scratch_bytes += j.chan_bytes;
  bool ok = rill_dev_parallel_for(dev, t, g->n * j.runs, dw_part, &j);
  for (int i = 0; i < RILL_DEVICE_MAX_THREADS; i++) rill_free(j.scratch[i]);
  return ok;
}

static bool conv_run(const rill_device_services *dev, int64_t threads, rill_i8_path path, const rill_conv_geom *g,
                     i8_src x, const rill_i8_weights *w, const rill_i8_out *y) {
  rill_i8_path best = rill_i8_path_for_cpu();
  if (path > best) path = best;
  if (g->n <= 0 || g->m <= 0 || g->oh <= 0 || g->ow <= 0) return true;
  if (g->groups > 1 && g->c == g->groups) return dw_run(dev, threads, path, g, x, w, y);
  conv_job j = {.g = g, .x = x, .w = w, .y = y, .ukr = ukr_for(path), .nr = nr_of(path)};
  j.cg = g->c / g->groups;
  j.kk = j.cg * g->kh * g->kw;
  j.npos = g->oh * g->ow;
  j.direct = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pb == 0 &&
             g->pl == 0 && g->pr == 0;
  int64_t t = threads < 1 ? 1 : threads;
  /* Chunks of whole panels: about two per thread over all images and groups, and at
   * most PART_PANEL_BYTES of packed activations each. */
  int64_t per = g->n * g->groups;
  int64_t want = max64(1, (2 * t + per - 1) / per);
  int64_t nc = round_up((j.npos + want - 1) / want, j.nr);
  int64_t cap = max64(j.nr, PART_PANEL_BYTES / w->kp / j.nr * j.nr);
  j.nc = min64(nc, cap);
  j.chunks = (j.npos + j.nc - 1) / j.nc;
  j.panel_bytes = (size_t)(w->kp * round_up(j.nc, j.nr));
  j.gemv = path == RILL_I8_VNNI && j.npos == 1;
  j.gemv_bytes = j.gemv ? (size_t)(round_up(w->kp / 4, 2) * 32) : 0;
  j.col_bytes = j.direct && x.i8 ? 0 : (size_t)(j.kk * j.nc);
  if (x.f32 && !j.direct) { /* the most rows a chunk reads: its output rows (partial ones at both ends) */
    int64_t orows = min64(g->oh, j.nc / g->ow + 2);
    j.band_bytes = (size_t)(j.cg * min64(g->h, (orows - 1) * g->sh + (g->kh - 1) * g->dh + 1) * g->w);
  }
  /* Fewer parts than two per thread (a batch-1 mul, the small images of a network's
   * last layers): each part's weight rows split too, in runs of whole blocks, while a
   * run keeps at least ROW_RUN_MIN products. */
  j.blocks = w->mgp / MR;
  j.bper = j.blocks;
  j.bruns = 1;
  int64_t parts = per * j.chunks;
  if (t > 1 && parts < 2 * t && j.blocks > 1) {
    int64_t block_macs = MR * w->kp * min64(j.nc, j.npos);
    int64_t runs = min64(j.blocks, min64((2 * t + parts - 1) / parts, j.blocks * block_macs / ROW_RUN_MIN));
    if (runs > 1) {
      j.bper = (j.blocks + runs - 1) / runs;
      j.bruns = (j.blocks + j.bper - 1) / j.bper;
    }
  }
  bool ok = rill_dev_parallel_for(dev, t, parts * j.bruns, conv_part, &j);
  for (int i = 0; i < RILL_DEVICE_MAX_THREADS; i++) rill_free(j.scratch[i]);
  return ok;
}

bool rill_i8_conv(const rill_device_services *dev, int64_t threads, rill_i8_path path,
                  const rill_conv_geom *g, const int8_t *x, const rill_i8_weights *w,
                  const rill_i8_out *y) {
  return conv_run(dev, threads, path, g, (i8_src){.i8 = x}, w, y);
}

bool rill_i8_conv_levels(const rill_device_services *dev, int64_t threads, rill_i8_path path,
                         const rill_conv_geom *g, const float *x, const rill_i8_weights *w,
                         const rill_i8_out *y) {
  return conv_run(dev, threads, path, g, (i8_src){.f32 = x}, w, y);
}

bool rill_i8_conv_quant(const rill_device_services *dev, int64_t threads, rill_i8_path path,
                        const rill_conv_geom *g, const float *x, const rill_i8_quant *q,
                        const rill_i8_weights *w, const rill_i8_out *y, bool *bad_level) {
  bool bad[RILL_DEVICE_MAX_THREADS] = {false};
  bool ok = conv_run(dev, threads, path, g, (i8_src){.f32 = x, .quant = q, .bad = bad}, w, y);
  *bad_level = false;
  for (int i = 0; i < RILL_DEVICE_MAX_THREADS; i++) *bad_level = *bad_level || bad[i];
  return ok;
}

/* ------------------------------------------------------- kept weights ----- */

static void packed_destroy(rill_buffer_derived *d) {
  rill_i8_weights *w = (rill_i8_weights *)d;
  rill_i8_weights_free(w);
  rill_free(w);
}

static bool packed_fits(const rill_i8_weights *w, const float *src, int64_t m, int64_t k, int64_t groups,
                        bool trans) {
  return w->src == src && w->m == m && w->k == k && w->groups == (trans ? 1 : groups) && w->trans == trans;
}

static rill_status *pack_error(rill_kernel_ctx *ctx, size_t slot, rill_i8_pack_result r, int64_t bad,
                               const float *f) {
  if (r == RILL_I8_OOM) return rill_oom();
  return rill_kernel_error(ctx, "%s (%s) value %lld is %g, not an integer level in [-127, 127]",
                           ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0), (long long)bad,
                           (double)f[bad]);
}

rill_status *rill_i8_weights_for(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *f, int64_t m, int64_t k,
                                 int64_t groups, bool trans, rill_i8_weights *local, const rill_i8_weights **out) {
  const float *src = rill_tensor_ptr(f);
  rill_buffer *buf = f->buf;
  int64_t bad = 0;
  if (rill_buffer_immutable(buf)) {
    rill_buffer_derived *d = rill_buffer_derived_get(buf);
    if (!d && rill_buffer_derived_claim(buf)) {
      rill_i8_weights *w = rill_malloc(sizeof *w);
      rill_i8_pack_result r = w ? rill_i8_weights_pack(src, m, k, groups, trans, w, &bad) : RILL_I8_OOM;
      if (r == RILL_I8_PACKED) {
        w->hdr.destroy = packed_destroy;
        d = &w->hdr;
      } else {
        rill_free(w);
      }
      rill_buffer_derived_publish(buf, d);
      if (r != RILL_I8_PACKED) return pack_error(ctx, slot, r, bad, src);
    }
    if (d && d->destroy == packed_destroy && packed_fits((const rill_i8_weights *)d, src, m, k, groups, trans)) {
      *out = (const rill_i8_weights *)d;
      return NULL;
    }
  }
  rill_i8_pack_result r = rill_i8_weights_pack(src, m, k, groups, trans, local, &bad);
  if (r != RILL_I8_PACKED) return pack_error(ctx, slot, r, bad, src);
  *out = local;
  return NULL;
}

/* ------------------------------------------------- kernel-side helpers ----- */

static rill_status *level_error(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *x, int64_t bad) {
  return rill_kernel_error(ctx, "%s (%s) value %lld is %g, not an integer level in [-128, 127]",
                           ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0), (long long)bad,
                           (double)((const float *)rill_tensor_ptr(x))[bad]);
}

rill_status *rill_i8_input_levels(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *x, int8_t **out) {
  int64_t n = rill_tensor_numel(x), bad = 0;
  int8_t *q = rill_aligned_alloc((size_t)n + 1, 64);
  if (!q) return rill_oom();
  if (!rill_i8_from_levels(rill_tensor_ptr(x), n, q, &bad)) {
    rill_free(q);
    return level_error(ctx, slot, x, bad);
  }
  *out = q;
  return NULL;
}

rill_status *rill_i8_input_check(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *x) {
  int64_t bad = 0;
  return rill_i8_check_levels(rill_tensor_ptr(x), rill_tensor_numel(x), &bad) ? NULL : level_error(ctx, slot, x, bad);
}

rill_status *rill_i8_quant_of(rill_kernel_ctx *ctx, size_t scale_slot, int bits, int round_type, rill_i8_quant *q) {
  rill_tensor *s = NULL;
  RILL_TRY(rill_kin_need(ctx, scale_slot, 0, RILL_DTYPE_FP32, &s));
  if (rill_tensor_numel(s) < 1)
    return rill_kernel_error(ctx, "input %s (%s) is empty, expected one value", ctx->schema->inputs[scale_slot].name,
                             rill_kin_name(ctx, scale_slot, 0));
  if (bits < 2 || bits > 8 || (round_type != 0 && round_type != 1))
    return rill_kernel_error(ctx, "with %s (%s), bit_length is %d (must be 2..8) and round_type %d (0 or 1)",
                             ctx->schema->inputs[scale_slot].name, rill_kin_name(ctx, scale_slot, 0), bits,
                             round_type);
  *q = rill_i8_quant_make(*(const float *)rill_tensor_ptr(s), bits, round_type);
  return NULL;
}

rill_status *rill_i8_quant_error(rill_kernel_ctx *ctx, size_t slot, size_t scale_slot, const rill_tensor *x,
                                 const rill_i8_quant *q, int64_t bad) {
  return rill_kernel_error(ctx, "%s (%s) value %lld is %g: its level under %s (%s) = %g is not an integer in "
                           "[-128, 127]",
                           ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0), (long long)bad,
                           (double)((const float *)rill_tensor_ptr(x))[bad], ctx->schema->inputs[scale_slot].name,
                           rill_kin_name(ctx, scale_slot, 0), (double)q->s);
}

rill_status *rill_i8_dequant_of(rill_kernel_ctx *ctx, size_t scale_slot, size_t row_slot, int64_t rows,
                                float max_range, rill_i8_out *y) {
  rill_tensor *s = NULL, *rs = NULL;
  if (rill_kin(ctx, scale_slot, 0)) RILL_TRY(rill_kin_need(ctx, scale_slot, 0, RILL_DTYPE_FP32, &s));
  if (rill_kin(ctx, row_slot, 0)) RILL_TRY(rill_kin_need(ctx, row_slot, 0, RILL_DTYPE_FP32, &rs));
  if (!s && !rs)
    return rill_kernel_error(ctx, "needs input %s or %s", ctx->schema->inputs[scale_slot].name,
                             ctx->schema->inputs[row_slot].name);
  if (s && rill_tensor_numel(s) < 1)
    return rill_kernel_error(ctx, "input %s (%s) is empty, expected one value", ctx->schema->inputs[scale_slot].name,
                             rill_kin_name(ctx, scale_slot, 0));
  if (rs && rill_tensor_numel(rs) != rows)
    return rill_kernel_error(ctx, "input %s (%s) holds %lld scales for %lld output channels",
                             ctx->schema->inputs[row_slot].name, rill_kin_name(ctx, row_slot, 0),
                             (long long)rill_tensor_numel(rs), (long long)rows);
  if (!(max_range > 0)) return rill_kernel_error(ctx, "attribute max_range is %g, must be > 0", (double)max_range);
  y->row_scale = rs ? rill_tensor_ptr(rs) : NULL;
  y->no_scale = !s;
  y->scale = s ? *(const float *)rill_tensor_ptr(s) : 1.0f;
  y->range = max_range;
  return NULL;
}
