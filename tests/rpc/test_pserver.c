/* The pserver loop (framework/rpc/dist.h) in this process: rill_pserver_serve on a
 * thread, trainers played by rpc clients, and an optimize "block" that is a function:
 * w -= w@GRAD.trainer_0 + w@GRAD.trainer_1 (4 floats), so every round's effect is checkable
 * (and, with two blocks, u -= u@GRAD.trainer_0 + u@GRAD.trainer_1 as block 2). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "framework/rpc/dist.h"

#define POK(expr)                                                                 \
  do {                                                                            \
    rill_status *st_ = (expr);                                                    \
    cr_assert_null(st_, "%s: %s", #expr, rill_status_message(st_));               \
  } while (0)

typedef struct fixture {
  rill_scope *scope;
  rill_variable *w, *g[2];
  rill_variable *u, *xv[4]; /* two blocks: g[0], g[1], then u's gradients */
  rill_pserver_opts o;
  rill_pserver_stats stats;
  rill_status *result;
  pthread_t th;
  char ep[64];
  atomic_bool bound;
  atomic_int runs, runs_u;
  rill_rpc_client *c;
} fixture;

static const char *xnames[4] = {"w@GRAD.trainer_0", "w@GRAD.trainer_1", "u@GRAD.trainer_0",
                                "u@GRAD.trainer_1"};
static const char *bgrads[2] = {"w@GRAD", "u@GRAD"};
static const int32_t bids[2] = {1, 2};
static const char *pfnames[1] = {"t@PREFETCH_IDS"};
static const int32_t pfblocks[1] = {5};

/* The prefetch "block" (5): t@PREFETCH_ROWS[i] = w[0] + ids[i], for ids in 0..3 (others
 * fail, as a lookup outside the table does). */
static rill_status *fake_prefetch(fixture *f, rill_scope *scope) {
  rill_variable *ids = rill_scope_find(scope, "t@PREFETCH_IDS"), *rows = NULL;
  cr_assert_not_null(ids);
  const rill_tensor *it = &ids->u.tensor;
  const int64_t *id = rill_tensor_ptr(it);
  int64_t n = rill_tensor_numel(it);
  for (int64_t i = 0; i < n; i++)
    if (id[i] < 0 || id[i] > 3) return rill_error(RILL_OUT_OF_RANGE, "id %lld is not in 0..3", (long long)id[i]);
  POK(rill_scope_var(scope, "t@PREFETCH_ROWS", &rows));
  rill_dims d = {.n = 2, .d = {n, 1}};
  POK(rill_tensor_alloc(rill_variable_tensor(rows), RILL_DTYPE_FP32, &d));
  float *r = rill_tensor_ptr(&rows->u.tensor);
  for (int64_t i = 0; i < n; i++) r[i] = ((const float *)rill_tensor_ptr(&f->w->u.tensor))[0] + (float)id[i];
  return NULL;
}

static rill_status *fake_block(void *arg, int32_t block, rill_scope *scope) {
  fixture *f = arg;
  if (block == 5) return fake_prefetch(f, scope);
  cr_assert(block == 1 || block == 2);
  float *w = rill_tensor_ptr(&(block == 1 ? f->w : f->u)->u.tensor);
  for (int t = 0; t < 2; t++) {
    const float *g = rill_tensor_ptr(&f->xv[2 * (block - 1) + t]->u.tensor);
    for (int i = 0; i < 4; i++) w[i] -= g[i];
  }
  atomic_fetch_add(block == 1 ? &f->runs : &f->runs_u, 1);
  return NULL;
}

static void on_bound(void *arg, const char *ep) {
  fixture *f = arg;
  snprintf(f->ep, sizeof f->ep, "%s", ep);
  atomic_store(&f->bound, true);
}

static void *serve_main(void *arg) {
  fixture *f = arg;
  f->result = rill_pserver_serve(&f->o, &f->stats);
  return NULL;
}

static void set4(rill_variable *v, float a) {
  rill_dims d = {.n = 1, .d = {4}};
  rill_tensor *t = rill_variable_tensor(v);
  POK(rill_tensor_alloc(t, RILL_DTYPE_FP32, &d));
  float *p = rill_tensor_ptr(t);
  for (int i = 0; i < 4; i++) p[i] = a;
}

