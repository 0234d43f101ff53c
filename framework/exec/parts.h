/* Work split into fixed parts run on a process-wide pool of persistent worker threads:
 * the CPU device's parallel_for and quiet services (rill_device_services,
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
 * The workers persist across calls (created on first use, up to the largest thread
 * count asked for; they spin for a short while after a call, then sleep). The pool
 * serves one call at a time: a call made while another holds it (another executor's
 * kernel, a kernel of the same run on another of the executor's threads) runs its parts
 * on the calling thread, in order, as does a call with one thread, and a call for
 * which no worker could be created. After a call found a worker descheduled (the
 * machine has fewer free cores than threads), calls run inline for a while.
 *
 * Returns once every part has run: false when any call of fn returned false. */
bool rill_cpu_parts(int64_t threads, int64_t n, bool (*fn)(void *arg, int64_t part, int slot),
                    void *arg);

/* Sends the pool's spinning workers to sleep now: for a kernel about to call a library
 * that runs threads of its own (OpenBLAS threads a GEMM from 2^18 multiply-adds, a GEMV
 * from 2^13), whose threads would otherwise share the cores with workers spinning
 * for the next call. The next call wakes them (a few microseconds later than from a
 * spin). Thread-safe. */
void rill_cpu_parts_hush(void);

/* Tests only: false turns off the inline runs after a stall (parts.c), so that slow
 * builds (sanitizers) keep using the pool. Set it before any call. */
extern bool rill_cpu_parts_backoff;

/* Tests: how many calls of rill_cpu_parts ran on the pool (with at least one worker
 * taking part or able to) since the process started. */
uint64_t rill_cpu_parts_pooled_calls(void);

#endif
