/* kernels/cpu/sgemm.h, b packed once: rill_sgemm_prepacked gives rill_sgemm's bits on
 * every shape (rows 1 to 64 and past, columns off the sliver width, k past kc, n past
 * nc), with a transposed a, on 1 to 3 threads, at every vector level this CPU has; a
 * packed form made for one kernel is refused by another; rill_sgemm_weight packs an
 * immutable weight once, keeps it with the buffer and leaves every other weight alone. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "framework/data/tensor.h"
#include "sgemm_test.h"

/* The levels with kernels of rill's own on this CPU (AVX2, AVX-512); 0 when none. */
static int own_levels(int *levels) {
  int n = 0, native = rill_cpu_isa_level_native();
  for (int level = RILL_CPU_ISA_AVX2; level <= native; level++) levels[n++] = level;
  return n;
}

/* c = alpha op(a) b + beta c both ways, on 1-3 threads: bit for bit alike. Returns the
 * number of comparisons made (0 when no kernel of rill's own packs b). */
static int compare_shape(int64_t m, int64_t n, int64_t k, bool ta, float alpha, float beta) {
  unsigned seed = (unsigned)(m * 131 + n * 17 + k * 7 + ta);
  int64_t lda = (ta ? m : k) + 3, ldb = n + 5, ldc = n + 2, ar = ta ? k : m;
  float *a = malloc(sizeof(float) * (size_t)(ar * lda)), *b = malloc(sizeof(float) * (size_t)(k * ldb));
  float *c0 = malloc(sizeof(float) * (size_t)(m * ldc)), *want = malloc(sizeof(float) * (size_t)(m * ldc));
  float *got = malloc(sizeof(float) * (size_t)(m * ldc));
  cr_assert(a && b && c0 && want && got);
  for (int64_t i = 0; i < ar * lda; i++) a[i] = frand(&seed);
  for (int64_t i = 0; i < k * ldb; i++) b[i] = frand(&seed);
  for (int64_t i = 0; i < m * ldc; i++) c0[i] = frand(&seed);
  rill_sgemm_packed *pk = rill_sgemm_pack_b(b, ldb, k, n);
  int compared = 0;
  if (pk) {
    cr_assert(rill_sgemm_packed_fits(pk, b, ldb, k, n));
    cr_assert_geq(rill_sgemm_packed_bytes(pk), sizeof(float) * (size_t)(k * n));
    for (int threads = 1; threads <= 3; threads++) {
      memcpy(want, c0, sizeof(float) * (size_t)(m * ldc));
      memcpy(got, c0, sizeof(float) * (size_t)(m * ldc));
      rill_sgemm(cpu_dev(), threads, ta ? CblasTrans : CblasNoTrans, CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
                 beta, want, ldc);
      cr_assert(rill_sgemm_prepacked(cpu_dev(), threads, ta ? CblasTrans : CblasNoTrans, m, alpha, a, lda, pk,
                                     beta, got, ldc));
      cr_expect(memcmp(want, got, sizeof(float) * (size_t)(m * ldc)) == 0,
                "isa %s m%ld n%ld k%ld ta%d %dT: the packed product differs", rill_cpu_isa_level_name(rill_cpu_isa_level_get()), (long)m, (long)n,
                (long)k, ta, threads);
      compared++;
    }
    rill_sgemm_packed_destroy(pk);
  }
  free(a), free(b), free(c0), free(want), free(got);
  return compared;
}

