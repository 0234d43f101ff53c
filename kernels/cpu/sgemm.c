/* rill_sgemm: packed GEMM with AVX2 and AVX-512 microkernels (sgemm.h). */
#include "kernels/cpu/sgemm.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "framework/base/alloc.h"
#include "framework/base/isa.h"
#include "kernels/cpu/gemm.h"

rill_sgemm_policy rill_sgemm_use = RILL_SGEMM_AUTO;

/* The largest microkernel tile (AVX-512: 8 x 32). */
#define MR_MAX 8
#define NR_MAX 32

/* A microkernel: c[0..MR) x [0..NR) = alpha (pa' pb) + beta c, where pa is kc slivers
 * of MR values of a and pb kc rows of NR values of b, bs floats apart (NR when packed,
 * ldb when read in place). beta == 0 writes c unread. */
typedef void (*ukr_fn)(int64_t kc, const float *pa, const float *pb, int64_t bs, float *c, int64_t ldc,
                       float alpha, float beta);

typedef struct sgemm_arch {
  int64_t mr, nr, mc, kc, nc;
  ukr_fn ukr;
} sgemm_arch;

/* ---- packing (baseline code: copies only) ---- */

/* Rows [i0, i0 + mc) and columns [p0, p0 + kc) of op(a) into slivers of mr rows: pa[(s kc
 * + p) mr + r] = op(a)(i0 + s mr + r, p0 + p), zeros past mc. */
static void pack_a(float *pa, bool ta, const float *a, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                   int64_t kc, int64_t mr) {
  for (int64_t s = 0; s < mc; s += mr) {
    int64_t rows = mc - s < mr ? mc - s : mr;
    float *d = pa + s * kc;
    if (!ta) {
      for (int64_t r = 0; r < rows; r++) {
        const float *src = a + (i0 + s + r) * lda + p0;
        for (int64_t p = 0; p < kc; p++) d[p * mr + r] = src[p];
      }
    } else {
      for (int64_t p = 0; p < kc; p++) {
        const float *src = a + (p0 + p) * lda + i0 + s;
        for (int64_t r = 0; r < rows; r++) d[p * mr + r] = src[r];
      }
    }
    if (rows < mr)
      for (int64_t p = 0; p < kc; p++)
        for (int64_t r = rows; r < mr; r++) d[p * mr + r] = 0.0f;
  }
}

/* Rows [p0, p0 + kc) and columns [j0, j0 + nc) of op(b) into slivers of nr columns:
 * pb[(s kc + p) nr + j] = op(b)(p0 + p, j0 + s nr + j), zeros past nc. */
static void pack_b(float *pb, bool tb, const float *b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0,
                   int64_t nc, int64_t nr) {
  for (int64_t s = 0; s < nc; s += nr) {
    int64_t cols = nc - s < nr ? nc - s : nr;
    float *d = pb + s * kc;
    if (!tb && cols == nr && nr == 32) { /* fixed-size copies, which the compiler inlines */
      for (int64_t p = 0; p < kc; p++) memcpy(d + p * 32, b + (p0 + p) * ldb + j0 + s, 32 * sizeof *d);
    } else if (!tb && cols == nr && nr == 16) {
      for (int64_t p = 0; p < kc; p++) memcpy(d + p * 16, b + (p0 + p) * ldb + j0 + s, 16 * sizeof *d);
    } else if (!tb) {
      for (int64_t p = 0; p < kc; p++) {
        const float *src = b + (p0 + p) * ldb + j0 + s;
        memcpy(d + p * nr, src, (size_t)cols * sizeof *d);
        for (int64_t j = cols; j < nr; j++) d[p * nr + j] = 0.0f;
      }
    } else {
      for (int64_t j = 0; j < cols; j++) {
        const float *src = b + (j0 + s + j) * ldb + p0;
        for (int64_t p = 0; p < kc; p++) d[p * nr + j] = src[p];
      }
      if (cols < nr)
        for (int64_t p = 0; p < kc; p++)
          for (int64_t j = cols; j < nr; j++) d[p * nr + j] = 0.0f;
    }
  }
}

/* ---- microkernels ---- */
#if RILL_X86_SIMD
RILL_AVX2_BEGIN
/* pack_a for slivers of 8 rows of a row-major a: 8 x 8 blocks transposed in registers
 * (8 loads, 24 shuffles, 8 stores) instead of 64 scalar moves; the same layout. */
static void pack_a8_avx2(float *pa, const float *a, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                         int64_t kc) {
  int64_t s = 0;
  for (; s + 8 <= mc; s += 8) {
    float *d = pa + s * kc;
    const float *r0 = a + (i0 + s) * lda + p0;
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
      __m256 x0 = _mm256_loadu_ps(r0 + p), x1 = _mm256_loadu_ps(r0 + lda + p);
      __m256 x2 = _mm256_loadu_ps(r0 + 2 * lda + p), x3 = _mm256_loadu_ps(r0 + 3 * lda + p);
      __m256 x4 = _mm256_loadu_ps(r0 + 4 * lda + p), x5 = _mm256_loadu_ps(r0 + 5 * lda + p);
      __m256 x6 = _mm256_loadu_ps(r0 + 6 * lda + p), x7 = _mm256_loadu_ps(r0 + 7 * lda + p);
      __m256 t0 = _mm256_unpacklo_ps(x0, x1), t1 = _mm256_unpackhi_ps(x0, x1);
      __m256 t2 = _mm256_unpacklo_ps(x2, x3), t3 = _mm256_unpackhi_ps(x2, x3);
      __m256 t4 = _mm256_unpacklo_ps(x4, x5), t5 = _mm256_unpackhi_ps(x4, x5);
      __m256 t6 = _mm256_unpacklo_ps(x6, x7), t7 = _mm256_unpackhi_ps(x6, x7);
      __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
      __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
      __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
      __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
      __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
      __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
      __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
      __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
      float *o = d + p * 8;
      _mm256_storeu_ps(o + 0, _mm256_permute2f128_ps(u0, u4, 0x20));
      _mm256_storeu_ps(o + 8, _mm256_permute2f128_ps(u1, u5, 0x20));
      _mm256_storeu_ps(o + 16, _mm256_permute2f128_ps(u2, u6, 0x20));
      _mm256_storeu_ps(o + 24, _mm256_permute2f128_ps(u3, u7, 0x20));
      _mm256_storeu_ps(o + 32, _mm256_permute2f128_ps(u0, u4, 0x31));
      _mm256_storeu_ps(o + 40, _mm256_permute2f128_ps(u1, u5, 0x31));
      _mm256_storeu_ps(o + 48, _mm256_permute2f128_ps(u2, u6, 0x31));
      _mm256_storeu_ps(o + 56, _mm256_permute2f128_ps(u3, u7, 0x31));
    }
    for (; p < kc; p++)
      for (int64_t r = 0; r < 8; r++) d[p * 8 + r] = r0[r * lda + p];
  }
  if (s < mc) pack_a(pa + s * kc, false, a, lda, i0 + s, mc - s, p0, kc, 8);
}

