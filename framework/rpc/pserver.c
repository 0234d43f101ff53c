/* The pserver loop (dist.h; doc/design/distributed.md, "The runtime").
 *
 * One thread takes every request from the rpc server and owns all the state below; the
 * optimize blocks of a round run on up to `threads` threads at once (different blocks),
 * while that thread waits for them.
 *
 * Rounds. `round` counts the rounds run. Each trainer t has `base[t]`, the round of the
 * parameters it last fetched (0: the startup values), and `arrived[t]`, whether its
 * BATCH_BARRIER counts for the pending round. A gradient from t belongs to the pending
 * round when base[t] == round; otherwise it was computed from older parameters than the
 * last round's and is dropped and counted (only a quorum below all trainers lets that
 * happen). A GET from a trainer that has arrived waits for the round; other GETs are
 * answered at once, and set base[t]. The round runs once `quorum` live trainers have
 * arrived (all live ones when fewer are left): each optimize block that received a
 * gradient from an arrived trainer runs, the gradients of the others (completed, late,
 * or not in the quorum) set to zero first.
 *
 * Plain sync mode (every live trainer counts: no quorum below them) does not wait for
 * the barriers where it need not: an optimize block runs as soon as every live trainer's
 * gradient for it is in (`ran`), a GET of its parameter from a trainer that has arrived
 * is answered then, and the round is complete once every block that takes gradients has
 * run, so the first trainers fetch the first blocks while the last ones still send. The
 * numbers are the same: each block still sums the same gradients once per round. A
 * barrier that comes after the round it belongs to finds base[t] < round and counts for
 * nothing, as before. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "framework/base/alloc.h"
#include "framework/rpc/dist.h"

typedef struct xentry {
  const char *name;
  rill_variable *var;
  int32_t block;   /* index into block_ids */
  int32_t trainer; /* -1: any trainer (async) */
  bool got;        /* received for the pending round */
  int32_t from;    /* the trainer it came from */
} xentry;

typedef struct held {
  rill_rpc_request *req;
  struct held *next;
} held;

typedef struct ps {
  const rill_pserver_opts *o;
  rill_rpc_server *server;
  const char *ep;
  xentry *x;
  int64_t round;
  int64_t *base;
  bool *arrived, *done;
  held *gets;
  rill_pserver_stats stats;
  int64_t deadline_ms;
  /* Plain sync mode's early blocks: ran[b] when block b has run in the pending round;
   * early_ok[b] when each of its entries is one trainer's (so "all in" can be told);
   * nfed blocks have entries, nran of them have run; lr_ran: the LR block has. */
  bool *ran, *early_ok, lr_ran;
  size_t nfed, nran;
  rill_variable **params; /* each block's parameter (param_of), NULL if none */
  int64_t snapped;        /* the newest snapshot id taken (0: none) */
} ps;

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "G.trainer_<t>" -> t when `name` is `grad` followed by that suffix; else -1. */
static int32_t trainer_suffix(const char *name, const char *grad, int32_t fanin) {
  size_t g = strlen(grad);
  if (strncmp(name, grad, g) || strncmp(name + g, ".trainer_", 9)) return -1;
  const char *d = name + g + 9;
  if (!*d) return -1;
  char *end;
  long t = strtol(d, &end, 10);
  if (*end || t < 0 || t >= fanin) return -1;
  return (int32_t)t;
}

static rill_variable *param_of(ps *p, const char *grad);

/* What the early blocks need: which blocks take gradients, whether each entry of a
 * block is one trainer's, and each block's parameter. */
static rill_status *build_blocks(ps *p) {
  const rill_pserver_opts *o = p->o;
  size_t nb = o->nblocks ? o->nblocks : 1;
  p->ran = rill_calloc(nb, sizeof *p->ran);
  p->early_ok = rill_calloc(nb, sizeof *p->early_ok);
  p->params = rill_calloc(nb, sizeof *p->params);
  if (!p->ran || !p->early_ok || !p->params) return rill_oom();
  for (size_t b = 0; b < o->nblocks; b++) {
    bool any = false, each = true;
    for (size_t i = 0; i < o->nx; i++) {
      if (p->x[i].block != (int32_t)b) continue;
      any = true;
      each &= p->x[i].trainer >= 0 || o->fanin == 1;
    }
    p->early_ok[b] = any && each;
    p->nfed += any;
    p->params[b] = param_of(p, o->block_grads[b]);
  }
  return NULL;
}

