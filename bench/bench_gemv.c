/* fc at batch 1 (M = 1): OpenBLAS sgemv (what the fc kernel uses from 160 output columns
 * on) against sgemm (the baseline, what mul uses) on the fc shapes of the shared models
 * and a few more, best of interleaved rounds, one thread. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void) {
  openblas_set_num_threads(1);
  static const int shapes[][2] = {{784, 200}, {200, 200}, {1024, 1024}, {512, 128}, {256, 64},
                                  {200, 10},  {800, 10},  {1280, 9},    {13, 1}};
  printf("fc at M = 1, best of 30 rounds: sgemv time / sgemm time (lower: GEMV wins)\n");
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int k = shapes[s][0], n = shapes[s][1];
    float *w = malloc(sizeof(float) * (size_t)k * (size_t)n), *x = malloc(sizeof(float) * (size_t)k),
          *y = malloc(sizeof(float) * (size_t)n);
    if (!w || !x || !y) return 1;
    for (long i = 0; i < (long)k * n; i++) w[i] = (float)(i % 7) * 0.1f;
    for (int i = 0; i < k; i++) x[i] = (float)i * 0.01f;
    int reps = (int)(2e6 / ((double)k * n + 1000)) + 1;
    double bg = 1e9, bv = 1e9;
    for (int r = 0; r < 30; r++) {
      double t0 = now();
      for (int i = 0; i < reps; i++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, n, k, 1, x, k, w, n, 0, y, n);
      double t1 = now();
      for (int i = 0; i < reps; i++) cblas_sgemv(CblasRowMajor, CblasTrans, k, n, 1, w, n, x, 1, 0, y, 1);
      double t2 = now();
      if ((t1 - t0) / reps < bg) bg = (t1 - t0) / reps;
      if ((t2 - t1) / reps < bv) bv = (t2 - t1) / reps;
    }
    printf("K %5d N %5d  sgemm %9.3f us  sgemv %9.3f us  ratio %.2f\n", k, n, bg * 1e6, bv * 1e6, bv / bg);
    free(w);
    free(x);
    free(y);
  }
  return 0;
}