/* 6 x 16: 12 accumulators, two loads of b and 6 broadcasts of a per k step. */
static void ukr_avx2_6x16(int64_t kc, const float *pa, const float *pb, int64_t bs, float *c, int64_t ldc,
                          float alpha, float beta) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t p = 0; p < kc; p++) {
    __m256 b0 = _mm256_loadu_ps(pb), b1 = _mm256_loadu_ps(pb + 8), a;
    a = _mm256_broadcast_ss(pa + 0), c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
    a = _mm256_broadcast_ss(pa + 1), c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
    a = _mm256_broadcast_ss(pa + 2), c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
    a = _mm256_broadcast_ss(pa + 3), c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
    a = _mm256_broadcast_ss(pa + 4), c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);
    a = _mm256_broadcast_ss(pa + 5), c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);
    pa += 6, pb += bs;
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#define STORE_ROW(r, x0, x1)                                                                     \
  do {                                                                                           \
    float *cr = c + (r) * ldc;                                                                   \
    __m256 y0 = _mm256_mul_ps(x0, va), y1 = _mm256_mul_ps(x1, va);                               \
    if (beta != 0.0f) {                                                                          \
      y0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr), y0);                                         \
      y1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8), y1);                                     \
    }                                                                                            \
    _mm256_storeu_ps(cr, y0), _mm256_storeu_ps(cr + 8, y1);                                      \
  } while (0)
  STORE_ROW(0, c00, c01);
  STORE_ROW(1, c10, c11);
  STORE_ROW(2, c20, c21);
  STORE_ROW(3, c30, c31);
  STORE_ROW(4, c40, c41);
  STORE_ROW(5, c50, c51);
#undef STORE_ROW
}

/* The edge of a tile: the same k loop into a whole tile of t, then the rows and
 * columns that exist stored as the full tile stores them (alpha, then beta's FMA). */
static void edge_avx2(int64_t kc, const float *pa, const float *pb, int64_t bs, float *c, int64_t ldc,
                      float alpha, float beta, int64_t rows, int64_t cols) {
  float t[MR_MAX * NR_MAX];
  ukr_avx2_6x16(kc, pa, pb, bs, t, 16, 1.0f, 0.0f);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < cols; j++) {
      float y = t[r * 16 + j] * alpha;
      c[r * ldc + j] = beta != 0.0f ? fmaf(beta, c[r * ldc + j], y) : y;
    }
}
RILL_AVX2_END

RILL_AVX512_BEGIN
/* 8 x 32: 16 accumulators of 16 lanes (of 32 registers), two loads of b and 8
 * broadcasts of a per k step; 8 rows cover batches of 8, 16 and 64 without an edge.
 * Stores the first `rows` rows and `cols` columns, under masks, with the same
 * arithmetic everywhere: the edges of c are this kernel too. */
