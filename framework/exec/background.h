/* Work that outlives a run (doc/design/checkpoint.md, "The asynchronous path").
 *
 * An executor owns one rill_bg. A kernel hands it a job during a run
 * (rill_bg_submit); the job is held until the run returns (rill_bg_release, called by
 * the executor at the end of every run, successful or not), then runs on the
 * executor's background thread, one job at a time in submission order, while the
 * caller goes on with the next run. rill_bg_destroy (from rill_executor_destroy)
 * releases what is held, waits for every job and joins the thread.
 *
 * A rill_bg also keeps state for kernels that must remember something between runs
 * (the checkpoint op's staging buffers and schedule, one entry per directory), keyed
 * by a string and destroyed with the rill_bg after the last job finished. */
#ifndef RILL_FRAMEWORK_EXEC_BACKGROUND_H
#define RILL_FRAMEWORK_EXEC_BACKGROUND_H

#include <stdbool.h>

#include "framework/base/status.h"

typedef struct rill_bg rill_bg;

rill_status *rill_bg_create(rill_bg **out);
/* Releases held jobs, waits for all of them, joins the thread, destroys the state
 * entries. NULL is fine. */
void rill_bg_destroy(rill_bg *bg);

/* Queues fn(arg) to run after the current run returns. Thread-safe (blocking ops call
 * it from libuv's pool). Fails only when the background thread cannot be started. */
rill_status *rill_bg_submit(rill_bg *bg, void (*fn)(void *arg), void *arg);
/* Lets the held jobs start (the executor calls it when a run returns). */
void rill_bg_release(rill_bg *bg);
/* Releases the held jobs and waits until no job is queued or running. */
void rill_bg_wait_idle(rill_bg *bg);

/* The state entry named `key`, created by create(key, &state) on first use; the same
 * pointer on every later call. destroy(state) runs in rill_bg_destroy. Thread-safe. */
rill_status *rill_bg_state(rill_bg *bg, const char *key,
                           rill_status *(*create)(const char *key, void **state),
                           void (*destroy)(void *state), void **out);
/* Calls fn(state, arg) for every entry whose destroy function is `destroy` (a kind of
 * entry); stops at the first error and returns it. */
rill_status *rill_bg_each_state(rill_bg *bg, void (*destroy)(void *state),
                                rill_status *(*fn)(void *state, void *arg), void *arg);

#endif
