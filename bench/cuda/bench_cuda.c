/* bench_cuda: the GPU against its own libraries, in the same run on the same card.
 *
 * 1. matmul through the executor at cuda:0 against cublasSgemm called directly on
 *    device-resident operands of the same shape, n = 256..4096. The executor's side runs
 *    a program that copies X and Y in once (a scale op each) and then does REPS matmuls
 *    of them; the same program without the matmuls is timed too, and the difference
 *    divided by REPS is the executor's time per matmul. Ratio = cuBLAS time / executor
 *    time (1: no overhead; the target is >= 0.95).
 * 2. conv2d through the executor against cudnnConvolutionForward called directly, on
 *    ResNet-50's convolution shapes at batch 8: the same subtraction of a program without
 *    the convolutions, and on the cuDNN side the algorithm cuDNN's heuristics rank first
 *    among those fitting rill's default workspace, FMA math (no TF32), as rill picks it.
 *    Ratio = cuDNN time / executor time (target >= 0.95).
 * 3. copies: a run that feeds N bytes to a device op and fetches its N-byte output (one
 *    copy in, one out, one elementwise pass) against cudaMemcpy of the same bytes from
 *    and back to pageable host memory. Ratio = cudaMemcpy time / run time (target >= 0.9).
 * Best of ROUNDS rounds on each side.
 *
 * Without a CUDA device it says why and exits 0. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
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

/* Best seconds of one run of p over ROUNDS, feeding x (and y when nfeeds is 2). */
static double time_runs(rill_executor *e, rill_program *p, const char *fetch, rill_tensor **feeds, size_t nfeeds) {
  const char *feed_names[2] = {"x", "y"};
  rill_scope *scope;
  die(rill_scope_create(NULL, &scope), "scope");
  double best = 1e30;
  for (int r = 0; r <= ROUNDS; r++) {
    rill_tensor *out;
    double t0 = now();
    die(rill_executor_run(e, p, scope, feed_names, feeds, nfeeds, &fetch, 1, &out), "run");
    double t = now() - t0;
    rill_tensor_destroy(out);
    if (r > 0 && t < best) best = t; /* round 0 warms up: plans, allocator, cuBLAS */
  }
  rill_scope_destroy(scope);
  return best;
}

/* Seconds of one call of `call` (REPS calls queued back to back on the default stream,
 * timed by events), best of ROUNDS after a warm-up round. */
static double device_seconds(void (*call)(void *), void *arg) {
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  double best = 1e30;
  for (int r = 0; r <= ROUNDS; r++) {
    cudaEventRecord(e0, 0);
    for (int k = 0; k < REPS; k++) call(arg);
    cudaEventRecord(e1, 0);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (r > 0 && ms * 1e-3 / REPS < best) best = ms * 1e-3 / REPS;
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return best;
}

typedef struct sgemm_call {
  cublasHandle_t h;
  int n;
  const float *a, *b;
  float *c;
} sgemm_call;

static void sgemm_once(void *arg) {
  const sgemm_call *s = arg;
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(s->h, CUBLAS_OP_N, CUBLAS_OP_N, s->n, s->n, s->n, &one, s->b, s->n, s->a, s->n, &zero, s->c, s->n);
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
  sgemm_call call = {h, (int)n, a, b, c};
  double best = device_seconds(sgemm_once, &call);
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return best;
}

/* ---- 2. conv2d ---- */

typedef struct conv_shape {
  const char *name;
  int64_t c, hw, m, k, stride, pad;
} conv_shape;

/* ResNet-50's convolutions: the stem, and a 1x1 and a 3x3 of each stage. */
static const conv_shape resnet50[] = {
    {"conv1 7x7/2", 3, 224, 64, 7, 2, 3},      {"res2 1x1", 64, 56, 256, 1, 1, 0},
    {"res2 3x3", 64, 56, 64, 3, 1, 1},         {"res3 3x3/2", 128, 56, 128, 3, 2, 1},
    {"res3 1x1", 512, 28, 128, 1, 1, 0},       {"res4 3x3", 256, 14, 256, 3, 1, 1},
    {"res4 1x1", 1024, 14, 256, 1, 1, 0},      {"res5 3x3", 512, 7, 512, 3, 1, 1},
};
#define CONV_BATCH 8

static void conv_op(rill_program *p, const conv_shape *s, const char *out) {
  rill_op_builder *b;
  const char *x = "xd", *w = "yd";
  die(rill_op_builder_create("conv2d", &b), "conv2d");
  die(rill_op_builder_input(b, "Input", &x, 1), "conv2d");
  die(rill_op_builder_input(b, "Filter", &w, 1), "conv2d");
  die(rill_op_builder_output(b, "Output", &out, 1), "conv2d");
  const int32_t st[2] = {(int32_t)s->stride, (int32_t)s->stride}, pd[2] = {(int32_t)s->pad, (int32_t)s->pad};
  die(rill_op_builder_attr_ints(b, "strides", st, 2), "conv2d");
  die(rill_op_builder_attr_ints(b, "paddings", pd, 2), "conv2d");
  die(rill_op_builder_append(b, p, 0), "conv2d");
  rill_op_builder_destroy(b);
}

static int64_t conv_out(const conv_shape *s) { return (s->hw + 2 * s->pad - s->k) / s->stride + 1; }

/* x [CONV_BATCH, c, hw, hw] and y (the filter) fed; xd, yd = scale of them on the device;
 * then `reps` convolutions. */
static rill_program *conv_program(const conv_shape *s, int reps, const char **fetch) {
  static char names[REPS][16];
  int64_t xd[4] = {CONV_BATCH, s->c, s->hw, s->hw}, wd[4] = {s->m, s->c, s->k, s->k};
  int64_t od[4] = {CONV_BATCH, s->m, conv_out(s), conv_out(s)};
  rill_program *p;
  die(rill_program_create(&p), "program");
  die(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 4, 0, false), "var");
  die(rill_block_add_var(p, 0, "xd", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 4, 0, false), "var");
  die(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 4, 0, false), "var");
  die(rill_block_add_var(p, 0, "yd", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 4, 0, false), "var");
  op1(p, "scale", "x", NULL, "xd");
  op1(p, "scale", "y", NULL, "yd");
  *fetch = "xd";
  for (int r = 0; r < reps; r++) {
    snprintf(names[r], sizeof names[r], "conv%d", r);
    die(rill_block_add_var(p, 0, names[r], RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, od, 4, 0, false), "var");
    conv_op(p, s, names[r]);
    *fetch = names[r];
  }
  return p;
}

