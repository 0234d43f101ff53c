/* checkpoint CPU kernel: reads the step, then hands the variables to the executor's
 * checkpoint path (framework/exec/ckpt_async.h), which snapshots them when due and
 * writes them after the run. Step is saved with X when X does not list it. */
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/exec/ckpt_async.h"
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
  rill_ckpt_policy policy = {ctx->attrs[RILL_CHECKPOINT_ATTR_EVERY_N_STEPS].v.l, ctx->attrs[RILL_CHECKPOINT_ATTR_EVERY_N_SECONDS].v.f,
                             ctx->attrs[RILL_CHECKPOINT_ATTR_MAX_TO_KEEP].v.i, ctx->attrs[RILL_CHECKPOINT_ATTR_SKIP_WHEN_BUSY].v.b};
  st = rill_ckpt_async_step(ctx->device, ctx->attrs[RILL_CHECKPOINT_ATTR_DIRECTORY].v.s, &policy, step, names, ts, n, NULL);
done:
  if (names != small_names) rill_free(names);
  if (ts != small_ts) rill_free(ts);
  return st;
}
