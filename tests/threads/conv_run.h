/* The runs shared by the conv stress programs: a program on an executor of its own,
 * several such at once. */
#ifndef RILL_TESTS_THREADS_CONV_RUN_H
#define RILL_TESTS_THREADS_CONV_RUN_H

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "check.h"
#include "rill.h"

/* Runs prog `rounds` times with `threads` executor threads (sequential schedule), params
 * as the parent scope, feeding "x" of dims xd[4] filled with sin(0.01 i) and fetching
 * `fetch`; the last run's nout floats into out. */
static rill_status *conv_run(const rill_program *prog, rill_scope *params, int threads, const int64_t xd[4],
                             int rounds, const char *fetch, float *out, size_t nout) {
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  opts.num_threads = threads;
  rill_executor *e = NULL;
  rill_scope *s = NULL;
  rill_tensor *x = NULL, *y = NULL;
  rill_status *st = rill_executor_create(&opts, &e);
  if (!st) st = rill_executor_set_schedule(e, RILL_SCHEDULE_SEQUENTIAL);
  if (!st) st = rill_scope_create(params, &s);
  if (!st) st = rill_tensor_create(RILL_DTYPE_FP32, xd, 4, &x);
  if (!st) {
    float *v = rill_tensor_data(x);
    int64_t n = xd[0] * xd[1] * xd[2] * xd[3];
    for (int64_t i = 0; i < n; i++) v[i] = sinf((float)i * 0.01f);
    const char *feed = "x";
    for (int r = 0; r < rounds && !st; r++) {
      rill_tensor_destroy(y);
      y = NULL;
      st = rill_executor_run(e, prog, s, &feed, &x, 1, &fetch, 1, &y);
    }
  }
  if (!st) memcpy(out, rill_tensor_data(y), nout * sizeof *out);
  rill_tensor_destroy(y);
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  return st;
}

/* One of the concurrent runs below: `threads` executor threads; `got` (n floats, the
 * caller's) must equal `want` bit for bit. */
typedef struct conv_worker {
  rill_status *(*run)(int threads, float *out);
  int threads;
  float *got;
  const float *want;
  size_t n;
  int mismatches;
  bool failed;
} conv_worker;

static void *conv_work(void *arg) {
  conv_worker *w = arg;
  rill_status *st = w->run(w->threads, w->got);
  w->failed = st != NULL;
  w->mismatches = 0;
  rill_status_destroy(st);
  for (size_t i = 0; i < w->n && !w->failed; i++) w->mismatches += memcmp(&w->got[i], &w->want[i], sizeof(float)) != 0;
  return NULL;
}

/* Runs ws[0 .. n) at once, each on a thread of its own, and checks each answer. */
static void conv_run_together(conv_worker *ws, int n) {
  pthread_t t[16];
  int started = 0;
  for (; started < n && started < 16; started++)
    if (pthread_create(&t[started], NULL, conv_work, &ws[started]) != 0) break;
  CHECK(started == n, "started %d of %d threads", started, n);
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < started; i++) {
    CHECK(!ws[i].failed, "run %d failed", i);
    CHECK(ws[i].mismatches == 0, "run %d (%d threads): %d outputs differ from one thread's", i, ws[i].threads,
          ws[i].mismatches);
  }
}

#endif