static rill_status *build_entries(ps *p) {
  const rill_pserver_opts *o = p->o;
  p->x = rill_calloc(o->nx ? o->nx : 1, sizeof *p->x);
  if (!p->x) return rill_oom();
  for (size_t i = 0; i < o->nx; i++) {
    xentry *e = &p->x[i];
    e->name = o->xnames[i];
    e->var = o->xvars[i];
    e->block = -1;
    e->trainer = -1;
    for (size_t b = 0; b < o->nblocks && e->block < 0; b++) {
      if (!strcmp(e->name, o->block_grads[b])) e->block = (int32_t)b;
      else if ((e->trainer = trainer_suffix(e->name, o->block_grads[b], o->fanin)) >= 0)
        e->block = (int32_t)b;
    }
    if (e->block < 0)
      return rill_error(RILL_INVALID_ARGUMENT,
                        "listen_and_serv %s: X variable '%s' is no optimize block's gradient "
                        "(grad_to_block_id) nor one trainer's copy of one (.trainer_<id>)",
                        o->endpoint, e->name);
    if (!e->var)
      return rill_error(RILL_INVALID_ARGUMENT, "listen_and_serv %s: X variable '%s' is missing",
                        o->endpoint, e->name);
  }
  return NULL;
}

/* The entry a variable named `name` from trainer t is stored in: the name itself, or
 * (sync mode, as Paddle's single trainer sends it) the name with t's suffix. */
static xentry *find_entry(ps *p, const char *name, int32_t t) {
  for (size_t i = 0; i < p->o->nx; i++)
    if (!strcmp(p->x[i].name, name)) return &p->x[i];
  char buf[RILL_RPC_MAX_NAME + 32];
  snprintf(buf, sizeof buf, "%s.trainer_%d", name, (int)t);
  for (size_t i = 0; i < p->o->nx; i++)
    if (!strcmp(p->x[i].name, buf)) return &p->x[i];
  return NULL;
}

static int32_t live_count(const ps *p) {
  int32_t n = 0;
  for (int32_t t = 0; t < p->o->fanin; t++) n += !p->done[t];
  return n;
}

/* The parameter a gradient updates, by Fluid's naming ("W@GRAD.block1" -> "W.block1"). */
static rill_variable *param_of(ps *p, const char *grad) {
  const char *at = strstr(grad, "@GRAD");
  if (!at) return NULL;
  char buf[RILL_RPC_MAX_NAME + 32];
  size_t head = (size_t)(at - grad);
  if (head >= sizeof buf) return NULL;
  memcpy(buf, grad, head);
  snprintf(buf + head, sizeof buf - head, "%s", at + 5);
  return rill_scope_find(p->o->scope, buf);
}

/* A received gradient must fit its parameter: same dtype; dense, the same dims;
 * selected rows, the parameter's height and row width. */
static rill_status *check_fits(ps *p, const xentry *e, const rill_variable *v) {
  const rill_variable *pv = p->params[e->block];
  if (!pv || pv->kind != RILL_VARKIND_TENSOR || !rill_tensor_is_set(&pv->u.tensor)) return NULL;
  const rill_tensor *pt = &pv->u.tensor;
  const rill_tensor *vt = v->kind == RILL_VARKIND_TENSOR ? &v->u.tensor : &v->u.rows.value;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  if (vt->dtype != pt->dtype)
    return rill_error(RILL_INVALID_ARGUMENT, "'%s' is %s but its parameter is %s", e->name,
                      rill_dtype_name(vt->dtype), rill_dtype_name(pt->dtype));
  if (v->kind == RILL_VARKIND_TENSOR) {
    if (!rill_dims_equal(&vt->dims, &pt->dims))
      return rill_error(RILL_INVALID_ARGUMENT, "'%s' has dims %s but its parameter has %s",
                        e->name, rill_dims_str(&vt->dims, a, sizeof a),
                        rill_dims_str(&pt->dims, b, sizeof b));
    return NULL;
  }
  bool ok = v->u.rows.height == pt->dims.d[0] && vt->dims.n == pt->dims.n;
  for (int k = 1; ok && k < pt->dims.n; k++) ok = vt->dims.d[k] == pt->dims.d[k];
  if (!ok)
    return rill_error(RILL_INVALID_ARGUMENT,
                      "'%s' holds rows of %s with height %lld but its parameter has dims %s",
                      e->name, rill_dims_str(&vt->dims, a, sizeof a), (long long)v->u.rows.height,
                      rill_dims_str(&pt->dims, b, sizeof b));
  return NULL;
}

