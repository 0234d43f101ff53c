/* kernels/cpu/sgemm.h: rill's own GEMM against a double reference on shapes that cut
 * every tile edge, with every transpose, alpha and beta, at every vector level this CPU
 * has; bit for bit the same on 1 to 3 threads; beta = 0 never reads c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sgemm_test.h"

/* op(x)(i, p) of a row-major x with leading dimension ld */
static float at(const float *x, bool t, int64_t ld, int64_t i, int64_t p) { return t ? x[p * ld + i] : x[i * ld + p]; }

static void check_shape(int64_t m, int64_t n, int64_t k, bool ta, bool tb, float alpha, float beta, int level) {
  unsigned seed = (unsigned)(m * 131 + n * 17 + k * 7 + ta * 3 + tb);
  int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 5, ldc = n + 2;
  int64_t ar = ta ? k : m, br = tb ? n : k;
  float *a = malloc(sizeof(float) * (size_t)(ar * lda + 1)), *b = malloc(sizeof(float) * (size_t)(br * ldb + 1));
  float *c = malloc(sizeof(float) * (size_t)(m * ldc + 1)), *c0 = malloc(sizeof(float) * (size_t)(m * ldc + 1));
  for (int64_t i = 0; i < ar * lda; i++) a[i] = frand(&seed);
  for (int64_t i = 0; i < br * ldb; i++) b[i] = frand(&seed);
  for (int64_t i = 0; i < m * ldc; i++) c0[i] = beta == 0.0f ? NAN : frand(&seed);
  for (int threads = 1; threads <= 3; threads++) {
    memcpy(c, c0, sizeof(float) * (size_t)(m * ldc));
    rill_sgemm(cpu_dev(), threads, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
               b, ldb, beta, c, ldc);
    int bad = 0;
    for (int64_t i = 0; i < m && bad < 3; i++)
      for (int64_t j = 0; j < ldc; j++) {
        if (j >= n) { /* the padding between rows is never touched */
          if (memcmp(&c[i * ldc + j], &c0[i * ldc + j], sizeof(float)) != 0 && bad++ < 3)
            cr_expect(0, "level %d %dT m%ld n%ld k%ld: padding (%ld, %ld) written", level, threads, (long)m,
                      (long)n, (long)k, (long)i, (long)j);
          continue;
        }
        double want = beta == 0.0f ? 0.0 : (double)beta * c0[i * ldc + j], mag = fabs(want);
        for (int64_t p = 0; p < k; p++) {
          double t = (double)alpha * at(a, ta, lda, i, p) * at(b, tb, ldb, p, j);
          want += t;
          mag += fabs(t);
        }
        double got = c[i * ldc + j];
        if (!(fabs(got - want) <= 1e-5 * mag + 1e-6) && bad++ < 3)
          cr_expect(0, "level %d %dT m%ld n%ld k%ld ta%d tb%d a%g b%g: c(%ld, %ld) = %.9g, want %.9g", level,
                    threads, (long)m, (long)n, (long)k, ta, tb, alpha, beta, (long)i, (long)j, got, want);
      }
    static float *first;
    if (threads == 1) {
      free(first);
      first = malloc(sizeof(float) * (size_t)(m * ldc + 1));
      memcpy(first, c, sizeof(float) * (size_t)(m * ldc));
    } else {
      cr_expect(memcmp(first, c, sizeof(float) * (size_t)(m * ldc)) == 0,
                "level %d m%ld n%ld k%ld: %d threads differ from one", level, (long)m, (long)n, (long)k, threads);
    }
    if (threads == 3) {
      free(first);
      first = NULL;
    }
  }
  free(a), free(b), free(c), free(c0);
}

Test(sgemm, matches_a_double_reference_on_every_edge, .init = own_kernels, .fini = restore_level) {
  const int64_t dims[] = {1, 5, 6, 7, 16, 17, 33, 97};
  const int64_t ks[] = {1, 3, 8, 300};
  for (int level = RILL_CPU_ISA_GENERIC; level <= (int)rill_cpu_isa_level_native(); level++) {
    rill_cpu_isa_level_set((rill_cpu_isa_level)level);
    for (size_t im = 0; im < sizeof dims / sizeof *dims; im++)
      for (size_t in = 0; in < sizeof dims / sizeof *dims; in++)
        for (size_t ik = 0; ik < sizeof ks / sizeof *ks; ik++)
          for (int t = 0; t < 4; t++)
            check_shape(dims[im], dims[in], ks[ik], t & 1, t & 2, 1.0f, 0.0f, level);
  }
}

Test(sgemm, alpha_beta_and_large_splits, .init = own_kernels, .fini = restore_level) {
  for (int level = RILL_CPU_ISA_GENERIC; level <= (int)rill_cpu_isa_level_native(); level++) {
    rill_cpu_isa_level_set((rill_cpu_isa_level)level);
    for (int t = 0; t < 4; t++) {
      check_shape(37, 45, 19, t & 1, t & 2, 0.5f, 1.0f, level);
      check_shape(37, 45, 19, t & 1, t & 2, -2.0f, 0.25f, level);
      /* split over the pool by columns, then by rows; k across two KC blocks */
      check_shape(70, 600, 520, t & 1, t & 2, 1.0f, 0.0f, level);
      check_shape(600, 70, 300, t & 1, t & 2, 1.0f, 1.0f, level);
    }
  }
}

