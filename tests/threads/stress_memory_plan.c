/* The memory plan under the parallel schedule: a wide program (eight independent branches
 * of several ops each, joined pairwise, then summed) whose temporaries share buffers, run
 * many times on four threads. Every answer must equal the sequential schedule's without
 * the plan, bit for bit, and the plan must hold fewer bytes; ThreadSanitizer checks the
 * buffer handovers between the branches. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "framework/exec/executor.h"
#include "rill.h"

enum { BRANCHES = 8, ROWS = 16, COLS = 64, ROUNDS = 40 };

static rill_status *op(rill_program *p, const char *type, const char *x, const char *y,
                       const char *out, float scale) {
  rill_op_builder *b;
  rill_status *st = rill_op_builder_create(type, &b);
  if (st) return st;
  st = rill_op_builder_input(b, "X", &x, 1);
  if (!st && y) st = rill_op_builder_input(b, "Y", &y, 1);
  if (!st) st = rill_op_builder_output(b, "Out", &out, 1);
  if (!st && scale != 0) st = rill_op_builder_attr_float(b, "scale", scale);
  if (!st) st = rill_op_builder_append(b, p, 0);
  rill_op_builder_destroy(b);
  return st;
}

static rill_program *build(void) {
  rill_program *p = NULL;
  const int64_t d[] = {ROWS, COLS};
  CHECK(!rill_program_create(&p), "program");
  char name[32], prev[32];
  CHECK(!rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false), "x");
  for (int br = 0; br < BRANCHES; br++) {
    snprintf(prev, sizeof prev, "x");
    static const char *const chain[] = {"scale", "tanh", "scale", "sigmoid", "scale"};
    for (int k = 0; k < 5; k++) {
      snprintf(name, sizeof name, "b%d_%d", br, k);
      CHECK(!rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false), "var");
      CHECK(!op(p, chain[k], prev, NULL, name, k % 2 == 0 ? 0.5f + 0.1f * (float)br : 0), "op");
      snprintf(prev, sizeof prev, "%s", name);
    }
  }
  for (int br = 0; br < BRANCHES; br += 2) {
    char a[32], b[32];
    snprintf(a, sizeof a, "b%d_4", br);
    snprintf(b, sizeof b, "b%d_4", br + 1);
    snprintf(name, sizeof name, "j%d", br / 2);
    CHECK(!rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false), "var");
    CHECK(!op(p, "elementwise_mul", a, b, name, 0), "join");
  }
  CHECK(!rill_block_add_var(p, 0, "s01", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false), "var");
  CHECK(!rill_block_add_var(p, 0, "s23", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false), "var");
  CHECK(!rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false), "var");
  CHECK(!op(p, "elementwise_add", "j0", "j1", "s01", 0), "sum");
  CHECK(!op(p, "elementwise_sub", "j2", "j3", "s23", 0), "sum");
  CHECK(!op(p, "elementwise_add", "s01", "s23", "y", 0), "sum");
  return p;
}

static int run(rill_executor *e, rill_program *p, rill_scope *s, rill_tensor *x, float *out) {
  const char *feed = "x", *fetch = "y";
  rill_tensor *y = NULL;
  rill_status *st = rill_executor_run(e, p, s, &feed, &x, 1, &fetch, 1, &y);
  if (st) {
    fprintf(stderr, "run: %s\n", rill_status_message(st));
    rill_status_destroy(st);
    return 1;
  }
  memcpy(out, rill_tensor_data(y), sizeof(float) * ROWS * COLS);
  rill_tensor_destroy(y);
  return 0;
}

int main(void) {
  rill_program *p = build();
  rill_scope *s = NULL;
  rill_tensor *x = NULL;
  const int64_t d[] = {ROWS, COLS};
  CHECK(!rill_scope_create(NULL, &s), "scope");
  CHECK(!rill_tensor_create(RILL_DTYPE_FP32, d, 2, &x), "x");
  if (check_failed) return check_report();
  float *xv = rill_tensor_data(x);
  for (int i = 0; i < ROWS * COLS; i++) xv[i] = sinf((float)i * 0.37f);

  static float want[ROWS * COLS], got[ROWS * COLS];
  rill_executor_options o1 = RILL_EXECUTOR_OPTIONS_INIT, o4 = RILL_EXECUTOR_OPTIONS_INIT;
  o1.num_threads = 1;
  o4.num_threads = 4;
  rill_executor *seq = NULL, *par = NULL;
  CHECK(!rill_executor_create(&o1, &seq), "executor");
  CHECK(!rill_executor_set_schedule(seq, RILL_SCHEDULE_SEQUENTIAL), "schedule");
  CHECK(!rill_executor_create(&o4, &par), "executor");
  CHECK(!rill_executor_set_schedule(par, RILL_SCHEDULE_PARALLEL), "schedule");
  CHECK(!rill_executor_set_memory_plan(par, true), "memory plan");
  if (check_failed) return check_report();
  CHECK(!run(seq, p, s, x, want), "sequential run");
  size_t plain = rill_executor_temporary_bytes(seq);
  int bad = 0, errors = 0;
  for (int r = 0; r < ROUNDS; r++) {
    errors += run(par, p, s, x, got);
    if (memcmp(got, want, sizeof got) != 0) bad++;
  }
  CHECK(errors == 0, "%d failed runs", errors);
  CHECK(bad == 0, "%d of %d parallel runs with the memory plan differ", bad, ROUNDS);
  size_t planned = rill_executor_temporary_bytes(par);
  CHECK(planned > 0 && planned < plain, "temporaries: %zu bytes with the plan, %zu without", planned,
        plain);
  CHECK(par->parallel_runs == ROUNDS, "%llu parallel runs", (unsigned long long)par->parallel_runs);
  rill_executor_destroy(seq);
  rill_executor_destroy(par);
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_program_destroy(p);
  return check_report();
}