/* Answers `req` with an error, logs one line, destroys it. */
static void refuse(ps *p, rill_rpc_request *req, rill_status *why) {
  fprintf(stderr, "rill pserver %s: refused %s from trainer %lld (%s): %s\n", p->ep,
          req->meta.varname, (long long)req->meta.trainer_id, req->peer,
          rill_status_message(why));
  rill_status_destroy(rill_rpc_server_reply_error(p->server, req, why));
  rill_status_destroy(why);
  rill_rpc_request_destroy(req);
  p->stats.rejected++;
}

static void answer_ok(ps *p, rill_rpc_request *req) {
  rill_status *st = rill_rpc_server_reply_ok(p->server, req);
  if (st) {
    fprintf(stderr, "rill pserver %s: %s\n", p->ep, rill_status_message(st));
    rill_status_destroy(st);
  }
  rill_rpc_request_destroy(req);
}

/* Answers a GET with the variable it names (a persistable one of the scope), whose
 * value is that of round `of` (the trainer's base from then on). */
static void answer_get_of(ps *p, rill_rpc_request *req, int64_t of) {
  rill_variable *v = rill_scope_find(p->o->scope, req->meta.varname);
  if (!v || (v->kind == RILL_VARKIND_TENSOR && !rill_tensor_is_set(&v->u.tensor)) ||
      (v->kind != RILL_VARKIND_TENSOR && v->kind != RILL_VARKIND_SELECTED_ROWS)) {
    refuse(p, req,
           rill_error(RILL_NOT_FOUND, "pserver %s holds no variable '%s' with a value", p->ep,
                      req->meta.varname));
    return;
  }
  int32_t t = (int32_t)req->meta.trainer_id;
  if (p->base[t] < of) p->base[t] = of;
  rill_status *st = rill_rpc_server_reply_var(p->server, req, v);
  if (st) {
    fprintf(stderr, "rill pserver %s: %s\n", p->ep, rill_status_message(st));
    rill_status_destroy(st);
  }
  rill_rpc_request_destroy(req);
}

static void answer_get(ps *p, rill_rpc_request *req) { answer_get_of(p, req, p->round); }

/* Answers a PREFETCH: its ids go into a scope of their own under the requested name,
 * the prefetch block runs there, and the reply is the variable out_varname names. */
static void answer_prefetch(ps *p, rill_rpc_request *req) {
  const rill_pserver_opts *o = p->o;
  size_t i = 0;
  while (i < o->nprefetch && strcmp(o->prefetch_names[i], req->meta.varname)) i++;
  if (i == o->nprefetch) {
    refuse(p, req, rill_error(RILL_NOT_FOUND, "pserver %s has no prefetch block for '%s'",
                              p->ep, req->meta.varname));
    return;
  }
  const rill_tensor *ids = req->var.kind == RILL_VARKIND_TENSOR ? &req->var.u.tensor : NULL;
  if (!ids || ids->dtype != RILL_DTYPE_INT64) {
    refuse(p, req, rill_error(RILL_INVALID_ARGUMENT, "prefetch '%s' carries no int64 ids",
                              req->meta.varname));
    return;
  }
  if (!req->meta.out_varname[0]) {
    refuse(p, req, rill_error(RILL_INVALID_ARGUMENT, "prefetch '%s' names no variable to answer "
                              "with (out_varname)", req->meta.varname));
    return;
  }
  rill_scope *s = NULL;
  rill_variable *v = NULL;
  rill_status *st = rill_scope_create(o->scope, &s);
  if (!st) st = rill_scope_var(s, req->meta.varname, &v);
  if (!st) {
    rill_variable_clear(v);
    *v = req->var;
    rill_variable_init(&req->var);
    st = o->run_block(o->run_arg, o->prefetch_blocks[i], s);
  }
  rill_variable *rows = st ? NULL : rill_scope_find_local(s, req->meta.out_varname);
  if (!st && (!rows || rows->kind != RILL_VARKIND_TENSOR || !rill_tensor_is_set(&rows->u.tensor)))
    st = rill_error(RILL_NOT_FOUND, "prefetch block %d wrote no tensor '%s'",
                    (int)o->prefetch_blocks[i], req->meta.out_varname);
  if (st) {
    /* A lookup that fails (an id outside the table) changes nothing: refused. */
    rill_scope_destroy(s);
    refuse(p, req, rill_status_wrap(st, "pserver %s, prefetch of '%s'", p->ep, req->meta.varname));
    return;
  }
  int32_t t = (int32_t)req->meta.trainer_id;
  if (p->base[t] < p->round) p->base[t] = p->round;
  st = rill_rpc_server_reply_var(p->server, req, rows);
  rill_scope_destroy(s);
  if (st) {
    fprintf(stderr, "rill pserver %s: %s\n", p->ep, rill_status_message(st));
    rill_status_destroy(st);
  }
  rill_rpc_request_destroy(req);
  p->stats.prefetches++;
  return;
}

