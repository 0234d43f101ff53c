/* bench_cuda: the GPU against its own libraries, in the same run on the same card.
 *
 * matmul through the executor at cuda:0 against cublasSgemm called directly on
 * device-resident operands of the same shape, n = 256..4096. The executor's side runs a
 * program that copies X and Y in once (a scale op each) and then does REPS matmuls of
 * them; the same program without the matmuls is timed too, and the difference divided
 * by REPS is the executor's time per matmul. Ratio = cuBLAS time / executor time
 * (1: no overhead; the target is >= 0.95). Best of ROUNDS rounds on each side.
 *
 * Without a CUDA device it says why and exits 0. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rill.h"

#define REPS 20
#define ROUNDS 5

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(rill_status *st, const char *what) {
  if (!st) return;
  fprintf(stderr, "bench_cuda: %s: %s\n", what, rill_status_message(st));
  exit(1);
}

static void op1(rill_program *p, const char *type, const char *in1, const char *in2, const char *out) {
  rill_op_builder *b;
  die(rill_op_builder_create(type, &b), type);
  die(rill_op_builder_input(b, "X", &in1, 1), type);
  if (in2) die(rill_op_builder_input(b, "Y", &in2, 1), type);
  die(rill_op_builder_output(b, "Out", &out, 1), type);
  die(rill_op_builder_append(b, p, 0), type);
  rill_op_builder_destroy(b);
}

/* x, y fed; xd = scale(x), yd = scale(y) on the device; then `reps` matmuls of them.
 * Fetches *fetch: the last product, or xd without matmuls. */
static rill_program *matmul_program(int64_t n, int reps, const char **fetch) {
  static char names[REPS][16];
  int64_t dims[2] = {n, n};
  rill_program *p;
  die(rill_program_create(&p), "program");
  const char *vars[] = {"x", "y", "xd", "yd"};
  for (int i = 0; i < 4; i++)
    die(rill_block_add_var(p, 0, vars[i], RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false), "var");
  op1(p, "scale", "x", NULL, "xd");
  op1(p, "scale", "y", NULL, "yd");
  *fetch = "xd";
  for (int r = 0; r < reps; r++) {
    snprintf(names[r], sizeof names[r], "out%d", r);
    die(rill_block_add_var(p, 0, names[r], RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 2, 0, false), "var");
    op1(p, "matmul", "xd", "yd", names[r]);
    *fetch = names[r];
  }
  return p;
}

/* Best seconds of one run of p over ROUNDS. */
static double time_runs(rill_executor *e, rill_program *p, const char *fetch, rill_tensor **feeds) {
  const char *feed_names[2] = {"x", "y"};
  rill_scope *scope;
  die(rill_scope_create(NULL, &scope), "scope");
  double best = 1e30;
  for (int r = 0; r <= ROUNDS; r++) {
    rill_tensor *out;
    double t0 = now();
    die(rill_executor_run(e, p, scope, feed_names, feeds, 2, &fetch, 1, &out), "run");
    double t = now() - t0;
    rill_tensor_destroy(out);
    if (r > 0 && t < best) best = t; /* round 0 warms up: plans, allocator, cuBLAS */
  }
  rill_scope_destroy(scope);
  return best;
}

static double cublas_seconds(int64_t n) {
  float *a, *b, *c;
  size_t bytes = (size_t)(n * n) * sizeof(float);
  if (cudaMalloc((void **)&a, bytes) || cudaMalloc((void **)&b, bytes) || cudaMalloc((void **)&c, bytes)) {
    fprintf(stderr, "bench_cuda: cudaMalloc failed\n");
    exit(1);
  }
  cudaMemset(a, 0, bytes);
  cudaMemset(b, 0, bytes);
  cublasHandle_t h;
  cublasCreate(&h);
  cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
  float one = 1.0f, zero = 0.0f;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  double best = 1e30;
  for (int r = 0; r <= ROUNDS; r++) {
    cudaEventRecord(e0, 0);
    for (int k = 0; k < REPS; k++)
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n, &one, b, (int)n, a, (int)n, &zero, c, (int)n);
    cudaEventRecord(e1, 0);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r > 0 && ms * 1e-3 / REPS < best) best = ms * 1e-3 / REPS;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return best;
}

int main(void) {
  int32_t ndev = 0;
  rill_status *st = rill_cuda_device_count(&ndev);
  if (st || ndev == 0) {
    printf("bench_cuda: no CUDA device: %s\n", st ? rill_status_message(st) : "none reported");
    rill_status_destroy(st);
    return 0;
  }
  struct cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("bench_cuda on %s (%d SMs)\n", prop.name, prop.multiProcessorCount);
  printf("%6s %12s %12s %12s %8s\n", "n", "cublas_ms", "rill_ms", "rill_GFLOPS", "ratio");
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = (rill_place){RILL_DEVICE_CUDA, 0};
  rill_executor *e;
  die(rill_executor_create(&o, &e), "executor");
  for (int64_t n = 256; n <= 4096; n *= 2) {
    int64_t dims[2] = {n, n};
    rill_tensor *feeds[2];
    for (int i = 0; i < 2; i++) {
      die(rill_tensor_create(RILL_DTYPE_FP32, dims, 2, &feeds[i]), "tensor");
      float *d = rill_tensor_data(feeds[i]);
      for (int64_t j = 0; j < n * n; j++) d[j] = (float)((j * 7 + i) % 13) * 0.01f;
    }
    const char *f_full, *f_base;
    rill_program *full = matmul_program(n, REPS, &f_full), *base = matmul_program(n, 0, &f_base);
    double t_full = time_runs(e, full, f_full, feeds), t_base = time_runs(e, base, f_base, feeds);
    double per = (t_full - t_base) / REPS, direct = cublas_seconds(n);
    if (per <= 0) per = 1e-9;
    printf("%6lld %12.4f %12.4f %12.1f %8.3f\n", (long long)n, direct * 1e3, per * 1e3,
           2.0 * (double)n * (double)n * (double)n / per * 1e-9, direct / per);
    rill_program_destroy(full);
    rill_program_destroy(base);
    rill_tensor_destroy(feeds[0]);
    rill_tensor_destroy(feeds[1]);
  }
  rill_executor_destroy(e);
  return 0;
}
