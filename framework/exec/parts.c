#include "framework/exec/parts.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* The pool. One call (a "job") at a time holds it (`busy`). A job is published by
 * writing its fields and then storing `state` = (generation << 1) | 1; it is closed by
 * clearing the low bit. A worker that sees a new generation counts itself in `joined`
 * before it reads `state` again: it reads the job's fields only while the job is open,
 * and the caller closes the job and waits for `joined` to reach zero before it lets the
 * pool go, so no fields change under a worker that reads them.
 *
 * Parts are handed out by ranges: slot t owns parts [t n / T, (t + 1) n / T) of a job
 * on T threads, runs them in order, then takes what is left of the other ranges. A
 * thread that is late or slow loses its parts to the others, as with one shared
 * counter, while in the usual case the same thread computes the same range of every
 * op's parts: consecutive ops split the same way (1x1 convs by output positions,
 * depthwise convs by channels) find their inputs in the cache of the core that wrote
 * them rather than another core's. Handed out from one counter, gesture_rec ran 1.06x
 * slower (parts of an op went to either thread by who came first).
 *
 * Idle workers spin on `state` (pausing for SPIN_PAUSE_NS, then yielding the core,
 * which on a machine with fewer free cores than threads hands it to the thread with work)
 * for SPIN_NS, then sleep on `cv`; the caller of a job wakes them when any sleeps
 * (`sleepers`, checked after the state store: both sides use sequentially consistent
 * operations, so either the caller sees the sleeper or the sleeper sees the new state
 * before it waits). Between the ops of a model run the workers are still spinning, so a
 * part reaches a worker within a microsecond. rill_cpu_parts_hush ends the spinning
 * early (`hush`), before a library call that runs threads of its own.
 *
 * Stalls. When the calling thread, done with the parts it took, waits more than
 * STALL_NS for the workers, a worker was most likely descheduled: the machine has fewer
 * free cores than threads, and splitting only makes each op wait for a thread the
 * machine does not run (up to a scheduler time slice, milliseconds). Calls then run
 * inline for BACKOFF_NS, after which the pool is tried again. */
#define SPIN_NS 100000
#define SPIN_PAUSE_NS 5000
#define WAIT_SPIN_NS 50000
#define STALL_NS 300000
#define BACKOFF_NS 50000000

static struct {
  atomic_flag busy;
  atomic_uint_fast64_t state;
  atomic_int_fast64_t joined;
  atomic_int sleepers;
  atomic_uint hush; /* bumped by rill_cpu_parts_hush: spinning workers go to sleep */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int nworkers; /* started workers; under mu */
  /* the job: written by the holder while closed */
  bool (*fn)(void *, int64_t, int);
  void *arg;
  int64_t n;
  int threads;
  atomic_int_fast64_t next[RILL_PARTS_MAX_THREADS]; /* per slot: its next part not yet taken */
  atomic_int_fast64_t done; /* parts run */
  atomic_bool ok;
  atomic_uint_fast64_t pooled;
  atomic_int_fast64_t backoff_until; /* CLOCK_MONOTONIC ns before which calls run inline */
} pool = {
    .busy = ATOMIC_FLAG_INIT,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .cv = PTHREAD_COND_INITIALIZER,
};

bool rill_cpu_parts_backoff = true;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Runs parts until none is left: the slot's own range first, in order, then what is
 * left of the others' (from the next slot on). */
static void parts_take(int slot) {
  int t = pool.threads;
  for (int k = 0; k < t; k++) {
    int o = (slot + k) % t;
    int64_t end = (o + 1) * pool.n / t;
    for (;;) {
      int64_t i = atomic_fetch_add(&pool.next[o], 1);
      if (i >= end) break;
      if (!pool.fn(pool.arg, i, slot)) atomic_store(&pool.ok, false);
      atomic_fetch_add(&pool.done, 1);
    }
  }
}

/* Waits until `state` differs from seen: spinning first, then asleep. */
static uint64_t worker_wait(uint64_t seen) {
  int64_t start = now_ns(), t = start;
  unsigned hush = atomic_load_explicit(&pool.hush, memory_order_relaxed);
  for (unsigned k = 1;; k++) {
    uint64_t s = atomic_load_explicit(&pool.state, memory_order_relaxed);
    if (s != seen) return s;
    if (atomic_load_explicit(&pool.hush, memory_order_relaxed) != hush) break;
    if (t - start < SPIN_PAUSE_NS) CPU_RELAX();
    else sched_yield();
    if ((k & 15) == 0 && (t = now_ns()) - start > SPIN_NS) break;
  }
  pthread_mutex_lock(&pool.mu);
  atomic_fetch_add(&pool.sleepers, 1);
  uint64_t s;
  while ((s = atomic_load(&pool.state)) == seen) pthread_cond_wait(&pool.cv, &pool.mu);
  atomic_fetch_sub(&pool.sleepers, 1);
  pthread_mutex_unlock(&pool.mu);
  return s;
}

