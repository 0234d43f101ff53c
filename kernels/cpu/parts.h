/* Work split into fixed parts over short-lived threads, for kernels whose parts
 * (images of a batch, chunks of them) are independent. */
#ifndef RILL_KERNELS_CPU_PARTS_H
#define RILL_KERNELS_CPU_PARTS_H

#include <stdbool.h>
#include <stdint.h>

#define RILL_PARTS_MAX_THREADS 16

/* Runs fn(arg, lo, hi) over contiguous ranges covering [0, n): range t of `threads` is
 * [n t / threads, n (t + 1) / threads), each on a thread of its own, the calling thread
 * taking the last (a range whose thread cannot be created runs on the calling thread).
 * threads is clamped to [1, min(n, RILL_PARTS_MAX_THREADS)]; one thread runs inline.
 * The ranges depend only on n and threads. False when any call returned false. */
bool rill_cpu_parts(int64_t threads, int64_t n, bool (*fn)(void *arg, int64_t lo, int64_t hi),
                    void *arg);

#endif
