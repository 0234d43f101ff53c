/* The CPU device's services (device.h). */
#include "framework/exec/device.h"

#include "framework/base/alloc.h"
#include "framework/data/tensor.h"
#include "framework/exec/background.h"
#include "framework/exec/ckpt_async.h"
#include "framework/exec/executor.h"
#include "framework/exec/parts.h"

static bool cpu_parallel_for(const rill_device_services *dev, int64_t threads, int64_t n,
                             rill_part_fn fn, void *arg) {
  (void)dev;
  return rill_cpu_parts(threads, n, fn, arg);
}

static void cpu_quiet(const rill_device_services *dev) {
  (void)dev;
  rill_cpu_parts_hush();
}

static void *cpu_scratch_alloc(const rill_device_services *dev, size_t bytes) {
  (void)dev;
  return rill_aligned_alloc(bytes ? bytes : 1, RILL_TENSOR_ALIGN);
}

static void cpu_scratch_free(const rill_device_services *dev, void *p) {
  (void)dev;
  rill_free(p);
}

static uint64_t cpu_random_u64(const rill_device_services *dev) {
  return rill_rng_next(&rill_device_of(dev)->rng);
}

static rill_status *cpu_submit_blocking(const rill_device_services *dev, const rill_job *job) {
  struct rill_device_ctx *d = rill_device_of(dev);
  switch (job->kind) {
    case RILL_JOB_CALL:
      if (!job->u.call.call) return rill_error(RILL_INVALID_ARGUMENT, "device: a call job without a function");
      if (!d->bg) {
        job->u.call.call(job->u.call.arg);
        return NULL;
      }
      return rill_bg_submit(d->bg, job->u.call.call, job->u.call.arg);
    case RILL_JOB_CHECKPOINT: {
      const rill_checkpoint_job *c = &job->u.checkpoint;
      rill_ckpt_policy policy = {c->every_n_steps, c->every_n_seconds, c->max_to_keep, c->skip_when_busy};
      if (c->cluster_newest) {
        rill_ckpt_cluster_part part = {.shape = {c->cluster_pservers, c->cluster_trainers},
                                       .role = RILL_CLUSTER_TRAINER,
                                       .rank = c->cluster_rank,
                                       .sync = c->cluster_sync,
                                       .coordinator = c->cluster_coordinator,
                                       .announce = c->cluster_announce,
                                       .newest = c->cluster_newest,
                                       .arg = c->cluster_arg};
        return rill_ckpt_cluster_step(d, c->dir, &policy, &part, c->step, c->names, c->tensors,
                                      c->n, c->saved);
      }
      return rill_ckpt_async_step(d, c->dir, &policy, c->step, c->names, c->tensors, c->n, c->saved);
    }
  }
  return rill_error(RILL_INVALID_ARGUMENT, "device: unknown job kind %d", (int)job->kind);
}

static rill_status *cpu_run_block(const rill_device_services *dev, int32_t block,
                                  rill_scope *scope) {
  struct rill_device_ctx *d = rill_device_of(dev);
  if (!d->exe)
    return rill_error(RILL_FAILED_PRECONDITION,
                      "run_block: block %d cannot run: the device belongs to no executor",
                      (int)block);
  return rill_exec_run_block(d->exe, block, scope);
}

void rill_device_ctx_init(struct rill_device_ctx *d, rill_place place, int32_t num_threads,
                          uint64_t seed) {
  d->services = (rill_device_services){
      .num_threads = num_threads > 0 ? num_threads : 1,
      .parallel_for = cpu_parallel_for,
      .quiet = cpu_quiet,
      .scratch_alloc = cpu_scratch_alloc,
      .scratch_free = cpu_scratch_free,
      .random_u64 = cpu_random_u64,
      .submit_blocking = cpu_submit_blocking,
      .run_block = cpu_run_block,
  };
  d->place = place;
  d->seed = seed;
  rill_rng_seed(&d->rng, seed);
  d->bg = NULL;
  d->program = NULL;
  d->exe = NULL;
}
