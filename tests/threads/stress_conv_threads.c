/* Threads inside a conv: a depthwise conv large enough to split its channels over the
 * executor's threads, run by executors of 1, 2 and 3 threads, twice from two threads
 * at once. Every answer must equal the one-thread answer bit for bit (each channel is
 * computed by the same code whichever thread runs it); ThreadSanitizer checks the
 * threads' hand-off. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "conv_run.h"
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
  const int64_t xd[] = {1, C, H, W};
  return conv_run(prog, params, threads, xd, ROUNDS, "y", out, C * H * W);
}

int main(void) {
  rill_status *st = build();
  CHECK(!st, "build: %s", st ? rill_status_message(st) : "");
  if (st) return check_report();
  st = run(1, want);
  CHECK(!st, "one thread: %s", st ? rill_status_message(st) : "");
  if (st) return check_report();
  static float got[4][C * H * W];
  conv_worker ws[4];
  for (int i = 0; i < 4; i++)
    ws[i] = (conv_worker){.run = run, .threads = 2 + i % 2, .got = got[i], .want = want, .n = C * H * W};
  conv_run_together(ws, 4);
  rill_scope_destroy(params);
  rill_program_destroy(prog);
  return check_report();
}
