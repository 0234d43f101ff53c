/* The CPU device: the per-executor context whose services table every kernel sees
 * (rill_kernel_ctx.dev, framework/registry/registry.h): how many threads kernels may
 * use, the pool that runs their parts (parts.h), scratch memory, the seeded random
 * generator that random ops and dropout draw from, and the background thread that does
 * blocking work after a run (background.h; the checkpoint op's writes, ckpt_async.h).
 * One context belongs to one executor, so the kernels of one run may use the generator
 * without locks; an executor's stream is reproducible from its seed. Kernels never
 * include this header: only the executor, the checkpoint API and tests do. */
#ifndef RILL_FRAMEWORK_EXEC_DEVICE_H
#define RILL_FRAMEWORK_EXEC_DEVICE_H

#include <stdint.h>

#include "framework/base/random.h"
#include "framework/registry/registry.h"
#include "rill.h"

/* The seed of a new executor's generator. */
#define RILL_DEVICE_DEFAULT_SEED 0x5eed5eedULL

struct rill_bg;
struct rill_program;
struct rill_executor;

struct rill_device_ctx {
  /* What kernels see (first member: the services recover the context from it).
   * services.num_threads is the executor's thread count, >= 1. */
  rill_device_services services;
  rill_place place;
  uint64_t seed; /* the seed `rng` started from */
  rill_rng rng;
  /* Work that outlives a run (background.h); NULL outside an executor: blocking jobs
   * then run before submit_blocking returns. */
  struct rill_bg *bg;
  /* The program being run (NULL when a plan is run directly), for ops that record
   * which program wrote something (the checkpoint manifest). */
  const struct rill_program *program;
  /* The executor that owns the context (NULL outside one): runs sub-blocks. */
  struct rill_executor *exe;
};

/* Fills in the CPU services for `num_threads` threads (< 1: one). */
void rill_device_ctx_init(struct rill_device_ctx *d, rill_place place, int32_t num_threads,
                          uint64_t seed);

/* The context behind a services table rill_device_ctx_init filled in. */
static inline struct rill_device_ctx *rill_device_of(const rill_device_services *s) {
  return (struct rill_device_ctx *)s;
}

#endif
