/* Medium GEMMs in blocks that OpenBLAS runs on one thread each (kernels/cpu/gemm.c,
 * rill_cpu_sgemm_blocks over the kernel pool, 2 threads) against one cblas_sgemm call
 * on the whole GEMM (OpenBLAS threading it as it chooses), in the same run, on the
 * shapes of the shared models' medium GEMMs. Prints
 * "gemm 16 x 200 x 784 (luotao fc, batch 16): blocks 21.0 us, whole 30.1 us, ratio 0.70".
 * Target: ratio < 1. Rounds of the two sides are interleaved and the best of each is
 * kept, because the machine is shared and noisy. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BENCH_NAME "bench_gemm"
#include "bench/bench_util.h"
#include "kernels/cpu/gemm.h"
#include "framework/exec/device.h"

/* The CPU device's services, for calls that take a thread count. */
static const rill_device_services *cpu_dev(void) {
  static struct rill_device_ctx d;
  if (!d.services.parallel_for)
    rill_device_ctx_init(&d, (rill_place){RILL_DEVICE_CPU, 0}, RILL_DEVICE_MAX_THREADS, 1);
  return &d.services;
}

#define ROUNDS 40
#define CALLS 20

static float *filled(size_t n) {
  float *v = malloc(n * sizeof *v);
  if (v)
    for (size_t i = 0; i < n; i++) v[i] = (float)(i % 13) * 0.1f - 0.6f;
  return v;
}

int main(void) {
  const struct {
    int m, n, k;
    const char *what;
  } shapes[] = {
      {50, 64, 500, "mnist_conv_bn's second conv"},
      {16, 200, 784, "luotao fc, batch 16"},
      {16, 2074, 256, "word2vec output fc, batch 16"},
      {200, 49, 160, "a 7x7 1x1 conv, 160 -> 200 channels"},
      {1280, 49, 160, "gesture_rec's 7x7 1x1 conv, 160 -> 1280"},
  };
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    int m = shapes[si].m, n = shapes[si].n, k = shapes[si].k;
    float *a = filled((size_t)m * k), *b = filled((size_t)k * n), *c = filled((size_t)m * n);
    if (!a || !b || !c) {
      fprintf(stderr, "bench_gemm: out of memory\n");
      return 1;
    }
    double best_blocks = 1e9, best_whole = 1e9;
    for (int r = 0; r < ROUNDS; r++) {
      double t = now();
      for (int i = 0; i < CALLS; i++)
        if (!rill_cpu_sgemm_blocks(cpu_dev(), 2, m, n, k, a, b, c)) {
          fprintf(stderr, "bench_gemm: %d x %d x %d is not split\n", m, n, k);
          return 1;
        }
      t = (now() - t) / CALLS;
      if (t < best_blocks) best_blocks = t;
      t = now();
      for (int i = 0; i < CALLS; i++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
      t = (now() - t) / CALLS;
      if (t < best_whole) best_whole = t;
    }
    printf("gemm %d x %d x %d (%s): blocks %.1f us, whole %.1f us, ratio %.2f\n", m, n, k, shapes[si].what,
           best_blocks * 1e6, best_whole * 1e6, best_blocks / best_whole);
    free(a);
    free(b);
    free(c);
  }
  return 0;
}