static void tile_avx512_8x32(int64_t kc, const float *pa, const float *pb, int64_t bs, float *c, int64_t ldc,
                             float alpha, float beta, int64_t rows, int64_t cols) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  __m512 c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  for (int64_t p = 0; p < kc; p++) {
    /* b read in place is a row per k, each on its own page when ldb is large, where
     * the hardware's stream prefetch does not follow: ask for the row 8 steps ahead */
    _mm_prefetch((const char *)(pb + 8 * bs), _MM_HINT_T0);
    _mm_prefetch((const char *)(pb + 8 * bs + 16), _MM_HINT_T0);
    __m512 b0 = _mm512_loadu_ps(pb), b1 = _mm512_loadu_ps(pb + 16), a;
    a = _mm512_set1_ps(pa[0]), c00 = _mm512_fmadd_ps(a, b0, c00), c01 = _mm512_fmadd_ps(a, b1, c01);
    a = _mm512_set1_ps(pa[1]), c10 = _mm512_fmadd_ps(a, b0, c10), c11 = _mm512_fmadd_ps(a, b1, c11);
    a = _mm512_set1_ps(pa[2]), c20 = _mm512_fmadd_ps(a, b0, c20), c21 = _mm512_fmadd_ps(a, b1, c21);
    a = _mm512_set1_ps(pa[3]), c30 = _mm512_fmadd_ps(a, b0, c30), c31 = _mm512_fmadd_ps(a, b1, c31);
    a = _mm512_set1_ps(pa[4]), c40 = _mm512_fmadd_ps(a, b0, c40), c41 = _mm512_fmadd_ps(a, b1, c41);
    a = _mm512_set1_ps(pa[5]), c50 = _mm512_fmadd_ps(a, b0, c50), c51 = _mm512_fmadd_ps(a, b1, c51);
    a = _mm512_set1_ps(pa[6]), c60 = _mm512_fmadd_ps(a, b0, c60), c61 = _mm512_fmadd_ps(a, b1, c61);
    a = _mm512_set1_ps(pa[7]), c70 = _mm512_fmadd_ps(a, b0, c70), c71 = _mm512_fmadd_ps(a, b1, c71);
    pa += 8, pb += bs;
  }
  const __mmask16 m0 = (__mmask16)(cols >= 16 ? 0xffffu : (1u << cols) - 1u);
  const __mmask16 m1 = (__mmask16)(cols >= 32 ? 0xffffu : cols <= 16 ? 0u : (1u << (cols - 16)) - 1u);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#define STORE_ROW(r, x0, x1)                                                                     \
  if (rows > (r)) {                                                                              \
    float *cr = c + (r) * ldc;                                                                   \
    __m512 y0 = _mm512_mul_ps(x0, va), y1 = _mm512_mul_ps(x1, va);                               \
    if (beta != 0.0f) {                                                                          \
      y0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, cr), y0);                               \
      y1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, cr + 16), y1);                          \
    }                                                                                            \
    _mm512_mask_storeu_ps(cr, m0, y0), _mm512_mask_storeu_ps(cr + 16, m1, y1);                   \
  }
  STORE_ROW(0, c00, c01)
  STORE_ROW(1, c10, c11)
  STORE_ROW(2, c20, c21)
  STORE_ROW(3, c30, c31)
  STORE_ROW(4, c40, c41)
  STORE_ROW(5, c50, c51)
  STORE_ROW(6, c60, c61)
  STORE_ROW(7, c70, c71)
#undef STORE_ROW
}

static void ukr_avx512_8x32(int64_t kc, const float *pa, const float *pb, int64_t bs, float *c, int64_t ldc,
                            float alpha, float beta) {
  tile_avx512_8x32(kc, pa, pb, bs, c, ldc, alpha, beta, 8, 32);
}

static void edge_avx512(int64_t kc, const float *pa, const float *pb, int64_t bs, float *c, int64_t ldc,
                        float alpha, float beta, int64_t rows, int64_t cols) {
  tile_avx512_8x32(kc, pa, pb, bs, c, ldc, alpha, beta, rows, cols);
}
RILL_AVX512_END
#endif

typedef void (*edge_fn)(int64_t kc, const float *pa, const float *pb, int64_t bs, float *c, int64_t ldc,
                        float alpha, float beta, int64_t rows, int64_t cols);

typedef struct sgemm_kit {
  sgemm_arch arch;
  edge_fn edge;
} sgemm_kit;

/* Whether OpenBLAS runs kernels of AVX2 or wider here (it picks them from the CPU
 * model, or OPENBLAS_CORETYPE): on an AVX2 CPU its Haswell and Zen kernels are
 * 1.0-1.7x faster than rill's 6 x 16 (bench_sgemm), so it keeps the products there;
 * on a core it does not know it falls back to SSE3 (Prescott) and rill's kernels run. */
