/* fc, mul, matmul and matmul_v2 with an immutable weight (a predictor's constant
 * weight): the weight is packed once, on the first run, every later run uses it, and the
 * output is the same bits as with the weight that may change, on 1 to 3 threads. */
#include "op_test.h"

#include "framework/data/tensor.h"
#include "kernels/cpu/sgemm.h"

enum { M = 16, K = 300, N = 70 };

static void fill(float *v, int64_t n, int seed) {
  for (int64_t i = 0; i < n; i++) v[i] = (float)(((i * 7 + seed * 13) % 23) - 11) * 0.05f;
}

/* Runs `type` with X [M, K] and weight [K, N] under `wslot`, first with the weight
 * mutable, then three times immutable; the outputs must match bit for bit. */
static void check_op(const char *type, const char *xslot, const char *wslot, int threads) {
  static float x[M * K], w[K * N];
  fill(x, M * K, 1);
  fill(w, K * N, 2);
  op_harness *h = harness(type);
  op_harness_set_threads(h, threads);
  bind_input(h, xslot, "x", RILL_DTYPE_FP32, DIMS(M, K), x);
  bind_input(h, wslot, "w", RILL_DTYPE_FP32, DIMS(K, N), w);
  OK(op_harness_output(h, "Out", "out"));
  OK(op_harness_run(h));
  rill_tensor *out = op_harness_tensor(h, "out");
  float *want = malloc(sizeof(float) * M * N);
  cr_assert(want);
  memcpy(want, rill_tensor_ptr(out), sizeof(float) * M * N);

  rill_sgemm_packed_stats s0 = rill_sgemm_packed_counters();
  rill_buffer_set_immutable(op_harness_tensor(h, "w")->buf);
  for (int run = 0; run < 3; run++) {
    OK(op_harness_run(h));
    out = op_harness_tensor(h, "out");
    cr_assert(memcmp(want, rill_tensor_ptr(out), sizeof(float) * M * N) == 0,
              "%s, %d threads, run %d: the packed weight changes the output", type, threads, run);
  }
  rill_sgemm_packed_stats s1 = rill_sgemm_packed_counters();
  int64_t packs = rill_sgemm_has_kernels() ? 1 : 0;
  cr_assert_eq(s1.packs_made - s0.packs_made, packs, "%s: packed %ld times", type,
               (long)(s1.packs_made - s0.packs_made));
  cr_assert_eq(s1.packed_calls - s0.packed_calls, 3 * packs, "%s: %ld products on the packed weight", type,
               (long)(s1.packed_calls - s0.packed_calls));
  op_harness_destroy(h);
  cr_assert_eq(rill_sgemm_packed_counters().bytes_live, s0.bytes_live, "%s: the packed weight outlived it", type);
  free(want);
}

Test(prepacked_weights, fc_mul_and_matmul_give_the_same_bits) {
  for (int threads = 1; threads <= 3; threads++) {
    check_op("fc", "Input", "W", threads);
    check_op("mul", "X", "Y", threads);
    check_op("matmul", "X", "Y", threads);
    check_op("matmul_v2", "X", "Y", threads);
  }
}
