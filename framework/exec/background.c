#include "framework/exec/background.h"
#include "framework/exec/profiler.h"

#include <pthread.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/thread.h"

typedef struct bg_job {
  struct bg_job *next;
  void (*fn)(void *arg);
  void *arg;
} bg_job;

typedef struct bg_state {
  struct bg_state *next;
  char *key;
  void *state;
  void (*destroy)(void *state);
} bg_state;

struct rill_bg {
  pthread_mutex_t mu;
  pthread_cond_t wake; /* the thread: a job is ready, or stop */
  pthread_cond_t idle; /* waiters: the thread went idle */
  bg_job *held, **held_tail;
  bg_job *ready, **ready_tail;
  bool running; /* the thread is inside a job */
  bool started, stop;
  pthread_t thread;
  bg_state *states;
};

rill_status *rill_bg_create(rill_bg **out) {
  rill_bg *bg = rill_calloc(1, sizeof *bg);
  if (!bg) return rill_oom();
  pthread_mutex_init(&bg->mu, NULL);
  pthread_cond_init(&bg->wake, NULL);
  pthread_cond_init(&bg->idle, NULL);
  bg->held_tail = &bg->held;
  bg->ready_tail = &bg->ready;
  *out = bg;
  return NULL;
}

static void *bg_main(void *arg) {
  rill_bg *bg = arg;
  rill_thread_background_priority(); /* background writes yield the cores to the runs */
  rill_prof_thread_name("rill background");
  rill_thread_set_name("rill-background");
  pthread_mutex_lock(&bg->mu);
  for (;;) {
    while (!bg->ready && !bg->stop) pthread_cond_wait(&bg->wake, &bg->mu);
    bg_job *j = bg->ready;
    if (!j) break; /* stop, and nothing left */
    bg->ready = j->next;
    if (!bg->ready) bg->ready_tail = &bg->ready;
    bg->running = true;
    pthread_mutex_unlock(&bg->mu);
    j->fn(j->arg);
    rill_free(j);
    pthread_mutex_lock(&bg->mu);
    bg->running = false;
    if (!bg->ready) pthread_cond_broadcast(&bg->idle);
  }
  pthread_mutex_unlock(&bg->mu);
  return NULL;
}

rill_status *rill_bg_submit(rill_bg *bg, void (*fn)(void *arg), void *arg) {
  bg_job *j = rill_malloc(sizeof *j);
  if (!j) return rill_oom();
  j->next = NULL;
  j->fn = fn;
  j->arg = arg;
  pthread_mutex_lock(&bg->mu);
  if (!bg->started) {
    int e = pthread_create(&bg->thread, NULL, bg_main, bg);
    if (e) {
      pthread_mutex_unlock(&bg->mu);
      rill_free(j);
      return rill_error(RILL_UNAVAILABLE, "cannot start the executor's background thread: %s",
                        strerror(e));
    }
    bg->started = true;
  }
  *bg->held_tail = j;
  bg->held_tail = &j->next;
  pthread_mutex_unlock(&bg->mu);
  return NULL;
}

/* Caller holds bg->mu. */
static void release_locked(rill_bg *bg) {
  if (!bg->held) return;
  *bg->ready_tail = bg->held;
  bg->ready_tail = bg->held_tail;
  bg->held = NULL;
  bg->held_tail = &bg->held;
  pthread_cond_signal(&bg->wake);
}

void rill_bg_release(rill_bg *bg) {
  if (!bg) return;
  pthread_mutex_lock(&bg->mu);
  release_locked(bg);
  pthread_mutex_unlock(&bg->mu);
}

void rill_bg_wait_idle(rill_bg *bg) {
  if (!bg) return;
  pthread_mutex_lock(&bg->mu);
  release_locked(bg);
  while (bg->ready || bg->running) pthread_cond_wait(&bg->idle, &bg->mu);
  pthread_mutex_unlock(&bg->mu);
}

void rill_bg_destroy(rill_bg *bg) {
  if (!bg) return;
  pthread_mutex_lock(&bg->mu);
  release_locked(bg);
  bg->stop = true;
  pthread_cond_signal(&bg->wake);
  bool started = bg->started;
  pthread_mutex_unlock(&bg->mu);
  if (started) pthread_join(bg->thread, NULL);
  while (bg->states) {
    bg_state *s = bg->states;
    bg->states = s->next;
    s->destroy(s->state);
    rill_free(s->key);
    rill_free(s);
  }
  pthread_cond_destroy(&bg->idle);
  pthread_cond_destroy(&bg->wake);
  pthread_mutex_destroy(&bg->mu);
  rill_free(bg);
}

rill_status *rill_bg_state(rill_bg *bg, const char *key,
                           rill_status *(*create)(const char *key, void **state),
                           void (*destroy)(void *state), void **out) {
  rill_status *st = NULL;
  pthread_mutex_lock(&bg->mu);
  bg_state *s = bg->states;
  while (s && !(s->destroy == destroy && strcmp(s->key, key) == 0)) s = s->next;
  if (!s) {
    s = rill_calloc(1, sizeof *s);
    if (!s || !(s->key = rill_strdup(key))) {
      rill_free(s);
      st = rill_oom();
    } else if ((st = create(key, &s->state))) {
      rill_free(s->key);
      rill_free(s);
    } else {
      s->destroy = destroy;
      s->next = bg->states;
      bg->states = s;
    }
  }
  if (!st) *out = s->state;
  pthread_mutex_unlock(&bg->mu);
  return st;
}

rill_status *rill_bg_each_state(rill_bg *bg, void (*destroy)(void *state),
                                rill_status *(*fn)(void *state, void *arg), void *arg) {
  /* Entries are only ever added at the head, so the list seen here stays valid. */
  pthread_mutex_lock(&bg->mu);
  bg_state *s = bg->states;
  pthread_mutex_unlock(&bg->mu);
  for (; s; s = s->next)
    if (s->destroy == destroy) RILL_TRY(fn(s->state, arg));
  return NULL;
}
