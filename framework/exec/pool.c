/* The compute pool. See pool.h.
 *
 * Jobs are a doubly linked list under the pool's mutex. A worker reads `gen` (bumped by
 * every post and notify), then walks the list, calling the help of each job that has
 * room for another helper; after a help that found work it starts over, and after a
 * walk that found none it waits for `gen` to move: spinning for SPIN_NS (pausing, then
 * yielding the core), then asleep on `cv`. It does not spin while it may not start on
 * a job (the cores are taken by running threads): it sleeps at once, and posts and
 * notifies wake nobody then. A worker inside a help holds the job's `helpers` count, so
 * rill_pool_remove, which unlists first and then waits for that count to reach zero,
 * returns only when no worker can touch the job any more. Sleeping: a waker bumps
 * `gen` and then reads `sleepers`, a sleeper counts itself in `sleepers` and then reads
 * `gen` under the mutex; both sequentially consistent, so either the waker sees the
 * sleeper (and signals under the mutex) or the sleeper sees the new `gen`. */
#define _GNU_SOURCE
#include "framework/exec/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/exec/profiler.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ volatile("yield")
#else
#define CPU_RELAX() ((void)0)
#endif

/* How long an idle worker spins before it sleeps (between the ops of a run the next
 * job comes within microseconds; a futex wake costs ~6 us on the build VMs), and how
 * much of that it pauses before yielding the core to threads with work. Private pools
 * spin as the executors' own workers did before the shared pool. */
#define SPIN_NS 100000
#define PRIVATE_SPIN_NS 40000
#define SPIN_PAUSE_NS 5000

struct rill_pool {
  bool shared; /* the core limit applies */
  int want;    /* workers to start */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  rill_pool_job *head, *tail; /* under mu */
  bool started, shutdown;     /* under mu */
  int nworkers;               /* started; under mu */
  pthread_t *threads;         /* private pools: joined by rill_pool_destroy */
  atomic_uint_fast64_t gen;
  atomic_int sleepers;
  atomic_uint hush;
  atomic_int busy; /* workers inside a help */
};

bool rill_pool_fit_cores = true;
rill_pool_mode rill_pool_layout = RILL_POOL_SHARED;

static atomic_int running; /* threads running executors' ops */
static int ncores;
static rill_pool shared_pool, parts_pool; /* parts_pool: RILL_POOL_PER_EXECUTOR's */
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int count_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 && n < 4096 ? (int)n : 1;
}

static bool pool_init(rill_pool *p, bool shared, int want) {
  *p = (rill_pool){.shared = shared, .want = want > 0 ? want : 0};
  atomic_init(&p->gen, 0);
  atomic_init(&p->sleepers, 0);
  atomic_init(&p->hush, 0);
  atomic_init(&p->busy, 0);
  if (pthread_mutex_init(&p->mu, NULL)) return false;
  if (pthread_cond_init(&p->cv, NULL)) {
    pthread_mutex_destroy(&p->mu);
    return false;
  }
  return true;
}

static void shared_make(void) {
  ncores = count_cores();
  /* A pool whose mutex cannot be made has no workers: every job is done by its poster. */
  if (!pool_init(&shared_pool, true, ncores - 1)) shared_pool.want = -1;
  if (!pool_init(&parts_pool, false, ncores - 1)) parts_pool.want = -1;
}

rill_pool *rill_pool_shared(void) {
  pthread_once(&shared_once, shared_make);
  return shared_pool.want < 0 ? NULL : &shared_pool;
}

rill_pool *rill_pool_for_parts(void) {
  pthread_once(&shared_once, shared_make);
  rill_pool *p = rill_pool_layout == RILL_POOL_PER_EXECUTOR ? &parts_pool : &shared_pool;
  return p->want < 0 ? NULL : p;
}

int rill_pool_cores(void) {
  pthread_once(&shared_once, shared_make);
  return ncores;
}

int rill_pool_workers(const rill_pool *pool) { return pool && pool->want > 0 ? pool->want : 0; }

void rill_pool_running_enter(void) { atomic_fetch_add_explicit(&running, 1, memory_order_relaxed); }
void rill_pool_running_leave(void) { atomic_fetch_sub_explicit(&running, 1, memory_order_relaxed); }

bool rill_pool_may_help(rill_pool *pool) {
  if (!pool || pool->want <= 0) return false;
  if (!pool->shared || !rill_pool_fit_cores) return true;
  return atomic_load_explicit(&running, memory_order_relaxed) +
             atomic_load_explicit(&pool->busy, memory_order_relaxed) <
         ncores;
}

/* ---------------------------------------------------------------- workers ----- */

/* One walk over the jobs; true when a help found work. */
static bool work_round(rill_pool *p) {
  bool did = false;
  pthread_mutex_lock(&p->mu);
  rill_pool_job *j = p->head;
  while (j && !did) {
    if (!rill_pool_may_help(p)) break;
    if (atomic_load_explicit(&j->helpers, memory_order_relaxed) >= j->max_helpers) {
      j = j->next;
      continue;
    }
    atomic_fetch_add_explicit(&j->helpers, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->busy, 1, memory_order_relaxed);
    pthread_mutex_unlock(&p->mu);
    did = j->help(j);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_sub_explicit(&p->busy, 1, memory_order_relaxed);
    rill_pool_job *next = j->listed ? j->next : p->head;
    /* release: what the help wrote is seen by the remover that reads zero */
    atomic_fetch_sub_explicit(&j->helpers, 1, memory_order_release);
    j = next;
  }
  pthread_mutex_unlock(&p->mu);
  return did;
}

