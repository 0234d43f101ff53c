/* Sub-blocks: the plans of the blocks that ops such as conditional_block run, and the
 * run_block service behind them (executor.h). A sub-block's plan is built the first
 * time the block runs and kept in the executor's table of sub-block plans (not the plan
 * cache: a nested build must not evict or reorder the plan of the run in progress)
 * while the same program revision runs. Each block has a `running` flag, set under the
 * table's lock, so threads may run different blocks at once and a block never runs
 * twice at once: its plan's argument tables are bound to one scope at a time. */
#include <inttypes.h>

#include "framework/exec/plan.h"

/* The blocks this thread is running, innermost first, to tell recursion (a block that
 * runs itself through its own ops) from another thread's run of the same block. */
typedef struct block_frame {
  const rill_executor *exe;
  int32_t block;
  const struct block_frame *up;
} block_frame;

static _Thread_local const block_frame *thread_frames;

void rill_exec_subplans_init(rill_executor *exe) {
  pthread_mutex_init(&exe->sub.lock, NULL);
  exe->sub.plans = NULL;
  exe->sub.running = NULL;
  exe->sub.n = 0;
}

static void drop_plans(rill_subplans *s) {
  for (size_t b = 0; b < s->n; b++) rill_plan_destroy(s->plans[b]);
  rill_free(s->plans);
  rill_free(s->running);
  s->plans = NULL;
  s->running = NULL;
  s->n = 0;
}

void rill_exec_subplans_destroy(rill_executor *exe) {
  drop_plans(&exe->sub);
  pthread_mutex_destroy(&exe->sub.lock);
}

uint64_t rill_exec_subplan_builds(rill_executor *exe) {
  pthread_mutex_lock(&exe->sub.lock);
  uint64_t n = exe->sub.builds;
  pthread_mutex_unlock(&exe->sub.lock);
  return n;
}

uint64_t rill_exec_subblock_runs(rill_executor *exe) {
  pthread_mutex_lock(&exe->sub.lock);
  uint64_t n = exe->sub.runs;
  pthread_mutex_unlock(&exe->sub.lock);
  return n;
}

/* Makes the table hold `prog`'s blocks (dropping another program's plans, which no run
 * can be using: a run of that program would hold the executor), then claims `block`
 * and finds or builds its plan. Called with the lock held. */
static rill_status *claim_locked(rill_executor *exe, const rill_program *prog, int32_t block,
                                 rill_plan **out) {
  rill_subplans *s = &exe->sub;
  if (s->n &&
      (s->program_id != prog->id || s->revision != prog->revision || s->n != prog->nblocks)) {
    for (size_t b = 0; b < s->n; b++)
      if (s->running[b])
        return rill_error(RILL_FAILED_PRECONDITION,
                          "block %d of program #%" PRIu64 ": block %zu of program #%" PRIu64
                          " is still running",
                          (int)block, prog->id, b, s->program_id);
    drop_plans(s);
  }
  if (!s->n) {
    s->plans = rill_calloc(prog->nblocks, sizeof *s->plans);
    s->running = rill_calloc(prog->nblocks, sizeof *s->running);
    if (!s->plans || !s->running) {
      drop_plans(s);
      return rill_oom();
    }
    s->n = prog->nblocks;
    s->program_id = prog->id;
    s->revision = prog->revision;
  }
  if (s->running[block])
    return rill_error(RILL_FAILED_PRECONDITION,
                      "block %d of program #%" PRIu64 " is already running on another thread; a "
                      "block runs once at a time",
                      (int)block, prog->id);
  if (!s->plans[block]) {
    RILL_TRY(rill_plan_build(exe, prog, block, NULL, 0, NULL, 0, &s->plans[block]));
    s->builds++;
  }
  s->running[block] = true;
  s->runs++;
  *out = s->plans[block];
  return NULL;
}

rill_status *rill_exec_run_block(rill_executor *exe, int32_t block, rill_scope *scope) {
  const rill_program *prog = exe->device.program;
  if (!prog)
    return rill_error(RILL_FAILED_PRECONDITION,
                      "block %d cannot run: no program is being run (a plan run directly has no "
                      "sub-blocks; run the program through rill_executor_run)",
                      (int)block);
  if (block == 0)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "block 0 is the main block of program #%" PRIu64 "; only sub-blocks "
                      "(1..%zu) run inside a run",
                      prog->id, prog->nblocks - 1);
  if (block < 0 || (size_t)block >= prog->nblocks)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "block %d does not exist: program #%" PRIu64 " has %zu blocks", (int)block,
                      prog->id, prog->nblocks);
  if (!scope)
    return rill_error(RILL_INVALID_ARGUMENT, "block %d: no scope to run it in", (int)block);
  for (const block_frame *f = thread_frames; f; f = f->up)
    if (f->exe == exe && f->block == block)
      return rill_error(RILL_FAILED_PRECONDITION,
                        "block %d of program #%" PRIu64 " would run inside itself: an op of the "
                        "block (or of a block it runs) runs it again",
                        (int)block, prog->id);
  /* Checked here as well as before each op, so that an op running a block again and
   * again (while) stops on cancel or deadline even when the block has no ops. */
  if (rill_sched_cancelled(exe->sched))
    return rill_error(RILL_CANCELLED, "before block %d: the run was cancelled", (int)block);
  if (exe->run_deadline_ns && rill_sched_now_ns() >= exe->run_deadline_ns)
    return rill_error(RILL_DEADLINE_EXCEEDED, "before block %d: the run passed its deadline",
                      (int)block);
  rill_plan *p = NULL;
  pthread_mutex_lock(&exe->sub.lock);
  rill_status *st = claim_locked(exe, prog, block, &p);
  pthread_mutex_unlock(&exe->sub.lock);
  if (st) return st;
  block_frame frame = {exe, block, thread_frames};
  thread_frames = &frame;
  st = rill_exec_run_subplan(exe, p, scope);
  thread_frames = frame.up;
  pthread_mutex_lock(&exe->sub.lock);
  exe->sub.running[block] = false;
  pthread_mutex_unlock(&exe->sub.lock);
  return st;
}
