/* The checkpoint op's asynchronous path (doc/design/checkpoint.md): per executor and
 * directory, the staging buffers, the schedule (every n steps / seconds), the policy
 * when the previous checkpoint is still being written, and the statistics. The state
 * lives in the executor's rill_bg (background.h); the write runs as a background job
 * after the run returns. Writes of one directory (the same path string) never overlap,
 * also between executors of one process. */
#ifndef RILL_FRAMEWORK_EXEC_CKPT_ASYNC_H
#define RILL_FRAMEWORK_EXEC_CKPT_ASYNC_H

#include "framework/data/tensor.h"
#include "framework/exec/background.h"
#include "framework/exec/device.h"
#include "framework/program/program.h"

typedef struct rill_ckpt_policy {
  int64_t every_n_steps;
  double every_n_seconds;
  int32_t max_to_keep;
  bool skip_when_busy;
} rill_ckpt_policy;

/* One run of a checkpoint op: reports a failed earlier write of `dir`; if the step is
 * due, waits for (or skips past) the write in flight, snapshots the variables with the
 * generator state of `dev`, and queues the write. Without an executor (dev or dev->bg
 * NULL) the write happens before it returns. *saved (may be NULL): a snapshot was
 * taken. */
rill_status *rill_ckpt_async_step(struct rill_device_ctx *dev, const char *dir,
                                  const rill_ckpt_policy *policy, int64_t step,
                                  const char *const *names, const rill_tensor *const *tensors,
                                  size_t n, bool *saved);

/* The program's identity a checkpoint records (the manifest's `program`): the FNV-1a
 * hash of the serialized program without the attributes that its ops' schemas flag
 * RILL_ATTR_POLICY (where and how often the checkpoint op writes, how many it keeps).
 * Moving the checkpoint directory, naming it by another path or changing the schedule
 * keeps a checkpoint loadable; any change to what is trained does not. */
rill_status *rill_ckpt_program_hash(const rill_program *prog, uint64_t *out);

/* Waits for every background write of `bg` and returns (and forgets) the first failure
 * not yet reported. */
rill_status *rill_ckpt_async_flush(rill_bg *bg);
/* Statistics of `dir`; NOT_FOUND when no checkpoint op of this executor used it. */
rill_status *rill_ckpt_async_stats(rill_bg *bg, const char *dir, rill_checkpoint_stats *out);

#endif
