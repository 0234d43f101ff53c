/* The compute pool (framework/exec/pool.c): workers help a posted job, removing a job
 * waits for the workers inside it, the shared pool stays off the cores that running
 * executors hold (parts then run on the caller alone), both layouts give the same
 * results, and predictor clones under either layout agree bit for bit. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "framework/exec/parts.h"
#include "framework/exec/pool.h"
#include "rill.h"

typedef struct test_job {
  rill_pool_job job; /* first member */
  atomic_int entered, left, calls;
  int sleep_ms;
} test_job;

static bool test_help(rill_pool_job *j) {
  test_job *t = (test_job *)j;
  atomic_fetch_add(&t->calls, 1);
  if (atomic_exchange(&t->entered, 1)) return false;
  if (t->sleep_ms) {
    struct timespec ts = {0, t->sleep_ms * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  atomic_store(&t->left, 1);
  return true;
}

static void job_init(test_job *t, int sleep_ms) {
  memset(t, 0, sizeof *t);
  t->job.help = test_help;
  t->job.max_helpers = 1;
  t->sleep_ms = sleep_ms;
  atomic_init(&t->entered, 0);
  atomic_init(&t->left, 0);
  atomic_init(&t->calls, 0);
}

static void wait_entered(test_job *t) {
  while (!atomic_load(&t->entered)) {
    struct timespec ts = {0, 100 * 1000};
    nanosleep(&ts, NULL);
  }
}

Test(pool, a_private_pool_helps_and_remove_waits_for_the_helper) {
  rill_pool *p = rill_pool_create(2);
  cr_assert(p);
  cr_expect_eq(rill_pool_workers(p), 2);
  cr_expect(rill_pool_may_help(p), "a private pool has no core limit");
  for (int round = 0; round < 3; round++) {
    test_job t;
    job_init(&t, 20);
    rill_pool_post(p, &t.job);
    wait_entered(&t); /* a worker took it (it never finishes otherwise) */
    rill_pool_remove(p, &t.job);
    cr_expect_eq(atomic_load(&t.left), 1, "remove returned while a worker was inside the job");
    int calls = atomic_load(&t.calls);
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cr_expect_eq(atomic_load(&t.calls), calls, "a worker called a removed job");
  }
  rill_pool_destroy(p);
}

Test(pool, the_shared_pool_is_sized_to_the_cores) {
  int cores = rill_pool_cores();
  cr_assert_geq(cores, 1);
  cr_expect_eq(rill_pool_workers(rill_pool_shared()), cores - 1);
  cr_expect_eq(rill_pool_workers(NULL), 0);
  cr_expect(!rill_pool_may_help(NULL));
}

typedef struct slot_arg {
  atomic_int runs[64];
  atomic_int off_caller;
} slot_arg;

static bool slot_part(void *p, int64_t i, int slot) {
  slot_arg *a = p;
  atomic_fetch_add(&a->runs[i], 1);
  if (slot != 0) atomic_fetch_add(&a->off_caller, 1);
  return true;
}

/* With as many threads running executors as there are cores, no worker may start:
 * parts run on the caller (slot 0), and no call is posted to the pool. */
Test(pool, no_worker_joins_while_running_threads_hold_the_cores) {
  int cores = rill_pool_cores();
  for (int i = 0; i < cores; i++) rill_pool_running_enter();
  cr_expect(!rill_pool_may_help(rill_pool_shared()), "%d running threads on %d cores, yet workers may help",
            cores, cores);
  uint64_t pooled = rill_cpu_parts_pooled_calls();
  for (int round = 0; round < 20; round++) {
    slot_arg a;
    for (int i = 0; i < 64; i++) atomic_init(&a.runs[i], 0);
    atomic_init(&a.off_caller, 0);
    cr_assert(rill_cpu_parts(4, 64, slot_part, &a));
    for (int i = 0; i < 64; i++) cr_expect_eq(atomic_load(&a.runs[i]), 1, "part %d", i);
    cr_expect_eq(atomic_load(&a.off_caller), 0, "parts ran off the caller while the cores were taken");
  }
  cr_expect_eq(rill_cpu_parts_pooled_calls(), pooled, "a call went to the pool while the cores were taken");
  for (int i = 0; i < cores; i++) rill_pool_running_leave();
  if (cores > 1) cr_expect(rill_pool_may_help(rill_pool_shared()), "the cores were given back, workers may not help");
}

/* A shared-pool job with a worker allowed: a worker joins it. */
Test(pool, the_shared_pool_helps_when_a_core_is_free) {
  rill_pool *p = rill_pool_shared();
  if (rill_pool_workers(p) < 1) return; /* one core: nothing to help with */
  test_job t;
  job_init(&t, 0);
  rill_pool_post(p, &t.job);
  wait_entered(&t);
  rill_pool_remove(p, &t.job);
  cr_expect_eq(atomic_load(&t.left), 1);
}

/* ---- executors: both layouts, the same bits ---- */

static rill_program *chain_program(void) {
  rill_program *prog;
  cr_assert(!rill_program_create(&prog));
  const int64_t d[] = {64, 64};
  char names[40][8];
  for (int i = 0; i < 40; i++) {
    snprintf(names[i], sizeof names[i], "v%d", i);
    cr_assert(!rill_block_add_var(prog, 0, names[i], RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, d, 2, 0, false));
  }
  /* Four independent chains of matmul and scale from v0, joined by sums: enough
   * independent ops for the parallel schedule. */
  for (int c = 0; c < 4; c++) {
    const char *prev = names[0];
    for (int k = 0; k < 4; k++) {
      int out = 1 + c * 8 + k * 2;
      rill_op_builder *b;
      cr_assert(!rill_op_builder_create("matmul", &b));
      const char *x = prev, *y = names[0], *o = names[out];
      cr_assert(!rill_op_builder_input(b, "X", &x, 1));
      cr_assert(!rill_op_builder_input(b, "Y", &y, 1));
      cr_assert(!rill_op_builder_output(b, "Out", &o, 1));
      cr_assert(!rill_op_builder_append(b, prog, 0));
      rill_op_builder_destroy(b);
      cr_assert(!rill_op_builder_create("scale", &b));
      const char *so = names[out + 1];
      cr_assert(!rill_op_builder_input(b, "X", &o, 1));
      cr_assert(!rill_op_builder_output(b, "Out", &so, 1));
      cr_assert(!rill_op_builder_attr_float(b, "scale", 0.015625f));
      cr_assert(!rill_op_builder_append(b, prog, 0));
      rill_op_builder_destroy(b);
      prev = names[out + 1];
    }
  }
  rill_op_builder *b;
  cr_assert(!rill_op_builder_create("sum", &b));
  const char *ins[4] = {names[8], names[16], names[24], names[32]}, *o = names[33];
  cr_assert(!rill_op_builder_input(b, "X", ins, 4));
  cr_assert(!rill_op_builder_output(b, "Out", &o, 1));
  cr_assert(!rill_op_builder_append(b, prog, 0));
  rill_op_builder_destroy(b);
  return prog;
}

static void run_chain(rill_pool_mode layout, int threads, float *out) {
  rill_pool_layout = layout;
  rill_program *prog = chain_program();
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.num_threads = threads;
  rill_executor *e;
  cr_assert(!rill_executor_create(&o, &e));
  cr_assert(!rill_executor_set_schedule(e, RILL_SCHEDULE_PARALLEL));
  rill_scope *s;
  cr_assert(!rill_scope_create(NULL, &s));
  const int64_t d[] = {64, 64};
  rill_tensor *x;
  cr_assert(!rill_tensor_create(RILL_DTYPE_FP32, d, 2, &x));
  float *xv = rill_tensor_data(x);
  for (int i = 0; i < 64 * 64; i++) xv[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
  const char *feed = "v0", *fetch = "v33";
  for (int r = 0; r < 3; r++) {
    rill_tensor *y;
    rill_status *st = rill_executor_run(e, prog, s, &feed, &x, 1, &fetch, 1, &y);
    cr_assert(!st, "%s", st ? rill_status_message(st) : "");
    memcpy(out, rill_tensor_data(y), 64 * 64 * sizeof(float));
    rill_tensor_destroy(y);
  }
  rill_tensor_destroy(x);
  rill_scope_destroy(s);
  rill_executor_destroy(e);
  rill_program_destroy(prog);
  rill_pool_layout = RILL_POOL_SHARED;
}

Test(pool, both_layouts_give_the_same_bits) {
  static float want[64 * 64], got[64 * 64];
  run_chain(RILL_POOL_SHARED, 1, want);
  int nonzero = 0;
  for (int i = 0; i < 64 * 64; i++) nonzero += want[i] != 0;
  cr_assert_gt(nonzero, 64 * 64 / 2);
  for (int threads = 2; threads <= 3; threads++) {
    run_chain(RILL_POOL_SHARED, threads, got);
    cr_expect(memcmp(want, got, sizeof want) == 0, "shared pool, %d threads: differs", threads);
    run_chain(RILL_POOL_PER_EXECUTOR, threads, got);
    cr_expect(memcmp(want, got, sizeof want) == 0, "per-executor pools, %d threads: differs", threads);
  }
}
