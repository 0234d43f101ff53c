/* The sequential executor: "prepare once, run many".
 *
 * Prepare (rill_exec_prepare) turns block 0 of a program plus a list of feed names and
 * fetch names into a plan: every op's schema, resolved attributes, kernel and the
 * rill_variable pointers of its arguments, with compile-time shape inference already
 * done. Plans are cached per executor, keyed by (program id, program revision, feed
 * names, fetch names), in a small LRU (rill_executor_set_plan_cache_size).
 *
 * Where variables live:
 *   - persistable variables: in the caller's scope (found through its parent chain,
 *     created in it when absent); re-looked-up at the start of every run, so one plan
 *     serves any scope;
 *   - variables the block reads before any op writes them (program inputs that are
 *     neither fed nor persistable): looked up in the caller's scope chain at run time;
 *   - temporaries, fed variables and the feed/fetch lists: in a scope owned by the plan
 *     (whose parent is set to the caller's scope for the length of a run).
 * Memory of temporaries is KEPT between runs of one plan, so a steady-state run with
 * unchanged shapes allocates nothing; it is released when the plan is evicted from the
 * cache or the executor is destroyed. Fetched tensors share buffers with the
 * temporaries; the next run notices the extra reference and allocates a fresh buffer
 * instead of overwriting what the caller holds. References to caller memory (fed
 * tensors, feed and fetch list items, outputs of feed ops) are dropped at the end of
 * every run, so a caller's deleter runs as soon as the caller lets go.
 */
#ifndef RILL_FRAMEWORK_EXEC_EXECUTOR_H
#define RILL_FRAMEWORK_EXEC_EXECUTOR_H

#include <pthread.h>
#include <stdatomic.h>

#include "framework/exec/device.h"
#include "framework/exec/sched.h"
#include "framework/program/program.h"
#include "framework/registry/registry.h"

typedef struct rill_plan rill_plan;

#define RILL_EXEC_DEFAULT_PLAN_CACHE 16

/* The plans of the sub-blocks that ops run during a run (subblock.c): one per block of
 * the program being run, built when first run, dropped when another program (or
 * revision) runs a sub-block. A table apart from the plan cache, so that running a
 * sub-block never evicts or reorders the plan of the run that holds it. `lock` guards
 * the table; a block's `running` flag, set under it, lets several threads run
 * different blocks at once and refuses a block already running. */
typedef struct rill_subplans {
  pthread_mutex_t lock;
  uint64_t program_id, revision;
  rill_plan **plans; /* per block; [0] unused */
  bool *running;
  size_t n;
  uint64_t builds, runs; /* for tests */
} rill_subplans;

struct rill_executor {
  rill_executor_options options;
  struct rill_device_ctx device;
  rill_plan **plans; /* most recently used first */
  size_t nplans, plan_cap;
  uint64_t plan_builds; /* plans prepared (cache misses) */
  uint64_t plan_hits;   /* runs served by a cached plan */
  rill_sched *sched;    /* compute threads, I/O loop, cancel state */
  rill_schedule schedule;
  int64_t timeout_us;       /* per-run deadline, 0: none */
  int64_t run_deadline_ns;  /* the deadline of the run in progress (sub-blocks keep it) */
  bool release_temporaries; /* free temporaries after their last use */
  bool memory_plan;         /* temporaries share buffers by liveness (memplan.c) */
  uint64_t parallel_runs, sequential_runs; /* for tests */
  rill_subplans sub;
  /* One run at a time. Everything a run touches beyond its plan belongs to the whole
   * executor (the plan cache, which a run reorders and may evict from; the scheduler's
   * pool and cancel state; the device context: random generator, current program), so
   * the guard is per executor, not per plan. rill_exec_enter sets `busy` by
   * compare-exchange; rill_exec_leave clears it on every way out. */
  atomic_bool busy;
  _Atomic uint64_t busy_program; /* id of the program the holder runs, for messages */
};

rill_status *rill_exec_create(const rill_executor_options *options, rill_executor **out);
/* Claims the executor for one call on behalf of `program` (NULL: a call that runs no
 * program, such as resizing the plan cache); FAILED_PRECONDITION, naming the program
 * being run and the executor, when another call holds it. Every successful enter is
 * paired with rill_exec_leave. `what` names the caller in the message. */
