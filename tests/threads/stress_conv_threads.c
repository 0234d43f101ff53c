/* Threads inside a conv: a depthwise conv large enough to split its channels over the
 * executor's threads, run by executors of 1, 2 and 3 threads, twice from two threads
 * at once. Every answer must equal the one-thread answer bit for bit (each channel is
 * computed by the same code whichever thread runs it); ThreadSanitizer checks the
 * threads' hand-off. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "rill.h"

enum { C = 24, H = 70, W = 70, ROUNDS = 3 };

static rill_program *prog;
static rill_scope *params;
static float want[C * H * W];

static rill_status *build(void) {
  rill_status *st = rill_program_create(&prog);
  const int64_t xd[] = {1, C, H, W}, wd[] = {C, 1, 3, 3};
  const char *x = "x", *w = "w", *y = "y";
  if (!st) st = rill_block_add_var(prog, 0, x, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 4, 0, false);
  if (!st) st = rill_block_add_var(prog, 0, w, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 4, 0, true);
  if (!st) st = rill_block_add_var(prog, 0, y, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 4, 0, false);
  rill_op_builder *b = NULL;
  if (!st) st = rill_op_builder_create("depthwise_conv2d", &b);
  if (!st) st = rill_op_builder_input(b, "Input", &x, 1);
  if (!st) st = rill_op_builder_input(b, "Filter", &w, 1);
  if (!st) st = rill_op_builder_output(b, "Output", &y, 1);
  if (!st) st = rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){1, 1}, 2);
  if (!st) st = rill_op_builder_attr_int(b, "groups", C);
  if (!st) st = rill_op_builder_append(b, prog, 0);
  rill_op_builder_destroy(b);
  rill_tensor *wt = NULL;
  if (!st) st = rill_scope_create(NULL, &params);
  if (!st) st = rill_tensor_create(RILL_DTYPE_FP32, wd, 4, &wt);
  if (!st) {
    float *v = rill_tensor_data(wt);
    for (int i = 0; i < C * 9; i++) v[i] = cosf((float)i);
    st = rill_scope_set_tensor(params, w, wt);
  }
  rill_tensor_destroy(wt);
  return st;
}

/* Runs the conv with `threads` executor threads; the output into out. */
static rill_status *run(int threads, float *out) {
  rill_executor_options opts = {{RILL_DEVICE_CPU, 0}, threads};
  rill_executor *e = NULL;
  rill_scope *s = NULL;
  rill_tensor *x = NULL, *y = NULL;
  const int64_t xd[] = {1, C, H, W};
  rill_status *st = rill_executor_create(&opts, &e);
  if (!st) st = rill_executor_set_schedule(e, RILL_SCHEDULE_SEQUENTIAL);
  if (!st) st = rill_scope_create(params, &s);
  if (!st) st = rill_tensor_create(RILL_DTYPE_FP32, xd, 4, &x);
  if (!st) {
    float *v = rill_tensor_data(x);
    for (int i = 0; i < C * H * W; i++) v[i] = sinf((float)i * 0.01f);
    const char *feed = "x", *fetch = "y";
    for (int r = 0; r < ROUNDS && !st; r++) {
      rill_tensor_destroy(y);
      y = NULL;
      st = rill_executor_run(e, prog, s, &feed, &x, 1, &fetch, 1, &y);
    }
  }
  if (!st) memcpy(out, rill_tensor_data(y), sizeof want);
  rill_tensor_destroy(y);
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  return st;
}

typedef struct worker {
  int threads;
  int mismatches;
  bool failed;
  float got[C * H * W];
} worker;

static void *work(void *arg) {
  worker *w = arg;
  rill_status *st = run(w->threads, w->got);
  w->failed = st != NULL;
  rill_status_destroy(st);
  for (int i = 0; i < C * H * W && !w->failed; i++) w->mismatches += memcmp(&w->got[i], &want[i], sizeof(float)) != 0;
  return NULL;
}

int main(void) {
  rill_status *st = build();
  CHECK(!st, "build: %s", st ? rill_status_message(st) : "");
  if (st) return check_report();
  st = run(1, want);
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
    CHECK(ws[i].mismatches == 0, "run %d (%d threads): %d outputs differ from one thread's", i,
          ws[i].threads, ws[i].mismatches);
  }
  rill_scope_destroy(params);
  rill_program_destroy(prog);
  return check_report();
}
