/* mul through the executor (public C API: a one-op program, X fed, Y a parameter in the
 * scope, Out fetched) against cblas_sgemm called directly on the same shapes, in the same
 * run. Prints "mul n=256: rill 41.2 GFLOPS, sgemm 42.0 GFLOPS, ratio 0.98". Target: a
 * ratio >= 0.95 for n >= 256, i.e. the executor adds only its dispatch to the GEMM.
 * Rounds of the two sides are interleaved and the best of each is kept, because the
 * machine is shared and noisy. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BENCH_NAME "bench_mul"
#include "bench/bench_util.h"
#include "rill.h"

#define ROUNDS 15

static rill_status *build(int64_t n, rill_program **out) {
  rill_program *p = NULL;
  rill_op_builder *b = NULL;
  int64_t dims[] = {n, n};
  const char *x[] = {"x"}, *y[] = {"w"}, *o[] = {"out"};
  rill_status *st;
  if ((st = rill_program_create(&p)) ||
      (st = rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false)) ||
      (st = rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, true)) ||
      (st = rill_block_add_var(p, 0, "out", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false)) ||
      (st = rill_op_builder_create("mul", &b)) || (st = rill_op_builder_input(b, "X", x, 1)) ||
      (st = rill_op_builder_input(b, "Y", y, 1)) || (st = rill_op_builder_output(b, "Out", o, 1)) ||
      (st = rill_op_builder_append(b, p, 0))) {
    rill_op_builder_destroy(b);
    rill_program_destroy(p);
    return st;
  }
  rill_op_builder_destroy(b);
  *out = p;
  return NULL;
}

int main(int argc, char **argv) {
  double budget = argc > 1 ? atof(argv[1]) : 0.3; /* seconds per size, side and round */
  const int64_t sizes[] = {64, 256, 512, 1024};
  rill_executor *exe = NULL;
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  rill_status *st = rill_executor_create(&opts, &exe);
  if (st) return fail(st);
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    int64_t n = sizes[si];
    int64_t dims[] = {n, n};
    rill_program *p = NULL;
    rill_scope *scope = NULL;
    rill_tensor *x = NULL, *w = NULL;
    if ((st = build(n, &p)) || (st = rill_scope_create(NULL, &scope)) ||
        (st = rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &x)) ||
        (st = rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &w)))
      return fail(st);
    float *xp = rill_tensor_data(x), *wp = rill_tensor_data(w);
    for (int64_t i = 0; i < n * n; i++) {
      xp[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
      wp[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    }
    if ((st = rill_scope_set_tensor(scope, "w", w))) return fail(st);
    float *ref = malloc((size_t)(n * n) * sizeof(float));
    const char *feed[] = {"x"}, *fetch[] = {"out"};
    double flops = 2.0 * (double)n * (double)n * (double)n;
    double best_rill = 0, best_blas = 0;
    float max_diff = 0;
    for (int round = 0; round < ROUNDS; round++) {
      long iters = 0;
      double t0 = now(), t;
      do {
        rill_tensor *out = NULL;
        if ((st = rill_executor_run(exe, p, scope, feed, &x, 1, fetch, 1, &out))) return fail(st);
        if (round == 0 && iters == 0) {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, xp,
                      (int)n, wp, (int)n, 0.0f, ref, (int)n);
          const float *op = rill_tensor_data(out);
          for (int64_t i = 0; i < n * n; i++) {
            float d = op[i] > ref[i] ? op[i] - ref[i] : ref[i] - op[i];
            if (d > max_diff) max_diff = d;
          }
        }
        rill_tensor_destroy(out);
        iters++;
      } while ((t = now() - t0) < budget / ROUNDS);
      double g = flops * (double)iters / t / 1e9;
      if (g > best_rill) best_rill = g;
      iters = 0;
      t0 = now();
      do {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0f, xp,
                    (int)n, wp, (int)n, 0.0f, ref, (int)n);
        iters++;
      } while ((t = now() - t0) < budget / ROUNDS);
      g = flops * (double)iters / t / 1e9;
      if (g > best_blas) best_blas = g;
    }
    printf("mul n=%lld: rill %.1f GFLOPS, sgemm %.1f GFLOPS, ratio %.2f%s (max |diff| %.2g)\n",
           (long long)n, best_rill, best_blas, best_rill / best_blas,
           n >= 256 ? " (target >= 0.95)" : "", (double)max_diff);
    free(ref);
    rill_tensor_destroy(x);
    rill_tensor_destroy(w);
    rill_scope_destroy(scope);
    rill_program_destroy(p);
  }
  rill_executor_destroy(exe);
  return 0;
}