Test(sgemm_packed, rows_1_to_64_and_edges_bitwise, .init = own_kernels, .fini = restore_level) {
  int levels[4], nl = own_levels(levels);
  if (!nl) cr_skip_test("no AVX2: rill_sgemm hands every product to OpenBLAS");
  static const int64_t ns[] = {1, 17, 32, 33, 100, 2074};
  static const int64_t ks[] = {1, 7, 192, 193, 256, 500};
  for (int l = 0; l < nl; l++) {
    rill_cpu_isa_level_set(levels[l]);
    int compared = 0;
    for (int64_t m = 1; m <= 64; m++) compared += compare_shape(m, 2074, 256, false, 1.0f, 0.0f);
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
      for (size_t j = 0; j < sizeof ks / sizeof *ks; j++)
        for (int64_t m = 1; m <= 97; m += 12) compared += compare_shape(m, ns[i], ks[j], false, 1.0f, 0.0f);
    cr_assert_eq(compared, 3 * (64 + 6 * 6 * 9), "isa %s: %d products compared", rill_cpu_isa_level_name(rill_cpu_isa_level_get()), compared);
  }
}

Test(sgemm_packed, past_nc_alpha_beta_and_transposed_a, .init = own_kernels, .fini = restore_level) {
  int levels[4], nl = own_levels(levels);
  if (!nl) cr_skip_test("no AVX2: rill_sgemm hands every product to OpenBLAS");
  for (int l = 0; l < nl; l++) {
    rill_cpu_isa_level_set(levels[l]);
    /* n past nc (4096): a second block of columns, with a short last sliver */
    cr_assert_eq(compare_shape(16, 4096 + 49, 200, false, 1.0f, 0.0f), 3);
    cr_assert_eq(compare_shape(3, 8192 + 32, 20, false, 1.0f, 0.0f), 3);
    cr_assert_eq(compare_shape(33, 70, 450, false, 0.5f, 1.5f), 3);
    cr_assert_eq(compare_shape(9, 65, 300, true, -2.0f, 0.25f), 3);
    cr_assert_eq(compare_shape(200, 40, 64, true, 1.0f, 0.0f), 3); /* taller than wide: split by rows */
  }
}

Test(sgemm_packed, a_form_packed_for_one_kernel_is_refused_by_another, .fini = restore_level) {
  if (rill_cpu_isa_level_native() < RILL_CPU_ISA_AVX512) cr_skip_test("needs two kernels of rill's own");
  rill_cpu_isa_level_set(RILL_CPU_ISA_AVX512);
  rill_sgemm_use = RILL_SGEMM_AUTO;
  float b[64 * 40], a[3 * 64], c[3 * 40];
  unsigned seed = 5;
  for (size_t i = 0; i < sizeof b / sizeof *b; i++) b[i] = frand(&seed);
  for (size_t i = 0; i < sizeof a / sizeof *a; i++) a[i] = frand(&seed);
  rill_sgemm_packed *pk = rill_sgemm_pack_b(b, 40, 64, 40);
  cr_assert_not_null(pk);
  rill_cpu_isa_level_set(RILL_CPU_ISA_AVX2);
  rill_sgemm_use = RILL_SGEMM_OWN;
  cr_assert_not(rill_sgemm_packed_fits(pk, b, 40, 64, 40));
  for (size_t i = 0; i < sizeof c / sizeof *c; i++) c[i] = 7.0f;
  cr_assert_not(rill_sgemm_prepacked(cpu_dev(), 1, CblasNoTrans, 3, 1.0f, a, 64, pk, 0.0f, c, 40));
  cr_assert_eq(c[0], 7.0f, "a refused product writes nothing");
  rill_sgemm_use = RILL_SGEMM_BLAS;
  cr_assert_null(rill_sgemm_pack_b(b, 40, 64, 40), "no packed form where OpenBLAS runs the products");
  rill_sgemm_packed_destroy(pk);
  rill_sgemm_packed_destroy(NULL);
}

/* A weight tensor [k, n] with its own buffer. */
static rill_tensor weight(int64_t k, int64_t n, unsigned seed) {
  rill_tensor w;
  rill_tensor_init(&w);
  rill_dims d = {.n = 2, .d = {k, n}};
  cr_assert_null(rill_tensor_alloc(&w, RILL_DTYPE_FP32, &d));
  float *p = rill_tensor_ptr(&w);
  for (int64_t i = 0; i < k * n; i++) p[i] = frand(&seed);
  return w;
}