static bool blas_is_wide(void) {
  static _Atomic int known = -1; /* OpenBLAS chose its core when it was loaded */
  int v = atomic_load_explicit(&known, memory_order_relaxed);
  if (v >= 0) return v;
  static const char *const wide[] = {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"};
  const char *core = openblas_get_corename();
  v = 0;
  for (size_t i = 0; core && i < sizeof wide / sizeof *wide; i++)
    if (strcasecmp(core, wide[i]) == 0) v = 1;
  atomic_store_explicit(&known, v, memory_order_relaxed);
  return v;
}

/* The kit for this CPU, NULL for cblas_sgemm: without AVX2, or on an AVX2 CPU (no
 * AVX-512) whose OpenBLAS runs wide kernels (rill_sgemm_use = RILL_SGEMM_OWN overrides
 * that). On AVX-512 rill's 8 x 32 runs at 0.9-1.2x OpenBLAS's best (SkylakeX) and far
 * ahead of the 256-bit kernels OpenBLAS picks on AMD's AVX-512 cores. Block sizes:
 * kc x nr floats of b stay in L1 across a row sliver's microkernel calls, mc x kc of a
 * in L2, kc x nc of b in L3. */
static const sgemm_kit *kit_for_cpu(void) {
#if RILL_X86_SIMD
  static const sgemm_kit avx512 = {{8, 32, 144, 192, 4096, ukr_avx512_8x32}, edge_avx512};
  static const sgemm_kit avx2 = {{6, 16, 144, 256, 4096, ukr_avx2_6x16}, edge_avx2};
  if (rill_sgemm_use == RILL_SGEMM_BLAS) return NULL;
  if (rill_cpu_avx512()) return &avx512;
  if (rill_cpu_avx2() && (rill_sgemm_use == RILL_SGEMM_OWN || !blas_is_wide())) return &avx2;
#endif
  return NULL;
}

/* ---- per-thread packing space, kept across calls ----
 * Scratch of the GEMM's own, as OpenBLAS keeps its buffers: it comes from the C
 * library, not from rill's allocator (rill_set_allocator), lives as long as its thread
 * (freed by the key's destructor) and grows to the largest panel the thread has packed.
 * When it cannot grow, the product goes to cblas_sgemm: no error to report. */

static pthread_key_t space_key;
static pthread_once_t space_once = PTHREAD_ONCE_INIT;
static _Thread_local float *space;
static _Thread_local size_t space_cap;

static void space_free(void *p) { free(p); }
static void space_key_make(void) { (void)pthread_key_create(&space_key, space_free); }

/* At least n floats, 64-byte aligned; NULL when out of memory. */
static float *pack_space(size_t n) {
  if (n <= space_cap) return space;
  (void)pthread_once(&space_once, space_key_make);
  void *p = NULL;
  if (posix_memalign(&p, 64, n * sizeof(float)) != 0) return NULL;
  free(space);
  space = p;
  space_cap = n;
  (void)pthread_setspecific(space_key, p);
  return p;
}

/* Products of at most this many rows read b in place rather than packing it (batches
 * up to 64: a 32-row fc batch spent a sixth of its time packing b). */
#define DIRECT_B_ROWS 64

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

/* Packs rows [ic, ic + mc) x columns [pc, pc + kc) of op(a) into pa. */
static inline void pack_a_block(const sgemm_arch *ar, float *pa, bool ta, const float *a, int64_t lda,
                                int64_t ic, int64_t mc, int64_t pc, int64_t kc) {
#if RILL_X86_SIMD
  if (!ta && ar->mr == 8) pack_a8_avx2(pa, a, lda, ic, mc, pc, kc);
  else
#endif
    pack_a(pa, ta, a, lda, ic, mc, pc, kc, ar->mr);
}

/* The block of c from ct (mc rows, `cols` <= nr columns) = alpha pa sb + bt c: one
 * microkernel call per mr rows of the packed block pa, the edge kernel for a short one. */
static inline void sliver_times_block(const sgemm_kit *kit, int64_t kc, const float *pa, int64_t mc,
                                      const float *sb, int64_t bs, float *ct, int64_t ldc, float alpha,
                                      float bt, int64_t cols) {
  const sgemm_arch *ar = &kit->arch;
  for (int64_t ir = 0; ir < mc; ir += ar->mr) {
    int64_t rows = mc - ir < ar->mr ? mc - ir : ar->mr;
    float *cr = ct + ir * ldc;
    const float *sa = pa + ir * kc;
    if (rows == ar->mr && cols == ar->nr) ar->ukr(kc, sa, sb, bs, cr, ldc, alpha, bt);
    else kit->edge(kc, sa, sb, bs, cr, ldc, alpha, bt, rows, cols);
  }
}

/* One thread's GEMM over the whole of its c. False when out of memory (nothing written). */
static bool gemm_serial(const sgemm_kit *kit, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                        int64_t ldc) {
  const sgemm_arch *ar = &kit->arch;
  int64_t kc_max = k < ar->kc ? k : ar->kc;
  int64_t mc_max = round_up(m < ar->mc ? m : ar->mc, ar->mr);
  int64_t nc_max = round_up(n < ar->nc ? n : ar->nc, ar->nr);
  float *pa = pack_space((size_t)(kc_max * (mc_max + nc_max)));
  if (!pa) return false;
  float *pb = pa + kc_max * mc_max;
  for (int64_t jc = 0; jc < n; jc += ar->nc) {
    int64_t nc = n - jc < ar->nc ? n - jc : ar->nc;
    for (int64_t pc = 0; pc < k; pc += ar->kc) {
      int64_t kc = k - pc < ar->kc ? k - pc : ar->kc;
      float bt = pc == 0 ? beta : 1.0f;
      /* b in place when few rows of a reuse it (packing would cost about what it
       * saves): its whole slivers read with stride ldb, a short last one packed */
      int64_t full = nc / ar->nr * ar->nr;
      bool direct = !tb && m <= DIRECT_B_ROWS;
      if (direct) {
        if (full < nc) pack_b(pb, tb, b, ldb, pc, kc, jc + full, nc - full, ar->nr);
      } else {
        pack_b(pb, tb, b, ldb, pc, kc, jc, nc, ar->nr);
      }
      for (int64_t ic = 0; ic < m; ic += ar->mc) {
        int64_t mc = m - ic < ar->mc ? m - ic : ar->mc;
        pack_a_block(ar, pa, ta, a, lda, ic, mc, pc, kc);
        for (int64_t jr = 0; jr < nc; jr += ar->nr) {
          int64_t cols = nc - jr < ar->nr ? nc - jr : ar->nr;
          const float *sb = pb + jr * kc;
          int64_t bs = ar->nr;
          if (direct) {
            if (jr < full) sb = b + pc * ldb + jc + jr, bs = ldb;
            else sb = pb;
          }
          sliver_times_block(kit, kc, pa, mc, sb, bs, c + ic * ldc + jc + jr, ldc, alpha, bt, cols);
        }
      }
    }
  }
  return true;
}

/* ---- b packed once (rill_sgemm_pack_b) ----
 * For each block of NC columns starting at jb and each block of KC rows starting at pc,
 * the panel pack_b makes for it, at data + jb k + pc round_up(nc_b, nr) (nc_b: the
 * block's columns): blocks in order, so a sliver of nr columns starting at column j lies
 * at panel + (j - jb) kc. The microkernel reads the same values in the same order as
 * from b in place, so the products are the unpacked ones bit for bit. */
struct rill_sgemm_packed {
  const sgemm_kit *kit;
  int64_t k, n;
  const float *b; /* the source, for cblas_sgemm when the packing space for a fails */
  int64_t ldb;
  float *data;
  size_t bytes;
};

static atomic_int_least64_t packs_made, packed_calls, packed_bytes_live;

/* The sliver of nr columns starting at column j (a multiple of nr) of rows [pc, pc + kc). */
static const float *packed_sliver(const rill_sgemm_packed *pk, int64_t pc, int64_t kc, int64_t j) {
  const sgemm_arch *ar = &pk->kit->arch;
  int64_t jb = j / ar->nc * ar->nc;
  int64_t ncb = pk->n - jb < ar->nc ? pk->n - jb : ar->nc;
  return pk->data + jb * pk->k + pc * round_up(ncb, ar->nr) + (j - jb) * kc;
}

/* gemm_serial over columns [j0, j0 + n) of a packed b (j0 a multiple of nr): the same
 * loops and microkernel calls, each sliver taken from the packed form. */
static bool gemm_serial_packed(const rill_sgemm_packed *pk, bool ta, int64_t m, int64_t n, int64_t j0,
                               float alpha, const float *a, int64_t lda, float beta, float *c, int64_t ldc) {
  const sgemm_kit *kit = pk->kit;
  const sgemm_arch *ar = &kit->arch;
  int64_t k = pk->k;
  int64_t kc_max = k < ar->kc ? k : ar->kc;
  int64_t mc_max = round_up(m < ar->mc ? m : ar->mc, ar->mr);
  float *pa = pack_space((size_t)(kc_max * mc_max));
  if (!pa) return false;
  for (int64_t jc = 0; jc < n; jc += ar->nc) {
    int64_t nc = n - jc < ar->nc ? n - jc : ar->nc;
    for (int64_t pc = 0; pc < k; pc += ar->kc) {
      int64_t kc = k - pc < ar->kc ? k - pc : ar->kc;
      float bt = pc == 0 ? beta : 1.0f;
      for (int64_t ic = 0; ic < m; ic += ar->mc) {
        int64_t mc = m - ic < ar->mc ? m - ic : ar->mc;
        pack_a_block(ar, pa, ta, a, lda, ic, mc, pc, kc);
        for (int64_t jr = 0; jr < nc; jr += ar->nr) {
          int64_t cols = nc - jr < ar->nr ? nc - jr : ar->nr;
          const float *sb = packed_sliver(pk, pc, kc, j0 + jc + jr);
          sliver_times_block(kit, kc, pa, mc, sb, ar->nr, c + ic * ldc + jc + jr, ldc, alpha, bt,
                             cols);
        }
      }
    }
  }
  return true;
}

/* c = beta c (k == 0: alpha op(a) op(b) is empty). */
static void scale_c(int64_t m, int64_t n, float beta, float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta != 0.0f ? beta * c[i * ldc + j] : 0.0f;
}

static void blas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n,
              (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
}

/* OpenBLAS runs on one thread (the compute pool owns the cores: scheduler.md), so a
 * product large enough for OpenBLAS to have threaded it itself is cut here into
 * BLAS_BLOCKS blocks of rows (or of columns, when c is wider than tall), each an OpenBLAS
 * call, over the device's threads. The blocks depend on the shape alone, so c does not
 * depend on the thread count. False: run it whole. */
enum { BLAS_BLOCKS = 4 };

typedef struct blas_blocks {
  bool ta, tb, by_cols;
  int64_t m, n, k, chunk, lda, ldb, ldc;
  float alpha, beta;
  const float *a, *b;
  float *c;
} blas_blocks;

static bool blas_block(void *arg, int64_t i, int slot) {
  const blas_blocks *s = arg;
  (void)slot;
  int64_t lo = i * s->chunk, dim = s->by_cols ? s->n : s->m;
  int64_t hi = lo + s->chunk > dim ? dim : lo + s->chunk;
  if (s->by_cols)
    blas(s->ta, s->tb, s->m, hi - lo, s->k, s->alpha, s->a, s->lda, s->tb ? s->b + lo * s->ldb : s->b + lo,
         s->ldb, s->beta, s->c + lo, s->ldc);
  else
    blas(s->ta, s->tb, hi - lo, s->n, s->k, s->alpha, s->ta ? s->a + lo : s->a + lo * s->lda, s->lda, s->b,
         s->ldb, s->beta, s->c + lo * s->ldc, s->ldc);
  return true;
}

static bool blas_on_threads(const rill_device_services *dev, int64_t threads, bool ta, bool tb, int64_t m,
                            int64_t n, int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                            int64_t ldb, float beta, float *c, int64_t ldc) {
  if (k <= 0 || (double)m * (double)n * (double)k < RILL_BLAS_THREADED_GEMM) return false;
  blas_blocks s = {.ta = ta, .tb = tb, .by_cols = n > m, .m = m, .n = n, .k = k, .lda = lda, .ldb = ldb,
                   .ldc = ldc, .alpha = alpha, .beta = beta, .a = a, .b = b, .c = c};
  int64_t dim = s.by_cols ? n : m;
  if (dim < 4 * BLAS_BLOCKS) return false;
  s.chunk = (dim + BLAS_BLOCKS - 1) / BLAS_BLOCKS;
  return rill_dev_parallel_for(dev, threads, (dim + s.chunk - 1) / s.chunk, blas_block, &s);
}

/* ---- one row: y = x w (sgemv_row) ----
 * y[j] = sum over p in order of x[p] w[p][j], one FMA chain per column. The columns of a
 * part stay in L1 (y) while w's rows stream past four at a time, each row read
 * contiguously (the hardware prefetchers follow it), as OpenBLAS's GEMV does: a block
 * of columns kept in registers down all of k instead read w with a stride of a page
 * or more for wide layers, 2x slower on word2vec's 256 x 2074. The last columns run
 * under a mask (AVX-512) or one at a time by fmaf, in the same order. */
#if RILL_X86_SIMD
RILL_AVX512_BEGIN
static void gemv_cols_avx512(const float *x, const float *w, float *y, int64_t k, int64_t n, int64_t j0,
                             int64_t j1) {
  int64_t len = j1 - j0, full = len / 16 * 16;
  __mmask16 tail = (__mmask16)((1u << (len - full)) - 1u);
  float *yb = y + j0;
  for (int64_t j = 0; j < len; j++) yb[j] = 0.0f;
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
    const float *w0 = w + p * n + j0, *w1 = w0 + n, *w2 = w1 + n, *w3 = w2 + n;
    __m512 a0 = _mm512_set1_ps(x[p]), a1 = _mm512_set1_ps(x[p + 1]);
    __m512 a2 = _mm512_set1_ps(x[p + 2]), a3 = _mm512_set1_ps(x[p + 3]);
    int64_t j = 0;
    for (; j < full; j += 16) {
      __m512 v = _mm512_loadu_ps(yb + j);
      v = _mm512_fmadd_ps(a0, _mm512_loadu_ps(w0 + j), v);
      v = _mm512_fmadd_ps(a1, _mm512_loadu_ps(w1 + j), v);
      v = _mm512_fmadd_ps(a2, _mm512_loadu_ps(w2 + j), v);
      v = _mm512_fmadd_ps(a3, _mm512_loadu_ps(w3 + j), v);
      _mm512_storeu_ps(yb + j, v);
    }
    if (tail) {
      __m512 v = _mm512_maskz_loadu_ps(tail, yb + j);
      v = _mm512_fmadd_ps(a0, _mm512_maskz_loadu_ps(tail, w0 + j), v);
      v = _mm512_fmadd_ps(a1, _mm512_maskz_loadu_ps(tail, w1 + j), v);
      v = _mm512_fmadd_ps(a2, _mm512_maskz_loadu_ps(tail, w2 + j), v);
      v = _mm512_fmadd_ps(a3, _mm512_maskz_loadu_ps(tail, w3 + j), v);
      _mm512_mask_storeu_ps(yb + j, tail, v);
    }
  }
  for (; p < k; p++) {
    const float *w0 = w + p * n + j0;
    __m512 a0 = _mm512_set1_ps(x[p]);
    int64_t j = 0;
    for (; j < full; j += 16)
      _mm512_storeu_ps(yb + j, _mm512_fmadd_ps(a0, _mm512_loadu_ps(w0 + j), _mm512_loadu_ps(yb + j)));
    if (tail)
      _mm512_mask_storeu_ps(yb + j, tail,
                            _mm512_fmadd_ps(a0, _mm512_maskz_loadu_ps(tail, w0 + j),
                                            _mm512_maskz_loadu_ps(tail, yb + j)));
  }
}
RILL_AVX512_END

