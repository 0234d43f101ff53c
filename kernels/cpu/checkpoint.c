/* checkpoint CPU kernel: reads the step, then hands the variables to the device as a
 * blocking job (rill_device_services.submit_blocking, RILL_JOB_CHECKPOINT); the
 * executor's checkpoint path snapshots them when due and writes them after the run (a
 * device without a background thread writes before returning). Step is saved
 * with X when X does not list it. */
#include <string.h>

#include <stdio.h>

#include "framework/base/alloc.h"
#include "framework/rpc/dist.h"
#include "kernels/cpu/kernels.h"

/* A trainer of a parameter-server job: the pservers it announces snapshots to. */
typedef struct cluster_ctx {
  const rill_kernel_ctx *ctx;
  const rill_attr_value *eps;
  int64_t trainer_id;
} cluster_ctx;

static rill_status *cluster_announce(void *arg, int64_t step) {
  cluster_ctx *c = arg;
  if (step < 1 || step > (int64_t)UINT32_MAX)
    return rill_kernel_error(c->ctx, "step %lld cannot name a cluster snapshot (1..%u)",
                             (long long)step, (unsigned)UINT32_MAX);
  char id[32];
  snprintf(id, sizeof id, "%lld", (long long)step);
  rill_rpc_client *client;
  RILL_TRY(rill_dist_client(&client));
  for (size_t i = 0; i < c->eps->n; i++) {
    const char *ep = c->eps->list.strings[i];
    rill_status *st = rill_dist_contact(c->ctx->dev, ep, c->trainer_id);
    if (st)
      return rill_status_wrap(st, "checkpoint: announcing cluster snapshot %s to pserver %s", id,
                              ep);
  }
  /* The step waits for every pserver to have taken its part; the round trips overlap. */
  size_t bad = 0;
  rill_status *st = rill_rpc_send_notice_each(client, (const char *const *)c->eps->list.strings,
                                              c->eps->n, RILL_RPC_CHECKPOINT, id, c->trainer_id,
                                              &bad);
  if (st)
    return rill_status_wrap(st, "checkpoint: announcing cluster snapshot %s to pserver %s", id,
                            c->eps->list.strings[bad]);
  return NULL;
}

static int64_t cluster_newest(void *arg) {
  (void)arg;
  rill_rpc_client *client;
  rill_status *st = rill_dist_client(&client);
  if (st) {
    rill_status_destroy(st);
    return 0;
  }
  return (int64_t)rill_rpc_client_tag(client);
}


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
  const rill_attr_value *eps = &ctx->attrs[RILL_CHECKPOINT_ATTR_CLUSTER_ENDPOINTS];
  cluster_ctx cc = {ctx, eps, ctx->attrs[RILL_CHECKPOINT_ATTR_CLUSTER_TRAINER_ID].v.i};
  if (eps->n) {
    rill_checkpoint_job *c = &job.u.checkpoint;
    c->cluster_pservers = (int32_t)eps->n;
    c->cluster_trainers = ctx->attrs[RILL_CHECKPOINT_ATTR_CLUSTER_TRAINERS].v.i;
    c->cluster_rank = (int32_t)cc.trainer_id;
    c->cluster_sync = ctx->attrs[RILL_CHECKPOINT_ATTR_CLUSTER_SYNC].v.b;
    c->cluster_coordinator = cc.trainer_id == 0;
    c->cluster_announce = cluster_announce;
    c->cluster_newest = cluster_newest;
    c->cluster_arg = &cc;
  }
  st = ctx->dev ? ctx->dev->submit_blocking(ctx->dev, &job)
                : rill_kernel_error(ctx, "no device to write the checkpoint with");
done:
  if (names != small_names) rill_free(names);
  if (ts != small_ts) rill_free(ts);
  return st;
}