static void prepare_blocks(fixture *f, int32_t quorum, int64_t deadline_ms, size_t nblocks);
static void launch(fixture *f);

static void start_blocks(fixture *f, int32_t quorum, int64_t deadline_ms, size_t nblocks) {
  prepare_blocks(f, quorum, deadline_ms, nblocks);
  launch(f);
}

static void start(fixture *f, int32_t quorum, int64_t deadline_ms) { start_blocks(f, quorum, deadline_ms, 1); }

static void prepare(fixture *f, int32_t quorum, int64_t deadline_ms) {
  prepare_blocks(f, quorum, deadline_ms, 1);
}

/* The fixture with its options (one block, w; or two, w and u), the loop not started. */
static void prepare_blocks(fixture *f, int32_t quorum, int64_t deadline_ms, size_t nblocks) {
  memset(f, 0, sizeof *f);
  POK(rill_scope_create(NULL, &f->scope));
  POK(rill_scope_var(f->scope, "w", &f->w));
  POK(rill_scope_var(f->scope, "u", &f->u));
  set4(f->w, 10);
  set4(f->u, 100);
  for (size_t i = 0; i < 2 * nblocks; i++) POK(rill_scope_var(f->scope, xnames[i], &f->xv[i]));
  f->g[0] = f->xv[0];
  f->g[1] = f->xv[1];
  f->o = (rill_pserver_opts){.endpoint = "127.0.0.1:0",
                             .fanin = 2,
                             .mode = RILL_PSERVER_SYNC,
                             .quorum = quorum,
                             .nx = 2 * nblocks,
                             .xnames = xnames,
                             .xvars = f->xv,
                             .nblocks = nblocks,
                             .block_grads = bgrads,
                             .block_ids = bids,
                             .lr_block = -1,
                             .deadline_ms = deadline_ms,
                             .threads = 2,
                             .scope = f->scope,
                             .nprefetch = 1,
                             .prefetch_names = pfnames,
                             .prefetch_blocks = pfblocks,
                             .run_block = fake_block,
                             .run_arg = f,
                             .on_bound = on_bound,
                             .bound_arg = f};
}

static void launch(fixture *f) {
  cr_assert_eq(pthread_create(&f->th, NULL, serve_main, f), 0);
  while (!atomic_load(&f->bound)) usleep(1000);
  rill_rpc_config cfg;
  rill_rpc_config_init(&cfg);
  cfg.deadline_ms = 5000;
  cfg.secret = "";
  POK(rill_rpc_client_create(&cfg, &f->c));
}

/* Waits for the loop to end; returns its status (the caller destroys it). */
static rill_status *finish(fixture *f) {
  pthread_join(f->th, NULL);
  rill_rpc_client_destroy(f->c);
  rill_scope_destroy(f->scope);
  return f->result;
}

static void send_grad(fixture *f, int t, const char *name, float a) {
  rill_variable v;
  rill_variable_init(&v);
  set4(&v, a);
  POK(rill_rpc_send_var(f->c, f->ep, name, &v, NULL, t));
  rill_variable_clear(&v);
}

static float get_var(fixture *f, int t, const char *name) {
  rill_variable v;
  rill_variable_init(&v);
  POK(rill_rpc_get_var(f->c, f->ep, name, NULL, t, &v));
  float w = ((const float *)rill_tensor_ptr(&v.u.tensor))[0];
  rill_variable_clear(&v);
  return w;
}

static float get_w(fixture *f, int t) { return get_var(f, t, "w"); }

typedef struct getter {
  fixture *f;
  int t;
  float w;
  const char *name; /* NULL: "w" */
  atomic_bool got;
} getter;

static void *get_main(void *arg) {
  getter *g = arg;
  g->w = get_var(g->f, g->t, g->name ? g->name : "w");
  atomic_store(&g->got, true);
  return NULL;
}

/* A GET after the barrier waits for the round, which waits for every trainer; the
 * gradient of one trainer sent unsuffixed is stored under its .trainer_<id> name. */