RILL_AVX2_BEGIN
static void gemv_cols_avx2(const float *x, const float *w, float *y, int64_t k, int64_t n, int64_t j0,
                           int64_t j1) {
  int64_t len = j1 - j0, full = len / 8 * 8;
  float *yb = y + j0;
  for (int64_t j = 0; j < full; j++) yb[j] = 0.0f;
  int64_t p = 0;
  for (; p + 4 <= k; p += 4) {
    const float *w0 = w + p * n + j0, *w1 = w0 + n, *w2 = w1 + n, *w3 = w2 + n;
    __m256 a0 = _mm256_broadcast_ss(x + p), a1 = _mm256_broadcast_ss(x + p + 1);
    __m256 a2 = _mm256_broadcast_ss(x + p + 2), a3 = _mm256_broadcast_ss(x + p + 3);
    for (int64_t j = 0; j < full; j += 8) {
      __m256 v = _mm256_loadu_ps(yb + j);
      v = _mm256_fmadd_ps(a0, _mm256_loadu_ps(w0 + j), v);
      v = _mm256_fmadd_ps(a1, _mm256_loadu_ps(w1 + j), v);
      v = _mm256_fmadd_ps(a2, _mm256_loadu_ps(w2 + j), v);
      v = _mm256_fmadd_ps(a3, _mm256_loadu_ps(w3 + j), v);
      _mm256_storeu_ps(yb + j, v);
    }
  }
  for (; p < k; p++) {
    const float *w0 = w + p * n + j0;
    __m256 a0 = _mm256_broadcast_ss(x + p);
    for (int64_t j = 0; j < full; j += 8)
      _mm256_storeu_ps(yb + j, _mm256_fmadd_ps(a0, _mm256_loadu_ps(w0 + j), _mm256_loadu_ps(yb + j)));
  }
  for (int64_t j = full; j < len; j++) {
    float s0 = 0.0f;
    for (int64_t q = 0; q < k; q++) s0 = fmaf(x[q], w[q * n + j0 + j], s0);
    yb[j] = s0;
  }
}
RILL_AVX2_END
#endif

