/* Per-thread settings for rill's own service threads. */
#ifndef RILL_FRAMEWORK_BASE_THREAD_H
#define RILL_FRAMEWORK_BASE_THREAD_H

/* The nice value of threads that write in the background (checkpoints, snapshots):
 * they yield the cores to the runs, and still get the time the runs leave idle. */
#define RILL_THREAD_BACKGROUND_NICE 10

/* Lowers the calling thread (only it: Linux applies nice per thread, and threads it
 * starts inherit it) to RILL_THREAD_BACKGROUND_NICE. Not being able to is not an
 * error: the thread then runs at its inherited priority. */
void rill_thread_background_priority(void);

/* Names the calling thread (at most 15 characters are kept), so that /proc, top and
 * perf tell rill's service threads from the ones that run programs. Threads it starts
 * inherit the name. Not being able to is not an error. */
void rill_thread_set_name(const char *name);

#endif
