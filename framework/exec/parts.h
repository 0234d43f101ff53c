/* Work split into fixed parts run on the process-wide compute pool (pool.h): the CPU
 * device's parallel_for and quiet services (rill_device_services,
 * framework/registry/registry.h), for kernels whose parts (images of a batch, channels,
 * tiles of an output) are independent. */
#ifndef RILL_FRAMEWORK_EXEC_PARTS_H
#define RILL_FRAMEWORK_EXEC_PARTS_H

#include <stdbool.h>
#include <stdint.h>

#include "framework/registry/registry.h"

#define RILL_PARTS_MAX_THREADS RILL_DEVICE_MAX_THREADS

/* Runs fn(arg, i, slot) for every part i of [0, n), on the calling thread (slot 0) and
 * up to threads - 1 pool workers (slots 1 ..; threads is clamped to
 * RILL_PARTS_MAX_THREADS and n). A slot is one thread: fn may keep scratch memory per
 * slot. The parts are fixed; which thread runs a part is not: slot t first runs its own
 * contiguous range of the parts (the t-th of `threads` equal ranges, so the same thread
 * tends to get the same share of consecutive calls split alike, and their data stays in
 * its core's cache), then takes parts not yet taken from the other ranges. A thread the
 * machine does not schedule delays the call by at most the part it holds, and the
 * calling thread runs every part no other thread has taken. fn must therefore give a
 * part the same result on any thread.
 *
 * A call is a job of the compute pool: the pool's workers join it while cores are free
 * (pool.h: running executors' threads plus busy workers fewer than the cores), and
 * several calls (other executors' kernels, kernels of one run on several threads) may
 * be in flight at once, each with the workers that joined it. A call runs its parts on
 * the calling thread alone, in order, when it has one thread, when no core is free,
 * when the pool has no workers, and for a while after a call found a worker
 * descheduled (the machine has fewer free cores than threads: parts.c).
 *
 * Returns once every part has run: false when any call of fn returned false. */
bool rill_cpu_parts(int64_t threads, int64_t n, bool (*fn)(void *arg, int64_t part, int slot),
                    void *arg);

/* Sends the pool's spinning workers to sleep now: for a kernel about to call a library
 * that may run threads of its own, whose threads would otherwise share the cores with
 * workers spinning for the next call. The next call wakes them (a few microseconds
 * later than from a spin). Thread-safe. */
void rill_cpu_parts_hush(void);

/* Tests only: false turns off the inline runs after a stall (parts.c), so that slow
 * builds (sanitizers) keep using the pool. Set it before any call. */
extern bool rill_cpu_parts_backoff;

/* Tests: how many calls of rill_cpu_parts were posted to the pool (workers able to
 * join) since the process started. */
uint64_t rill_cpu_parts_pooled_calls(void);

#endif
