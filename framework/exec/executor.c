/* The executor: creation, the one-run-at-a-time guard, and prepare-and-run. See
 * executor.h for where variables live and when memory is released. Everything that
 * needs a lookup (schemas, kernels, attributes, variables, slot layouts) happens when a
 * plan is built (plan.c, graph.c, memplan.c, cached by plan_cache.c); a run (run.c)
 * walks a flat array of ops. */
#include "framework/exec/executor.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/exec/background.h"
#include "framework/exec/plan.h"

rill_status *rill_exec_create(const rill_executor_options *options, rill_executor **out) {
  rill_executor_options opts = RILL_EXECUTOR_OPTIONS_INIT;
  if (options) opts = *options;
  RILL_TRY(rill_status_wrap(rill_place_check(opts.place), "executor"));
  if (opts.num_threads < 0)
    return rill_error(RILL_INVALID_ARGUMENT, "executor: num_threads must be >= 0, not %d",
                      (int)opts.num_threads);
  rill_executor *e = rill_calloc(1, sizeof *e);
  if (!e) return rill_oom();
  e->plans = rill_calloc(RILL_EXEC_DEFAULT_PLAN_CACHE, sizeof *e->plans);
  if (!e->plans) {
    rill_free(e);
    return rill_oom();
  }
  e->plan_cap = RILL_EXEC_DEFAULT_PLAN_CACHE;
  e->options = opts;
  atomic_init(&e->busy, false);
  atomic_init(&e->busy_program, 0);
  int32_t threads = opts.num_threads;
  if (threads == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 && n < 4096 ? (int32_t)n : 1;
  }
  rill_device_ctx_init(&e->device, opts.place, threads, RILL_DEVICE_DEFAULT_SEED);
  e->device.exe = e;
  rill_exec_subplans_init(e);
  rill_status *st = rill_sched_create(e->device.services.num_threads, &e->sched);
  if (!st && (st = rill_bg_create(&e->device.bg))) rill_sched_destroy(e->sched);
  if (st) {
    rill_exec_subplans_destroy(e);
    rill_free(e->plans);
    rill_free(e);
    return st;
  }
  *out = e;
  return NULL;
}

void rill_exec_destroy(rill_executor *exe) {
  if (!exe) return;
  /* Work that outlives a run (checkpoint writes) finishes first. */
  rill_bg_destroy(exe->device.bg);
  rill_sched_destroy(exe->sched);
  for (size_t i = 0; i < exe->nplans; i++) rill_plan_destroy(exe->plans[i]);
  rill_exec_subplans_destroy(exe);
  rill_free(exe->plans);
  rill_free(exe);
}

rill_status *rill_exec_enter(rill_executor *exe, const rill_program *program, const char *what) {
  bool idle = false;
  if (atomic_compare_exchange_strong_explicit(&exe->busy, &idle, true, memory_order_acquire,
                                              memory_order_relaxed)) {
    atomic_store_explicit(&exe->busy_program, program ? program->id : 0, memory_order_relaxed);
    return NULL;
  }
  uint64_t running = atomic_load_explicit(&exe->busy_program, memory_order_relaxed);
  char doing[48] = "another call";
  if (running) snprintf(doing, sizeof doing, "program #%" PRIu64, running);
  char target[48] = "";
  if (program) snprintf(target, sizeof target, " program #%" PRIu64, program->id);
  return rill_error(RILL_FAILED_PRECONDITION,
                    "%s%s: executor %p is in use by another thread (running %s); an executor "
                    "runs one program at a time: give each thread its own executor "
                    "(rill_executor_create) or wait for the run to return",
                    what, target, (void *)exe, doing);
}

void rill_exec_leave(rill_executor *exe) {
  atomic_store_explicit(&exe->busy_program, 0, memory_order_relaxed);
  atomic_store_explicit(&exe->busy, false, memory_order_release);
}

rill_status *rill_exec_run_prepared(rill_executor *exe, const rill_program *program,
                                    rill_plan *plan, rill_scope *scope,
                                    rill_tensor *const *feeds, rill_tensor **outputs) {
  RILL_TRY(rill_exec_enter(exe, program, "rill_executor_run"));
  exe->device.program = program;
  rill_status *st = rill_exec_run_plan(exe, plan, scope, feeds, outputs);
  exe->device.program = NULL;
  rill_exec_leave(exe);
  return st;
}

rill_status *rill_exec_run(rill_executor *exe, const rill_program *program, rill_scope *scope,
                           const char *const *feed_names, rill_tensor *const *feeds,
                           size_t nfeeds, const char *const *fetch_names, size_t nfetch,
                           rill_tensor **outputs) {
  RILL_TRY(rill_exec_enter(exe, program, "rill_executor_run"));
  rill_plan *p;
  rill_status *st = rill_exec_prepare(exe, program, feed_names, nfeeds, fetch_names, nfetch, &p);
  if (!st) {
    exe->device.program = program;
    st = rill_exec_run_plan(exe, p, scope, feeds, outputs);
    exe->device.program = NULL;
  }
  rill_exec_leave(exe);
  return st;
}
