#include "kernels/cpu/parts.h"

#include <pthread.h>

typedef struct parts_part {
  bool (*fn)(void *, int64_t, int64_t);
  void *arg;
  int64_t lo, hi;
  bool ok, started;
  pthread_t tid;
} parts_part;

static void *parts_part_run(void *p) {
  parts_part *pt = p;
  pt->ok = pt->fn(pt->arg, pt->lo, pt->hi);
  return NULL;
}

bool rill_cpu_parts(int64_t threads, int64_t n, bool (*fn)(void *arg, int64_t lo, int64_t hi),
                    void *arg) {
  if (n <= 0) return true;
  if (threads > n) threads = n;
  if (threads > RILL_PARTS_MAX_THREADS) threads = RILL_PARTS_MAX_THREADS;
  if (threads < 2) return fn(arg, 0, n);
  parts_part parts[RILL_PARTS_MAX_THREADS];
  for (int64_t t = 0; t < threads; t++) {
    parts[t] = (parts_part){.fn = fn, .arg = arg, .lo = n * t / threads, .hi = n * (t + 1) / threads};
    if (t + 1 < threads)
      parts[t].started = pthread_create(&parts[t].tid, NULL, parts_part_run, &parts[t]) == 0;
  }
  parts_part_run(&parts[threads - 1]);
  bool ok = parts[threads - 1].ok;
  for (int64_t t = 0; t + 1 < threads; t++) {
    if (parts[t].started)
      pthread_join(parts[t].tid, NULL);
    else
      parts_part_run(&parts[t]);
    ok = ok && parts[t].ok;
  }
  return ok;
}
