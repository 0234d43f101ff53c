/* The compute pool: worker threads that help with work inside runs (doc/design/scheduler.md,
 * "Threads").
 *
 * One pool serves the whole process (rill_pool_shared): the parallel schedule's ready
 * ops of every executor and the parts of every kernel's parallel_for go to the same
 * workers, one fewer than the cores the process may run on, since the thread that
 * started the work always takes part. A thread that runs an executor's ops counts
 * itself as running (rill_pool_running_enter / _leave); a worker starts on a job only
 * while running threads plus busy workers stay below the cores. So predictor clones on
 * as many threads as cores run their ops on those threads alone, and no worker spins
 * beside them: the cores are never oversubscribed by rill's own threads.
 *
 * A job is whatever a thread wants help with: it is posted to a pool, workers call its
 * `help` while it is listed (at most max_helpers at once), and the poster removes it,
 * which waits for the workers inside `help` to leave. A job's owner never waits on the
 * workers for progress: it runs what no worker took, so a pool without workers (or whose
 * workers are all busy elsewhere) is slower, never stuck.
 *
 * Private pools (rill_pool_create) have no core limit: the comparison in
 * bench/bench_clones.c gives each executor one, as each executor had its own workers
 * before the shared pool. */
#ifndef RILL_FRAMEWORK_EXEC_POOL_H
#define RILL_FRAMEWORK_EXEC_POOL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "framework/base/status.h"

typedef struct rill_pool rill_pool;
typedef struct rill_pool_job rill_pool_job;

struct rill_pool_job {
  /* Does what work of the job it can find; returns whether it found any. Called on a
   * worker, while the job is listed. */
  bool (*help)(rill_pool_job *job);
  int max_helpers; /* workers inside help at once, >= 1 */
  /* the pool's (set by rill_pool_post) */
  atomic_int helpers;
  bool listed;
  rill_pool_job *prev, *next;
};

/* The process-wide pool, created on first use with one worker fewer than the CPUs in
 * the process's affinity mask (the workers start lazily, on the first job posted). */
rill_pool *rill_pool_shared(void);

/* A private pool of `workers` threads without the core limit; NULL on failure (then
 * the caller runs its work alone). rill_pool_destroy joins the workers; the pool must
 * have no job listed. NULL is fine. */
rill_pool *rill_pool_create(int workers);
void rill_pool_destroy(rill_pool *pool);

/* Lists `job` (its help and max_helpers set) and wakes workers for it. */
void rill_pool_post(rill_pool *pool, rill_pool_job *job);
/* A listed job has more work: wakes a sleeping worker, if one may start on it. */
void rill_pool_notify(rill_pool *pool);
/* Unlists the job, then waits until no worker is inside its help. */
void rill_pool_remove(rill_pool *pool, rill_pool_job *job);

/* Whether a worker may start on a job now: always for a private pool; for the shared
 * one, while running threads plus busy workers are fewer than the cores. A job posted
 * when none may is done by its poster alone. */
bool rill_pool_may_help(rill_pool *pool);

/* A thread starts or stops running an executor's ops (shared pool only). */
void rill_pool_running_enter(void);
void rill_pool_running_leave(void);

/* Sends spinning workers to sleep now, before a library call that runs threads of
 * its own. The next post wakes them. */
void rill_pool_hush(rill_pool *pool);

/* The cores the shared pool is sized to, and its workers. */
int rill_pool_cores(void);
int rill_pool_workers(const rill_pool *pool);

/* Tests only: false lets the shared pool's workers help whatever runs beside them, so
 * that stress tests with more executors than cores still exercise the hand-off. */
extern bool rill_pool_fit_cores;

/* How work is spread: RILL_POOL_SHARED (the default) runs every executor's ops and
 * parts on the shared pool; RILL_POOL_PER_EXECUTOR gives each executor created while
 * it is set a private pool of num_threads - 1 workers for its ops, and kernels' parts
 * a second process-wide pool without the core limit: the layout before the shared
 * pool, kept so that bench/bench_clones.c can compare both in one process. Set it
 * while no executor runs. */
typedef enum rill_pool_mode { RILL_POOL_SHARED, RILL_POOL_PER_EXECUTOR } rill_pool_mode;
extern rill_pool_mode rill_pool_layout;

/* The pool kernels' parts go to under the current layout. */
rill_pool *rill_pool_for_parts(void);

#endif
