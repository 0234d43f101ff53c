/* checkpoint CPU kernel: reads the step, then hands the variables to the device as a
 * blocking job (rill_device_services.submit_blocking, RILL_JOB_CHECKPOINT); the
 * executor's checkpoint path snapshots them when due and writes them after the run (a
 * device without a background thread writes before returning). Step is saved
 * with X when X does not list it. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"


rill_status *rill_cpu_checkpoint(rill_kernel_ctx *ctx) {
  rill_tensor *step_t = rill_kin(ctx, 1, 0);
  if (!step_t || !rill_tensor_is_set(step_t) || rill_tensor_numel(step_t) != 1)
    return rill_kernel_error(ctx, "input Step (%s) must hold one element", rill_kin_name(ctx, 1, 0));
  int64_t step;
  if (step_t->dtype == RILL_DTYPE_INT64)
    step = *(const int64_t *)rill_tensor_ptr(step_t);
  else if (step_t->dtype == RILL_DTYPE_INT32)
    step = *(const int32_t *)rill_tensor_ptr(step_t);
  else
    return rill_kernel_error(ctx, "input Step (%s) must be int64 or int32, is %s",
                             rill_kin_name(ctx, 1, 0), rill_dtype_name(step_t->dtype));
  size_t nx = ctx->nin[0];
  const char *step_name = rill_kin_name(ctx, 1, 0);
  bool listed = false;
  for (size_t i = 0; i < nx; i++) listed |= strcmp(rill_kin_name(ctx, 0, i), step_name) == 0;
  size_t n = nx + !listed;
  const char *small_names[16];
  const rill_tensor *small_ts[16];
  const char **names = n <= 16 ? small_names : rill_calloc(n, sizeof *names);
  const rill_tensor **ts = n <= 16 ? small_ts : rill_calloc(n, sizeof *ts);
  rill_status *st = NULL;
  if (!names || !ts) {
    st = rill_oom();
    goto done;
  }
  for (size_t i = 0; i < nx; i++) {
    names[i] = rill_kin_name(ctx, 0, i);
    ts[i] = rill_kin(ctx, 0, i);
    if (!ts[i]) {
      st = rill_kernel_error(ctx, "input X (%s) is missing or not a dense tensor", names[i]);
      goto done;
    }
  }
  if (!listed) {
    names[nx] = step_name;
    ts[nx] = step_t;
  }
  rill_job job = {.kind = RILL_JOB_CHECKPOINT,
                  .u.checkpoint = {.dir = ctx->attrs[RILL_CHECKPOINT_ATTR_DIRECTORY].v.s,
                                   .every_n_steps = ctx->attrs[RILL_CHECKPOINT_ATTR_EVERY_N_STEPS].v.l,
                                   .every_n_seconds = ctx->attrs[RILL_CHECKPOINT_ATTR_EVERY_N_SECONDS].v.f,
                                   .max_to_keep = ctx->attrs[RILL_CHECKPOINT_ATTR_MAX_TO_KEEP].v.i,
                                   .skip_when_busy = ctx->attrs[RILL_CHECKPOINT_ATTR_SKIP_WHEN_BUSY].v.b,
                                   .step = step,
                                   .names = names,
                                   .tensors = ts,
                                   .n = n}};
  st = ctx->dev ? ctx->dev->submit_blocking(ctx->dev, &job)
                : rill_kernel_error(ctx, "no device to write the checkpoint with");
done:
  if (names != small_names) rill_free(names);
  if (ts != small_ts) rill_free(ts);
  return st;
}