Test(sgemm, empty_products, .init = own_kernels, .fini = restore_level) {
  for (int level = RILL_CPU_ISA_GENERIC; level <= (int)rill_cpu_isa_level_native(); level++) {
    rill_cpu_isa_level_set((rill_cpu_isa_level)level);
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4}, c[4] = {1, 2, NAN, 4};
    rill_sgemm(NULL, 1, CblasNoTrans, CblasNoTrans, 2, 2, 0, 1.0f, a, 1, b, 2, 0.0f, c, 2);
    cr_expect(c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] == 0, "k = 0, beta = 0: c = 0 (level %d)", level);
    float d[4] = {1, 2, 3, 4};
    rill_sgemm(NULL, 1, CblasNoTrans, CblasNoTrans, 2, 2, 0, 1.0f, a, 1, b, 2, 2.0f, d, 2);
    cr_expect(d[0] == 2 && d[3] == 8, "k = 0: c = beta c (level %d)", level);
    rill_sgemm(NULL, 1, CblasNoTrans, CblasNoTrans, 0, 2, 2, 1.0f, a, 2, b, 2, 0.0f, d, 2);
    cr_expect(d[0] == 2, "m = 0 writes nothing");
  }
}

/* One row: every column is one FMA chain over k in order, so the AVX2 and AVX-512
 * blocks, their masked or scalar last columns and every thread count give that chain's
 * bits; without AVX2 the row is refused (the caller computes it). */
Test(sgemm, one_row_is_each_columns_fma_chain, .init = own_kernels, .fini = restore_level) {
  const int64_t ks[] = {1, 7, 300}, ns[] = {1, 15, 16, 17, 63, 64, 65, 200, 1000};
  for (int level = RILL_CPU_ISA_GENERIC; level <= (int)rill_cpu_isa_level_native(); level++) {
    rill_cpu_isa_level_set((rill_cpu_isa_level)level);
    for (size_t ik = 0; ik < sizeof ks / sizeof *ks; ik++)
      for (size_t in = 0; in < sizeof ns / sizeof *ns; in++) {
        int64_t k = ks[ik], n = ns[in];
        unsigned seed = (unsigned)(k * 31 + n);
        float *x = malloc(sizeof(float) * (size_t)k), *w = malloc(sizeof(float) * (size_t)(k * n));
        float *y = malloc(sizeof(float) * (size_t)(n + 1)), *want = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < k; i++) x[i] = frand(&seed);
        for (int64_t i = 0; i < k * n; i++) w[i] = frand(&seed);
        for (int64_t j = 0; j < n; j++) {
          float s = 0.0f;
          for (int64_t p = 0; p < k; p++) s = fmaf(x[p], w[p * n + j], s);
          want[j] = s;
        }
        for (int threads = 1; threads <= 3; threads++) {
          y[n] = 12345.0f;
          bool took = rill_sgemv_row(cpu_dev(), threads, x, w, y, k, n);
          if (level == RILL_CPU_ISA_GENERIC) {
            cr_expect_not(took, "without AVX2 a row is left to the caller");
            break;
          }
          cr_expect(took, "level %d: a row of %ld x %ld refused", level, (long)k, (long)n);
          cr_expect(memcmp(y, want, sizeof(float) * (size_t)n) == 0,
                    "level %d, %d threads, %ld x %ld: not each column's FMA chain", level, threads, (long)k,
                    (long)n);
          cr_expect(y[n] == 12345.0f, "wrote past the row");
        }
        free(x), free(w), free(y), free(want);
      }
  }
}

/* AUTO leaves an AVX2 CPU's products to OpenBLAS only when OpenBLAS has wide kernels
 * for it; AVX-512 always runs rill's; the generic level never does. */
Test(sgemm, the_auto_policy, .fini = restore_level) {
  rill_sgemm_use = RILL_SGEMM_AUTO;
  rill_cpu_isa_level_set(RILL_CPU_ISA_GENERIC);
  cr_expect_not(rill_sgemm_has_kernels());
  if (rill_cpu_isa_level_native() >= RILL_CPU_ISA_AVX512) {
    rill_cpu_isa_level_set(RILL_CPU_ISA_AVX512);
    cr_expect(rill_sgemm_has_kernels());
  }
  rill_sgemm_use = RILL_SGEMM_BLAS;
  rill_cpu_isa_level_set(rill_cpu_isa_level_native());
  cr_expect_not(rill_sgemm_has_kernels());
  if (rill_cpu_isa_level_native() >= RILL_CPU_ISA_AVX2) {
    rill_sgemm_use = RILL_SGEMM_OWN;
    cr_expect(rill_sgemm_has_kernels());
  }
}
