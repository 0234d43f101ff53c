/* checkpoint: saves its inputs, the step counter and the executor's generator state
 * into directory/checkpoint_<step> when due (doc/design/checkpoint.md). In a trainer
 * of a parameter-server job (cluster_endpoints set) it writes the trainer's part of
 * the cluster snapshots instead (doc/design/cluster-checkpoint.md). Inside the run
 * it only copies the variables into staging buffers; the executor writes them on its
 * background thread after the run. Flagged RANDOM so that, in every schedule, it sees
 * the generator after the random ops before it and before those after it. */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE | RILL_SLOT_NO_GRAD,
     "variables to save: parameters, optimizer state, anything needed to resume"},
    {"Step", RILL_SLOT_NO_GRAD,
     "one-element integer step counter (saved too); names the checkpoint"},
    {"Deps", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
     "not saved: variables whose writers must run first (a trainer's received parameters)"},
};
static const rill_attr_schema attrs[] = {
    {"directory", RILL_ATTR_STRING, RILL_ATTR_REQUIRED | RILL_ATTR_FILE_PATH | RILL_ATTR_POLICY,
     RILL_DEF_STRING(""),
     "where checkpoint_<step> directories are written"},
    {"every_n_steps", RILL_ATTR_LONG, RILL_ATTR_POLICY, RILL_DEF_LONG(0), "due when step % n == 0 (0: off)"},
    {"every_n_seconds", RILL_ATTR_FLOAT, RILL_ATTR_POLICY, RILL_DEF_FLOAT(0.0f),
     "due when this long has passed since the last one (0: off); with neither, every step"},
    {"max_to_keep", RILL_ATTR_INT, RILL_ATTR_POLICY, RILL_DEF_INT(3),
     "newest checkpoints kept; older ones are removed after a commit (0: all)"},
    {"skip_when_busy", RILL_ATTR_BOOLEAN, RILL_ATTR_POLICY, RILL_DEF_BOOL(false),
     "a due checkpoint while the previous one is being written: skip it (true) or wait"},
    {"cluster_endpoints", RILL_ATTR_STRINGS, RILL_ATTR_POLICY, RILL_DEF_EMPTY(RILL_ATTR_STRINGS),
     "a trainer of a parameter-server job: the pservers (empty: a local checkpoint); X is "
     "then this trainer's part of the cluster snapshot"},
    {"cluster_trainer_id", RILL_ATTR_INT, RILL_ATTR_POLICY, RILL_DEF_INT(0),
     "this trainer's id; trainer 0 decides when a cluster snapshot is due"},
    {"cluster_trainers", RILL_ATTR_INT, RILL_ATTR_POLICY, RILL_DEF_INT(1), "trainers in the job"},
    {"cluster_sync", RILL_ATTR_BOOLEAN, RILL_ATTR_POLICY, RILL_DEF_BOOL(true),
     "sync mode: a trainer's part holds its state at the snapshot's step exactly"},
};

static rill_status *checkpoint_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *s = rill_infer_in(ctx, 1, 0);
  if (!s) return rill_infer_error(ctx, "needs input Step");
  if (s->known) {
    int64_t n;
    if (rill_dims_numel(&s->dims, INT64_MAX, &n) && n != 1)
      return rill_infer_error(ctx, "input Step (%s) must hold one element, has %lld",
                              rill_infer_in_name(ctx, 1, 0), (long long)n);
    if (s->dtype != RILL_DTYPE_INT64 && s->dtype != RILL_DTYPE_INT32)
      return rill_infer_error(ctx, "input Step (%s) must be int64 or int32, is %s",
                              rill_infer_in_name(ctx, 1, 0), rill_dtype_name(s->dtype));
  }
  const char *dir = ctx->attrs[RILL_CHECKPOINT_ATTR_DIRECTORY].v.s;
  if (!dir || !*dir) return rill_infer_error(ctx, "attribute directory is empty");
  if (ctx->attrs[RILL_CHECKPOINT_ATTR_EVERY_N_STEPS].v.l < 0) return rill_infer_error(ctx, "every_n_steps must be >= 0");
  if (!(ctx->attrs[RILL_CHECKPOINT_ATTR_EVERY_N_SECONDS].v.f >= 0)) return rill_infer_error(ctx, "every_n_seconds must be >= 0");
  if (ctx->attrs[RILL_CHECKPOINT_ATTR_MAX_TO_KEEP].v.i < 0) return rill_infer_error(ctx, "max_to_keep must be >= 0");
  if (ctx->attrs[RILL_CHECKPOINT_ATTR_CLUSTER_ENDPOINTS].n) {
    int32_t t = ctx->attrs[RILL_CHECKPOINT_ATTR_CLUSTER_TRAINERS].v.i;
    int32_t id = ctx->attrs[RILL_CHECKPOINT_ATTR_CLUSTER_TRAINER_ID].v.i;
    if (t < 1 || id < 0 || id >= t)
      return rill_infer_error(ctx, "cluster_trainer_id %d is outside 0..cluster_trainers-1 (%d trainers)",
                              (int)id, (int)t);
  }
  return NULL;
}

const rill_op_schema rill_schema_checkpoint = {
    .type = "checkpoint",
    .doc = "When due (every_n_steps / every_n_seconds), snapshots X, Step and the generator "
           "state and writes them atomically to directory/checkpoint_<step> in the "
           "background; keeps the newest max_to_keep.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = NULL,
    .noutputs = 0,
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_BLOCKING | RILL_OP_SIDE_EFFECT | RILL_OP_RANDOM | RILL_OP_WRITES_FILES,
    .infer = checkpoint_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(checkpoint);