rill_status *rill_exec_enter(rill_executor *exe, const rill_program *program, const char *what);
void rill_exec_leave(rill_executor *exe);
void rill_exec_destroy(rill_executor *exe);
/* Finds or builds the plan for (program, feed names, fetch names). The plan belongs to
 * the executor's cache: it stays valid until the next prepare/run on this executor. */
rill_status *rill_exec_prepare(rill_executor *exe, const rill_program *program,
                               const char *const *feed_names, size_t nfeeds,
                               const char *const *fetch_names, size_t nfetch,
                               rill_plan **out);
/* Runs a plan in `scope`. feeds are in the plan's feed-name order; outputs (nfetch of
 * them) receive new references, untouched on error. */
rill_status *rill_exec_run_plan(rill_executor *exe, rill_plan *plan, rill_scope *scope,
                                rill_tensor *const *feeds, rill_tensor **outputs);
/* Runs a plan this executor prepared for `program` (and still caches: no prepare on
 * this executor since) under the executor's guard; no cache lookup. */
rill_status *rill_exec_run_prepared(rill_executor *exe, const rill_program *program,
                                    rill_plan *plan, rill_scope *scope,
                                    rill_tensor *const *feeds, rill_tensor **outputs);
/* Prepare and run under the executor's guard (rill_exec_enter). */
rill_status *rill_exec_run(rill_executor *exe, const rill_program *program, rill_scope *scope,
                           const char *const *feed_names, rill_tensor *const *feeds,
                           size_t nfeeds, const char *const *fetch_names, size_t nfetch,
                           rill_tensor **outputs);
/* Runs block `block` (> 0) of the program being run in `scope`, sequentially on the
 * calling thread: the device service `run_block` (rill_device_services) behind the
 * kernels of sub-block ops. Safe from several threads at once for different blocks;
 * FAILED_PRECONDITION when no program is being run (a plan run directly), when the
 * block is running already (on another thread, or as its own caller); INVALID_ARGUMENT
 * for block 0 or a block the program does not have. */
rill_status *rill_exec_run_block(rill_executor *exe, int32_t block, rill_scope *scope);
/* Runs a sub-block's plan in `scope` (run.c): binds its variables there, checks the
 * required ones, runs its ops in order. */
rill_status *rill_exec_run_subplan(rill_executor *exe, rill_plan *plan, rill_scope *scope);
/* Sub-block plans built and sub-block runs made, for tests. */
uint64_t rill_exec_subplan_builds(rill_executor *exe);
uint64_t rill_exec_subblock_runs(rill_executor *exe);
void rill_exec_subplans_init(rill_executor *exe);
void rill_exec_subplans_destroy(rill_executor *exe);

/* Bounds the plan cache (>= 1); evicts the least recently used plans beyond it. */
void rill_exec_set_plan_cache_size(rill_executor *exe, size_t n);

/* For tests and tools. */
static inline uint64_t rill_executor_plan_builds(const rill_executor *e) { return e->plan_builds; }
static inline uint64_t rill_executor_plan_hits(const rill_executor *e) { return e->plan_hits; }
static inline size_t rill_executor_cached_plans(const rill_executor *e) { return e->nplans; }
/* Number of ops in a plan. */
size_t rill_plan_num_ops(const rill_plan *plan);
/* The schedule AUTO picks for a plan (SEQUENTIAL or PARALLEL), and the graph facts it
 * is picked from. */
rill_schedule rill_plan_auto_schedule(const rill_plan *plan);
size_t rill_plan_critical_path(const rill_plan *plan);
/* True when op `to` waits directly for op `from` in the parallel schedule. */
bool rill_plan_has_edge(const rill_plan *plan, size_t from, size_t to);
/* Bytes of the distinct buffers the plan's temporaries (and memory-plan groups) hold. */
size_t rill_plan_temp_bytes(const rill_plan *plan);
/* Number of buffer groups of the memory plan (0 without it). */
size_t rill_plan_num_groups(const rill_plan *plan);
/* Run-time shape inferences the plan's runs have made (an op whose input metas did not
 * change since its last run is not inferred again). */
uint64_t rill_plan_infer_runs(const rill_plan *plan);
/* True when the plan's own scope holds a value (a buffer) for variable `name`. */
bool rill_plan_holds(const rill_plan *plan, const char *name);

#endif
