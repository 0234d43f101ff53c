/* The parallel schedule: dependency counting over a DAG of ops (doc/design/scheduler.md).
 *
 * The executor builds a rill_sched_graph per plan at prepare time (edges for
 * read-after-write, write-after-read, write-after-write, and program order among
 * side-effect and random ops). A run resets one pending counter per op and runs every op
 * whose counter reaches zero:
 *   - compute ops on the calling thread and up to num_threads - 1 workers of the
 *     process-wide compute pool (pool.h), shared by every executor; a thread that
 *     finishes an op continues with one of the ops that became ready (no queue, no
 *     wake-up on a chain) and queues the others; an idle caller spins briefly, then
 *     parks on a condition variable;
 *   - blocking ops on libuv's thread pool (uv_queue_work), submitted by the executor's
 *     I/O loop thread; the completion is counted on that loop (after_work), while the
 *     ops that became ready are released by the pool thread as soon as the op returns.
 * The first error (or a cancel, or the deadline) stops the run: ops not yet started are
 * skipped (counted as done without running), running ones are waited for, and the first
 * error is returned. One run at a time per scheduler. */
#ifndef RILL_FRAMEWORK_EXEC_SCHED_H
#define RILL_FRAMEWORK_EXEC_SCHED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "framework/base/status.h"

typedef struct rill_sched rill_sched;
typedef struct rill_sched_io rill_sched_io; /* one per blocking op, owned by the graph */

typedef struct rill_sched_graph {
  uint32_t nops;
  const uint32_t *npred;      /* per op: number of distinct predecessors */
  const uint32_t *succ_start; /* nops + 1 */
  const uint32_t *succ;       /* successors of op i: succ[succ_start[i] .. succ_start[i+1]) */
  const uint8_t *blocking;    /* per op: runs on the I/O pool */
  const uint32_t *roots;      /* ops without predecessors, in program order */
  uint32_t nroots;
  atomic_uint *pending;       /* per op, reset by every run */
  rill_sched_io *io;          /* nio items (rill_sched_io_size() bytes each) */
  const int32_t *io_index;    /* per op: its item in `io`, or -1 */
  uint32_t nio;
} rill_sched_graph;

/* What the scheduler calls. `run` executes op i and returns its error already wrapped
 * with the op's context; `done` is called once per op after it ran or was skipped (for
 * memory release), from any thread; `wrap` adds op i's context to a status the
 * scheduler makes (cancel, deadline). */
typedef struct rill_sched_fns {
  rill_status *(*run)(void *ctx, uint32_t op);
  void (*done)(void *ctx, uint32_t op);
  rill_status *(*wrap)(void *ctx, uint32_t op, rill_status *st);
  /* op i's type, block and index, for the profiler's record of blocking ops (may be
   * NULL: none is recorded) */
  void (*name)(void *ctx, uint32_t op, const char **type, int32_t *block, int32_t *index);
} rill_sched_fns;

/* Size in bytes of one rill_sched_io, for the graph's array. */
size_t rill_sched_io_size(void);

rill_status *rill_sched_create(int32_t nthreads, rill_sched **out);
/* Stops the I/O loop (and the pool of its own, under RILL_POOL_PER_EXECUTOR). The
 * scheduler must be idle. NULL is fine. */
void rill_sched_destroy(rill_sched *s);

/* Runs the graph; returns the first error. deadline_ns: CLOCK_MONOTONIC time after
 * which no op starts (0: none). */
rill_status *rill_sched_run(rill_sched *s, const rill_sched_graph *g, const rill_sched_fns *fns,
                            void *ctx, int64_t deadline_ns);

/* Cancel requests, shared by both schedules. rill_sched_begin/end bracket a run;
 * rill_sched_cancel stops the run in progress (from any thread) and does nothing when
 * none is. */
void rill_sched_begin(rill_sched *s);
void rill_sched_end(rill_sched *s);
void rill_sched_cancel(rill_sched *s);
bool rill_sched_cancelled(const rill_sched *s);

int64_t rill_sched_now_ns(void);

#endif
