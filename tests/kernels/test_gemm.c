/* rill_cpu_sgemm_blocks (kernels/cpu/gemm.c): medium GEMMs cut into blocks of rows or
 * columns match a double reference, give the same bits on 2 and 3 threads, and leave
 * the GEMMs outside the range (and one thread) to the caller, writing nothing. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm.h"
#include "framework/exec/device.h"

/* The CPU device's services, for calls that take a thread count. */
static const rill_device_services *cpu_dev(void) {
  static struct rill_device_ctx d;
  if (!d.services.parallel_for)
    rill_device_ctx_init(&d, (rill_place){RILL_DEVICE_CPU, 0}, RILL_DEVICE_MAX_THREADS, 1);
  return &d.services;
}

static float *filled(int64_t n, int seed) {
  float *v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (float)sin((double)(i * 7 + seed) * 0.37) * 0.5f;
  return v;
}

static void check_shape(int64_t m, int64_t n, int64_t k) {
  float *a = filled(m * k, 1), *b = filled(k * n, 2);
  float *c2 = calloc((size_t)(m * n), sizeof(float)), *c3 = calloc((size_t)(m * n), sizeof(float));
  cr_assert(rill_cpu_sgemm_blocks(cpu_dev(), 2, m, n, k, a, b, c2), "%lld x %lld x %lld: not split", (long long)m,
            (long long)n, (long long)k);
  cr_assert(rill_cpu_sgemm_blocks(cpu_dev(), 3, m, n, k, a, b, c3));
  cr_expect(memcmp(c2, c3, (size_t)(m * n) * sizeof(float)) == 0, "%lld x %lld x %lld: 2 and 3 threads differ",
            (long long)m, (long long)n, (long long)k);
  double worst = 0;
  for (int64_t i = 0; i < m; i += 7)
    for (int64_t j = 0; j < n; j++) {
      double want = 0;
      for (int64_t p = 0; p < k; p++) want += (double)a[i * k + p] * b[p * n + j];
      double err = fabs(c2[i * n + j] - want);
      if (err > worst) worst = err;
    }
  cr_expect(worst < 1e-4 * sqrt((double)k), "%lld x %lld x %lld: error %g", (long long)m, (long long)n,
            (long long)k, worst);
  free(a);
  free(b);
  free(c2);
  free(c3);
}

Test(gemm, medium_gemms_split_by_rows_and_by_columns) {
  check_shape(16, 200, 784);  /* an fc layer at batch 16: by columns */
  check_shape(16, 2074, 256); /* word2vec's output layer at batch 16 */
  check_shape(301, 97, 40);   /* by rows, sizes off any block */
  check_shape(64, 64, 257);
}

Test(gemm, outside_the_range_nothing_is_written) {
  float a[4 * 4] = {1}, b[4 * 4] = {1}, c[4 * 4];
  memset(c, 0x7f, sizeof c);
  cr_expect(!rill_cpu_sgemm_blocks(cpu_dev(), 2, 4, 4, 4, a, b, c), "a tiny GEMM was split");
  float *big_a = filled(512 * 512, 3), *big_b = filled(512 * 512, 4), *big_c = malloc(512 * 512 * sizeof(float));
  memset(big_c, 0x7f, 512 * 512 * sizeof(float));
  cr_expect(!rill_cpu_sgemm_blocks(cpu_dev(), 2, 512, 512, 512, big_a, big_b, big_c), "a large GEMM was split");
  float *med_a = filled(16 * 784, 5), *med_b = filled(784 * 200, 6), *med_c = malloc(16 * 200 * sizeof(float));
  memset(med_c, 0x7f, 16 * 200 * sizeof(float));
  cr_expect(!rill_cpu_sgemm_blocks(cpu_dev(), 1, 16, 200, 784, med_a, med_b, med_c), "split on one thread");
  for (int i = 0; i < 16; i++) cr_expect(((unsigned char *)c)[i] == 0x7f);
  for (int i = 0; i < 16 * 200; i++) cr_expect(memcmp(&med_c[i], &big_c[0], sizeof(float)) == 0);
  free(big_a);
  free(big_b);
  free(big_c);
  free(med_a);
  free(med_b);
  free(med_c);
}