typedef struct gemv_split {
  const float *x, *w;
  float *y;
  int64_t k, n, chunk;
  bool wide;
} gemv_split;

static bool gemv_part(void *arg, int64_t i, int slot) {
  const gemv_split *s = arg;
  (void)slot;
  int64_t j0 = i * s->chunk, j1 = j0 + s->chunk < s->n ? j0 + s->chunk : s->n;
#if RILL_X86_SIMD
  if (s->wide) gemv_cols_avx512(s->x, s->w, s->y, s->k, s->n, j0, j1);
  else gemv_cols_avx2(s->x, s->w, s->y, s->k, s->n, j0, j1);
#endif
  return true;
}

/* From this many multiply-adds a row is split over the pool by blocks of columns. */
#define GEMV_SPLIT_MACS (1 << 15)

bool rill_sgemm_has_kernels(void) { return kit_for_cpu() != NULL; }

bool rill_sgemv_row(const rill_device_services *dev, int64_t threads, const float *x, const float *w, float *y, int64_t k, int64_t n) {
  if (rill_sgemm_use == RILL_SGEMM_BLAS || !rill_cpu_avx2() || k <= 0 || n <= 0) return false;
  gemv_split s = {.x = x, .w = w, .y = y, .k = k, .n = n, .chunk = n, .wide = rill_cpu_avx512()};
  if (threads > 1 && (double)k * (double)n >= GEMV_SPLIT_MACS && n >= 128) {
    int64_t parts = 2 * (threads < RILL_DEVICE_MAX_THREADS ? threads : RILL_DEVICE_MAX_THREADS);
    s.chunk = round_up((n + parts - 1) / parts, 64);
  }
  return rill_dev_parallel_for(dev, threads, (n + s.chunk - 1) / s.chunk, gemv_part, &s);
}