Test(sgemm_packed, an_immutable_weight_is_packed_once_and_freed_with_it, .init = own_kernels,
     .fini = restore_level) {
  if (!rill_sgemm_has_kernels()) cr_skip_test("no AVX2: rill_sgemm hands every product to OpenBLAS");
  enum { M = 16, K = 256, N = 2074 };
  rill_tensor w = weight(K, N, 3);
  float *x = malloc(sizeof(float) * M * K), *want = malloc(sizeof(float) * M * N);
  float *got = malloc(sizeof(float) * M * N);
  unsigned seed = 9;
  for (int i = 0; i < M * K; i++) x[i] = frand(&seed);
  rill_sgemm(cpu_dev(), 2, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, x, K, rill_tensor_ptr(&w), N, 0.0f, want, N);
  rill_sgemm_packed_stats s0 = rill_sgemm_packed_counters();
  /* a weight that may change is never packed */
  cr_assert_not(rill_sgemm_weight(cpu_dev(), 2, M, N, K, 1.0f, x, K, &w, 0.0f, got, N));
  cr_assert_null(rill_buffer_derived_get(w.buf));
  cr_assert_not(rill_buffer_derived_claim(w.buf), "only an immutable buffer takes derived data");
  rill_buffer_set_immutable(w.buf);
  for (int run = 0; run < 5; run++) {
    memset(got, 0, sizeof(float) * M * N);
    cr_assert(rill_sgemm_weight(cpu_dev(), 1 + run % 3, M, N, K, 1.0f, x, K, &w, 0.0f, got, N));
    cr_assert(memcmp(want, got, sizeof(float) * M * N) == 0, "run %d: the packed weight's product differs", run);
  }
  rill_sgemm_packed_stats s1 = rill_sgemm_packed_counters();
  cr_assert_eq(s1.packs_made - s0.packs_made, 1, "packed %ld times", (long)(s1.packs_made - s0.packs_made));
  cr_assert_eq(s1.packed_calls - s0.packed_calls, 5);
  cr_assert_geq(s1.bytes_live - s0.bytes_live, (int64_t)sizeof(float) * K * N);
  cr_assert_not_null(rill_buffer_derived_get(w.buf));
  cr_assert_not(rill_buffer_derived_claim(w.buf), "made at most once");

  /* another view of the same buffer (rows 1..K-1) does not match the packed form */
  rill_tensor v;
  rill_tensor_init(&v);
  cr_assert_null(rill_tensor_share(&v, &w));
  v.offset = (size_t)N * sizeof(float);
  v.dims.d[0] = K - 1;
  cr_assert_not(rill_sgemm_weight(cpu_dev(), 1, M, N, K - 1, 1.0f, x, K - 1, &v, 0.0f, got, N));
  rill_tensor_clear(&v);

  /* a writer gets a copy of the immutable buffer, never the buffer itself */
  rill_buffer *held = w.buf;
  rill_buffer_retain(held);
  cr_assert(rill_buffer_pinned(held));
  rill_tensor copy;
  rill_tensor_init(&copy);
  cr_assert_null(rill_tensor_share(&copy, &w));
  cr_assert_null(rill_tensor_unshare_pinned(&copy));
  cr_assert_neq(copy.buf, held);
  rill_tensor_clear(&copy);
  rill_tensor_clear(&w); /* the scope's reference gone: held is the last */
  rill_dims d = {.n = 2, .d = {K, N}};
  rill_tensor again;
  rill_tensor_init(&again);
  again.buf = held; /* takes over the reference */
  again.dtype = RILL_DTYPE_FP32;
  again.dims = d;
  cr_assert_null(rill_tensor_alloc(&again, RILL_DTYPE_FP32, &d));
  cr_assert_neq(again.buf, held, "an immutable buffer is not reused for writing, even by its only holder");
  /* held went with its last reference, and its packed form with it */
  cr_assert_eq(rill_sgemm_packed_counters().bytes_live, s0.bytes_live, "the packed form dies with its buffer");
  rill_tensor_clear(&again);
  free(x), free(want), free(got);
}