#define DNN(call)                                                                          \
  do {                                                                                     \
    cudnnStatus_t s_ = (call);                                                             \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                                      \
      fprintf(stderr, "bench_cuda: %s: %s\n", #call, cudnnGetErrorString(s_));             \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

typedef struct conv_call {
  cudnnHandle_t h;
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnConvolutionFwdAlgoPerf_t perf;
  const void *x, *w;
  void *y, *ws;
} conv_call;

static void conv_once(void *arg) {
  const conv_call *c = arg;
  const float one = 1.0f, zero = 0.0f;
  DNN(cudnnConvolutionForward(c->h, &one, c->xd, c->x, c->wd, c->w, c->cd, c->perf.algo, c->ws, c->perf.memory, &zero,
                              c->yd, c->y));
}

/* Seconds of one cudnnConvolutionForward of shape s, best of ROUNDS batches of REPS. */
static double cudnn_seconds(const conv_shape *s) {
  cudnnHandle_t h;
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  DNN(cudnnCreate(&h));
  DNN(cudnnCreateTensorDescriptor(&xd));
  DNN(cudnnCreateTensorDescriptor(&yd));
  DNN(cudnnCreateFilterDescriptor(&wd));
  DNN(cudnnCreateConvolutionDescriptor(&cd));
  int o = (int)conv_out(s);
  DNN(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, CONV_BATCH, (int)s->c, (int)s->hw,
                                 (int)s->hw));
  DNN(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, CONV_BATCH, (int)s->m, o, o));
  DNN(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, (int)s->m, (int)s->c, (int)s->k, (int)s->k));
  DNN(cudnnSetConvolution2dDescriptor(cd, (int)s->pad, (int)s->pad, (int)s->stride, (int)s->stride, 1, 1,
                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DNN(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH));
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int got = 0, pick = -1;
  DNN(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf));
  for (int i = 0; i < got && pick < 0; i++)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= ((size_t)512 << 20)) pick = i;
  if (pick < 0) {
    fprintf(stderr, "bench_cuda: no cuDNN algorithm for %s\n", s->name);
    exit(1);
  }
  size_t xb = (size_t)(CONV_BATCH * s->c * s->hw * s->hw) * sizeof(float);
  size_t wb = (size_t)(s->m * s->c * s->k * s->k) * sizeof(float);
  size_t yb = (size_t)(CONV_BATCH * s->m * o * o) * sizeof(float);
  void *x, *w, *y, *ws = NULL;
  if (cudaMalloc(&x, xb) || cudaMalloc(&w, wb) || cudaMalloc(&y, yb) ||
      (perf[pick].memory && cudaMalloc(&ws, perf[pick].memory))) {
    fprintf(stderr, "bench_cuda: cudaMalloc failed\n");
    exit(1);
  }
  cudaMemset(x, 0, xb);
  cudaMemset(w, 0, wb);
  conv_call call = {h, xd, yd, wd, cd, perf[pick], x, w, y, ws};
  double best = device_seconds(conv_once, &call);
  cudaFree(x);
  cudaFree(w);
  cudaFree(y);
  cudaFree(ws);
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyConvolutionDescriptor(cd);
  cudnnDestroy(h);
  return best;
}

