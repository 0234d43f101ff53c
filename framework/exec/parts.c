#include "framework/exec/parts.h"

#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "framework/exec/pool.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* A call is a job of the compute pool (pool.h): the calling thread posts it and takes
 * slot 0; each worker that helps takes the next free slot below the thread count.
 * Several calls may be in flight at once (kernels of different executors, or of one
 * run on different threads), each with its own job; a worker runs one at a time.
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
 * Stalls. When the calling thread, done with the parts it took, waits for the workers
 * more than STALL_NS and more than twice its own mean part, a worker was most likely
 * descheduled: the machine has fewer free cores than threads, and splitting only makes
 * each op wait for a thread the machine does not run (up to a scheduler time slice,
 * milliseconds). Calls then run inline for BACKOFF_NS, after which the pool is tried
 * again. A worker that is running has at most the part it holds left when the caller
 * runs out of parts, so a wait of up to a part is no stall: the GEMMs of ResNet-50's
 * convs split in parts of 0.3 to 1 ms, and counting those waits as stalls ran most of
 * its convs inline (1.6x slower on 2 cores). */
#define WAIT_SPIN_NS 50000
#define STALL_NS 300000
#define BACKOFF_NS 50000000

typedef struct parts_job {
  rill_pool_job job; /* first member */
  bool (*fn)(void *, int64_t, int);
  void *arg;
  int64_t n;
  int threads;
  atomic_int slots; /* slots handed out */
  atomic_int_fast64_t next[RILL_PARTS_MAX_THREADS]; /* per slot: its next part not yet taken */
  atomic_int_fast64_t done; /* parts run */
  atomic_bool ok;
} parts_job;

static atomic_uint_fast64_t pooled;
/* Under RILL_POOL_PER_EXECUTOR the parts pool serves one call at a time, as it did
 * before the shared pool: a call that finds it held runs inline. */
static atomic_flag legacy_busy = ATOMIC_FLAG_INIT;
static atomic_int_fast64_t backoff_until; /* CLOCK_MONOTONIC ns before which calls run inline */

bool rill_cpu_parts_backoff = true;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Runs parts until none is left: the slot's own range first, in order, then what is
 * left of the others' (from the next slot on). Returns how many it ran. */
static int64_t parts_take(parts_job *j, int slot) {
  int t = j->threads;
  int64_t ran = 0;
  for (int k = 0; k < t; k++) {
    int o = (slot + k) % t;
    int64_t end = (o + 1) * j->n / t;
    for (;;) {
      int64_t i = atomic_fetch_add(&j->next[o], 1);
      if (i >= end) break;
      if (!j->fn(j->arg, i, slot)) atomic_store(&j->ok, false);
      atomic_fetch_add(&j->done, 1);
      ran++;
    }
  }
  return ran;
}

static bool parts_help(rill_pool_job *job) {
  parts_job *j = (parts_job *)job;
  int slot = atomic_fetch_add(&j->slots, 1);
  if (slot >= j->threads) return false;
  return parts_take(j, slot) > 0;
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
  rill_pool *pool = threads < 2 ? NULL : rill_pool_for_parts();
  if (!pool || !rill_pool_may_help(pool) ||
      (rill_cpu_parts_backoff && now_ns() < atomic_load(&backoff_until)))
    return parts_inline(n, fn, arg);
  bool legacy = rill_pool_layout == RILL_POOL_PER_EXECUTOR;
  if (legacy && atomic_flag_test_and_set_explicit(&legacy_busy, memory_order_acquire))
    return parts_inline(n, fn, arg);
  if (threads > rill_pool_workers(pool) + 1) threads = rill_pool_workers(pool) + 1;
  parts_job j = {.job = {.help = parts_help, .max_helpers = (int)threads - 1},
                 .fn = fn, .arg = arg, .n = n, .threads = (int)threads};
  atomic_init(&j.slots, 1);
  for (int t = 0; t < (int)threads; t++) atomic_init(&j.next[t], t * n / threads);
  atomic_init(&j.done, 0);
  atomic_init(&j.ok, true);
  atomic_fetch_add(&pooled, 1);
  rill_pool_post(pool, &j.job);
  int64_t start = now_ns(), ran = parts_take(&j, 0), own = now_ns() - start;
  /* The parts taken by workers, then the workers' leaving the job. */
  int64_t waited = wait_for(&j.done, n);
  rill_pool_remove(pool, &j.job);
  if (waited > STALL_NS && (ran == 0 || waited > 2 * own / ran))
    atomic_store(&backoff_until, now_ns() + BACKOFF_NS);
  if (legacy) atomic_flag_clear_explicit(&legacy_busy, memory_order_release);
  return atomic_load(&j.ok);
}

void rill_cpu_parts_hush(void) { rill_pool_hush(rill_pool_for_parts()); }

uint64_t rill_cpu_parts_pooled_calls(void) { return atomic_load(&pooled); }
