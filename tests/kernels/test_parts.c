/* rill_cpu_parts (framework/exec/parts.c): every part runs exactly once on a slot below
 * the thread count, whatever the thread count; a part's failure is reported after every
 * part ran; a part may call rill_cpu_parts again (it runs inline); workers sent to
 * sleep are woken by the next call; a wait for a worker's part is a stall (calls run
 * inline for a while) only when it is far longer than the caller's own parts. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <time.h>

#include "framework/exec/parts.h"

enum { MAX_N = 64 };

typedef struct count_arg {
  atomic_int runs[MAX_N];
  atomic_int bad_slot;
  int64_t threads, fail; /* fail: the part that returns false, or -1 */
} count_arg;

static bool count_part(void *p, int64_t i, int slot) {
  count_arg *a = p;
  atomic_fetch_add(&a->runs[i], 1);
  if (slot < 0 || slot >= (a->threads < 1 ? 1 : a->threads)) atomic_fetch_add(&a->bad_slot, 1);
  return i != a->fail;
}

static void run_counted(int64_t threads, int64_t n, int64_t fail) {
  count_arg a = {.threads = threads, .fail = fail};
  for (int i = 0; i < MAX_N; i++) atomic_init(&a.runs[i], 0);
  atomic_init(&a.bad_slot, 0);
  bool ok = rill_cpu_parts(threads, n, count_part, &a);
  cr_expect_eq(ok, fail < 0 || fail >= n, "%lld threads, %lld parts, part %lld fails: returned %d",
               (long long)threads, (long long)n, (long long)fail, ok);
  for (int64_t i = 0; i < n; i++)
    cr_expect_eq(atomic_load(&a.runs[i]), 1, "%lld threads, %lld parts: part %lld ran %d times",
                 (long long)threads, (long long)n, (long long)i, atomic_load(&a.runs[i]));
  cr_expect_eq(atomic_load(&a.bad_slot), 0, "%lld threads: a slot out of range", (long long)threads);
}

Test(parts, every_part_runs_once_on_a_valid_slot) {
  for (int64_t threads = 0; threads <= 4; threads++)
    for (int64_t n = 0; n <= 40; n += (n < 5 ? 1 : 7))
      for (int round = 0; round < 3; round++) run_counted(threads, n, -1);
}

Test(parts, a_failing_part_fails_the_call_after_every_part_ran) {
  for (int64_t threads = 1; threads <= 3; threads++) {
    run_counted(threads, 12, 0);
    run_counted(threads, 12, 11);
    run_counted(threads, 12, 5);
  }
}

static bool nested_part(void *p, int64_t i, int slot) {
  (void)slot;
  count_arg *inner = (count_arg *)p + i;
  inner->threads = 2;
  inner->fail = -1;
  return rill_cpu_parts(2, 8, count_part, inner);
}

Test(parts, a_part_may_split_again) {
  static count_arg inner[6];
  for (int k = 0; k < 6; k++) {
    for (int i = 0; i < MAX_N; i++) atomic_init(&inner[k].runs[i], 0);
    atomic_init(&inner[k].bad_slot, 0);
  }
  cr_assert(rill_cpu_parts(2, 6, nested_part, inner));
  for (int k = 0; k < 6; k++)
    for (int i = 0; i < 8; i++)
      cr_expect_eq(atomic_load(&inner[k].runs[i]), 1, "inner call %d, part %d", k, i);
}

Test(parts, hushed_workers_are_woken) {
  for (int round = 0; round < 5; round++) {
    rill_cpu_parts_hush();
    run_counted(2, 16, -1);
  }
}

/* A worker that is slow on its own range (each of its parts takes 20 ms) loses the
 * rest of that range to the calling thread, which finished its own: every part still
 * runs once, and slot 0 runs parts of slot 1's range [4, 8). */
typedef struct slow_arg {
  atomic_int runs[8];
  atomic_int by_caller_in_second_half;
} slow_arg;

