/* fc at batch 1 (M = 1): OpenBLAS sgemv (what the fc kernel uses from 160 output columns
 * on) against sgemm (the baseline, what mul uses) on the fc shapes of the shared models
 * and a few more, best of interleaved rounds (bench_best_times), one thread. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BENCH_NAME "bench_gemv"
#include "bench/bench_util.h"

typedef struct gemv_args {
  int k, n;
  const float *w, *x;
  float *y;
} gemv_args;

/* y = x w as a 1-row GEMM, and as a GEMV */
static rill_status *call_sgemm(void *arg) {
  gemv_args *a = arg;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, a->n, a->k, 1, a->x, a->k, a->w, a->n, 0, a->y,
              a->n);
  return NULL;
}

static rill_status *call_sgemv(void *arg) {
  gemv_args *a = arg;
  cblas_sgemv(CblasRowMajor, CblasTrans, a->k, a->n, 1, a->w, a->n, a->x, 1, 0, a->y, 1);
  return NULL;
}

int main(void) {
  openblas_set_num_threads(1);
  static const int shapes[][2] = {{784, 200}, {200, 200}, {1024, 1024}, {512, 128}, {256, 64},
                                  {200, 10},  {800, 10},  {1280, 9},    {13, 1}};
  printf("fc at M = 1, best of interleaved rounds: sgemv time / sgemm time (lower: GEMV wins)\n");
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int k = shapes[s][0], n = shapes[s][1];
    float *w = malloc(sizeof(float) * (size_t)k * (size_t)n), *x = malloc(sizeof(float) * (size_t)k),
          *y = malloc(sizeof(float) * (size_t)n);
    if (!w || !x || !y) return 1;
    for (long i = 0; i < (long)k * n; i++) w[i] = (float)(i % 7) * 0.1f;
    for (int i = 0; i < k; i++) x[i] = (float)i * 0.01f;
    gemv_args a = {k, n, w, x, y};
    bench_contender fns[2] = {call_sgemm, call_sgemv};
    void *args[2] = {&a, &a};
    double best[2];
    check(bench_best_times(fns, args, 2, 0.2, best), "timing");
    double bg = best[0], bv = best[1];
    printf("K %5d N %5d  sgemm %9.3f us  sgemv %9.3f us  ratio %.2f\n", k, n, bg * 1e6, bv * 1e6, bv / bg);
    free(w);
    free(x);
    free(y);
  }
  return 0;
}
