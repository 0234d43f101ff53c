/* Convs split into parts over the compute pool (framework/exec/parts.c, conv2d.c): a chain
 * of conv2d_fusion ops covering every split (a first layer's small-K im2col, depthwise
 * 3x3 at stride 1 and 2, 1x1 by columns and by rows, a residual, a medium GEMM by blocks
 * of rows on OpenBLAS), run by executors of
 * 1, 2 and 3 threads, four at once, so that several calls share the pool's workers,
 * and then alone after the workers were sent to sleep. Every
 * answer must equal the one-thread answer bit for bit; ThreadSanitizer checks the pool's
 * hand-off. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "conv_run.h"
#include "framework/exec/parts.h"
#include "framework/exec/pool.h"
#include "rill.h"

enum { H = 64, ROUNDS = 3, NOUT = 16 * 8 * 8 };

static rill_program *prog;
static rill_scope *params;
static float want[NOUT];

static rill_status *var(const char *name, int64_t c, int64_t h, bool persist) {
  const int64_t d[] = {1, c, h, h};
  return rill_block_add_var(prog, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 4, 0, persist);
}

static rill_status *param(const char *name, const int64_t *d, int nd, float scale) {
  rill_tensor *t = NULL;
  rill_status *st = rill_block_add_var(prog, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, nd, 0, true);
  if (!st) st = rill_tensor_create(RILL_DTYPE_FP32, d, (size_t)nd, &t);
  if (!st) {
    float *v = rill_tensor_data(t);
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= d[i];
    for (int64_t i = 0; i < n; i++) v[i] = cosf((float)i * scale) * 0.3f;
    st = rill_scope_set_tensor(params, name, t);
  }
  rill_tensor_destroy(t);
  return st;
}

/* out = act(conv(in) + bias (+ res)): a k x k conv from c to m channels. */
static rill_status *fused(const char *in, const char *out, const char *res, int64_t c, int64_t m, int64_t k,
                          int stride, int groups, const char *act, int id) {
  char fw[16], fb[16];
  snprintf(fw, sizeof fw, "w%d", id);
  snprintf(fb, sizeof fb, "b%d", id);
  const int64_t wd[] = {m, c / groups, k, k}, bd[] = {m};
  rill_status *st = param(fw, wd, 4, 0.37f + (float)id);
  if (!st) st = param(fb, bd, 1, 1.1f + (float)id);
  rill_op_builder *b = NULL;
  const char *w = fw, *bias = fb;
  if (!st) st = rill_op_builder_create("conv2d_fusion", &b);
  if (!st) st = rill_op_builder_input(b, "Input", &in, 1);
  if (!st) st = rill_op_builder_input(b, "Filter", &w, 1);
  if (!st) st = rill_op_builder_input(b, "Bias", &bias, 1);
  if (!st && res) st = rill_op_builder_input(b, "ResidualData", &res, 1);
  if (!st) st = rill_op_builder_output(b, "Output", &out, 1);
  int32_t pad = (int32_t)(k / 2);
  if (!st) st = rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){pad, pad}, 2);
  if (!st) st = rill_op_builder_attr_ints(b, "strides", (const int32_t[]){stride, stride}, 2);
  if (!st) st = rill_op_builder_attr_int(b, "groups", groups);
  if (!st) st = rill_op_builder_attr_string(b, "activation", act);
  if (!st) st = rill_op_builder_append(b, prog, 0);
  rill_op_builder_destroy(b);
  return st;
}

static rill_status *build(void) {
  rill_status *st = rill_program_create(&prog);
  if (!st) st = rill_scope_create(NULL, &params);
  if (!st) st = var("x", 3, H, false);
  if (!st) st = var("y1", 16, 32, false);
  if (!st) st = var("y2", 16, 32, false);
  if (!st) st = var("y3", 24, 32, false);
  if (!st) st = var("y4", 24, 16, false);
  if (!st) st = var("y5", 24, 8, false);
  if (!st) st = var("y6", 96, 8, false);
  if (!st) st = var("y7", 96, 8, false);
  if (!st) st = var("y8", 128, 8, false);
  if (!st) st = var("y9", 16, 8, false);
  if (!st) st = fused("x", "y1", NULL, 3, 16, 3, 2, 1, "relu", 1);     /* im2col, k = 27 */
  if (!st) st = fused("y1", "y2", NULL, 16, 16, 3, 1, 16, "relu6", 2); /* depthwise */
  if (!st) st = fused("y2", "y3", NULL, 16, 24, 1, 1, 1, "relu", 3);   /* 1x1 by columns */
  if (!st) st = fused("y3", "y4", NULL, 24, 24, 3, 2, 24, "tanh", 4);  /* depthwise, stride 2 */
  if (!st) st = fused("y4", "y5", NULL, 24, 24, 3, 2, 24, "", 5);
  if (!st) st = fused("y5", "y6", NULL, 24, 96, 1, 1, 1, "relu6", 6);
  if (!st) st = fused("y6", "y7", "y6", 96, 96, 1, 1, 1, "sigmoid", 7); /* by rows, residual */
  if (!st) st = fused("y7", "y8", NULL, 96, 128, 1, 1, 1, "relu6", 8);
  if (!st) st = fused("y8", "y9", NULL, 128, 16, 3, 1, 1, "relu", 9); /* k = 1152: OpenBLAS */
  return st;
}

static rill_status *run(int threads, float *out) {
  const int64_t xd[] = {1, 3, H, H};
  return conv_run(prog, params, threads, xd, ROUNDS, "y9", out, NOUT);
}

int main(void) {
  rill_cpu_parts_backoff = false; /* a slow (sanitized) build must still use the pool */
  rill_pool_fit_cores = false;    /* and so must four executors on fewer cores */
  uint64_t pooled = rill_cpu_parts_pooled_calls();
  rill_status *st = build();
  CHECK(!st, "build: %s", st ? rill_status_message(st) : "");
  if (st) return check_report();
  st = run(1, want);
  CHECK(!st, "one thread: %s", st ? rill_status_message(st) : "");
  if (st) return check_report();
  int nonzero = 0;
  for (int i = 0; i < NOUT; i++) nonzero += want[i] != 0;
  CHECK(nonzero > NOUT / 4, "only %d of %d outputs are nonzero", nonzero, NOUT);
  static float got[4][NOUT];
  conv_worker ws[4];
  for (int i = 0; i < 4; i++)
    ws[i] = (conv_worker){.run = run, .threads = 1 + i % 3, .got = got[i], .want = want, .n = NOUT};
  conv_run_together(ws, 4);
  /* the same executors again, one at a time, so that each finds the pool free, the
   * workers sent to sleep before each (rill_cpu_parts_hush) so the run must wake them */
  for (int i = 0; i < 3; i++) {
    rill_cpu_parts_hush();
    conv_work(&ws[i]);
    CHECK(!ws[i].failed && ws[i].mismatches == 0, "alone, %d threads: differs", ws[i].threads);
  }
  CHECK(rill_cpu_parts_pooled_calls() > pooled, "no call ran on the pool");
  rill_scope_destroy(params);
  rill_program_destroy(prog);
  return check_report();
}