/* A held request, answered once the round has run. */
static void answer_held(ps *p, rill_rpc_request *req) {
  if (req->kind == RILL_RPC_PREFETCH) {
    answer_prefetch(p, req);
    return;
  }
  answer_get(p, req);
}

/* Sets `e` to a zero gradient shaped like `like` (another trainer's for the block). */
static rill_status *zero_like(xentry *e, const rill_variable *like) {
  rill_variable_clear(e->var);
  if (like->kind == RILL_VARKIND_TENSOR) {
    rill_tensor *t = rill_variable_tensor(e->var);
    RILL_TRY(rill_tensor_alloc(t, like->u.tensor.dtype, &like->u.tensor.dims));
    memset(rill_tensor_ptr(t), 0, (size_t)rill_tensor_numel(t) * rill_dtype_size(t->dtype));
    return NULL;
  }
  rill_selected_rows *sr = rill_variable_selected_rows(e->var);
  sr->height = like->u.rows.height;
  rill_dims d = like->u.rows.value.dims;
  d.d[0] = 0;
  return rill_tensor_alloc(&sr->value, like->u.rows.value.dtype, &d);
}

typedef struct runner {
  ps *p;
  const int32_t *blocks;
  size_t n;
  atomic_size_t next;
  pthread_mutex_t lock;
  rill_status *first;
} runner;

static rill_status *run_one(ps *p, int32_t block) {
  rill_scope *s = NULL;
  RILL_TRY(rill_scope_create(p->o->scope, &s));
  rill_status *st = p->o->run_block(p->o->run_arg, block, s);
  rill_scope_destroy(s);
  return st ? rill_status_wrap(st, "pserver %s, optimize block %d", p->ep, (int)block) : NULL;
}

static void *runner_main(void *arg) {
  runner *r = arg;
  for (;;) {
    size_t i = atomic_fetch_add(&r->next, 1);
    if (i >= r->n) break;
    rill_status *st = run_one(r->p, r->blocks[i]);
    if (st) {
      pthread_mutex_lock(&r->lock);
      if (!r->first) r->first = st;
      else rill_status_destroy(st);
      pthread_mutex_unlock(&r->lock);
    }
  }
  return NULL;
}

/* Runs blocks[0..n) on up to o->threads threads (this one included). */
static rill_status *run_blocks(ps *p, const int32_t *blocks, size_t n) {
  runner r = {.p = p, .blocks = blocks, .n = n, .first = NULL};
  atomic_init(&r.next, 0);
  pthread_mutex_init(&r.lock, NULL);
  size_t extra = p->o->threads > 1 ? (size_t)p->o->threads - 1 : 0;
  if (extra > n - (n ? 1 : 0)) extra = n ? n - 1 : 0;
  pthread_t tids[15];
  if (extra > 15) extra = 15;
  size_t started = 0;
  for (; started < extra; started++)
    if (pthread_create(&tids[started], NULL, runner_main, &r)) break;
  runner_main(&r);
  for (size_t i = 0; i < started; i++) pthread_join(tids[i], NULL);
  pthread_mutex_destroy(&r.lock);
  return r.first;
}

static rill_status *take_snapshot(ps *p, int64_t id);

/* Ends the pending round: its gradients are spent, the trainers' barriers too, the held
 * GETs get the new values; then the snapshot this round's step is due for by the step
 * count (rill_pserver_opts.snapshot_every), before any other request is taken. */
static rill_status *finish_round(ps *p) {
  const rill_pserver_opts *o = p->o;
  for (size_t i = 0; i < o->nx; i++) p->x[i].got = false;
  for (size_t b = 0; b < o->nblocks; b++) p->ran[b] = false;
  p->nran = 0;
  p->lr_ran = false;
  p->round++;
  p->stats.rounds++;
  for (int32_t t = 0; t < o->fanin; t++) p->arrived[t] = false;
  held *h = p->gets;
  p->gets = NULL;
  while (h) {
    held *next = h->next;
    answer_held(p, h->req);
    rill_free(h);
    h = next;
  }
  int64_t id = o->resumed + p->round;
  if (o->on_snapshot && o->snapshot_every > 0 && id % o->snapshot_every == 0)
    return take_snapshot(p, id);
  return NULL;
}

