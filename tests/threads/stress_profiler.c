/* Three threads record profiler events at once (ops, spans, asynchronous intervals
 * that begin on one thread and end on another) while the main thread starts, resets
 * and stops the profiler over and over, with buffers small enough to fill. Under
 * ThreadSanitizer this checks the per-thread buffers and the start/stop handshake;
 * a last session with the writers alone checks that nothing is lost. */
#include <pthread.h>
#include <stdatomic.h>

#include "check.h"
#include "framework/exec/profiler.h"
#include "rill.h"

enum { THREADS = 3, CYCLES = 200, LAST_EVENTS = 5000 };

static atomic_int stop_flag;
static _Atomic uint64_t handoff; /* an async interval begun by one thread, ended by another */

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

typedef struct last_arg {
  int n;
} last_arg;

static void *last_writer(void *arg) {
  const last_arg *a = arg;
  for (int i = 0; i < a->n; i++) rill_prof_op("relu", 0, i, i, i + 1);
  return NULL;
}

int main(void) {
  pthread_t t[THREADS];
  for (long k = 0; k < THREADS; k++) pthread_create(&t[k], NULL, writer, (void *)k);
  rill_profiler_options o = RILL_PROFILER_OPTIONS_INIT;
  o.events_per_thread = 256;
  uint64_t dropped = 0;
  for (int c = 0; c < CYCLES; c++) {
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
      CHECK(rill_profiler_summary_events(s) <= (uint64_t)o.events_per_thread * (THREADS + 1),
            "%llu events", (unsigned long long)rill_profiler_summary_events(s));
      dropped += rill_profiler_summary_dropped(s);
      rill_profiler_summary_destroy(s);
    }
  }
  atomic_store(&stop_flag, 1);
  for (int k = 0; k < THREADS; k++) pthread_join(t[k], NULL);
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