/* ---- the split over the kernel pool ---- */

/* From this many multiply-adds a GEMM is split over the pool's threads; each part then
 * holds at least a quarter of that. */
#define SPLIT_MACS (1 << 18)

typedef struct sgemm_split {
  const sgemm_kit *kit;
  const rill_sgemm_packed *pk; /* b packed once, or NULL */
  bool ta, tb, by_cols;
  int64_t m, n, k, chunk;
  float alpha, beta;
  const float *a, *b;
  float *c;
  int64_t lda, ldb, ldc;
} sgemm_split;

/* Part i: a block of columns (or rows) of c, as a GEMM of its own; OpenBLAS takes it
 * when the packing space cannot be had. */
static bool split_part(void *arg, int64_t i, int slot) {
  const sgemm_split *s = arg;
  (void)slot;
  int64_t lo = i * s->chunk;
  int64_t m = s->m, n = s->n;
  const float *a = s->a, *b = s->b;
  float *c = s->c;
  int64_t j0 = 0;
  if (s->by_cols) {
    n = s->n - lo < s->chunk ? s->n - lo : s->chunk;
    b = s->tb ? s->b + lo * s->ldb : s->b + lo;
    c = s->c + lo;
    j0 = lo;
  } else {
    m = s->m - lo < s->chunk ? s->m - lo : s->chunk;
    a = s->ta ? s->a + lo : s->a + lo * s->lda;
    c = s->c + lo * s->ldc;
  }
  if (s->pk) {
    if (!gemm_serial_packed(s->pk, s->ta, m, n, j0, s->alpha, a, s->lda, s->beta, c, s->ldc))
      blas(s->ta, false, m, n, s->k, s->alpha, a, s->lda, b, s->ldb, s->beta, c, s->ldc);
    return true;
  }
  if (!gemm_serial(s->kit, s->ta, s->tb, m, n, s->k, s->alpha, a, s->lda, b, s->ldb, s->beta, c, s->ldc))
    blas(s->ta, s->tb, m, n, s->k, s->alpha, a, s->lda, b, s->ldb, s->beta, c, s->ldc);
  return true;
}

/* Runs s over the pool when the product is large enough to split and splits into more
 * than one part (true), else leaves it to the caller (false). */
static bool split_run(const rill_device_services *dev, int64_t threads, sgemm_split *s) {
  double macs = (double)s->m * (double)s->n * (double)s->k;
  if (threads <= 1 || macs < SPLIT_MACS) return false;
  int64_t dim = s->by_cols ? s->n : s->m, unit = s->by_cols ? s->kit->arch.nr : s->kit->arch.mr;
  int64_t t = threads < RILL_DEVICE_MAX_THREADS ? threads : RILL_DEVICE_MAX_THREADS;
  /* whole tiles, dealt out evenly: one part per thread when there are few tiles
   * (200 columns are 7 tiles: 4 + 3 on 2 threads, not 2 + 2 + 2 + 1), else two */
  int64_t units = (dim + unit - 1) / unit, parts = units < 4 * t ? t : 2 * t;
  int64_t most = (int64_t)(macs / (SPLIT_MACS / 4));
  if (parts > most) parts = most;
  if (parts > units) parts = units;
  if (parts < 1) parts = 1;
  s->chunk = (units + parts - 1) / parts * unit;
  int64_t count = (dim + s->chunk - 1) / s->chunk;
  if (count <= 1) return false;
  (void)rill_dev_parallel_for(dev, threads, count, split_part, s); /* its parts cannot fail */
  return true;
}

