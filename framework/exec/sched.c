/* The parallel schedule. See sched.h and doc/design/scheduler.md. */
#include "framework/exec/sched.h"

#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "framework/base/alloc.h"
#include "framework/exec/pool.h"
#include "framework/exec/profiler.h"

/* How long an idle thread spins before it parks: a futex wake costs ~6 us on the VMs
 * this runs on, a ready op found while spinning costs ~0.1 us. */
#define SPIN_NS 40000

#define NO_OP UINT32_MAX

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

int64_t rill_sched_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

typedef struct sched_run {
  const rill_sched_graph *g;
  const rill_sched_fns *fns;
  void *ctx;
  int64_t deadline_ns;
  atomic_uint remaining;           /* ops not yet completed (ran or skipped) */
  atomic_int stopped;              /* set by the first error, a cancel or the deadline */
  _Atomic(rill_status *) status;   /* the first error */
} sched_run;

struct rill_sched_io {
  uv_work_t req;
  struct rill_sched *s;
  sched_run *run;
  uint32_t op;
  int64_t queued_ns; /* when the op was handed to the loop, while the profiler is on */
  struct rill_sched_io *next;
};

size_t rill_sched_io_size(void) { return sizeof(rill_sched_io); }

struct rill_sched {
  rill_pool_job job; /* first member: the pool's workers help through it */
  int32_t nthreads;
  /* The workers: the process-wide pool, or (RILL_POOL_PER_EXECUTOR) the scheduler's
   * own; NULL: the calling thread runs every op. */
  rill_pool *pool;
  bool own_pool;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* Ready queue of compute ops: each op is queued at most once per run, so a flat array
   * of nops entries, reset at the start of a run, never wraps. Under mu. */
  uint32_t *q;
  size_t qcap, qhead, qtail;
  atomic_size_t qavail; /* qtail - qhead, read without the lock while spinning */
  int32_t parked;       /* the caller waits on cv; under mu */
  _Atomic(sched_run *) run;
  /* Cancel state: generation * 4 + 1 while a run is in progress, + 2 when cancelled. */
  atomic_uint_least64_t cstate;
  uint64_t gen;

  /* The I/O loop, started with the first graph that has blocking ops. */
  bool io_tried, io_ok;
  uv_loop_t loop;
  uv_async_t submit, stop;
  pthread_t io_thread;
  pthread_mutex_t io_mu;
  rill_sched_io *io_head, *io_tail; /* submitted, not yet queued to the pool; under io_mu */
};

/* ---------------------------------------------------------------- cancel ------ */

void rill_sched_begin(rill_sched *s) {
  s->gen++;
  atomic_store_explicit(&s->cstate, s->gen * 4 + 1, memory_order_release);
}

void rill_sched_end(rill_sched *s) {
  atomic_store_explicit(&s->cstate, s->gen * 4, memory_order_release);
}

bool rill_sched_cancelled(const rill_sched *s) {
  return (atomic_load_explicit(&((rill_sched *)s)->cstate, memory_order_relaxed) & 2) != 0;
}

