/* What the C benchmarks share: a monotonic clock, an end on the first error, and the
 * order of doubles for qsort. A benchmark defines BENCH_NAME (its name, for messages)
 * before including this header. */
#ifndef RILL_BENCH_BENCH_UTIL_H
#define RILL_BENCH_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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

#endif