/* The LR block, once per round, before the round's first optimize block. */
static rill_status *run_lr(ps *p) {
  if (p->o->lr_block < 0 || p->lr_ran) return NULL;
  RILL_TRY(run_one(p, p->o->lr_block));
  p->lr_ran = true;
  return NULL;
}

/* The pending round: zero what did not come from an arrived trainer, run the blocks
 * that got something and have not run yet, answer the held GETs. */
static rill_status *run_round(ps *p) {
  const rill_pserver_opts *o = p->o;
  int32_t *todo = rill_malloc((o->nblocks ? o->nblocks : 1) * sizeof *todo);
  if (!todo) return rill_oom();
  size_t n = 0;
  rill_status *st = NULL;
  for (size_t b = 0; b < o->nblocks && !st; b++) {
    if (p->ran[b]) continue;
    const rill_variable *like = NULL;
    for (size_t i = 0; i < o->nx; i++) {
      xentry *e = &p->x[i];
      if (e->block != (int32_t)b) continue;
      if (e->got && !p->arrived[e->from]) {
        e->got = false; /* its trainer fell out of the round: the gradient is late */
        p->stats.late_dropped++;
      }
      if (e->got && !like) like = e->var;
    }
    if (!like) continue;
    for (size_t i = 0; i < o->nx && !st; i++) {
      xentry *e = &p->x[i];
      if (e->block == (int32_t)b && !e->got) st = zero_like(e, like);
    }
    todo[n++] = o->block_ids[b];
  }
  if (!st && n) st = run_lr(p);
  if (!st) st = run_blocks(p, todo, n);
  rill_free(todo);
  if (st) return st;
  return finish_round(p);
}

static bool round_ready(const ps *p) {
  int32_t live = live_count(p), arrived = 0;
  for (int32_t t = 0; t < p->o->fanin; t++) arrived += !p->done[t] && p->arrived[t];
  int32_t need = p->o->quorum > 0 && p->o->quorum < live ? p->o->quorum : live;
  return live > 0 && arrived >= need;
}

/* Plain sync mode: every live trainer counts in every round. */
static bool plain_sync(const ps *p) {
  int32_t live = live_count(p);
  return p->o->mode == RILL_PSERVER_SYNC && live > 0 && (p->o->quorum <= 0 || p->o->quorum >= live);
}

/* Block b can run before the barriers: plain sync, and every live trainer's gradient
 * for it is in (a completed trainer's counts as zero, as at the barrier). */
static bool block_ready(const ps *p, size_t b) {
  if (!p->early_ok[b] || p->ran[b] || !plain_sync(p)) return false;
  bool any = false;
  for (size_t i = 0; i < p->o->nx; i++) {
    const xentry *e = &p->x[i];
    if (e->block != (int32_t)b) continue;
    if (e->got) any = true;
    else if (e->trainer < 0 || !p->done[e->trainer]) return false;
  }
  return any;
}

/* Runs block b ahead of the barriers, answers the held GETs of its parameter, and ends
 * the round when it was the last block to run. */
static rill_status *run_early(ps *p, size_t b) {
  const rill_pserver_opts *o = p->o;
  const rill_variable *like = NULL;
  for (size_t i = 0; i < o->nx && !like; i++)
    if (p->x[i].block == (int32_t)b && p->x[i].got) like = p->x[i].var;
  for (size_t i = 0; i < o->nx; i++) {
    xentry *e = &p->x[i];
    if (e->block == (int32_t)b && !e->got) RILL_TRY(zero_like(e, like));
  }
  RILL_TRY(run_lr(p));
  RILL_TRY(run_one(p, o->block_ids[b]));
  p->ran[b] = true;
  p->nran++;
  if (p->nran == p->nfed) return finish_round(p);
  /* A completed trainer's GET (the saver's) waits for the end of the round. */
  for (held **h = &p->gets; *h;) {
    rill_rpc_request *req = (*h)->req;
    if (req->kind == RILL_RPC_GET && p->params[b] && !p->done[req->meta.trainer_id] &&
        rill_scope_find(o->scope, req->meta.varname) == p->params[b]) {
      held *done = *h;
      *h = done->next;
      answer_get_of(p, req, p->round + 1);
      rill_free(done);
    } else {
      h = &(*h)->next;
    }
  }
  return NULL;
}

