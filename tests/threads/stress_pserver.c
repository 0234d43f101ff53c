#define _GNU_SOURCE
/* The pserver loop (framework/rpc/dist.h) under load from several threads: the loop
 * serves on one thread and runs two optimize "blocks" at once on its own threads, while
 * two trainer threads share one rpc client (its socket pool) for ROUNDS sync rounds of
 * send, barrier, held GET and fetch barrier. A block runs as soon as both trainers'
 * gradients for it are in; every fourth round trainer 1 sends none, so both blocks run
 * at the barrier instead, at once. Every GET must see exactly the parameters
 * after that round, and both trainers' COMPLETE must end the loop with OK. After each
 * round trainer 0 announces a cluster snapshot, which the pserver hands to its writing
 * thread (framework/io/cluster_ckpt.h) while the next rounds update the parameters;
 * every part written must hold that round's parameters, and both trainers must have
 * seen the last snapshot's tag. Under ThreadSanitizer this checks the loop's hand-offs
 * between its request thread, its block threads, the snapshot writer and the
 * transport's reply path. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "framework/io/cluster_ckpt.h"
#include "framework/io/file.h"
#include "framework/rpc/dist.h"

enum { ROUNDS = 40, TRAINERS = 2, PARAMS = 2, N = 64 };

static const char *xnames[PARAMS * TRAINERS] = {"w0@GRAD.trainer_0", "w0@GRAD.trainer_1",
                                                "w1@GRAD.trainer_0", "w1@GRAD.trainer_1"};
static const char *bgrads[PARAMS] = {"w0@GRAD", "w1@GRAD"};
static const char *pnames[PARAMS] = {"w0", "w1"};
static const int32_t bids[PARAMS] = {1, 2};

typedef struct server {
  rill_scope *scope;
  rill_variable *w[PARAMS], *g[PARAMS * TRAINERS];
  rill_pserver_opts o;
  rill_pserver_stats stats;
  rill_status *result;
  char ep[64];
  atomic_bool bound;
  atomic_int runs[PARAMS];
  rill_cluster_writer *writer;
  char dir[256];
} server;

/* A snapshot: both parameters, handed to the writing thread. */
static rill_status *snapshot(void *arg, int64_t id) {
  server *s = arg;
  const rill_tensor *ts[PARAMS] = {&s->w[0]->u.tensor, &s->w[1]->u.tensor};
  return rill_cluster_writer_submit(s->writer, id, pnames, ts, PARAMS);
}

typedef struct trainer {
  server *s;
  rill_rpc_client *c;
  int id;
  int bad; /* GETs that saw the wrong parameters */
  rill_status *err;
} trainer;

/* Block b: w_b -= g_b.trainer_0 + g_b.trainer_1, elementwise. */
static rill_status *optimize(void *arg, int32_t block, rill_scope *scope) {
  server *s = arg;
  (void)scope;
  int b = block - 1;
  float *w = rill_tensor_ptr(&s->w[b]->u.tensor);
  for (int t = 0; t < TRAINERS; t++) {
    const float *g = rill_tensor_ptr(&s->g[b * TRAINERS + t]->u.tensor);
    for (int i = 0; i < N; i++) w[i] -= g[i];
  }
  atomic_fetch_add(&s->runs[b], 1);
  return NULL;
}

static void on_bound(void *arg, const char *ep) {
  server *s = arg;
  snprintf(s->ep, sizeof s->ep, "%s", ep);
  atomic_store(&s->bound, true);
}

static void *serve_main(void *arg) {
  server *s = arg;
  s->result = rill_pserver_serve(&s->o, &s->stats);
  return NULL;
}

static rill_status *fill(rill_variable *v, float a) {
  rill_dims d = {.n = 1, .d = {N}};
  rill_tensor *t = rill_variable_tensor(v);
  RILL_TRY(rill_tensor_alloc(t, RILL_DTYPE_FP32, &d));
  float *p = rill_tensor_ptr(t);
  for (int i = 0; i < N; i++) p[i] = a;
  return NULL;
}

