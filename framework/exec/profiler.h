/* The profiler (doc/design/profiler.md): process-wide, off by default. Each thread that
 * records while it is on gets a fixed-size buffer of its own, registered once; events
 * are written without locks and merged by rill_profiler_stop. When off, the executor
 * pays one relaxed load and one predictable branch per op (rill_prof_active). */
#ifndef RILL_FRAMEWORK_EXEC_PROFILER_H
#define RILL_FRAMEWORK_EXEC_PROFILER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "rill.h"

extern atomic_int rill_prof_on_flag;

static inline bool rill_prof_active(void) {
  return __builtin_expect(atomic_load_explicit(&rill_prof_on_flag, memory_order_relaxed), 0);
}

int64_t rill_prof_now(void);

/* One op run on the calling thread: [t0, t1] in rill_prof_now() time. */
void rill_prof_op(const char *type, int32_t block, int32_t index, int64_t t0, int64_t t1);

/* A blocking op's life: queued at t_enq (by the thread that released it), started on
 * a pool thread at t_start, finished at t_end (recorded by the pool thread). */
void rill_prof_async_op(const char *type, int32_t block, int32_t index, int64_t t_enq,
                        int64_t t_start, int64_t t_end);

/* A copy of variable `var` (`bytes` bytes) between places for op #index of `block`
 * (-1: for the fetch), named "memcpy FROM->TO": a row of the summary's tables, as an
 * op's, and in the trace an event of category "memcpy" with the variable and bytes. */
void rill_prof_copy(const char *name, int32_t block, int32_t index, const char *var, size_t bytes,
                    int64_t t0, int64_t t1);

/* A named span on the calling thread, in category `cat` ("checkpoint", ...). */
void rill_prof_span(const char *cat, const char *name, int64_t t0, int64_t t1);

/* The name of the calling thread's track (copied; the first name set wins until the
 * thread sets another). */
void rill_prof_thread_name(const char *name);

#endif