/* After a gradient or a completion: the blocks that can run now. */
static rill_status *run_ready_blocks(ps *p) {
  for (size_t b = 0; b < p->o->nblocks; b++)
    if (block_ready(p, b)) RILL_TRY(run_early(p, b));
  return NULL;
}

static rill_status *on_send(ps *p, rill_rpc_request *req) {
  int32_t t = (int32_t)req->meta.trainer_id;
  xentry *e = find_entry(p, req->meta.varname, t);
  if (!e) {
    refuse(p, req,
           rill_error(RILL_NOT_FOUND,
                      "pserver %s does not take a variable '%s' (its inputs are the "
                      "gradients of listen_and_serv's X)",
                      p->ep, req->meta.varname));
    return NULL;
  }
  if (e->trainer >= 0 && e->trainer != t) {
    refuse(p, req,
           rill_error(RILL_INVALID_ARGUMENT, "'%s' belongs to trainer %d, not trainer %d",
                      e->name, (int)e->trainer, (int)t));
    return NULL;
  }
  if (req->var.kind != RILL_VARKIND_TENSOR && req->var.kind != RILL_VARKIND_SELECTED_ROWS) {
    refuse(p, req, rill_error(RILL_INVALID_ARGUMENT, "'%s' carries no tensor", e->name));
    return NULL;
  }
  rill_status *bad = check_fits(p, e, &req->var);
  if (bad) {
    refuse(p, req, bad);
    return NULL;
  }
  if (p->o->mode == RILL_PSERVER_SYNC &&
      (p->base[t] < p->round || p->arrived[t] || p->ran[e->block])) {
    /* Computed from parameters older than the last round's (or sent after its
     * barrier, or again after its block ran): it counts for no round. */
    p->stats.late_dropped++;
    answer_ok(p, req);
    return NULL;
  }
  rill_variable_clear(e->var);
  *e->var = req->var;
  rill_variable_init(&req->var);
  e->got = true;
  e->from = t;
  if (p->o->mode == RILL_PSERVER_ASYNC) {
    rill_status *st = NULL;
    if (p->o->lr_block >= 0) st = run_one(p, p->o->lr_block);
    if (!st) st = run_one(p, p->o->block_ids[e->block]);
    e->got = false;
    if (st) {
      rill_status_destroy(rill_rpc_server_reply_error(p->server, req, st));
      rill_rpc_request_destroy(req);
      return st;
    }
    p->stats.rounds++;
  }
  answer_ok(p, req);
  return block_ready(p, (size_t)e->block) ? run_early(p, (size_t)e->block) : NULL;
}

/* Takes snapshot `id` (this pserver's state now) and tags every later reply with it. A
 * failure to take it fails the pserver (the snapshot could never complete); a write
 * failing later is reported by the writer. */
static rill_status *take_snapshot(ps *p, int64_t id) {
  if (id < 1 || id > (int64_t)UINT32_MAX)
    return rill_error(RILL_OUT_OF_RANGE, "pserver %s: snapshot id %lld is not 1..%u", p->ep,
                      (long long)id, (unsigned)UINT32_MAX);
  if (id == p->snapped) return NULL; /* taken already (by the schedule, then announced) */
  rill_status *st = p->o->on_snapshot(p->o->snapshot_arg, id);
  if (st) return rill_status_wrap(st, "pserver %s, cluster snapshot %lld", p->ep, (long long)id);
  p->snapped = id;
  rill_rpc_server_set_tag(p->server, (uint32_t)id);
  return NULL;
}

/* A cluster snapshot, announced by the coordinating trainer after its step: in sync
 * mode no block of the next round can run before that trainer's next gradients (nor
 * that round end before its next barrier), so the state taken here is the state after
 * the round of that step. */
static rill_status *on_checkpoint(ps *p, rill_rpc_request *req) {
  const char *arg = req->meta.out_varname;
  char *end = NULL;
  long long id = arg && *arg ? strtoll(arg, &end, 10) : -1;
  if (!p->o->on_snapshot) {
    refuse(p, req, rill_error(RILL_FAILED_PRECONDITION,
                              "pserver %s takes no cluster snapshots (listen_and_serv has no "
                              "checkpoint_dir)",
                              p->ep));
    return NULL;
  }
  if (!end || *end || id < 1 || id > (long long)UINT32_MAX) {
    refuse(p, req, rill_error(RILL_INVALID_ARGUMENT, "%s: snapshot id '%s' is not 1..%u",
                              RILL_RPC_CHECKPOINT, arg ? arg : "", (unsigned)UINT32_MAX));
    return NULL;
  }
  rill_status *st = take_snapshot(p, (int64_t)id);
  if (st) {
    rill_status_destroy(rill_rpc_server_reply_error(p->server, req, st));
    rill_rpc_request_destroy(req);
    return st;
  }
  answer_ok(p, req);
  return NULL;
}

