#include "kernels/cpu/gemm.h"

#include "kernels/cpu/sgemm.h"


typedef struct gemm_blocks {
  int64_t m, n, k, chunk;
  bool by_cols;
  const float *a, *b;
  float *c;
} gemm_blocks;

static bool block_run(void *arg, int64_t i, int slot) {
  const gemm_blocks *s = arg;
  (void)slot;
  int64_t lo = i * s->chunk, hi = lo + s->chunk;
  if (s->by_cols) {
    if (hi > s->n) hi = s->n;
    rill_sgemm(NULL, 1, CblasNoTrans, CblasNoTrans, s->m, hi - lo, s->k, 1.0f, s->a, s->k, s->b + lo, s->n, 0.0f,
               s->c + lo, s->n);
  } else {
    if (hi > s->m) hi = s->m;
    rill_sgemm(NULL, 1, CblasNoTrans, CblasNoTrans, hi - lo, s->n, s->k, 1.0f, s->a + lo * s->k, s->k, s->b, s->n,
               0.0f, s->c + lo * s->n, s->n);
  }
  return true;
}

bool rill_cpu_sgemm_blocks(const rill_device_services *dev, int64_t threads, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                           float *c) {
  double macs = (double)m * (double)n * (double)k;
  if (threads < 2 || macs < RILL_BLAS_SPLIT_MIN || macs > RILL_BLAS_SPLIT_MAX) return false;
  int64_t parts = (int64_t)((macs + RILL_BLAS_PART_MACS - 1) / RILL_BLAS_PART_MACS);
  parts += parts % 2;
  gemm_blocks s = {.m = m, .n = n, .k = k, .by_cols = m < n, .a = a, .b = b, .c = c};
  int64_t dim = s.by_cols ? n : m;
  s.chunk = (dim + parts - 1) / parts;
  /* a short dimension may leave blocks above the threshold: then whole */
  if (dim < 2 || macs / (double)dim * (double)s.chunk > RILL_BLAS_PART_MACS) return false;
  return rill_dev_parallel_for(dev, threads, (dim + s.chunk - 1) / s.chunk, block_run, &s);
}