/* Waits for `gen` to move past `seen`; false at shutdown. */
static bool worker_wait(rill_pool *p, uint64_t seen) {
  if (rill_pool_may_help(p)) {
    int64_t start = now_ns(), t = start;
    unsigned hush = atomic_load_explicit(&p->hush, memory_order_relaxed);
    for (unsigned k = 1;; k++) {
      if (atomic_load_explicit(&p->gen, memory_order_acquire) != seen) return true;
      if (atomic_load_explicit(&p->hush, memory_order_relaxed) != hush) break;
      if (t - start < SPIN_PAUSE_NS) CPU_RELAX();
      else sched_yield();
      if ((k & 15) == 0) {
        if ((t = now_ns()) - start > (p->shared ? SPIN_NS : PRIVATE_SPIN_NS)) break;
        if (!rill_pool_may_help(p)) break;
      }
    }
  }
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add(&p->sleepers, 1);
  while (atomic_load(&p->gen) == seen && !p->shutdown) pthread_cond_wait(&p->cv, &p->mu);
  atomic_fetch_sub(&p->sleepers, 1);
  bool alive = !p->shutdown;
  pthread_mutex_unlock(&p->mu);
  return alive;
}

static void *worker_main(void *arg) {
  rill_pool *p = arg;
  rill_prof_thread_name("rill compute worker");
  for (;;) {
    uint64_t seen = atomic_load_explicit(&p->gen, memory_order_acquire);
    if (work_round(p)) continue;
    if (!worker_wait(p, seen)) return NULL;
  }
}

/* Starts the workers once, under mu. Workers that cannot start are done without. */
static void pool_start(rill_pool *p) {
  if (p->started) return;
  p->started = true;
  bool joinable = !(p == &shared_pool || p == &parts_pool);
  if (joinable && !(p->threads = rill_calloc((size_t)p->want, sizeof *p->threads))) return;
  pthread_attr_t attr;
  if (pthread_attr_init(&attr)) return;
  if (!joinable && pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED)) {
    pthread_attr_destroy(&attr);
    return;
  }
  for (int i = 0; i < p->want; i++) {
    pthread_t tid;
    if (pthread_create(&tid, &attr, worker_main, p)) break;
    if (joinable) p->threads[p->nworkers] = tid;
    p->nworkers++;
  }
  pthread_attr_destroy(&attr);
}

/* ---------------------------------------------------------------- API --------- */

rill_pool *rill_pool_create(int workers) {
  if (workers < 1) return NULL;
  rill_pool *p = rill_malloc(sizeof *p);
  if (!p) return NULL;
  if (!pool_init(p, false, workers)) {
    rill_free(p);
    return NULL;
  }
  return p;
}

void rill_pool_destroy(rill_pool *p) {
  if (!p || p == &shared_pool || p == &parts_pool) return;
  pthread_mutex_lock(&p->mu);
  p->shutdown = true;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->nworkers; i++) pthread_join(p->threads[i], NULL);
  rill_free(p->threads);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  rill_free(p);
}

static void wake(rill_pool *p, bool all) {
  atomic_fetch_add(&p->gen, 1);
  if (atomic_load(&p->sleepers) > 0 && rill_pool_may_help(p)) {
    pthread_mutex_lock(&p->mu);
    if (all) pthread_cond_broadcast(&p->cv);
    else pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
  }
}

void rill_pool_post(rill_pool *p, rill_pool_job *job) {
  atomic_init(&job->helpers, 0);
  if (job->max_helpers < 1) job->max_helpers = 1;
  pthread_mutex_lock(&p->mu);
  pool_start(p);
  job->listed = true;
  job->next = NULL;
  job->prev = p->tail;
  if (p->tail) p->tail->next = job;
  else p->head = job;
  p->tail = job;
  pthread_mutex_unlock(&p->mu);
  wake(p, job->max_helpers > 1);
}

void rill_pool_notify(rill_pool *p) { wake(p, false); }

void rill_pool_remove(rill_pool *p, rill_pool_job *job) {
  pthread_mutex_lock(&p->mu);
  if (job->listed) {
    if (job->prev) job->prev->next = job->next;
    else p->head = job->next;
    if (job->next) job->next->prev = job->prev;
    else p->tail = job->prev;
    job->listed = false;
  }
  pthread_mutex_unlock(&p->mu);
  for (unsigned k = 0; atomic_load_explicit(&job->helpers, memory_order_acquire); k++) {
    if (k < 64) CPU_RELAX();
    else sched_yield();
  }
}

void rill_pool_hush(rill_pool *p) {
  if (p) atomic_fetch_add_explicit(&p->hush, 1, memory_order_relaxed);
}