static rill_status *on_notice(ps *p, rill_rpc_request *req) {
  int32_t t = (int32_t)req->meta.trainer_id;
  const char *name = req->meta.varname;
  if (!strcmp(name, RILL_RPC_COMPLETE)) {
    p->done[t] = true;
    p->arrived[t] = false;
    answer_ok(p, req);
    RILL_TRY(run_ready_blocks(p)); /* it no longer holds any block up */
  } else if (!strcmp(name, RILL_RPC_BATCH_BARRIER)) {
    if (p->o->mode == RILL_PSERVER_SYNC && p->base[t] >= p->round) p->arrived[t] = true;
    answer_ok(p, req);
  } else if (!strcmp(name, RILL_RPC_FETCH_BARRIER)) {
    answer_ok(p, req);
  } else if (!strcmp(name, RILL_RPC_CHECKPOINT)) {
    return on_checkpoint(p, req);
  } else {
    refuse(p, req, rill_error(RILL_INVALID_ARGUMENT, "unknown notice '%s'", name));
    return NULL;
  }
  if (p->o->mode == RILL_PSERVER_SYNC && round_ready(p)) return run_round(p);
  return NULL;
}

/* GET and PREFETCH: held until the round when the trainer has arrived (sync), except a
 * GET of a parameter whose block has run in the round already. */
static rill_status *on_get(ps *p, rill_rpc_request *req) {
  int32_t t = (int32_t)req->meta.trainer_id;
  if (p->o->mode == RILL_PSERVER_SYNC && p->arrived[t] && req->kind == RILL_RPC_GET && p->nran) {
    /* A parameter whose block has run in this round already has its new value. */
    rill_variable *v = rill_scope_find(p->o->scope, req->meta.varname);
    for (size_t b = 0; v && b < p->o->nblocks; b++)
      if (p->ran[b] && p->params[b] == v) {
        answer_get_of(p, req, p->round + 1);
        return NULL;
      }
  }
  /* A completed trainer (saving the model) reads between rounds, never a round that
   * has run some of its blocks and not the others. */
  if (p->o->mode == RILL_PSERVER_SYNC && (p->arrived[t] || (p->done[t] && p->nran))) {
    held *h = rill_malloc(sizeof *h);
    if (!h) {
      refuse(p, req, rill_oom());
      return NULL;
    }
    h->req = req;
    h->next = p->gets;
    p->gets = h;
    return NULL;
  }
  answer_held(p, req);
  return NULL;
}

/* The error of a wait past the deadline: who is missing, and what. */
static rill_status *deadline_error(ps *p) {
  char who[512] = "", what[1024] = "";
  size_t nw = 0, nv = 0;
  for (int32_t t = 0; t < p->o->fanin; t++) {
    if (p->done[t] || (p->o->mode == RILL_PSERVER_SYNC && p->arrived[t])) continue;
    nw += (size_t)snprintf(who + nw, nw < sizeof who ? sizeof who - nw : 0, "%s%d",
                           nw ? ", " : "", (int)t);
    if (nw >= sizeof who) nw = sizeof who - 1;
    for (size_t i = 0; i < p->o->nx && p->o->mode == RILL_PSERVER_SYNC; i++) {
      const xentry *e = &p->x[i];
      if (e->got || (e->trainer >= 0 && e->trainer != t)) continue;
      nv += (size_t)snprintf(what + nv, nv < sizeof what ? sizeof what - nv : 0, "%s%s",
                             nv ? ", " : "", e->name);
      if (nv >= sizeof what) nv = sizeof what - 1;
    }
  }
  if (p->o->mode == RILL_PSERVER_ASYNC)
    return rill_error(RILL_DEADLINE_EXCEEDED,
                      "pserver %s: nothing received for %lld ms; waiting for %s from "
                      "trainer(s) %s",
                      p->ep, (long long)p->deadline_ms, RILL_RPC_COMPLETE, who);
  return rill_error(RILL_DEADLINE_EXCEEDED,
                    "pserver %s: round %lld waited %lld ms for %s from trainer(s) %s "
                    "(variables not received: %s)",
                    p->ep, (long long)p->round + 1, (long long)p->deadline_ms,
                    RILL_RPC_BATCH_BARRIER, who, nv ? what : "none");
}