static bool slow_part(void *p, int64_t i, int slot) {
  slow_arg *a = p;
  atomic_fetch_add(&a->runs[i], 1);
  if (slot == 0 && i >= 4) atomic_fetch_add(&a->by_caller_in_second_half, 1);
  if (slot != 0) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return true;
}

Test(parts, a_slow_threads_range_is_taken_by_the_others) {
  slow_arg a;
  for (int i = 0; i < 8; i++) atomic_init(&a.runs[i], 0);
  atomic_init(&a.by_caller_in_second_half, 0);
  rill_cpu_parts_backoff = false; /* the slow worker must not turn the pool off */
  cr_assert(rill_cpu_parts(2, 8, slow_part, &a));
  for (int i = 0; i < 8; i++) cr_expect_eq(atomic_load(&a.runs[i]), 1, "part %d ran %d times", i, atomic_load(&a.runs[i]));
  cr_expect_geq(atomic_load(&a.by_caller_in_second_half), 1, "the caller took none of the slow range");
  rill_cpu_parts_backoff = true;
}

/* Stalls (parts.c): a caller that waits for a worker's part about as long as a part
 * takes is waiting for work, not for a descheduled thread, and the pool stays on; a
 * wait far beyond the caller's own parts turns it off for a while (calls run inline).
 * Parts sleep: slot 0's take caller_us each, the workers' worker_us. Which slot ran
 * part 1 depends on whether the worker joined in time, so each check is made when the
 * worker ran it. */
typedef struct timed_arg {
  int caller_us, worker_us;
  atomic_int part1_slot;
} timed_arg;

static bool timed_part(void *p, int64_t i, int slot) {
  timed_arg *a = p;
  if (i == 1) atomic_store(&a->part1_slot, slot);
  int us = slot == 0 ? a->caller_us : a->worker_us;
  struct timespec ts = {0, us * 1000L};
  if (us) nanosleep(&ts, NULL);
  return true;
}

/* Whether a call of 2 parts on 2 threads after `a`'s call went to the pool. */
static bool next_call_pooled(timed_arg *a) {
  cr_assert(rill_cpu_parts(2, 2, timed_part, a));
  uint64_t before = rill_cpu_parts_pooled_calls();
  timed_arg quick = {.caller_us = 0};
  cr_assert(rill_cpu_parts(2, 2, timed_part, &quick));
  return rill_cpu_parts_pooled_calls() == before + 1;
}

/* On a loaded machine a sleeping thread may wake late, which stretches a wait or the
 * caller's own part; so each test looks for its outcome over several rounds in which the
 * worker ran part 1, rather than in one. */
Test(parts, a_wait_of_about_a_part_keeps_the_pool) {
  int worker_ran = 0;
  for (int round = 0; round < 40 && worker_ran < 10; round++) {
    /* the caller's part 5 ms, the worker's 6 ms: the caller waits ~1 ms */
    timed_arg a = {.caller_us = 5000, .worker_us = 6000};
    atomic_init(&a.part1_slot, -1);
    bool pooled = next_call_pooled(&a);
    if (atomic_load(&a.part1_slot) != 1) continue;
    worker_ran++;
    if (pooled) return;
  }
  cr_expect(false, "in %d rounds whose worker ran part 1, a ~1 ms wait for a 6 ms part always turned the pool off",
            worker_ran);
}

Test(parts, a_wait_far_beyond_the_callers_parts_runs_calls_inline) {
  int worker_ran = 0;
  for (int round = 0; round < 40 && worker_ran < 10; round++) {
    /* the caller's part 0.5 ms (time for the worker to join), the worker's 10 ms */
    timed_arg a = {.caller_us = 500, .worker_us = 10000};
    atomic_init(&a.part1_slot, -1);
    bool pooled = next_call_pooled(&a);
    if (atomic_load(&a.part1_slot) != 1) continue;
    worker_ran++;
    if (!pooled) return;
  }
  cr_expect(false, "in %d rounds whose worker ran part 1, a ~10 ms wait for the worker never turned the pool off",
            worker_ran);
}