Test(pserver, sync_round_waits_for_every_trainer) {
  fixture f;
  start(&f, 0, 5000);
  send_grad(&f, 0, "w@GRAD", 1); /* -> w@GRAD.trainer_0 */
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 0));
  getter g0 = {.f = &f, .t = 0};
  pthread_t th;
  pthread_create(&th, NULL, get_main, &g0);
  usleep(200 * 1000);
  cr_assert_eq(atomic_load(&f.runs), 0, "the round ran without trainer 1");
  send_grad(&f, 1, "w@GRAD.trainer_1", 2);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 1));
  pthread_join(th, NULL);
  cr_assert_eq(atomic_load(&f.runs), 1);
  cr_assert_float_eq(g0.w, 7.0f, 0, "w = 10 - 1 - 2, got %g", g0.w);
  cr_assert_float_eq(get_w(&f, 1), 7.0f, 0);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 0));
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 1));
  POK(finish(&f));
  cr_assert_eq(f.stats.rounds, 1);
}

/* A completed trainer stops counting: its gradient is zero in later rounds, and the
 * loop returns OK once both completed. */
Test(pserver, completed_trainer_stops_counting) {
  fixture f;
  start(&f, 0, 5000);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 1));
  send_grad(&f, 0, "w@GRAD.trainer_0", 1);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 0));
  cr_assert_float_eq(get_w(&f, 0), 9.0f, 0);
  send_grad(&f, 0, "w@GRAD.trainer_0", 3);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 0));
  cr_assert_float_eq(get_w(&f, 0), 6.0f, 0);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 0));
  POK(finish(&f));
  cr_assert_eq(f.stats.rounds, 2);
}

typedef struct snap_rec {
  fixture *f;
  int n;
  int64_t id[8];
  float w[8];
} snap_rec;

static rill_status *record_snapshot(void *arg, int64_t id) {
  snap_rec *r = arg;
  cr_assert_lt(r->n, 8);
  r->id[r->n] = id;
  r->w[r->n++] = ((const float *)rill_tensor_ptr(&r->f->w->u.tensor))[0];
  return NULL;
}

/* Sync mode with snapshot_every: the loop takes snapshot resumed + r itself right after
 * round r when that id is a multiple (the state after that round, its held GET already
 * answered), tags its replies with it, and acknowledges an announcement of a snapshot
 * it already took without taking it again. */
Test(pserver, sync_snapshots_due_by_the_step_count_need_no_announcement) {
  fixture f;
  prepare(&f, 0, 5000);
  snap_rec rec = {.f = &f};
  f.o.on_snapshot = record_snapshot;
  f.o.snapshot_arg = &rec;
  f.o.resumed = 4;
  f.o.snapshot_every = 3;
  launch(&f);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 1));
  cr_assert_eq(rill_rpc_client_tag(f.c), 4, "the first tag is the snapshot resumed from");
  float want[5];
  for (int r = 1; r <= 5; r++) {
    send_grad(&f, 0, "w@GRAD.trainer_0", (float)r);
    POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 0));
    want[r - 1] = get_w(&f, 0);
  }
  /* rounds 2 and 5 are steps 6 and 9 */
  cr_assert_eq(rec.n, 2, "%d snapshots taken", rec.n);
  cr_assert_eq(rec.id[0], 6);
  cr_assert_eq(rec.id[1], 9);
  cr_assert_float_eq(rec.w[0], want[1], 0, "snapshot 6 holds %g, not round 2's %g", rec.w[0],
                     want[1]);
  cr_assert_float_eq(rec.w[1], want[4], 0, "snapshot 9 holds %g, not round 5's %g", rec.w[1],
                     want[4]);
  cr_assert_eq(rill_rpc_client_tag(f.c), 9);
  POK(rill_rpc_send_notice_arg(f.c, f.ep, RILL_RPC_CHECKPOINT, "9", 0));
  cr_assert_eq(rec.n, 2, "an announced snapshot already taken was taken again");
  POK(rill_rpc_send_notice_arg(f.c, f.ep, RILL_RPC_CHECKPOINT, "10", 0));
  cr_assert_eq(rec.n, 3);
  cr_assert_eq(rec.id[2], 10);
  cr_assert_eq(rill_rpc_client_tag(f.c), 10);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 0));
  POK(finish(&f));
  cr_assert_eq(f.stats.rounds, 5);
}