static rill_status *serve(ps *p) {
  int64_t last = now_ms();
  for (;;) {
    if (live_count(p) == 0) return NULL;
    int64_t left = p->deadline_ms - (now_ms() - last);
    if (left <= 0) return deadline_error(p);
    rill_rpc_request *req = NULL;
    RILL_TRY(rill_rpc_server_next(p->server, left < 200 ? left : 200, &req));
    if (!req) continue;
    last = now_ms();
    int64_t t = req->meta.trainer_id;
    if (t < 0 || t >= p->o->fanin) {
      refuse(p, req,
             rill_error(RILL_INVALID_ARGUMENT, "trainer id %lld is out of range: %d trainers",
                        (long long)t, (int)p->o->fanin));
      continue;
    }
    if (p->done[t] && req->kind != RILL_RPC_GET && req->kind != RILL_RPC_PREFETCH) {
      refuse(p, req,
             rill_error(RILL_FAILED_PRECONDITION, "trainer %lld has already completed",
                        (long long)t));
      continue;
    }
    rill_status *st = NULL;
    switch (req->kind) {
    case RILL_RPC_SEND: st = on_send(p, req); break;
    case RILL_RPC_GET:
    case RILL_RPC_PREFETCH: st = on_get(p, req); break;
    case RILL_RPC_NOTICE: st = on_notice(p, req); break;
    default: refuse(p, req, rill_error(RILL_INVALID_ARGUMENT, "unknown request")); break;
    }
    RILL_TRY(st);
  }
}

rill_status *rill_pserver_serve(const rill_pserver_opts *o, rill_pserver_stats *stats) {
  if (!o || !o->endpoint || o->fanin < 1 || !o->scope || !o->run_block)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_pserver_serve: missing options");
  ps p = {.o = o};
  rill_status *st = build_entries(&p);
  if (!st) st = build_blocks(&p);
  p.base = rill_calloc((size_t)o->fanin, sizeof *p.base);
  p.arrived = rill_calloc((size_t)o->fanin, sizeof *p.arrived);
  p.done = rill_calloc((size_t)o->fanin, sizeof *p.done);
  if (!st && (!p.base || !p.arrived || !p.done)) st = rill_oom();
  if (!st) st = rill_rpc_server_create(o->endpoint, o->rpc, &p.server);
  if (!st) {
    p.ep = rill_rpc_server_endpoint(p.server);
    if (o->resumed > 0 && o->resumed <= (int64_t)UINT32_MAX)
      rill_rpc_server_set_tag(p.server, (uint32_t)o->resumed);
    p.deadline_ms = o->deadline_ms > 0 ? o->deadline_ms : rill_rpc_config_deadline(o->rpc);
    if (o->on_bound) o->on_bound(o->bound_arg, p.ep);
    st = serve(&p);
  }
  /* Held GETs get the error rather than their own deadline. */
  for (held *h = p.gets, *next; h; h = next) {
    next = h->next;
    rill_status *why = st ? st : rill_error(RILL_UNAVAILABLE, "pserver %s stopped", p.ep);
    rill_status_destroy(rill_rpc_server_reply_error(p.server, h->req, why));
    if (why != st) rill_status_destroy(why);
    rill_rpc_request_destroy(h->req);
    rill_free(h);
  }
  if (p.server) {
    /* Let the last replies (the final COMPLETE's acknowledgement) reach the wire: serve
     * whatever still comes for a moment, then close. */
    for (int64_t end = now_ms() + 100; now_ms() < end;) {
      rill_rpc_request *req = NULL;
      rill_status *e = rill_rpc_server_next(p.server, 20, &req);
      rill_status_destroy(e);
      if (req) refuse(&p, req, rill_error(RILL_UNAVAILABLE, "pserver %s is stopping", p.ep));
    }
  }
  if (stats) *stats = p.stats;
  if (p.stats.late_dropped)
    fprintf(stderr, "rill pserver %s: %lld late gradient(s) dropped\n",
            p.ep ? p.ep : o->endpoint, (long long)p.stats.late_dropped);
  rill_rpc_server_destroy(p.server);
  rill_free(p.x);
  rill_free(p.ran);
  rill_free(p.early_ok);
  rill_free(p.params);
  rill_free(p.base);
  rill_free(p.arrived);
  rill_free(p.done);
  return st;
}
