#include "kernels/cpu/parts.h"

#include <pthread.h>
#include <stdatomic.h>

#include "framework/base/alloc.h"

/* Shared by the calling thread and the helpers it starts (detached: a helper the
 * machine schedules late may start after the call has returned; it then finds no part
 * left). The last holder frees it. */
typedef struct parts_ctl {
  bool (*fn)(void *, int64_t, int);
  void *arg;
  int64_t n;
  atomic_int_fast64_t next; /* the next part not yet taken */
  atomic_int refs;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int64_t done; /* parts run (under mu) */
  bool ok;      /* under mu */
} parts_ctl;

static void parts_release(parts_ctl *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
  rill_free(c);
}

/* Runs parts until none is left. */
static void parts_take(parts_ctl *c, int slot) {
  for (;;) {
    int64_t i = atomic_fetch_add(&c->next, 1);
    if (i >= c->n) return;
    bool ok = c->fn(c->arg, i, slot);
    pthread_mutex_lock(&c->mu);
    c->ok = c->ok && ok;
    if (++c->done == c->n) pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
  }
}

typedef struct parts_start {
  parts_ctl *c;
  int slot;
} parts_start;

static void *parts_helper(void *p) {
  parts_start *st = p;
  parts_ctl *c = st->c;
  int slot = st->slot;
  rill_free(st);
  parts_take(c, slot);
  parts_release(c);
  return NULL;
}

bool rill_cpu_parts(int64_t threads, int64_t n, bool (*fn)(void *arg, int64_t part, int slot),
                    void *arg) {
  if (n <= 0) return true;
  if (threads > n) threads = n;
  if (threads > RILL_PARTS_MAX_THREADS) threads = RILL_PARTS_MAX_THREADS;
  if (threads < 2) {
    bool ok = true;
    for (int64_t i = 0; i < n; i++) ok = fn(arg, i, 0) && ok;
    return ok;
  }
  parts_ctl *c = rill_malloc(sizeof *c);
  if (!c) return false;
  c->fn = fn;
  c->arg = arg;
  c->n = n;
  atomic_init(&c->next, 0);
  atomic_init(&c->refs, 1);
  c->done = 0;
  c->ok = true;
  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    rill_free(c);
    return false;
  }
  if (pthread_cond_init(&c->cv, NULL) != 0) {
    pthread_mutex_destroy(&c->mu);
    rill_free(c);
    return false;
  }
  pthread_attr_t attr;
  bool detached = pthread_attr_init(&attr) == 0;
  if (detached && pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) != 0) {
    pthread_attr_destroy(&attr);
    detached = false;
  }
  for (int64_t t = 1; t < threads && detached; t++) {
    parts_start *st = rill_malloc(sizeof *st);
    if (!st) break; /* the parts run on the threads there are */
    *st = (parts_start){c, (int)t};
    atomic_fetch_add(&c->refs, 1);
    pthread_t tid;
    if (pthread_create(&tid, &attr, parts_helper, st) != 0) {
      atomic_fetch_sub(&c->refs, 1);
      rill_free(st);
      break;
    }
  }
  if (detached) pthread_attr_destroy(&attr);
  parts_take(c, 0);
  pthread_mutex_lock(&c->mu);
  while (c->done < c->n) pthread_cond_wait(&c->cv, &c->mu);
  bool ok = c->ok;
  pthread_mutex_unlock(&c->mu);
  parts_release(c);
  return ok;
}