/* A trainer that never sends makes the loop fail at the deadline, naming it and the
 * variable missing, instead of waiting forever. */
Test(pserver, deadline_names_the_missing_trainer_and_variable) {
  fixture f;
  start(&f, 0, 300);
  send_grad(&f, 0, "w@GRAD.trainer_0", 1);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 0));
  rill_status *st = finish(&f);
  cr_assert_eq(rill_status_code(st), RILL_DEADLINE_EXCEEDED, "%s", rill_status_message(st));
  const char *m = rill_status_message(st);
  cr_assert(strstr(m, "from trainer(s) 1 ") && strstr(m, "w@GRAD.trainer_1") &&
                strstr(m, "127.0.0.1:") && !strstr(m, "w@GRAD.trainer_0"),
            "%s", m);
  rill_status_destroy(st);
}

/* Requests the pserver cannot take get an error and change nothing. */
Test(pserver, bad_requests_are_refused_and_change_nothing) {
  fixture f;
  start(&f, 0, 5000);
  rill_variable v;
  rill_variable_init(&v);
  set4(&v, 5);
  rill_status *st = rill_rpc_send_var(f.c, f.ep, "nope", &v, NULL, 0);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND, "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = rill_rpc_send_var(f.c, f.ep, "w@GRAD", &v, NULL, 7); /* no trainer 7 */
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = rill_rpc_send_var(f.c, f.ep, "w@GRAD.trainer_1", &v, NULL, 0); /* another's */
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_dims d3 = {.n = 1, .d = {3}};
  POK(rill_tensor_alloc(&v.u.tensor, RILL_DTYPE_FP32, &d3));
  st = rill_rpc_send_var(f.c, f.ep, "w@GRAD", &v, NULL, 0); /* w has 4 elements */
  cr_assert_eq(rill_status_code(st), RILL_INVALID_ARGUMENT, "%s", rill_status_message(st));
  cr_assert(strstr(rill_status_message(st), "dims"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = rill_rpc_get_var(f.c, f.ep, "missing", NULL, 0, &v);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND, "%s", rill_status_message(st));
  rill_status_destroy(st);
  rill_variable_clear(&v);
  cr_assert_float_eq(get_w(&f, 0), 10.0f, 0);
  cr_assert(!f.g[0]->u.tensor.buf && !f.g[1]->u.tensor.buf, "a refused gradient was stored");
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 0));
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 1));
  POK(finish(&f));
  cr_assert_eq(f.stats.rejected, 5);
  cr_assert_eq(f.stats.rounds, 0);
}

/* Half-sync with a quorum of one: a round runs on the first barrier; the other
 * trainer's gradient, computed from the parameters before that round, is dropped and
 * counted; after it fetched, its gradients count again. */
Test(pserver, quorum_drops_late_gradients) {
  fixture f;
  start(&f, 1, 5000);
  send_grad(&f, 0, "w@GRAD.trainer_0", 1);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 0));
  cr_assert_float_eq(get_w(&f, 0), 9.0f, 0);
  send_grad(&f, 1, "w@GRAD.trainer_1", 100); /* late: trainer 1 still has round 0's w */
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 1));
  cr_assert_float_eq(get_w(&f, 1), 9.0f, 0);
  send_grad(&f, 1, "w@GRAD.trainer_1", 2);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 1));
  cr_assert_float_eq(get_w(&f, 1), 7.0f, 0);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 0));
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 1));
  POK(finish(&f));
  cr_assert_eq(f.stats.late_dropped, 1);
  cr_assert_eq(f.stats.rounds, 2);
}