void rill_sched_cancel(rill_sched *s) {
  uint_least64_t v = atomic_load_explicit(&s->cstate, memory_order_acquire);
  do {
    if (!(v & 1) || (v & 2)) return;
  } while (!atomic_compare_exchange_weak_explicit(&s->cstate, &v, v | 2, memory_order_acq_rel,
                                                  memory_order_acquire));
  /* Wake a parked caller so it notices. */
  pthread_mutex_lock(&s->mu);
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

/* ---------------------------------------------------------------- queue ------- */

static void push(rill_sched *s, uint32_t op) {
  pthread_mutex_lock(&s->mu);
  s->q[s->qtail++] = op;
  atomic_fetch_add_explicit(&s->qavail, 1, memory_order_release);
  if (s->parked) pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
  if (s->pool) rill_pool_notify(s->pool);
}

static bool try_pop(rill_sched *s, uint32_t *op) {
  if (!atomic_load_explicit(&s->qavail, memory_order_acquire)) return false;
  bool got = false;
  pthread_mutex_lock(&s->mu);
  if (s->qhead < s->qtail) {
    *op = s->q[s->qhead++];
    atomic_fetch_sub_explicit(&s->qavail, 1, memory_order_relaxed);
    got = true;
  }
  pthread_mutex_unlock(&s->mu);
  return got;
}

/* ---------------------------------------------------------------- ops --------- */

static void fail(sched_run *r, rill_status *st) {
  rill_status *none = NULL;
  if (!atomic_compare_exchange_strong_explicit(&r->status, &none, st, memory_order_acq_rel,
                                               memory_order_acquire))
    rill_status_destroy(st);
  atomic_store_explicit(&r->stopped, 1, memory_order_release);
}

/* Stops the run for a cancel or the deadline, naming the first op it keeps from running. */
static bool check_stop(rill_sched *s, sched_run *r, uint32_t op) {
  if (atomic_load_explicit(&r->stopped, memory_order_acquire)) return true;
  rill_status *st = NULL;
  if (rill_sched_cancelled(s))
    st = rill_error(RILL_CANCELLED, "the run was cancelled");
  else if (r->deadline_ns && rill_sched_now_ns() >= r->deadline_ns)
    st = rill_error(RILL_DEADLINE_EXCEEDED, "the run passed its deadline");
  if (!st) return false;
  fail(r, r->fns->wrap(r->ctx, op, st));
  return true;
}

static void run_one(rill_sched *s, sched_run *r, uint32_t op) {
  if (!check_stop(s, r, op)) {
    rill_status *st = r->fns->run(r->ctx, op);
    if (st) fail(r, st);
  }
  if (r->fns->done) r->fns->done(r->ctx, op);
}

static void io_submit(rill_sched *s, sched_run *r, uint32_t op);

/* Releases op's successors: blocking ones go to the I/O loop; of the compute ones, the
 * first becomes *next (when next is not NULL) and the others are queued. */
static void release_successors(rill_sched *s, sched_run *r, uint32_t op, uint32_t *next) {
  const rill_sched_graph *g = r->g;
  for (uint32_t k = g->succ_start[op]; k < g->succ_start[op + 1]; k++) {
    uint32_t j = g->succ[k];
    if (atomic_fetch_sub_explicit(&g->pending[j], 1, memory_order_acq_rel) != 1) continue;
    if (g->blocking[j] && s->io_ok && !atomic_load_explicit(&r->stopped, memory_order_relaxed))
      io_submit(s, r, j);
    else if (next && *next == NO_OP)
      *next = j;
    else
      push(s, j);
  }
}

static void complete(rill_sched *s, sched_run *r) {
  if (atomic_fetch_sub_explicit(&r->remaining, 1, memory_order_acq_rel) != 1) return;
  pthread_mutex_lock(&s->mu);
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

/* Runs op and then, depth first, one op it made ready, until none is left. */
static void run_chain(rill_sched *s, sched_run *r, uint32_t op) {
  while (op != NO_OP) {
    run_one(s, r, op);
    uint32_t next = NO_OP;
    release_successors(s, r, op, &next);
    complete(s, r);
    op = next;
  }
}

/* ---------------------------------------------------------------- I/O ---------- */

static _Thread_local bool t_named;

static void io_work(uv_work_t *req) {
  rill_sched_io *it = (rill_sched_io *)req;
  if (rill_prof_active() && it->queued_ns && it->run->fns->name) {
    if (!t_named) {
      rill_prof_thread_name("rill io pool");
      t_named = true;
    }
    int64_t t_start = rill_prof_now();
    run_one(it->s, it->run, it->op);
    const char *type;
    int32_t block, index;
    it->run->fns->name(it->run->ctx, it->op, &type, &block, &index);
    rill_prof_async_op(type, block, index, it->queued_ns, t_start, rill_prof_now());
  } else {
    run_one(it->s, it->run, it->op);
  }
  /* Compute successors go to the compute threads, not onto this pool thread. */
  release_successors(it->s, it->run, it->op, NULL);
}

static void io_after(uv_work_t *req, int status) {
  (void)status;
  rill_sched_io *it = (rill_sched_io *)req;
  complete(it->s, it->run);
}

static void on_submit(uv_async_t *a) {
  rill_sched *s = a->data;
  pthread_mutex_lock(&s->io_mu);
  rill_sched_io *list = s->io_head;
  s->io_head = s->io_tail = NULL;
  pthread_mutex_unlock(&s->io_mu);
  while (list) {
    rill_sched_io *next = list->next;
    uv_queue_work(&s->loop, &list->req, io_work, io_after);
    list = next;
  }
}

static void on_stop(uv_async_t *a) {
  rill_sched *s = a->data;
  uv_close((uv_handle_t *)&s->submit, NULL);
  uv_close((uv_handle_t *)&s->stop, NULL);
}

static void *io_main(void *arg) {
  rill_sched *s = arg;
  rill_prof_thread_name("rill io loop");
  uv_run(&s->loop, UV_RUN_DEFAULT);
  return NULL;
}

static void io_submit(rill_sched *s, sched_run *r, uint32_t op) {
  rill_sched_io *it = &r->g->io[r->g->io_index[op]];
  it->s = s;
  it->run = r;
  it->op = op;
  it->queued_ns = rill_prof_active() ? rill_prof_now() : 0;
  it->next = NULL;
  pthread_mutex_lock(&s->io_mu);
  if (s->io_tail)
    s->io_tail->next = it;
  else
    s->io_head = it;
  s->io_tail = it;
  pthread_mutex_unlock(&s->io_mu);
  uv_async_send(&s->submit);
}

/* Starts the loop thread once; without it, blocking ops run on the compute threads. */
static void io_start(rill_sched *s) {
  if (s->io_tried) return;
  s->io_tried = true;
  if (uv_loop_init(&s->loop)) return;
  if (uv_async_init(&s->loop, &s->submit, on_submit)) {
    uv_loop_close(&s->loop);
    return;
  }
  if (uv_async_init(&s->loop, &s->stop, on_stop)) {
    uv_close((uv_handle_t *)&s->submit, NULL);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    uv_loop_close(&s->loop);
    return;
  }
  s->submit.data = s->stop.data = s;
  if (pthread_create(&s->io_thread, NULL, io_main, s)) {
    on_stop(&s->stop);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    uv_loop_close(&s->loop);
    return;
  }
  s->io_ok = true;
}

/* ---------------------------------------------------------------- threads ------ */

/* The calling thread waits for a queued op; false when the run is complete. It turns
 * a cancel or the deadline into a stop while it waits, and while it sleeps it does not
 * count as running (pool.h), so a worker may take its place on the core. */
static bool take(rill_sched *s, sched_run *run, uint32_t *op) {
  int64_t spin_until = 0;
  for (unsigned i = 0;; i++) {
    if (try_pop(s, op)) return true;
    if (!atomic_load_explicit(&run->remaining, memory_order_acquire)) return false;
    if ((i & 63) == 0) {
      int64_t now = rill_sched_now_ns();
      if (!spin_until) spin_until = now + SPIN_NS;
      if (now >= spin_until) break;
    }
    cpu_relax();
  }
  pthread_mutex_lock(&s->mu);
  for (;;) {
    if (s->qhead < s->qtail) {
      *op = s->q[s->qhead++];
      atomic_fetch_sub_explicit(&s->qavail, 1, memory_order_relaxed);
      pthread_mutex_unlock(&s->mu);
      return true;
    }
    if (!atomic_load_explicit(&run->remaining, memory_order_acquire)) break;
    bool cancel = rill_sched_cancelled(s);
    bool late = run->deadline_ns && rill_sched_now_ns() >= run->deadline_ns;
    if ((cancel || late) && !atomic_load_explicit(&run->stopped, memory_order_acquire)) {
      /* Ops still running finish; nothing new starts. */
      pthread_mutex_unlock(&s->mu);
      fail(run, cancel ? rill_error(RILL_CANCELLED, "the run was cancelled while ops were running")
                       : rill_error(RILL_DEADLINE_EXCEEDED,
                                    "the run passed its deadline while ops were running"));
      pthread_mutex_lock(&s->mu);
      continue;
    }
    s->parked++;
    rill_pool_running_leave();
    if (run->deadline_ns && !atomic_load_explicit(&run->stopped, memory_order_relaxed)) {
      struct timespec ts = {(time_t)(run->deadline_ns / 1000000000), (long)(run->deadline_ns % 1000000000)};
      pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    } else {
      pthread_cond_wait(&s->cv, &s->mu);
    }
    rill_pool_running_enter();
    s->parked--;
  }
  pthread_mutex_unlock(&s->mu);
  return false;
}

/* A pool worker's help: the queued ops of the run in progress (a queued op belongs to
 * it, and the run cannot end before the op does), each with the chain it makes ready. */
static bool sched_help(rill_pool_job *job) {
  rill_sched *s = (rill_sched *)job;
  sched_run *r = atomic_load_explicit(&s->run, memory_order_acquire);
  if (!r) return false;
  bool did = false;
  uint32_t op;
  while (try_pop(s, &op)) {
    run_chain(s, r, op);
    did = true;
  }
  return did;
}

/* ---------------------------------------------------------------- API --------- */

rill_status *rill_sched_create(int32_t nthreads, rill_sched **out) {
  rill_sched *s = rill_calloc(1, sizeof *s);
  if (!s) return rill_oom();
  s->nthreads = nthreads > 0 ? nthreads : 1;
  if (pthread_mutex_init(&s->mu, NULL)) {
    rill_free(s);
    return rill_error(RILL_INTERNAL, "scheduler: cannot create a mutex");
  }
  /* Deadlines are CLOCK_MONOTONIC times: the timed wait must use that clock. */
  pthread_condattr_t ca;
  bool cv_ok = pthread_condattr_init(&ca) == 0;
  if (cv_ok) {
    cv_ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&s->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
  }
  if (!cv_ok) {
    pthread_mutex_destroy(&s->mu);
    rill_free(s);
    return rill_error(RILL_INTERNAL, "scheduler: cannot create a condition variable");
  }
  if (pthread_mutex_init(&s->io_mu, NULL)) {
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    rill_free(s);
    return rill_error(RILL_INTERNAL, "scheduler: cannot create a mutex");
  }
  atomic_init(&s->qavail, 0);
  atomic_init(&s->run, NULL);
  atomic_init(&s->cstate, 0);
  if (s->nthreads > 1) {
    s->own_pool = rill_pool_layout == RILL_POOL_PER_EXECUTOR;
    s->pool = s->own_pool ? rill_pool_create(s->nthreads - 1) : rill_pool_shared();
  }
  *out = s;
  return NULL;
}

void rill_sched_destroy(rill_sched *s) {
  if (!s) return;
  if (s->own_pool) rill_pool_destroy(s->pool);
  if (s->io_ok) {
    uv_async_send(&s->stop);
    pthread_join(s->io_thread, NULL);
    uv_loop_close(&s->loop);
  }
  pthread_mutex_destroy(&s->io_mu);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  rill_free(s->q);
  rill_free(s);
}

rill_status *rill_sched_run(rill_sched *s, const rill_sched_graph *g, const rill_sched_fns *fns,
                            void *ctx, int64_t deadline_ns) {
  if (!g->nops) return NULL;
  if (s->qcap < g->nops) {
    uint32_t *q = rill_malloc(g->nops * sizeof *q);
    if (!q) return rill_oom();
    rill_free(s->q);
    s->q = q;
    s->qcap = g->nops;
  }
  if (g->nio) io_start(s);

  sched_run r = {.g = g, .fns = fns, .ctx = ctx, .deadline_ns = deadline_ns};
  atomic_init(&r.remaining, g->nops);
  atomic_init(&r.stopped, 0);
  atomic_init(&r.status, NULL);
  for (uint32_t i = 0; i < g->nops; i++)
    atomic_store_explicit(&g->pending[i], g->npred[i], memory_order_relaxed);

  /* Publish the run; the queue lock orders it before any worker sees a queued op. */
  pthread_mutex_lock(&s->mu);
  s->qhead = s->qtail = 0;
  atomic_store_explicit(&s->run, &r, memory_order_release);
  pthread_mutex_unlock(&s->mu);
  if (s->pool) {
    s->job.help = sched_help;
    s->job.max_helpers = s->nthreads - 1;
    rill_pool_post(s->pool, &s->job);
  }

  uint32_t first = NO_OP;
  for (uint32_t k = 0; k < g->nroots; k++) {
    uint32_t op = g->roots[k];
    if (g->blocking[op] && s->io_ok)
      io_submit(s, &r, op);
    else if (first == NO_OP)
      first = op;
    else
      push(s, op);
  }
  /* The calling thread works too, until every op is done. */
  run_chain(s, &r, first);
  uint32_t op;
  while (take(s, &r, &op)) run_chain(s, &r, op);
  if (s->pool) rill_pool_remove(s->pool, &s->job);

  pthread_mutex_lock(&s->mu);
  atomic_store_explicit(&s->run, NULL, memory_order_release);
  pthread_mutex_unlock(&s->mu);
  return atomic_load_explicit(&r.status, memory_order_acquire);
}