/* The parameters after k rounds: trainer t sends gradient (t + 1) for every parameter,
 * so a round takes 1 + 2 = 3 off every element, or 1 in the rounds where trainer 1 sends
 * nothing (round r, from 0, with r % 4 == 3). */
static float expected(int k) { return 1000.0f - 3.0f * (float)k + 2.0f * (float)(k / 4); }

/* One round of trainer t. The gradients go at once, and the parameters come back
 * at once (rill_rpc_send_var_each / rill_rpc_get_var_each), as a send or recv op moves
 * its blocks; the loop runs each block as soon as both trainers' gradients are in. */
static rill_status *one_round(trainer *tr, int round) {
  rill_variable g[PARAMS], w[PARAMS];
  const rill_variable *gp[PARAMS];
  rill_variable *wp[PARAMS];
  const char *eps[PARAMS];
  rill_status *st = NULL;
  for (int b = 0; b < PARAMS; b++) {
    rill_variable_init(&g[b]);
    rill_variable_init(&w[b]);
    gp[b] = &g[b];
    wp[b] = &w[b];
    eps[b] = tr->s->ep;
    if (!st) st = fill(&g[b], (float)(tr->id + 1));
  }
  bool skip = tr->id == 1 && round % 4 == 3;
  if (!st && !skip) st = rill_rpc_send_var_each(tr->c, PARAMS, eps, bgrads, gp, tr->id, NULL, NULL, NULL);
  if (!st) st = rill_rpc_send_notice(tr->c, tr->s->ep, RILL_RPC_BATCH_BARRIER, tr->id);
  if (!st) st = rill_rpc_get_var_each(tr->c, PARAMS, eps, pnames, wp, tr->id, NULL, NULL, NULL);
  for (int b = 0; b < PARAMS && !st; b++) {
    const float *p = rill_tensor_ptr(&w[b].u.tensor);
    float want = expected(round + 1);
    for (int i = 0; i < N; i++)
      if (p[i] != want) {
        tr->bad++;
        break;
      }
  }
  for (int b = 0; b < PARAMS; b++) {
    rill_variable_clear(&g[b]);
    rill_variable_clear(&w[b]);
  }
  RILL_TRY(st);
  RILL_TRY(rill_rpc_send_notice(tr->c, tr->s->ep, RILL_RPC_FETCH_BARRIER, tr->id));
  if (tr->id != 0) return NULL;
  char id[16];
  snprintf(id, sizeof id, "%d", round + 1);
  return rill_rpc_send_notice_arg(tr->c, tr->s->ep, RILL_RPC_CHECKPOINT, id, tr->id);
}

static void *trainer_main(void *arg) {
  trainer *tr = arg;
  for (int r = 0; r < ROUNDS && !tr->err; r++) tr->err = one_round(tr, r);
  if (!tr->err) tr->err = rill_rpc_send_notice(tr->c, tr->s->ep, RILL_RPC_COMPLETE, tr->id);
  return NULL;
}

