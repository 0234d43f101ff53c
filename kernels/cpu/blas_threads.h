/* OpenBLAS's thread count around a call that rill threads itself (doc/design/kernels.md,
 * "Threads and OpenBLAS"). OpenBLAS's count is one setting for the whole process; a
 * kernel that splits its own work over the executor's threads brackets its BLAS calls
 * with these, so that OpenBLAS runs them on the calling thread and wakes no workers of
 * its own beside rill's. Nested and concurrent brackets are counted: the first sets one
 * thread, the last restores the count the process had. */
#ifndef RILL_KERNELS_CPU_BLAS_THREADS_H
#define RILL_KERNELS_CPU_BLAS_THREADS_H

void rill_blas_single_begin(void);
void rill_blas_single_end(void);

#endif
