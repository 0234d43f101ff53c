/* Work split into fixed parts run on short-lived threads, for kernels whose parts
 * (images of a batch, chunks of them) are independent. */
#ifndef RILL_KERNELS_CPU_PARTS_H
#define RILL_KERNELS_CPU_PARTS_H

#include <stdbool.h>
#include <stdint.h>

#define RILL_PARTS_MAX_THREADS 16

/* Runs fn(arg, i, slot) for every part i of [0, n), on the calling thread (slot 0) and
 * up to threads - 1 others (slots 1 ..; threads is clamped to RILL_PARTS_MAX_THREADS and
 * n; fewer run when a thread cannot be created). A slot is one thread: fn may keep
 * scratch memory per slot. The parts are fixed; which thread runs a part is not: each thread
 * takes the next part not yet taken, so a thread the machine does not schedule delays
 * the call by at most the part it holds, and the calling thread runs every part no
 * other thread has taken. fn must therefore give a part the same result on any thread.
 * Returns once every part has run: false when any call returned false (or the
 * bookkeeping could not be allocated: then nothing ran). One thread runs the parts
 * inline, in order. */
bool rill_cpu_parts(int64_t threads, int64_t n, bool (*fn)(void *arg, int64_t part, int slot),
                    void *arg);

#endif
