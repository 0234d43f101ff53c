/* Three threads record profiler events at once (ops, spans, asynchronous intervals
 * that begin on one thread and end on another), and a fourth runs a program with
 * blocking ops under the parallel schedule (compute workers, libuv's pool), while the
 * main thread starts, resets and stops the profiler over and over, with buffers small
 * enough to fill. Under
 * ThreadSanitizer this checks the per-thread buffers and the start/stop handshake;
 * a last session with the writers alone checks that nothing is lost. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "check.h"
#include "framework/exec/profiler.h"
#include "rill.h"
#include "test_ops.h"

enum { THREADS = 3, CYCLES = 200, LAST_EVENTS = 5000 };

static atomic_int stop_flag;
static _Atomic uint64_t handoff; /* an async interval begun by one thread, ended by another */
static atomic_int runs_done;      /* parallel runs the runner has finished */
static atomic_int runner_ended;   /* set when the runner leaves its loop, on error too */

static void *writer(void *arg) {
  long k = (long)arg;
  char name[32];
  snprintf(name, sizeof name, "writer %ld", k);
  rill_profiler_set_thread_name(name);
  for (int i = 0; !atomic_load(&stop_flag); i++) {
    if (!rill_prof_active()) continue;
    int64_t t0 = rill_prof_now();
    rill_prof_op("scale", 0, i & 63, t0, rill_prof_now());
    if ((i & 15) == 0) rill_prof_span("checkpoint", "checkpoint persist", t0, rill_prof_now());
    if ((i & 31) == 0) {
      uint64_t mine = rill_profiler_async_begin("rpc", "send", "{\"bytes\":8}");
      uint64_t other = atomic_exchange(&handoff, mine);
      rill_profiler_async_end(other, "rpc", "send", NULL);
    }
  }
  return NULL;
}

/* x -> test_sleep -> a, x -> test_add -> b -> test_add -> c, twice over: blocking ops on
 * the pool beside compute ops on two compute threads. */
static void *runner(void *arg) {
  (void)arg;
  rill_program *p = NULL;
  rill_executor *exe = NULL;
  rill_scope *scope = NULL;
  rill_tensor *x = NULL;
  const int64_t d[] = {64};
  const char *vars[] = {"x", "a", "b", "c", "a2", "b2", "c2"};
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = 2;
  rill_status *st = rill_program_create(&p);
  for (size_t i = 0; !st && i < sizeof vars / sizeof *vars; i++)
    st = rill_block_add_var(p, 0, vars[i], RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 1, 0, false);
  if (!st) st = test_op(p, "test_sleep", "x", "a", 1, 30, false);
  if (!st) st = test_op(p, "test_add", "x", "b", 1, 5, false);
  if (!st) st = test_op(p, "test_add", "b", "c", 1, 5, false);
  if (!st) st = test_op(p, "test_sleep", "c", "a2", 1, 30, false);
  if (!st) st = test_op(p, "test_add", "a", "b2", 1, 5, false);
  if (!st) st = test_op(p, "test_add", "b2", "c2", 1, 5, false);
  if (!st) st = rill_executor_create(&o, &exe);
  if (!st) st = rill_executor_set_schedule(exe, RILL_SCHEDULE_PARALLEL);
  if (!st) st = rill_scope_create(NULL, &scope);
  if (!st) st = rill_tensor_create(RILL_DTYPE_FP32, d, 1, &x);
  if (!st) memset(rill_tensor_data(x), 0, 64 * sizeof(float));
  const char *feed = "x", *fetch[] = {"a2", "c2"};
  while (!st && !atomic_load(&stop_flag)) {
    rill_tensor *out[2] = {NULL, NULL};
    st = rill_executor_run(exe, p, scope, &feed, &x, 1, fetch, 2, out);
    rill_tensor_destroy(out[0]);
    rill_tensor_destroy(out[1]);
    if (!st) atomic_fetch_add(&runs_done, 1);
  }
  atomic_store(&runner_ended, 1);
  CHECK(!st, "parallel run: %s", rill_status_message(st));
  rill_status_destroy(st);
  rill_tensor_destroy(x);
  rill_executor_destroy(exe);
  rill_scope_destroy(scope);
  rill_program_destroy(p);
  return NULL;
}

typedef struct last_arg {
  int n;
} last_arg;

static void *last_writer(void *arg) {
  const last_arg *a = arg;
  for (int i = 0; i < a->n; i++) rill_prof_op("relu", 0, i, i, i + 1);
  return NULL;
}

int main(void) {
  CHECK(test_ops_register(), "register test ops");
  pthread_t t[THREADS], run_thread;
  for (long k = 0; k < THREADS; k++) pthread_create(&t[k], NULL, writer, (void *)k);
  pthread_create(&run_thread, NULL, runner, NULL);
  rill_profiler_options o = RILL_PROFILER_OPTIONS_INIT;
  o.events_per_thread = 256;
  uint64_t dropped = 0;
  /* The cycles go on until the runner has finished two whole runs under them, however
   * fast the spin below is on this machine; a runner that fails ends them too. */
  for (int c = 0; c < CYCLES || (atomic_load(&runs_done) < 2 && !atomic_load(&runner_ended));
       c++) {
    rill_status *st = rill_profiler_start(&o);
    CHECK(!st, "start: %s", rill_status_message(st));
    rill_status_destroy(st);
    for (volatile int spin = 0; spin < 20000; spin++) {
    }
    if (c % 7 == 0) rill_profiler_reset();
    rill_profiler_summary *s = NULL;
    st = rill_profiler_stop(NULL, c % 10 ? NULL : &s);
    CHECK(!st, "stop: %s", rill_status_message(st));
    rill_status_destroy(st);
    if (s) {
      CHECK(rill_profiler_summary_events(s) <= (uint64_t)o.events_per_thread *
                                                   (uint64_t)rill_profiler_summary_threads(s),
            "%llu events", (unsigned long long)rill_profiler_summary_events(s));
      dropped += rill_profiler_summary_dropped(s);
      rill_profiler_summary_destroy(s);
    }
  }
  atomic_store(&stop_flag, 1);
  for (int k = 0; k < THREADS; k++) pthread_join(t[k], NULL);
  pthread_join(run_thread, NULL);
  CHECK(atomic_load(&runs_done) >= 2, "%d parallel runs", atomic_load(&runs_done));
  printf("stress_profiler: %llu events dropped over the cycles\n", (unsigned long long)dropped);

  /* Writers alone, buffers large enough: every event arrives. */
  o.events_per_thread = LAST_EVENTS;
  rill_status *st = rill_profiler_start(&o);
  CHECK(!st, "start: %s", rill_status_message(st));
  rill_status_destroy(st);
  last_arg a = {LAST_EVENTS};
  for (int k = 0; k < THREADS; k++) pthread_create(&t[k], NULL, last_writer, &a);
  for (int k = 0; k < THREADS; k++) pthread_join(t[k], NULL);
  rill_profiler_summary *s = NULL;
  st = rill_profiler_stop(NULL, &s);
  CHECK(!st && s, "stop: %s", rill_status_message(st));
  rill_status_destroy(st);
  if (s) {
    CHECK(rill_profiler_summary_events(s) == (uint64_t)THREADS * LAST_EVENTS, "%llu events",
          (unsigned long long)rill_profiler_summary_events(s));
    CHECK(rill_profiler_summary_dropped(s) == 0, "dropped");
    CHECK(rill_profiler_summary_threads(s) == THREADS, "%d threads",
          (int)rill_profiler_summary_threads(s));
    rill_profiler_summary_destroy(s);
  }
  return check_report();
}