int main(void) {
  static server s;
  rill_status *st = rill_scope_create(NULL, &s.scope);
  CHECK(!st, "scope: %s", rill_status_message(st));
  if (st) return check_report();
  for (int b = 0; b < PARAMS && !st; b++) {
    st = rill_scope_var(s.scope, pnames[b], &s.w[b]);
    if (!st) st = fill(s.w[b], 1000.0f);
  }
  for (int k = 0; k < PARAMS * TRAINERS && !st; k++) st = rill_scope_var(s.scope, xnames[k], &s.g[k]);
  CHECK(!st, "variables: %s", rill_status_message(st));
  if (st) return check_report();
  s.o = (rill_pserver_opts){.endpoint = "127.0.0.1:0",
                            .fanin = TRAINERS,
                            .mode = RILL_PSERVER_SYNC,
                            .nx = PARAMS * TRAINERS,
                            .xnames = xnames,
                            .xvars = s.g,
                            .nblocks = PARAMS,
                            .block_grads = bgrads,
                            .block_ids = bids,
                            .lr_block = -1,
                            .deadline_ms = 60000,
                            .threads = 2,
                            .scope = s.scope,
                            .run_block = optimize,
                            .run_arg = &s,
                            .on_bound = on_bound,
                            .bound_arg = &s,
                            .on_snapshot = snapshot,
                            .snapshot_arg = &s};
  snprintf(s.dir, sizeof s.dir, "/tmp/rill_stress_pserver_XXXXXX");
  CHECK(mkdtemp(s.dir) != NULL, "mkdtemp");
  rill_cluster_shape shape = {1, TRAINERS};
  st = rill_cluster_writer_create(s.dir, &shape, RILL_CLUSTER_PSERVER, 0, 0, &s.writer);
  CHECK(!st, "writer: %s", rill_status_message(st));
  if (st) return check_report();
  pthread_t serve;
  CHECK(pthread_create(&serve, NULL, serve_main, &s) == 0, "pthread_create");
  for (int i = 0; i < 30000 && !atomic_load(&s.bound); i++) usleep(1000);
  CHECK(atomic_load(&s.bound), "the pserver did not bind within 30 s");
  if (!atomic_load(&s.bound)) return check_report();

  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.deadline_ms = 60000;
  cfg.secret = "";
  rill_rpc_client *c = NULL;
  st = rill_rpc_client_create(&cfg, &c);
  CHECK(!st, "client: %s", rill_status_message(st));
  if (st) return check_report();
  trainer tr[TRAINERS];
  pthread_t th[TRAINERS];
  for (int t = 0; t < TRAINERS; t++) {
    tr[t] = (trainer){.s = &s, .c = c, .id = t};
    CHECK(pthread_create(&th[t], NULL, trainer_main, &tr[t]) == 0, "pthread_create");
  }
  for (int t = 0; t < TRAINERS; t++) {
    pthread_join(th[t], NULL);
    CHECK(!tr[t].err, "trainer %d: %s", t, rill_status_message(tr[t].err));
    CHECK(tr[t].bad == 0, "trainer %d saw wrong parameters after %d GETs", t, tr[t].bad);
    rill_status_destroy(tr[t].err);
  }
  pthread_join(serve, NULL);
  CHECK(!s.result, "pserver: %s", rill_status_message(s.result));
  rill_status_destroy(s.result);
  CHECK(s.stats.rounds == ROUNDS, "rounds %lld, want %d", (long long)s.stats.rounds, ROUNDS);
  for (int b = 0; b < PARAMS; b++) {
    CHECK(atomic_load(&s.runs[b]) == ROUNDS, "block %d ran %d times", b + 1,
          atomic_load(&s.runs[b]));
    const float *w = rill_tensor_ptr(&s.w[b]->u.tensor);
    CHECK(w[0] == expected(ROUNDS) && w[N - 1] == w[0], "w%d = %g", b, (double)w[0]);
  }
  CHECK(rill_rpc_client_tag(c) == ROUNDS, "the client saw tag %u, want %d",
        (unsigned)rill_rpc_client_tag(c), ROUNDS);
  st = rill_cluster_writer_close(s.writer);
  CHECK(!st, "writer: %s", rill_status_message(st));
  rill_status_destroy(st);
  for (int k = 1; k <= ROUNDS; k++) {
    char path[512];
    snprintf(path, sizeof path, "%s/pserver_0/checkpoint_%d", s.dir, k);
    rill_ckpt_snapshot snap;
    rill_ckpt_snapshot_init(&snap);
    st = rill_ckpt_read(path, &snap);
    CHECK(!st, "part %d: %s", k, rill_status_message(st));
    for (size_t i = 0; !st && i < snap.n; i++) {
      const float *w = rill_tensor_ptr(&snap.tensors[i]);
      CHECK(w[0] == expected(k) && w[N - 1] == w[0],
            "part %d holds %s = %g, not round %d's", k, snap.names[i], (double)w[0], k);
    }
    rill_status_destroy(st);
    rill_ckpt_snapshot_clear(&snap);
  }
  rill_status_destroy(rill_dir_remove_tree(s.dir));
  rill_rpc_client_destroy(c);
  rill_scope_destroy(s.scope);
  return check_report();
}
