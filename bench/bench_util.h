/* What the C benchmarks share: a monotonic clock, an end on the first error (or main's
 * exit status for it), the order of doubles for qsort and the median of a sample, the
 * best time of interleaved contenders, and one call of a conv kernel on variables of its
 * own. A benchmark defines BENCH_NAME (its
 * name, for messages) before including this header. */
#ifndef RILL_BENCH_BENCH_UTIL_H
#define RILL_BENCH_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "framework/registry/registry.h"
#include "rill.h"

/* CLOCK_MONOTONIC in seconds. */
static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Ends the benchmark (exit status 1) when st is an error, naming what failed. */
static inline void check(rill_status *st, const char *what) {
  if (!st) return;
  fprintf(stderr, "%s: %s: %s\n", BENCH_NAME, what, rill_status_message(st));
  exit(1);
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Prints the error st naming the benchmark, frees it, and gives main's exit status 1. */
static inline int fail(rill_status *st) {
  fprintf(stderr, "%s: %s\n", BENCH_NAME, rill_status_message(st));
  rill_status_destroy(st);
  return 1;
}

/* The median of the n values of v (n > 0), which it sorts in place. */
static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* The best time of one call of each of n contenders (fns[i] on args[i]) into best[i]:
 * after a warm-up call each, rounds of about 5 ms of calls, the contenders interleaved
 * within each round (the machine is shared and noisy: the fastest round is the least
 * disturbed), as many rounds as `budget` seconds allow and at least 15. The first
 * error ends it. */
typedef rill_status *(*bench_contender)(void *arg);

static inline rill_status *bench_best_times(bench_contender *fns, void **args, int n, double budget,
                                            double *best) {
  const double round_seconds = 0.005;
  const int min_rounds = 15;
  double one = 0;
  for (int i = 0; i < n; i++) {
    RILL_TRY(fns[i](args[i])); /* warm up */
    double t0 = now();
    RILL_TRY(fns[i](args[i]));
    double t = now() - t0;
    if (t > one) one = t;
    best[i] = 1e30;
  }
  int reps = one > 0 ? (int)(round_seconds / one) : 1000;
  if (reps < 1) reps = 1;
  int rounds = (int)(budget / (n * reps * (one > 0 ? one : 1e-6)));
  if (rounds < min_rounds) rounds = min_rounds;
  for (int round = 0; round < rounds; round++)
    for (int i = 0; i < n; i++) {
      double t0 = now();
      for (int r = 0; r < reps; r++) RILL_TRY(fns[i](args[i]));
      double t = (now() - t0) / reps;
      if (t < best[i]) best[i] = t;
    }
  return NULL;
}

/* One call of a conv kernel (conv2d, depthwise_conv2d: Input and Filter to Output) on
 * variables of its own: the schema's default attributes but for paddings, strides and
 * groups. The caller fills Input and Filter (bench_conv_call_tensor) before running. */
typedef struct bench_conv_call {
  rill_variable xv, wv, yv;
  rill_attr_value *attrs;
  int32_t pads[2], strides[2];
  size_t nin[4], nout[1];
  rill_variable *in0[1], *in1[1], *out0[1];
  rill_variable *const *ins[4];
  rill_variable *const *outs[1];
  rill_kernel_ctx ctx;
  rill_kernel_fn fn;
} bench_conv_call;

static inline rill_status *bench_conv_call_setup(bench_conv_call *r, const char *op, const rill_dims *xd,
                                                 const rill_dims *wd, const rill_dims *yd, const int32_t pads[2],
                                                 const int32_t strides[2], int32_t groups) {
  memset(r, 0, sizeof *r);
  rill_variable_init(&r->xv);
  rill_variable_init(&r->wv);
  rill_variable_init(&r->yv);
  const rill_op_schema *s = rill_schema_find(op);
  r->fn = rill_kernel_find(op, RILL_DEVICE_CPU, RILL_DTYPE_FP32);
  if (!s || !r->fn) return rill_error(RILL_NOT_FOUND, "no %s schema or fp32 CPU kernel", op);
  r->attrs = calloc(s->nattrs, sizeof *r->attrs);
  if (!r->attrs) return rill_oom();
  for (size_t i = 0; i < s->nattrs; i++) r->attrs[i] = s->attrs[i].def; /* shallow: shared */
  memcpy(r->pads, pads, sizeof r->pads);
  memcpy(r->strides, strides, sizeof r->strides);
  rill_attr_value *a = &r->attrs[rill_schema_attr_index(s, "paddings")];
  a->n = 2;
  a->list.ints = r->pads;
  a = &r->attrs[rill_schema_attr_index(s, "strides")];
  a->n = 2;
  a->list.ints = r->strides;
  r->attrs[rill_schema_attr_index(s, "groups")].v.i = groups;
  RILL_TRY(rill_tensor_alloc(rill_variable_tensor(&r->xv), RILL_DTYPE_FP32, xd));
  RILL_TRY(rill_tensor_alloc(rill_variable_tensor(&r->wv), RILL_DTYPE_FP32, wd));
  RILL_TRY(rill_tensor_alloc(rill_variable_tensor(&r->yv), RILL_DTYPE_FP32, yd));
  r->nin[0] = r->nin[1] = 1;
  r->nout[0] = 1;
  r->in0[0] = &r->xv;
  r->in1[0] = &r->wv;
  r->out0[0] = &r->yv;
  r->ins[0] = r->in0;
  r->ins[1] = r->in1;
  r->outs[0] = r->out0;
  r->ctx = (rill_kernel_ctx){.schema = s, .attrs = r->attrs, .nin = r->nin, .in = r->ins,
                             .nout = r->nout, .out = r->outs};
  return NULL;
}

/* The float data of Input (0), Filter (1) or Output (2). */
static inline float *bench_conv_call_data(bench_conv_call *r, int which) {
  rill_variable *v = which == 0 ? &r->xv : which == 1 ? &r->wv : &r->yv;
  return rill_tensor_ptr(rill_variable_tensor(v));
}

static inline rill_status *bench_conv_call_run(bench_conv_call *r) { return r->fn(&r->ctx); }

static inline void bench_conv_call_teardown(bench_conv_call *r) {
  rill_variable_clear(&r->xv);
  rill_variable_clear(&r->wv);
  rill_variable_clear(&r->yv);
  free(r->attrs);
}

#endif