/* Looks ids up through the pserver's prefetch block; the rows come back in *rows. */
static rill_status *prefetch(fixture *f, int t, const char *name, const int64_t *ids, int n,
                             rill_dtype dtype, float *rows) {
  rill_variable in, out;
  rill_variable_init(&in);
  rill_variable_init(&out);
  rill_dims d = {.n = 2, .d = {n, 1}};
  POK(rill_tensor_alloc(rill_variable_tensor(&in), dtype, &d));
  if (dtype == RILL_DTYPE_INT64) memcpy(rill_tensor_ptr(&in.u.tensor), ids, (size_t)n * 8);
  rill_status *st = rill_rpc_prefetch(f->c, f->ep, name, &in, "t@PREFETCH_ROWS", t, &out);
  if (!st) {
    cr_assert_eq(rill_tensor_numel(&out.u.tensor), n);
    memcpy(rows, rill_tensor_ptr(&out.u.tensor), (size_t)n * sizeof(float));
  }
  rill_variable_clear(&in);
  rill_variable_clear(&out);
  return st;
}

typedef struct fetcher {
  fixture *f;
  float rows[2];
} fetcher;

static void *prefetch_main(void *arg) {
  fetcher *g = arg;
  int64_t ids[2] = {0, 3};
  POK(prefetch(g->f, 0, "t@PREFETCH_IDS", ids, 2, RILL_DTYPE_INT64, g->rows));
  return NULL;
}

/* A lookup runs the prefetch block on the ids sent and answers with its rows. In sync
 * mode a trainer past its barrier waits for the round, so its next step's lookup sees
 * the updated table. Bad lookups get errors and the pserver keeps serving. */
Test(pserver, prefetch_answers_rows_and_waits_for_the_round) {
  fixture f;
  start(&f, 0, 5000);
  float rows[2];
  int64_t ids[2] = {2, 1};
  POK(prefetch(&f, 1, "t@PREFETCH_IDS", ids, 2, RILL_DTYPE_INT64, rows));
  cr_assert(rows[0] == 12.0f && rows[1] == 11.0f, "rows %g %g", rows[0], rows[1]);

  send_grad(&f, 0, "w@GRAD.trainer_0", 1);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 0));
  fetcher g = {&f, {0, 0}};
  pthread_t th;
  pthread_create(&th, NULL, prefetch_main, &g);
  usleep(200 * 1000);
  cr_assert_eq(atomic_load(&f.runs), 0, "the round ran without trainer 1");
  send_grad(&f, 1, "w@GRAD.trainer_1", 2);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 1));
  pthread_join(th, NULL);
  cr_assert(g.rows[0] == 7.0f && g.rows[1] == 10.0f, "after the round: %g %g", g.rows[0],
            g.rows[1]);

  int64_t bad[1] = {9};
  rill_status *st = prefetch(&f, 1, "t@PREFETCH_IDS", bad, 1, RILL_DTYPE_INT64, rows);
  cr_assert(st && strstr(rill_status_message(st), "id 9 is not in 0..3") &&
                strstr(rill_status_message(st), "prefetch of 't@PREFETCH_IDS'"),
            "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = prefetch(&f, 1, "u@PREFETCH_IDS", ids, 2, RILL_DTYPE_INT64, rows);
  cr_assert_eq(rill_status_code(st), RILL_NOT_FOUND, "%s", rill_status_message(st));
  rill_status_destroy(st);
  st = prefetch(&f, 1, "t@PREFETCH_IDS", ids, 2, RILL_DTYPE_FP32, rows);
  cr_assert(st && strstr(rill_status_message(st), "no int64 ids"), "%s", rill_status_message(st));
  rill_status_destroy(st);
  POK(prefetch(&f, 1, "t@PREFETCH_IDS", ids, 2, RILL_DTYPE_INT64, rows));
  cr_assert(rows[0] == 9.0f && rows[1] == 8.0f, "still serving, w unchanged: %g %g", rows[0],
            rows[1]);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 0));
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 1));
  POK(finish(&f));
  cr_assert_eq(f.stats.rounds, 1);
  cr_assert_eq(f.stats.prefetches, 3);
  cr_assert_eq(f.stats.rejected, 3);
}

