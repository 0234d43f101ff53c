/* rill_sgemm (kernels/cpu/sgemm.h: rill's packed GEMM, microkernels chosen from cpuid)
 * against OpenBLAS's cblas_sgemm (kernels chosen by OpenBLAS from the CPU model and
 * OPENBLAS_CORETYPE) on the same operands, in the same run, on the shapes of the shared
 * models' GEMMs and of training steps, on 1 and 2 threads (OpenBLAS gets the same count
 * through openblas_set_num_threads). The two sides alternate in short rounds; the
 * figure is the median of the per-round ratios (rill / OpenBLAS, below 1: rill faster)
 * with the range of the middle half. Prints
 * "sgemm 64 x 3136 x 576 nn (ResNet 3x3 conv), 1 thread: rill 1.23 ms, OpenBLAS 2.34 ms,
 *  ratio 0.53 [0.51 .. 0.55]" and the CPU path of each. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_NAME "bench_sgemm"
#include "bench/bench_util.h"
#include "framework/base/isa.h"
#include "kernels/cpu/sgemm.h"
#include "framework/exec/device.h"

/* The CPU device's services, for calls that take a thread count. */
static const rill_device_services *cpu_dev(void) {
  static struct rill_device_ctx d;
  if (!d.services.parallel_for)
    rill_device_ctx_init(&d, (rill_place){RILL_DEVICE_CPU, 0}, RILL_DEVICE_MAX_THREADS, 1);
  return &d.services;
}

#define ROUNDS 15

void openblas_set_num_threads(int);

static float *filled(size_t n) {
  float *v = malloc(n * sizeof *v);
  if (v)
    for (size_t i = 0; i < n; i++) v[i] = (float)(i % 13) * 0.1f - 0.6f;
  return v;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  const struct {
    int m, n, k;
    bool ta, tb;
    const char *what;
  } shapes[] = {
      {64, 3136, 576, 0, 0, "ResNet-50 3x3 conv, 56x56"},
      {256, 3136, 64, 0, 0, "ResNet-50 1x1 conv, 56x56"},
      {512, 784, 1152, 0, 0, "VGG-style 3x3 conv, 28x28"},
      {50, 64, 500, 0, 0, "mnist_conv_bn's second conv"},
      {16, 200, 784, 0, 0, "luotao fc, batch 16"},
      {16, 2074, 256, 0, 0, "word2vec output fc, batch 16"},
      {1280, 49, 160, 0, 0, "gesture_rec's 7x7 1x1 conv"},
      {128, 1024, 784, 0, 0, "MLP fc 784-1024, batch 128"},
      {128, 784, 1024, 0, 1, "its data gradient (B transposed)"},
      {784, 1024, 128, 1, 0, "its weight gradient (A transposed)"},
  };
  printf("cpu: rill %s kernels; OpenBLAS %s kernels; rill_sgemm by default: %s\n",
         rill_cpu_isa_level_name(rill_cpu_isa_level_get()), openblas_get_corename(),
         rill_sgemm_has_kernels() ? "rill's kernels" : "OpenBLAS");
  rill_sgemm_use = RILL_SGEMM_OWN; /* this benchmark times rill's kernels */
  for (int threads = 1; threads <= 2; threads++)
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      int m = shapes[si].m, n = shapes[si].n, k = shapes[si].k;
      bool ta = shapes[si].ta, tb = shapes[si].tb;
      int lda = ta ? m : k, ldb = tb ? k : n;
      float *a = filled((size_t)m * k), *b = filled((size_t)k * n), *c = filled((size_t)m * n);
      if (!a || !b || !c) {
        fprintf(stderr, "bench_sgemm: out of memory\n");
        return 1;
      }
      double macs = (double)m * n * k;
      int calls = macs > 5e7 ? 3 : macs > 5e6 ? 20 : 200;
      double ratio[ROUNDS], best_r = 1e9, best_o = 1e9;
      openblas_set_num_threads(threads);
      for (int r = -1; r < ROUNDS; r++) { /* round -1 warms both up */
        double t = now();
        for (int i = 0; i < calls; i++)
          rill_sgemm(cpu_dev(), threads, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a,
                     lda, b, ldb, 0.0f, c, n);
        double tr = (now() - t) / calls;
        t = now();
        for (int i = 0; i < calls; i++)
          cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k,
                      1.0f, a, lda, b, ldb, 0.0f, c, n);
        double to = (now() - t) / calls;
        if (r < 0) continue;
        ratio[r] = tr / to;
        if (tr < best_r) best_r = tr;
        if (to < best_o) best_o = to;
      }
      qsort(ratio, ROUNDS, sizeof *ratio, cmp);
      printf("sgemm %d x %d x %d %c%c (%s), %d thread%s: rill %.1f us (%.0f GFLOP/s), OpenBLAS %.1f us, "
             "ratio %.2f [%.2f .. %.2f]\n",
             m, n, k, ta ? 't' : 'n', tb ? 't' : 'n', shapes[si].what, threads, threads > 1 ? "s" : "",
             best_r * 1e6, 2 * macs / best_r * 1e-9, best_o * 1e6, ratio[ROUNDS / 2], ratio[ROUNDS / 4],
             ratio[3 * ROUNDS / 4]);
      free(a), free(b), free(c);
    }
  return 0;
}
