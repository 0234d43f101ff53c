/* The distributed runtime over the transport (doc/design/distributed.md, "The runtime").
 *
 * Trainer side: one rpc client per process, created on first use (deadline from
 * RILL_RPC_DEADLINE_MS, secret from RILL_DIST_SECRET), shared by every send, recv and
 * barrier op of every executor; the first call to an endpoint waits for its server
 * (bounded by the deadline), so trainers and pservers may start in any order. Each
 * (owner, endpoint, trainer id) an op talked to is remembered, `owner` being the
 * executor's device services, so that closing that executor sends COMPLETE to exactly
 * those pservers (rill_dist_complete).
 *
 * Pserver side: rill_pserver_serve, the loop listen_and_serv runs (sync, async and
 * half-sync modes, described with the options below). */
#ifndef RILL_FRAMEWORK_RPC_DIST_H
#define RILL_FRAMEWORK_RPC_DIST_H

#include <stdint.h>

#include "framework/rpc/rpc.h"

/* ---- trainer side ---- */

/* The process's client, created on the first call. */
rill_status *rill_dist_client(rill_rpc_client **out);
/* Before the first call from `owner` as `trainer_id` to `endpoint`: waits until its
 * server answers (once per endpoint and process) and records the contact. */
rill_status *rill_dist_contact(const void *owner, const char *endpoint, int64_t trainer_id);
/* Sends COMPLETE to every endpoint `owner` contacted, with its trainer id, and forgets
 * them: a second call does nothing. The first error is returned after all were tried. */
rill_status *rill_dist_complete(const void *owner);
/* Forgets `owner`'s contacts without notifying anyone (its executor is destroyed). */
void rill_dist_forget(const void *owner);
/* Destroys the process's client and forgets every contact (tests; no call in flight). */
void rill_dist_shutdown(void);

/* ---- pserver side ---- */

/* The names a distributed lookup uses for table block T: the trainer sends the ids it
 * wants from T as "T@PREFETCH_IDS" and the pserver's prefetch block writes the rows to
 * "T@PREFETCH_ROWS" (the transpiler writes both sides). */
#define RILL_DIST_PREFETCH_IDS "@PREFETCH_IDS"
#define RILL_DIST_PREFETCH_ROWS "@PREFETCH_ROWS"

typedef enum rill_pserver_mode {
  RILL_PSERVER_SYNC = 0,  /* rounds: all live trainers (or a quorum) per step */
  RILL_PSERVER_ASYNC = 1, /* each gradient applied when it arrives */
} rill_pserver_mode;

/* Runs optimize block `block` in `scope` (listen_and_serv: the device's run_block).
 * Called from several threads at once for different blocks. */
typedef rill_status *(*rill_pserver_run_fn)(void *arg, int32_t block, rill_scope *scope);

typedef struct rill_pserver_opts {
  const char *endpoint; /* to bind ("127.0.0.1:6170"; port 0 picks one) */
  int32_t fanin;        /* trainers, >= 1 */
  rill_pserver_mode mode;
  /* Sync mode: a round runs once this many live trainers sent BATCH_BARRIER (<= 0 or
   * more than fanin: all of them). */
  int32_t quorum;
  /* The variables trainers send (listen_and_serv's X): per trainer in sync mode
   * ("G.trainer_<t>"), else the gradient itself. They live in the caller's scope. */
  size_t nx;
  const char *const *xnames;
  rill_variable *const *xvars;
  /* grad_to_block_id, parsed: the merged gradient of each optimize block. */
  size_t nblocks;
  const char *const *block_grads;
  const int32_t *block_ids;
  int32_t lr_block;    /* run first in every round (sync) or before each block (async); -1 */
  /* Prefetch blocks (listen_and_serv's prefetch_var_name_to_block_id, parsed): a
   * PREFETCH request for prefetch_names[i] puts its ids under that name in a scope of
   * its own, runs block prefetch_blocks[i] there and is answered with the variable the
   * request's out_varname names. In sync mode a trainer that has sent its barrier
   * waits for the round, as its GETs do, so a lookup always sees the parameters the
   * trainer's step must start from. */
  size_t nprefetch;
  const char *const *prefetch_names;
  const int32_t *prefetch_blocks;
  int64_t deadline_ms; /* <= 0: the rpc default (RILL_RPC_DEADLINE_MS) */
  int32_t threads;     /* optimize blocks run at once, >= 1 */
  rill_scope *scope;   /* where parameters are found; blocks run in child scopes of it */
  rill_pserver_run_fn run_block;
  void *run_arg;
  const rill_rpc_config *rpc; /* NULL: defaults */
  /* Cluster snapshots: a RILL_RPC_CHECKPOINT notice (its argument the snapshot id)
   * calls on_snapshot between rounds, before it is acknowledged; from then on every
   * reply carries the id as its tag, so each trainer learns of the snapshot. NULL: such
   * notices are refused. `resumed` is the first tag (the snapshot resumed from, 0).
   * Sync mode with snapshot_every > 0: the pserver also takes snapshot `resumed + r`
   * itself, with no notice, right after round r when that id is a multiple of
   * snapshot_every (the trainers' step-count schedule: round r of a job resumed from
   * snapshot k is the trainers' step k + r); the coordinating trainer announces only
   * the snapshots due by time. */
  rill_status *(*on_snapshot)(void *arg, int64_t id);
  void *snapshot_arg;
  int64_t resumed;
  int64_t snapshot_every;
  /* Called once the endpoint is bound, with the address (tests bind port 0). */
  void (*on_bound)(void *arg, const char *endpoint);
  void *bound_arg;
} rill_pserver_opts;

typedef struct rill_pserver_stats {
  int64_t rounds;       /* sync rounds run, or gradients applied in async mode */
  int64_t late_dropped; /* gradients of a past round dropped (half-sync) */
  int64_t rejected;     /* requests answered with an error */
  int64_t prefetches;   /* lookups answered */
} rill_pserver_stats;

/* Serves until every trainer sent COMPLETE (OK), or fails: a wait past the deadline is
 * DEADLINE_EXCEEDED naming the endpoint, the missing trainers and their variables.
 * stats may be NULL. */
rill_status *rill_pserver_serve(const rill_pserver_opts *o, rill_pserver_stats *stats);

#endif
