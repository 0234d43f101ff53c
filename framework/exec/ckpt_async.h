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
#include "framework/io/cluster_ckpt.h"
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

/* A trainer's part of cluster snapshots (doc/design/cluster-checkpoint.md). The
 * coordinator (trainer 0) decides when a snapshot is due by the policy and announces it
 * to the pservers; every trainer learns the newest announced snapshot from the
 * pservers' replies (`newest`) and writes its part of it: in sync mode its state after
 * that step exactly (the current one, or the previous step's, kept for this), in async
 * mode its state now. In sync mode a snapshot due by the step count is announced to no
 * one: every trainer writes its part at that step and every pserver takes its part
 * after that step's round by itself. */
typedef struct rill_ckpt_cluster_part {
  rill_cluster_shape shape;
  rill_cluster_role role;
  int32_t rank;
  bool sync;
  bool coordinator;
  rill_status *(*announce)(void *arg, int64_t step);
  int64_t (*newest)(void *arg);
  void *arg;
} rill_ckpt_cluster_part;

rill_status *rill_ckpt_cluster_step(struct rill_device_ctx *dev, const char *dir,
                                    const rill_ckpt_policy *policy,
                                    const rill_ckpt_cluster_part *part, int64_t step,
                                    const char *const *names, const rill_tensor *const *tensors,
                                    size_t n, bool *saved);

/* A trainer resumed from snapshot `step` of `dir` (the checkpoint op's directory): its
 * part of that snapshot is committed, so it is never written again. */
rill_status *rill_ckpt_cluster_resumed(rill_bg *bg, const char *dir, int64_t step);

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