static void *worker_main(void *p) {
  int slot = (int)(intptr_t)p;
  uint64_t seen = atomic_load(&pool.state);
  for (;;) {
    seen = worker_wait(seen);
    atomic_fetch_add(&pool.joined, 1);
    uint64_t s = atomic_load(&pool.state);
    if ((s & 1) && slot < pool.threads) parts_take(slot);
    seen = s;
    atomic_fetch_sub(&pool.joined, 1);
  }
  return NULL;
}

/* Starts workers up to `want` (slots 1 .. want); returns how many there are. */
static int pool_grow(int want) {
  pthread_mutex_lock(&pool.mu);
  pthread_attr_t attr;
  if (pool.nworkers < want && pthread_attr_init(&attr) == 0) {
    if (pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0)
      while (pool.nworkers < want) {
        pthread_t tid;
        if (pthread_create(&tid, &attr, worker_main, (void *)(intptr_t)(pool.nworkers + 1)) != 0) break;
        pool.nworkers++;
      }
    pthread_attr_destroy(&attr);
  }
  int have = pool.nworkers;
  pthread_mutex_unlock(&pool.mu);
  return have;
}

/* Waits until *v == want: spinning, then yielding the core to the threads being waited
 * for. Returns the nanoseconds waited past the first few spins (0 for a short wait). */
static int64_t wait_for(const atomic_int_fast64_t *v, int64_t want) {
  int64_t since = 0, t = 0;
  for (unsigned k = 1;; k++) {
    if (atomic_load(v) == want) return since ? t - since : 0;
    CPU_RELAX();
    if ((k & 63) == 0) {
      t = now_ns();
      if (!since) since = t;
      else if (t - since > WAIT_SPIN_NS) sched_yield();
    }
  }
}

static bool parts_inline(int64_t n, bool (*fn)(void *, int64_t, int), void *arg) {
  bool ok = true;
  for (int64_t i = 0; i < n; i++) ok = fn(arg, i, 0) && ok;
  return ok;
}

bool rill_cpu_parts(int64_t threads, int64_t n, bool (*fn)(void *arg, int64_t part, int slot),
                    void *arg) {
  if (n <= 0) return true;
  if (threads > n) threads = n;
  if (threads > RILL_PARTS_MAX_THREADS) threads = RILL_PARTS_MAX_THREADS;
  if (threads < 2 || atomic_flag_test_and_set_explicit(&pool.busy, memory_order_acquire))
    return parts_inline(n, fn, arg);
  if (rill_cpu_parts_backoff && now_ns() < atomic_load(&pool.backoff_until)) {
    atomic_flag_clear_explicit(&pool.busy, memory_order_release);
    return parts_inline(n, fn, arg);
  }
  int have = pool_grow((int)threads - 1);
  if (have < 1) {
    atomic_flag_clear_explicit(&pool.busy, memory_order_release);
    return parts_inline(n, fn, arg);
  }
  if (threads > have + 1) threads = have + 1;
  pool.fn = fn;
  pool.arg = arg;
  pool.n = n;
  pool.threads = (int)threads;
  for (int t = 0; t < (int)threads; t++) atomic_store(&pool.next[t], t * n / threads);
  atomic_store(&pool.done, 0);
  atomic_store(&pool.ok, true);
  atomic_fetch_add(&pool.pooled, 1);
  uint64_t open = ((atomic_load(&pool.state) >> 1) + 1) << 1 | 1;
  atomic_store(&pool.state, open);
  if (atomic_load(&pool.sleepers) > 0) {
    pthread_mutex_lock(&pool.mu);
    pthread_cond_broadcast(&pool.cv);
    pthread_mutex_unlock(&pool.mu);
  }
  parts_take(0);
  /* The parts taken by workers, then the workers' leaving the closed job. */
  int64_t waited = wait_for(&pool.done, n);
  atomic_store(&pool.state, open & ~(uint64_t)1);
  waited += wait_for(&pool.joined, 0);
  if (waited > STALL_NS) atomic_store(&pool.backoff_until, now_ns() + BACKOFF_NS);
  bool ok = atomic_load(&pool.ok);
  atomic_flag_clear_explicit(&pool.busy, memory_order_release);
  return ok;
}

void rill_cpu_parts_hush(void) { atomic_fetch_add_explicit(&pool.hush, 1, memory_order_relaxed); }

uint64_t rill_cpu_parts_pooled_calls(void) { return atomic_load(&pool.pooled); }
