/* The per-executor device context handed to every kernel (rill_kernel_ctx.device):
 * where the kernel runs, how many threads it may use, and the seeded random generator
 * that random ops and dropout draw from. One context belongs to one executor, so the
 * kernels of one run may use the generator without locks; an executor's stream is
 * reproducible from its seed. */
#ifndef RILL_FRAMEWORK_EXEC_DEVICE_H
#define RILL_FRAMEWORK_EXEC_DEVICE_H

#include <stdint.h>

#include "framework/base/random.h"
#include "rill.h"

/* The seed of a new executor's generator. */
#define RILL_DEVICE_DEFAULT_SEED 0x5eed5eedULL

struct rill_bg;
struct rill_program;

struct rill_device_ctx {
  rill_place place;
  int32_t num_threads; /* >= 1 */
  uint64_t seed;       /* the seed `rng` started from */
  rill_rng rng;
  /* Work that outlives a run (background.h); NULL outside an executor. */
  struct rill_bg *bg;
  /* The program being run (NULL when a plan is run directly), for ops that record
   * which program wrote something (the checkpoint manifest). */
  const struct rill_program *program;
};

void rill_device_ctx_init(struct rill_device_ctx *d, rill_place place, int32_t num_threads,
                          uint64_t seed);

#endif