void rill_sgemm(const rill_device_services *dev, int64_t threads, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int64_t m, int64_t n,
                int64_t k, float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                float *c, int64_t ldc) {
  bool tra = ta == CblasTrans, trb = tb == CblasTrans;
  if (m <= 0 || n <= 0) return;
  const sgemm_kit *kit = kit_for_cpu();
  if (!kit) {
    if (blas_on_threads(dev, threads, tra, trb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) return;
    blas(tra, trb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (k <= 0 || alpha == 0.0f) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  sgemm_split s = {.kit = kit, .ta = tra, .tb = trb, .by_cols = n >= m, .m = m, .n = n, .k = k,
                   .alpha = alpha, .beta = beta, .a = a, .b = b, .c = c, .lda = lda, .ldb = ldb, .ldc = ldc};
  if (split_run(dev, threads, &s)) return;
  if (!gemm_serial(kit, tra, trb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
    blas(tra, trb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void rill_sgemm_cblas(const rill_device_services *dev, int64_t threads, enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE ta,
                      enum CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float *a, int lda,
                      const float *b, int ldb, float beta, float *c, int ldc) {
  if (order != CblasRowMajor) {
    /* column-major c = op(a) op(b) is row-major c' = op(b)' op(a)' */
    rill_sgemm(dev, threads, tb, ta, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
    return;
  }
  rill_sgemm(dev, threads, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* ---- b packed once ---- */

rill_sgemm_packed *rill_sgemm_pack_b(const float *b, int64_t ldb, int64_t k, int64_t n) {
  const sgemm_kit *kit = kit_for_cpu();
  if (!kit || !b || k <= 0 || n <= 0 || ldb < n) return NULL;
  const sgemm_arch *ar = &kit->arch;
  size_t bytes;
  if (!rill_mul_size((size_t)k, (size_t)round_up(n, ar->nr), &bytes) ||
      !rill_mul_size(bytes, sizeof(float), &bytes))
    return NULL;
  rill_sgemm_packed *pk = rill_malloc(sizeof *pk);
  float *data = rill_aligned_alloc(bytes, 64);
  if (!pk || !data) {
    rill_free(pk);
    rill_free(data);
    return NULL;
  }
  *pk = (rill_sgemm_packed){.kit = kit, .k = k, .n = n, .b = b, .ldb = ldb, .data = data, .bytes = bytes};
  for (int64_t jb = 0; jb < n; jb += ar->nc) {
    int64_t ncb = n - jb < ar->nc ? n - jb : ar->nc;
    for (int64_t pc = 0; pc < k; pc += ar->kc) {
      int64_t kc = k - pc < ar->kc ? k - pc : ar->kc;
      pack_b(data + jb * k + pc * round_up(ncb, ar->nr), false, b, ldb, pc, kc, jb, ncb, ar->nr);
    }
  }
  atomic_fetch_add_explicit(&packs_made, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&packed_bytes_live, (int64_t)bytes, memory_order_relaxed);
  return pk;
}

void rill_sgemm_packed_destroy(rill_sgemm_packed *pk) {
  if (!pk) return;
  atomic_fetch_sub_explicit(&packed_bytes_live, (int64_t)pk->bytes, memory_order_relaxed);
  rill_free(pk->data);
  rill_free(pk);
}

size_t rill_sgemm_packed_bytes(const rill_sgemm_packed *pk) { return pk ? pk->bytes : 0; }

bool rill_sgemm_packed_fits(const rill_sgemm_packed *pk, const float *b, int64_t ldb, int64_t k, int64_t n) {
  return pk && pk->kit == kit_for_cpu() && pk->b == b && pk->ldb == ldb && pk->k == k && pk->n == n;
}

bool rill_sgemm_prepacked(const rill_device_services *dev, int64_t threads, enum CBLAS_TRANSPOSE ta, int64_t m,
                          float alpha, const float *a, int64_t lda, const rill_sgemm_packed *b, float beta,
                          float *c, int64_t ldc) {
  if (!b || b->kit != kit_for_cpu() || alpha == 0.0f) return false;
  if (m <= 0) return true;
  atomic_fetch_add_explicit(&packed_calls, 1, memory_order_relaxed);
  bool tra = ta == CblasTrans;
  sgemm_split s = {.kit = b->kit, .pk = b, .ta = tra, .by_cols = b->n >= m, .m = m, .n = b->n, .k = b->k,
                   .alpha = alpha, .beta = beta, .a = a, .b = b->b, .c = c, .lda = lda, .ldb = b->ldb,
                   .ldc = ldc};
  if (split_run(dev, threads, &s)) return true;
  if (!gemm_serial_packed(b, tra, m, b->n, 0, alpha, a, lda, beta, c, ldc))
    blas(tra, false, m, b->n, b->k, alpha, a, lda, b->b, b->ldb, beta, c, ldc);
  return true;
}

rill_sgemm_packed_stats rill_sgemm_packed_counters(void) {
  return (rill_sgemm_packed_stats){
      .packs_made = atomic_load_explicit(&packs_made, memory_order_relaxed),
      .packed_calls = atomic_load_explicit(&packed_calls, memory_order_relaxed),
      .bytes_live = atomic_load_explicit(&packed_bytes_live, memory_order_relaxed)};
}

/* ---- constant weights: the packed form kept with the weight's buffer ---- */

/* The buffer's derived data when it is a packed weight: its destroy function is this
 * type's, which tells it from another kernel's data in the same slot. */
typedef struct packed_weight {
  rill_buffer_derived base;
  rill_sgemm_packed *pk;
} packed_weight;

static void packed_weight_destroy(rill_buffer_derived *d) {
  packed_weight *pw = (packed_weight *)d;
  rill_sgemm_packed_destroy(pw->pk);
  rill_free(pw);
}

static const rill_sgemm_packed *weight_packed(const rill_tensor *w, int64_t k, int64_t n) {
  rill_buffer *buf = w->buf;
  if (!rill_buffer_immutable(buf) || !kit_for_cpu()) return NULL;
  const float *b = rill_tensor_ptr(w);
  rill_buffer_derived *d = rill_buffer_derived_get(buf);
  if (!d && rill_buffer_derived_claim(buf)) {
    packed_weight *pw = rill_malloc(sizeof *pw);
    rill_sgemm_packed *pk = pw ? rill_sgemm_pack_b(b, n, k, n) : NULL;
    if (pk) {
      *pw = (packed_weight){.base = {.destroy = packed_weight_destroy}, .pk = pk};
      d = &pw->base;
    } else {
      rill_free(pw);
    }
    rill_buffer_derived_publish(buf, d); /* NULL: a later call tries again */
  }
  if (!d || d->destroy != packed_weight_destroy) return NULL;
  const rill_sgemm_packed *pk = ((const packed_weight *)d)->pk;
  return rill_sgemm_packed_fits(pk, b, n, k, n) ? pk : NULL;
}

bool rill_sgemm_weight(const rill_device_services *dev, int64_t threads, int64_t m, int64_t n, int64_t k,
                       float alpha, const float *a, int64_t lda, const rill_tensor *w, float beta, float *c,
                       int64_t ldc) {
  if (m <= 0 || n <= 0 || k <= 0 || rill_tensor_numel(w) != k * n) return false;
  const rill_sgemm_packed *pk = weight_packed(w, k, n);
  return pk && rill_sgemm_prepacked(dev, threads, CblasNoTrans, m, alpha, a, lda, pk, beta, c, ldc);
}
