/* Sequential dispatch overhead: a chain of 10,000 scale ops on a 1-element tensor run by
 * the executor, against the same 10,000 scale computations as a plain C loop, measured
 * in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rill.h"

#define BENCH_NAME "bench_dispatch"
#include "bench/bench_util.h"

/* Many short rounds, executor and baseline interleaved, best of each: on a loaded
 * machine the minimum is the figure least disturbed by other processes. */
enum { NOPS = 10000, RUNS = 4, ROUNDS = 40 };

int main(void) {
  rill_program *p;
  check(rill_program_create(&p), "program");
  const int64_t one[] = {1};
  char name[32], prev[32];
  snprintf(prev, sizeof prev, "t0");
  check(rill_block_add_var(p, 0, prev, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, one, 1, 0, false), "var");
  rill_op_builder *b;
  check(rill_op_builder_create("scale", &b), "builder");
  check(rill_op_builder_attr_float(b, "scale", 1.0001f), "attr");
  check(rill_op_builder_attr_float(b, "bias", 0.001f), "attr");
  for (int i = 1; i <= NOPS; i++) {
    snprintf(name, sizeof name, "t%d", i);
    check(rill_block_add_var(p, 0, name, RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, one, 1, 0, false), "var");
    const char *in = prev, *out = name;
    check(rill_op_builder_input(b, "X", &in, 1), "input");
    check(rill_op_builder_output(b, "Out", &out, 1), "output");
    check(rill_op_builder_append(b, p, 0), "append");
    snprintf(prev, sizeof prev, "%s", name);
  }
  rill_op_builder_destroy(b);

  rill_scope *scope;
  rill_executor *exe;
  rill_tensor *x, *y = NULL;
  check(rill_scope_create(NULL, &scope), "scope");
  check(rill_executor_create(NULL, &exe), "executor");
  check(rill_tensor_create(RILL_DTYPE_FP32, one, 1, &x), "tensor");
  *(float *)rill_tensor_data(x) = 1.0f;
  const char *feed = "t0", *fetch = prev;

  /* Warm up: prepare, allocate every temporary once. */
  for (int r = 0; r < 3; r++) {
    check(rill_executor_run(exe, p, scope, &feed, &x, 1, &fetch, 1, &y), "run");
    rill_tensor_destroy(y);
  }
  float *buf = malloc((NOPS + 1) * sizeof *buf);
  volatile float scale = 1.0001f, bias = 0.001f;
  double best = 1e30, bbest = 1e30, pbest = 1e30;
  rill_profiler_options popt = RILL_PROFILER_OPTIONS_INIT;
  popt.events_per_thread = RUNS * NOPS + 64;
  float result = 0;
  for (int round = 0; round < ROUNDS; round++) {
    double t0 = now();
    for (int r = 0; r < RUNS; r++) {
      check(rill_executor_run(exe, p, scope, &feed, &x, 1, &fetch, 1, &y), "run");
      result = *(float *)rill_tensor_data(y);
      rill_tensor_destroy(y);
    }
    double dt = now() - t0;
    if (dt < best) best = dt;
    /* Baseline: the same computations, one float per step, as plain C. */
    t0 = now();
    for (int r = 0; r < RUNS; r++) {
      buf[0] = 1.0f;
      float sc = scale, c = bias;
      for (int i = 0; i < NOPS; i++) {
        buf[i + 1] = buf[i] * sc + c;
        __asm__ volatile("" ::"r"(buf) : "memory");
      }
    }
    dt = now() - t0;
    if (dt < bbest) bbest = dt;
    /* The executor again with the profiler on, recording every op. */
    check(rill_profiler_start(&popt), "profiler");
    t0 = now();
    for (int r = 0; r < RUNS; r++) {
      check(rill_executor_run(exe, p, scope, &feed, &x, 1, &fetch, 1, &y), "run");
      rill_tensor_destroy(y);
    }
    dt = now() - t0;
    check(rill_profiler_stop(NULL, NULL), "profiler");
    if (dt < pbest) pbest = dt;
  }
  double us_exec = best / ((double)RUNS * NOPS) * 1e6;
  double us_base = bbest / ((double)RUNS * NOPS) * 1e6;
  if (buf[NOPS] != result)
    fprintf(stderr, "bench_dispatch: warning: executor %g vs loop %g\n", result, buf[NOPS]);
  double us_prof = pbest / ((double)RUNS * NOPS) * 1e6;
  printf("dispatch: %.4f us/op (target <= 0.5), baseline loop %.4f us/op, ratio %.1f\n", us_exec,
         us_base, us_exec / us_base);
  printf("dispatch with the profiler on: %.4f us/op (+%.4f us per recorded op)\n", us_prof,
         us_prof - us_exec);
  free(buf);
  rill_tensor_destroy(x);
  rill_executor_destroy(exe);
  rill_scope_destroy(scope);
  rill_program_destroy(p);
  return us_exec <= 0.5 ? 0 : 1;
}
