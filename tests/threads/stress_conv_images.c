/* Threads over the images of a batch: conv2d, its gradient and pool2d on a batch of
 * small images (each image's GEMM too small for OpenBLAS to thread), run by executors
 * of 1, 2 and 3 threads, four at once. Every answer must equal the one-thread answer
 * bit for bit (the filter gradient sums fixed chunks of images in a fixed order);
 * ThreadSanitizer checks the threads' hand-off. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "rill.h"

enum { N = 24, C = 2, M = 6, H = 24, W = 24, ROUNDS = 2 };
enum { NX = N * C * H * W, NY = N * M * H * W, NP = N * M * (H / 2) * (W / 2), NW = M * C * 25 };

static rill_program *prog;
static rill_scope *params;

typedef struct answer {
  float y[NY], p[NP], dx[NX], dw[NW];
} answer;
static answer want;

static rill_status *var(const char *name, const int64_t *d, bool persist) {
  return rill_block_add_var(prog, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 4, 0, persist);
}

static rill_status *conv_attrs(rill_op_builder *b) {
  rill_status *st = rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){2, 2}, 2);
  if (!st) st = rill_op_builder_attr_ints(b, "strides", (const int32_t[]){1, 1}, 2);
  return st;
}

static rill_status *param(const char *name, const int64_t *d, int64_t n, float scale) {
  rill_tensor *t = NULL;
  rill_status *st = rill_tensor_create(RILL_DTYPE_FP32, d, 4, &t);
  if (!st) {
    float *v = rill_tensor_data(t);
    for (int64_t i = 0; i < n; i++) v[i] = cosf((float)i * scale);
    st = rill_scope_set_tensor(params, name, t);
  }
  rill_tensor_destroy(t);
  return st;
}

static rill_status *build(void) {
  const int64_t xd[] = {N, C, H, W}, wd[] = {M, C, 5, 5}, yd[] = {N, M, H, W},
                pd[] = {N, M, H / 2, W / 2};
  const char *x = "x", *w = "w", *y = "y", *p = "p", *dy = "dy", *dx = "dx", *dw = "dw";
  rill_status *st = rill_program_create(&prog);
  if (!st) st = var(x, xd, true);
  if (!st) st = var(w, wd, true);
  if (!st) st = var(dy, yd, true);
  if (!st) st = var(y, yd, false);
  if (!st) st = var(p, pd, false);
  if (!st) st = var(dx, xd, false);
  if (!st) st = var(dw, wd, false);
  rill_op_builder *b = NULL;
  if (!st) st = rill_op_builder_create("conv2d", &b);
  if (!st) st = rill_op_builder_input(b, "Input", &x, 1);
  if (!st) st = rill_op_builder_input(b, "Filter", &w, 1);
  if (!st) st = rill_op_builder_output(b, "Output", &y, 1);
  if (!st) st = conv_attrs(b);
  if (!st) st = rill_op_builder_append(b, prog, 0);
  rill_op_builder_destroy(b);
  b = NULL;
  if (!st) st = rill_op_builder_create("pool2d", &b);
  if (!st) st = rill_op_builder_input(b, "X", &y, 1);
  if (!st) st = rill_op_builder_output(b, "Out", &p, 1);
  if (!st) st = rill_op_builder_attr_string(b, "pooling_type", "max");
  if (!st) st = rill_op_builder_attr_ints(b, "ksize", (const int32_t[]){2, 2}, 2);
  if (!st) st = rill_op_builder_attr_ints(b, "strides", (const int32_t[]){2, 2}, 2);
  if (!st) st = rill_op_builder_append(b, prog, 0);
  rill_op_builder_destroy(b);
  b = NULL;
  if (!st) st = rill_op_builder_create("conv2d_grad", &b);
  if (!st) st = rill_op_builder_input(b, "Input", &x, 1);
  if (!st) st = rill_op_builder_input(b, "Filter", &w, 1);
  if (!st) st = rill_op_builder_input(b, "Output@GRAD", &dy, 1);
  if (!st) st = rill_op_builder_output(b, "Input@GRAD", &dx, 1);
  if (!st) st = rill_op_builder_output(b, "Filter@GRAD", &dw, 1);
  if (!st) st = conv_attrs(b);
  if (!st) st = rill_op_builder_append(b, prog, 0);
  rill_op_builder_destroy(b);
  if (!st) st = rill_scope_create(NULL, &params);
  if (!st) st = param(x, xd, NX, 0.01f);
  if (!st) st = param(w, wd, NW, 0.7f);
  if (!st) st = param(dy, yd, NY, 0.003f);
  return st;
}

/* Runs the program with `threads` executor threads; the fetched outputs into out. */
static rill_status *run(int threads, answer *out) {
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  opts.num_threads = threads;
  rill_executor *e = NULL;
  rill_scope *s = NULL;
  const char *fetch[4] = {"y", "p", "dx", "dw"};
  rill_tensor *got[4] = {NULL, NULL, NULL, NULL};
  rill_status *st = rill_executor_create(&opts, &e);
  if (!st) st = rill_scope_create(params, &s);
  for (int r = 0; r < ROUNDS && !st; r++) {
    for (int i = 0; i < 4; i++) {
      rill_tensor_destroy(got[i]);
      got[i] = NULL;
    }
    st = rill_executor_run(e, prog, s, NULL, NULL, 0, fetch, 4, got);
  }
  if (!st) {
    memcpy(out->y, rill_tensor_data(got[0]), sizeof out->y);
    memcpy(out->p, rill_tensor_data(got[1]), sizeof out->p);
    memcpy(out->dx, rill_tensor_data(got[2]), sizeof out->dx);
    memcpy(out->dw, rill_tensor_data(got[3]), sizeof out->dw);
  }
  for (int i = 0; i < 4; i++) rill_tensor_destroy(got[i]);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  return st;
}

typedef struct worker {
  int threads;
  bool failed, differs;
  answer got;
} worker;

static void *work(void *arg) {
  worker *w = arg;
  rill_status *st = run(w->threads, &w->got);
  w->failed = st != NULL;
  rill_status_destroy(st);
  w->differs = !w->failed && memcmp(&w->got, &want, sizeof want) != 0;
  return NULL;
}

int main(void) {
  rill_status *st = build();
  CHECK(!st, "build: %s", st ? rill_status_message(st) : "");
  if (st) return check_report();
  st = run(1, &want);
  CHECK(!st, "one thread: %s", st ? rill_status_message(st) : "");
  if (st) return check_report();
  static worker ws[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    ws[i].threads = 2 + i % 2;
    CHECK(pthread_create(&t[i], NULL, work, &ws[i]) == 0, "thread %d", i);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++) {
    CHECK(!ws[i].failed, "run %d failed", i);
    CHECK(!ws[i].differs, "run %d (%d threads): outputs differ from one thread's", i, ws[i].threads);
  }
  rill_scope_destroy(params);
  rill_program_destroy(prog);
  return check_report();
}