static void bench_conv(rill_executor *e) {
  printf("\nconv2d, batch %d, ResNet-50's shapes\n%-12s %10s %10s %8s\n", CONV_BATCH, "conv", "cudnn_ms", "rill_ms",
         "ratio");
  for (size_t i = 0; i < sizeof resnet50 / sizeof resnet50[0]; i++) {
    const conv_shape *s = &resnet50[i];
    int64_t xd[4] = {CONV_BATCH, s->c, s->hw, s->hw}, wd[4] = {s->m, s->c, s->k, s->k};
    rill_tensor *feeds[2];
    die(rill_tensor_create(RILL_DTYPE_FP32, xd, 4, &feeds[0]), "tensor");
    die(rill_tensor_create(RILL_DTYPE_FP32, wd, 4, &feeds[1]), "tensor");
    for (int t = 0; t < 2; t++) {
      float *d = rill_tensor_data(feeds[t]);
      for (int64_t j = 0; j < rill_tensor_numel(feeds[t]); j++) d[j] = (float)((j * 7 + t) % 13) * 0.01f;
    }
    const char *f_full, *f_base;
    rill_program *full = conv_program(s, REPS, &f_full), *base = conv_program(s, 0, &f_base);
    double per = (time_runs(e, full, f_full, feeds, 2) - time_runs(e, base, f_base, feeds, 2)) / REPS;
    double direct = cudnn_seconds(s);
    if (per <= 0) per = 1e-9;
    printf("%-12s %10.4f %10.4f %8.3f\n", s->name, direct * 1e3, per * 1e3, direct / per);
    rill_program_destroy(full);
    rill_program_destroy(base);
    rill_tensor_destroy(feeds[0]);
    rill_tensor_destroy(feeds[1]);
  }
}

/* ---- 3. copies ---- */

/* Seconds of cudaMemcpy of `bytes` from pageable host memory to the device and back,
 * best of ROUNDS. */
static double memcpy_seconds(size_t bytes) {
  void *host = malloc(bytes), *back = malloc(bytes), *dev;
  if (!host || !back || cudaMalloc(&dev, bytes)) {
    fprintf(stderr, "bench_cuda: out of memory for %zu bytes\n", bytes);
    exit(1);
  }
  memset(host, 1, bytes);
  double best = 1e30;
  for (int r = 0; r <= ROUNDS; r++) {
    double t0 = now();
    cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(back, dev, bytes, cudaMemcpyDeviceToHost);
    double t = now() - t0;
    if (r > 0 && t < best) best = t;
  }
  cudaFree(dev);
  free(host);
  free(back);
  return best;
}

static void bench_copies(rill_executor *e) {
  printf("\ncopies: feed N bytes to a device op, fetch N bytes back\n%10s %12s %12s %8s\n", "MiB",
         "memcpy_ms", "rill_ms", "ratio");
  for (int64_t mib = 1; mib <= 64; mib *= 4) {
    int64_t n = mib * (1 << 20) / (int64_t)sizeof(float), dims[1] = {n};
    rill_program *p;
    die(rill_program_create(&p), "program");
    die(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false), "var");
    die(rill_block_add_var(p, 0, "xd", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, dims, 1, 0, false), "var");
    op1(p, "scale", "x", NULL, "xd");
    rill_tensor *x;
    die(rill_tensor_create(RILL_DTYPE_FP32, dims, 1, &x), "tensor");
    memset(rill_tensor_data(x), 0, (size_t)n * sizeof(float));
    double run = time_runs(e, p, "xd", &x, 1), direct = memcpy_seconds((size_t)n * sizeof(float));
    printf("%10lld %12.3f %12.3f %8.3f\n", (long long)mib, direct * 1e3, run * 1e3, direct / run);
    rill_program_destroy(p);
    rill_tensor_destroy(x);
  }
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
    double t_full = time_runs(e, full, f_full, feeds, 2), t_base = time_runs(e, base, f_base, feeds, 2);
    double per = (t_full - t_base) / REPS, direct = cublas_seconds(n);
    if (per <= 0) per = 1e-9;
    printf("%6lld %12.4f %12.4f %12.1f %8.3f\n", (long long)n, direct * 1e3, per * 1e3,
           2.0 * (double)n * (double)n * (double)n / per * 1e-9, direct / per);
    rill_program_destroy(full);
    rill_program_destroy(base);
    rill_tensor_destroy(feeds[0]);
    rill_tensor_destroy(feeds[1]);
  }
  bench_conv(e);
  bench_copies(e);
  rill_executor_destroy(e);
  return 0;
}