/* Plain sync mode runs a block as soon as every trainer's gradient for it is in: a
 * trainer past its barrier gets that block's parameter while the other trainer is still
 * sending, and the round is over once every block ran, before the last barrier (which,
 * coming after its round, counts for nothing). The numbers are those of the barrier. */
Test(pserver, sync_blocks_run_as_their_gradients_complete) {
  fixture f;
  start_blocks(&f, 0, 5000, 2);
  send_grad(&f, 0, "w@GRAD.trainer_0", 1);
  send_grad(&f, 0, "u@GRAD.trainer_0", 10);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 0));
  getter gw = {.f = &f, .t = 0, .name = "w"}, gu = {.f = &f, .t = 0, .name = "u"};
  pthread_t tw, tu;
  pthread_create(&tw, NULL, get_main, &gw);
  pthread_create(&tu, NULL, get_main, &gu);
  usleep(100 * 1000);
  cr_assert(!atomic_load(&gw.got) && !atomic_load(&gu.got), "a GET was answered before any block ran");
  send_grad(&f, 1, "w@GRAD.trainer_1", 2); /* w's block is complete */
  pthread_join(tw, NULL);
  cr_assert_float_eq(gw.w, 7.0f, 0, "w = 10 - 1 - 2, got %g", gw.w);
  usleep(100 * 1000);
  cr_assert(!atomic_load(&gu.got), "u was answered before its block ran");
  cr_assert_eq(atomic_load(&f.runs_u), 0);
  send_grad(&f, 1, "u@GRAD.trainer_1", 20); /* the last block: the round is over */
  pthread_join(tu, NULL);
  cr_assert_float_eq(gu.w, 70.0f, 0, "u = 100 - 10 - 20, got %g", gu.w);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_BATCH_BARRIER, 1)); /* after its round */
  cr_assert_float_eq(get_var(&f, 1, "w"), 7.0f, 0);
  cr_assert_float_eq(get_var(&f, 1, "u"), 70.0f, 0);
  /* Round 2: trainer 0's gradients count (it is not "arrived" any more); a second
   * gradient for a block that already ran in the round counts for nothing. */
  send_grad(&f, 0, "w@GRAD.trainer_0", 1);
  send_grad(&f, 1, "w@GRAD.trainer_1", 1);
  send_grad(&f, 1, "w@GRAD.trainer_1", 50); /* w's block ran: dropped */
  send_grad(&f, 0, "u@GRAD.trainer_0", 1);
  send_grad(&f, 1, "u@GRAD.trainer_1", 1);
  cr_assert_float_eq(get_var(&f, 0, "w"), 5.0f, 0);
  cr_assert_float_eq(get_var(&f, 1, "u"), 68.0f, 0);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 0));
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 1));
  POK(finish(&f));
  cr_assert_eq(f.stats.rounds, 2);
  cr_assert_eq(f.stats.late_dropped, 1);
  cr_assert_eq(atomic_load(&f.runs), 2);
  cr_assert_eq(atomic_load(&f.runs_u), 2);
}

/* A completed trainer's GET (the elected saver's) never sees a round half run: it waits
 * until every block of the pending round has run. */
Test(pserver, completed_trainer_reads_between_rounds) {
  fixture f;
  start_blocks(&f, 0, 5000, 2);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 1)); /* trainer 1 saves */
  send_grad(&f, 0, "w@GRAD.trainer_0", 1);                    /* w's block runs */
  getter gu = {.f = &f, .t = 1, .name = "u"};
  pthread_t tu;
  pthread_create(&tu, NULL, get_main, &gu);
  usleep(100 * 1000);
  cr_assert(!atomic_load(&gu.got), "the saver read u between w's update and u's");
  send_grad(&f, 0, "u@GRAD.trainer_0", 10);
  pthread_join(tu, NULL);
  cr_assert_float_eq(gu.w, 90.0f, 0, "u = 100 - 10, got %g", gu.w);
  cr_assert_float_eq(get_var(&f, 1, "w"), 9.0f, 0);
  POK(rill_rpc_send_notice(f.c, f.ep, RILL_RPC_COMPLETE, 0));
  POK(finish(&f));
  cr_assert_eq(f.stats.rounds, 1);
}
