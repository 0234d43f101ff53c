/* The public executor API: argument checks in front of framework/exec. */
#include "framework/base/alloc.h"
#include "framework/exec/executor.h"
#include "framework/rpc/dist.h"
#include "rill.h"

static rill_status *check_names(const char *what, const char *const *names, size_t n) {
  if (n && !names) return rill_error(RILL_INVALID_ARGUMENT, "executor: %s names are NULL", what);
  for (size_t i = 0; i < n; i++)
    if (!names[i]) return rill_error(RILL_INVALID_ARGUMENT, "executor: %s name %zu is NULL", what, i);
  return NULL;
}

rill_status *rill_executor_create(const rill_executor_options *options, rill_executor **out) {
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "rill_executor_create: out is NULL");
  if (options)
    RILL_TRY(rill_check_struct_size("rill_executor_create: rill_executor_options",
                                    options->struct_size, sizeof(rill_executor_options),
                                    sizeof(rill_executor_options)));
  return rill_exec_create(options, out);
}

rill_executor_options rill_executor_default_options(void) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  return o;
}

void rill_executor_destroy(rill_executor *executor) {
  /* A later executor at the same address must not inherit this one's pservers. */
  if (executor) rill_dist_forget(&executor->device.services);
  rill_exec_destroy(executor);
}

rill_status *rill_executor_dist_complete(rill_executor *executor) {
  if (!executor) return rill_error(RILL_INVALID_ARGUMENT, "executor is NULL");
  return rill_dist_complete(&executor->device.services);
}

rill_status *rill_executor_set_plan_cache_size(rill_executor *executor, size_t n) {
  if (!executor) return rill_error(RILL_INVALID_ARGUMENT, "executor is NULL");
  if (n < 1) return rill_error(RILL_INVALID_ARGUMENT, "plan cache size must be at least 1");
  RILL_TRY(rill_exec_enter(executor, NULL, "rill_executor_set_plan_cache_size"));
  rill_exec_set_plan_cache_size(executor, n);
  bool grown = executor->plan_cap == n;
  rill_exec_leave(executor);
  return grown ? NULL : rill_oom();
}

rill_status *rill_executor_prepare(rill_executor *executor, const rill_program *program,
                                   const char *const *feed_names, size_t nfeeds,
                                   const char *const *fetch_names, size_t nfetch) {
  if (!executor || !program)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_executor_prepare: executor or program is NULL");
  RILL_TRY(check_names("feed", feed_names, nfeeds));
  RILL_TRY(check_names("fetch", fetch_names, nfetch));
  RILL_TRY(rill_exec_enter(executor, program, "rill_executor_prepare"));
  rill_plan *plan;
  rill_status *st = rill_exec_prepare(executor, program, feed_names, nfeeds, fetch_names, nfetch,
                                      &plan);
  rill_exec_leave(executor);
  return st;
}

rill_status *rill_executor_run(rill_executor *executor, const rill_program *program,
                               rill_scope *scope, const char *const *feed_names,
                               rill_tensor *const *feeds, size_t nfeeds,
                               const char *const *fetch_names, size_t nfetch,
                               rill_tensor **outputs) {
  if (!executor || !program || !scope)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "rill_executor_run: executor, program or scope is NULL");
  if (nfeeds && !feeds) return rill_error(RILL_INVALID_ARGUMENT, "rill_executor_run: feeds are NULL");
  if (nfetch && !outputs)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_executor_run: outputs is NULL");
  RILL_TRY(check_names("feed", feed_names, nfeeds));
  RILL_TRY(check_names("fetch", fetch_names, nfetch));
  return rill_exec_run(executor, program, scope, feed_names, feeds, nfeeds, fetch_names, nfetch,
                       outputs);
}

rill_status *rill_executor_set_schedule(rill_executor *executor, rill_schedule schedule) {
  if (!executor) return rill_error(RILL_INVALID_ARGUMENT, "executor is NULL");
  if (schedule != RILL_SCHEDULE_AUTO && schedule != RILL_SCHEDULE_SEQUENTIAL &&
      schedule != RILL_SCHEDULE_PARALLEL)
    return rill_error(RILL_INVALID_ARGUMENT, "unknown schedule %d", (int)schedule);
  executor->schedule = schedule;
  return NULL;
}

rill_status *rill_executor_set_timeout(rill_executor *executor, int64_t timeout_us) {
  if (!executor) return rill_error(RILL_INVALID_ARGUMENT, "executor is NULL");
  if (timeout_us < 0 || timeout_us > INT64_MAX / 1000 / 4)
    return rill_error(RILL_INVALID_ARGUMENT, "timeout %lld us is out of range",
                      (long long)timeout_us);
  executor->timeout_us = timeout_us;
  return NULL;
}

void rill_executor_cancel(rill_executor *executor) {
  if (executor) rill_sched_cancel(executor->sched);
}

rill_status *rill_executor_set_release_temporaries(rill_executor *executor, bool release) {
  if (!executor) return rill_error(RILL_INVALID_ARGUMENT, "executor is NULL");
  executor->release_temporaries = release;
  return NULL;
}

rill_status *rill_executor_set_memory_plan(rill_executor *executor, bool enabled) {
  if (!executor) return rill_error(RILL_INVALID_ARGUMENT, "executor is NULL");
  executor->memory_plan = enabled;
  return NULL;
}

size_t rill_executor_temporary_bytes(const rill_executor *executor) {
  if (!executor || !executor->nplans) return 0;
  return rill_plan_temp_bytes(executor->plans[0]);
}
