/* CPU kernels of the parameter-server ops (operators/distributed.c) over the rpc
 * transport (framework/rpc/dist.h; doc/design/distributed.md, "The runtime").
 *
 * The trainer ops share the process's client; each first call to an endpoint waits for
 * its server, and is recorded under the executor's device so that closing the executor
 * sends COMPLETE there. They are blocking ops: the executor runs them on its I/O pool,
 * several at once, and nothing here serializes them beyond the client's per-endpoint
 * socket pool. listen_and_serv runs the pserver loop until every trainer completed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/io/cluster_ckpt.h"
#include "framework/rpc/dist.h"
#include "kernels/cpu/kernels.h"

static rill_status *client_for(const rill_kernel_ctx *ctx, const char *endpoint, int64_t tid,
                               rill_rpc_client **c) {
  RILL_TRY(rill_dist_client(c));
  rill_status *st = rill_dist_contact(ctx->dev, endpoint, tid);
  return st ? rill_status_wrap(st, "%s: reaching pserver %s", ctx->schema->type, endpoint) : NULL;
}

/* The bytes a send or recv moves for `v`: a dense tensor's, or the values and row
 * indices of selected rows. */
static size_t var_bytes(const rill_variable *v) {
  if (v->kind == RILL_VARKIND_TENSOR) return rill_tensor_nbytes(&v->u.tensor);
  if (v->kind == RILL_VARKIND_SELECTED_ROWS)
    return rill_tensor_nbytes(&v->u.rows.value) + v->u.rows.nrows * sizeof(int64_t);
  return 0;
}

/* A transfer on the profiler's timeline (doc/design/profiler.md): an async interval
 * "send NAME" / "recv NAME" in category "rpc", whose end carries the bytes and the
 * peer. Costs one relaxed load when the profiler is off. */
static uint64_t rpc_event_begin(const char *what, const char *name, char *label, size_t cap) {
  if (!rill_profiler_enabled()) return 0;
  snprintf(label, cap, "%s %s", what, name);
  return rill_profiler_async_begin("rpc", label, NULL);
}

static void rpc_event_end(uint64_t id, const char *label, const rill_variable *v,
                          const char *endpoint) {
  if (!id) return;
  char args[96];
  /* An endpoint that would need escaping is left out of the JSON rather than quoted. */
  if (strpbrk(endpoint, "\"\\") || strlen(endpoint) > 48)
    snprintf(args, sizeof args, "{\"bytes\":%zu}", var_bytes(v));
  else
    snprintf(args, sizeof args, "{\"bytes\":%zu,\"peer\":\"%s\"}", var_bytes(v), endpoint);
  rill_profiler_async_end(id, "rpc", label, args);
}

static rill_status *check_epmap(const rill_kernel_ctx *ctx, const rill_attr_value *ep, size_t n,
                                const char *slot) {
  if (ep->n == n) return NULL;
  return rill_kernel_error(ctx, "epmap has %zu endpoints for %zu variables %s", ep->n, n, slot);
}

/* The transfers of one send or recv op, all at once (rill_rpc_*_var_each), each an
 * interval on the profiler's timeline from the op's start to its own reply. */
typedef struct xfers {
  const char *what; /* "send" / "recv" */
  const char **eps, **names;
  rill_variable **vars;
  uint64_t *ev;
  char (*labels)[160];
} xfers;

static void xfer_done(void *arg, size_t i) {
  xfers *x = arg;
  rpc_event_end(x->ev[i], x->labels[i], x->vars[i], x->eps[i]);
}

static void xfers_free(xfers *x) {
  rill_free(x->eps);
  rill_free(x->names);
  rill_free(x->vars);
  rill_free(x->ev);
  rill_free(x->labels);
}

static rill_status *xfers_alloc(xfers *x, const char *what, size_t n) {
  *x = (xfers){.what = what};
  size_t k = n ? n : 1;
  x->eps = rill_calloc(k, sizeof *x->eps);
  x->names = rill_calloc(k, sizeof *x->names);
  x->vars = rill_calloc(k, sizeof *x->vars);
  x->ev = rill_calloc(k, sizeof *x->ev);
  x->labels = rill_calloc(k, sizeof *x->labels);
  if (x->eps && x->names && x->vars && x->ev && x->labels) return NULL;
  xfers_free(x);
  return rill_oom();
}

/* Reaches every endpoint (the first time: waits for its server), starts the events and
 * runs the transfers; the error names the variable that failed. */
static rill_status *xfers_run(rill_kernel_ctx *ctx, xfers *x, size_t n, int64_t tid) {
  rill_rpc_client *c = NULL;
  for (size_t i = 0; i < n; i++) RILL_TRY(client_for(ctx, x->eps[i], tid, &c));
  if (!n) return NULL;
  for (size_t i = 0; i < n; i++)
    x->ev[i] = rpc_event_begin(x->what, x->names[i], x->labels[i], sizeof x->labels[i]);
  size_t bad = 0;
  bool send = x->what[0] == 's';
  rill_status *st =
      send ? rill_rpc_send_var_each(c, n, x->eps, x->names, (const rill_variable *const *)x->vars,
                                    tid, xfer_done, x, &bad)
           : rill_rpc_get_var_each(c, n, x->eps, x->names, x->vars, tid, xfer_done, x, &bad);
  if (st)
    return rill_status_wrap(st, "%s of '%s' by trainer %lld", x->what, x->names[bad],
                            (long long)tid);
  return NULL;
}

rill_status *rill_cpu_send(rill_kernel_ctx *ctx) {
  const rill_attr_value *ep = &ctx->attrs[RILL_SEND_ATTR_EPMAP];
  int64_t tid = ctx->attrs[RILL_SEND_ATTR_TRAINER_ID].v.i;
  size_t n = ctx->nin[RILL_SEND_IN_X];
  RILL_TRY(check_epmap(ctx, ep, n, "X"));
  for (size_t i = 0; i < n; i++) {
    rill_variable *v = ctx->in[RILL_SEND_IN_X][i];
    if (!v || (v->kind != RILL_VARKIND_TENSOR && v->kind != RILL_VARKIND_SELECTED_ROWS))
      return rill_kernel_error(ctx, "X (%s) holds no tensor or selected rows to send",
                               rill_kin_name(ctx, RILL_SEND_IN_X, i));
  }
  xfers x;
  RILL_TRY(xfers_alloc(&x, "send", n));
  for (size_t i = 0; i < n; i++) {
    x.eps[i] = ep->list.strings[i];
    x.names[i] = rill_kin_name(ctx, RILL_SEND_IN_X, i);
    x.vars[i] = ctx->in[RILL_SEND_IN_X][i];
  }
  rill_status *st = xfers_run(ctx, &x, n, tid);
  xfers_free(&x);
  return st;
}

rill_status *rill_cpu_recv(rill_kernel_ctx *ctx) {
  if (ctx->attrs[RILL_RECV_ATTR_DO_NOT_RUN].v.i) return NULL;
  const rill_attr_value *ep = &ctx->attrs[RILL_RECV_ATTR_EPMAP];
  const rill_attr_value *names = &ctx->attrs[RILL_RECV_ATTR_VARNAMES];
  int64_t tid = ctx->attrs[RILL_RECV_ATTR_TRAINER_ID].v.i;
  size_t n = ctx->nout[RILL_RECV_OUT_OUT];
  RILL_TRY(check_epmap(ctx, ep, n, "Out"));
  if (names->n && names->n != n)
    return rill_kernel_error(ctx, "varnames has %zu names for %zu variables Out", names->n, n);
  for (size_t i = 0; i < n; i++)
    if (!ctx->out[RILL_RECV_OUT_OUT][i])
      return rill_kernel_error(ctx, "Out (%s) has no variable",
                               names->n ? names->list.strings[i] : rill_kout_name(ctx, RILL_RECV_OUT_OUT, i));
  xfers x;
  RILL_TRY(xfers_alloc(&x, "recv", n));
  for (size_t i = 0; i < n; i++) {
    x.eps[i] = ep->list.strings[i];
    x.names[i] = names->n ? names->list.strings[i] : rill_kout_name(ctx, RILL_RECV_OUT_OUT, i);
    x.vars[i] = ctx->out[RILL_RECV_OUT_OUT][i];
  }
  rill_status *st = xfers_run(ctx, &x, n, tid);
  xfers_free(&x);
  return st;
}

/* ---- distributed_lookup_table ---- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* One table block's share of a lookup: the local ids asked for and, once answered, the
 * rows. */
typedef struct dlt_part {
  rill_variable ids, rows;
  int64_t n;
} dlt_part;

/* The rows of one Ids: its ids are split by block (id - the block's first row), each
 * block's pserver runs its prefetch block on the distinct ones, and the rows are put
 * back in the ids' order; padding_idx gives zeros. */
static rill_status *dlt_one(rill_kernel_ctx *ctx, const rill_tensor *ids, const char *ids_name,
                            rill_variable *outv, const rill_tensor *w, dlt_part *parts,
                            const int64_t *start, size_t nb, int64_t *where) {
  const rill_attr_value *a = ctx->attrs;
  const rill_attr_value *tables = &a[RILL_DISTRIBUTED_LOOKUP_TABLE_ATTR_TABLE_NAMES];
  const rill_attr_value *eps = &a[RILL_DISTRIBUTED_LOOKUP_TABLE_ATTR_ENDPOINTS];
  int64_t pad = a[RILL_DISTRIBUTED_LOOKUP_TABLE_ATTR_PADDING_IDX].v.l;
  int64_t tid = a[RILL_DISTRIBUTED_LOOKUP_TABLE_ATTR_TRAINER_ID].v.i;
  bool v2 = strcmp(a[RILL_DISTRIBUTED_LOOKUP_TABLE_ATTR_LOOKUP_TABLE_VERSION].v.s,
                   "lookup_table") != 0;
  int64_t height = start[nb], width = w->dims.d[1];
  int64_t n = rill_tensor_numel(ids);
  if (ids->dtype != RILL_DTYPE_INT64)
    return rill_kernel_error(ctx, "Ids (%s) is %s, not int64", ids_name,
                             rill_dtype_name(ids->dtype));
  if (!v2 && (ids->dims.n < 1 || ids->dims.d[ids->dims.n - 1] != 1))
    return rill_kernel_error(ctx, "Ids (%s) must end in a dim of 1 for lookup_table", ids_name);
  const int64_t *id = rill_tensor_ptr(ids);
  for (size_t b = 0; b < nb; b++) parts[b].n = 0;
  /* where[i]: block * n + its place among the block's ids, or -1 for padding. */
  for (int64_t i = 0; i < n; i++) {
    if (id[i] == pad) {
      where[i] = -1;
      continue;
    }
    if (id[i] < 0 || id[i] >= height)
      return rill_kernel_error(ctx, "Ids (%s) holds %lld at %lld, outside the table's %lld rows",
                               ids_name, (long long)id[i], (long long)i, (long long)height);
    size_t lo = 0, hi = nb; /* the block with start[b] <= id < start[b + 1] */
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (start[mid] <= id[i]) lo = mid;
      else hi = mid;
    }
    where[i] = (int64_t)lo * n + parts[lo].n++;
  }
  rill_status *st = NULL;
  for (size_t b = 0; b < nb && !st; b++) {
    rill_variable_clear(&parts[b].ids);
    rill_variable_clear(&parts[b].rows);
    if (!parts[b].n) continue;
    rill_dims d = {2, {parts[b].n, 1}};
    st = rill_tensor_alloc(rill_variable_tensor(&parts[b].ids), RILL_DTYPE_INT64, &d);
  }
  for (int64_t i = 0; i < n && !st; i++)
    if (where[i] >= 0) {
      int64_t *local = rill_tensor_ptr(&parts[where[i] / n].ids.u.tensor);
      local[where[i] % n] = id[i] - start[where[i] / n];
    }
  /* Each row is asked for once: a block's ids sorted, repeats dropped. */
  for (size_t b = 0; b < nb && !st; b++) {
    if (!parts[b].n) continue;
    rill_tensor *t = &parts[b].ids.u.tensor;
    int64_t *local = rill_tensor_ptr(t);
    qsort(local, (size_t)parts[b].n, sizeof *local, cmp_i64);
    int64_t u = 1;
    for (int64_t k = 1; k < parts[b].n; k++)
      if (local[k] != local[u - 1]) local[u++] = local[k];
    parts[b].n = u;
    t->dims.d[0] = u;
  }
  for (size_t b = 0; b < nb && !st; b++) {
    if (!parts[b].n) continue;
    const char *table = tables->list.strings[b], *ep = eps->list.strings[b];
    char in[RILL_RPC_MAX_NAME + 32], out[RILL_RPC_MAX_NAME + 32];
    snprintf(in, sizeof in, "%s%s", table, RILL_DIST_PREFETCH_IDS);
    snprintf(out, sizeof out, "%s%s", table, RILL_DIST_PREFETCH_ROWS);
    rill_rpc_client *c;
    st = client_for(ctx, ep, tid, &c);
    if (st) break;
    char label[160];
    uint64_t ev = rpc_event_begin("prefetch", table, label, sizeof label);
    st = rill_rpc_prefetch(c, ep, in, &parts[b].ids, out, tid, &parts[b].rows);
    rpc_event_end(ev, label, &parts[b].rows, ep);
    if (st) {
      st = rill_status_wrap(st, "%s: lookup of %s in '%s' by trainer %lld", ctx->schema->type,
                            ids_name, table, (long long)tid);
      break;
    }
    const rill_variable *r = &parts[b].rows;
    if (r->kind != RILL_VARKIND_TENSOR || r->u.tensor.dtype != w->dtype ||
        r->u.tensor.dims.n != 2 || r->u.tensor.dims.d[0] != parts[b].n ||
        r->u.tensor.dims.d[1] != width)
      st = rill_kernel_error(ctx, "pserver %s answered the lookup of %lld rows of '%s' with "
                                  "something else than %lld x %lld %s",
                             ep, (long long)parts[b].n, table, (long long)parts[b].n,
                             (long long)width, rill_dtype_name(w->dtype));
  }
  if (st) return st;
  rill_dims od = ids->dims;
  if (v2) {
    if (od.n >= RILL_MAX_DIMS) return rill_kernel_error(ctx, "Ids (%s) has too many dims", ids_name);
    od.d[od.n++] = width;
  } else {
    od.d[od.n - 1] = width;
  }
  rill_tensor *o = rill_variable_tensor(outv);
  RILL_TRY(rill_tensor_alloc(o, w->dtype, &od));
  RILL_TRY(rill_lod_copy(&o->lod, &ids->lod));
  size_t row = (size_t)width * rill_dtype_size(w->dtype);
  uint8_t *dst = rill_tensor_ptr(o);
  for (int64_t i = 0; i < n; i++, dst += row) {
    if (where[i] < 0) {
      memset(dst, 0, row);
      continue;
    }
    const dlt_part *pt = &parts[where[i] / n];
    const int64_t *asked = rill_tensor_ptr(&pt->ids.u.tensor);
    int64_t want = id[i] - start[where[i] / n], lo = 0, hi = pt->n - 1;
    while (lo < hi) { /* its place among the ids asked, which holds it */
      int64_t mid = lo + (hi - lo) / 2;
      if (asked[mid] < want) lo = mid + 1;
      else hi = mid;
    }
    const uint8_t *src = rill_tensor_ptr(&pt->rows.u.tensor);
    memcpy(dst, src + (size_t)lo * row, row);
  }
  return NULL;
}

rill_status *rill_cpu_distributed_lookup_table(rill_kernel_ctx *ctx) {
  const rill_attr_value *a = ctx->attrs;
  const rill_attr_value *tables = &a[RILL_DISTRIBUTED_LOOKUP_TABLE_ATTR_TABLE_NAMES];
  const rill_attr_value *eps = &a[RILL_DISTRIBUTED_LOOKUP_TABLE_ATTR_ENDPOINTS];
  const rill_attr_value *secs = &a[RILL_DISTRIBUTED_LOOKUP_TABLE_ATTR_HEIGHT_SECTIONS];
  size_t nb = tables->n, nids = ctx->nin[RILL_DISTRIBUTED_LOOKUP_TABLE_IN_IDS];
  if (!nb || eps->n != nb || secs->n != nb)
    return rill_kernel_error(ctx, "%zu table_names, %zu endpoints and %zu height_sections: "
                                  "one of each per table block",
                             nb, eps->n, secs->n);
  if (ctx->nout[RILL_DISTRIBUTED_LOOKUP_TABLE_OUT_OUTPUTS] != nids)
    return rill_kernel_error(ctx, "%zu Ids but %zu Outputs", nids,
                             ctx->nout[RILL_DISTRIBUTED_LOOKUP_TABLE_OUT_OUTPUTS]);
  const rill_tensor *w = rill_kin(ctx, RILL_DISTRIBUTED_LOOKUP_TABLE_IN_W, 0);
  if (!w || w->dims.n != 2)
    return rill_kernel_error(ctx, "W must be the table's [rows, width] declaration");
  int64_t *start = rill_calloc(nb + 1, sizeof *start);
  dlt_part *parts = rill_calloc(nb, sizeof *parts);
  rill_status *st = start && parts ? NULL : rill_oom();
  for (size_t b = 0; b < nb && !st; b++) {
    rill_variable_init(&parts[b].ids);
    rill_variable_init(&parts[b].rows);
  }
  for (size_t b = 0; b < nb && !st; b++) {
    int64_t h = secs->list.longs[b];
    if (h < 1 || start[b] > INT64_MAX / 2 - h) {
      st = rill_kernel_error(ctx, "height_sections[%zu] is %lld", b, (long long)h);
      break;
    }
    start[b + 1] = start[b] + h;
  }
  if (!st && start[nb] != w->dims.d[0])
    st = rill_kernel_error(ctx, "height_sections add up to %lld rows but W has %lld",
                           (long long)start[nb], (long long)w->dims.d[0]);
  for (size_t j = 0; j < nids && !st; j++) {
    const rill_tensor *ids = rill_kin(ctx, RILL_DISTRIBUTED_LOOKUP_TABLE_IN_IDS, j);
    rill_variable *outv = ctx->out[RILL_DISTRIBUTED_LOOKUP_TABLE_OUT_OUTPUTS][j];
    const char *name = rill_kin_name(ctx, RILL_DISTRIBUTED_LOOKUP_TABLE_IN_IDS, j);
    if (!ids || !rill_tensor_is_set(ids) || !outv) {
      st = rill_kernel_error(ctx, "Ids (%s) holds no tensor, or its output has no variable", name);
      break;
    }
    int64_t n = rill_tensor_numel(ids);
    int64_t *where = rill_malloc((size_t)(n ? n : 1) * sizeof *where);
    st = where ? dlt_one(ctx, ids, name, outv, w, parts, start, nb, where) : rill_oom();
    rill_free(where);
  }
  for (size_t b = 0; parts && b < nb; b++) {
    rill_variable_clear(&parts[b].ids);
    rill_variable_clear(&parts[b].rows);
  }
  rill_free(parts);
  rill_free(start);
  return st;
}

/* The notice to every endpoint at once (each reached first). */
static rill_status *notify_all(rill_kernel_ctx *ctx, const rill_attr_value *eps, int64_t tid,
                               const char *notice) {
  rill_rpc_client *c = NULL;
  for (size_t i = 0; i < eps->n; i++) RILL_TRY(client_for(ctx, eps->list.strings[i], tid, &c));
  if (!eps->n) return NULL;
  rill_status *st = rill_rpc_send_notice_each(c, (const char *const *)eps->list.strings, eps->n,
                                              notice, NULL, tid, NULL);
  return st ? rill_status_wrap(st, "%s of trainer %lld", ctx->schema->type, (long long)tid) : NULL;
}

rill_status *rill_cpu_send_barrier(rill_kernel_ctx *ctx) {
  return notify_all(ctx, &ctx->attrs[RILL_SEND_BARRIER_ATTR_ENDPOINTS],
                    ctx->attrs[RILL_SEND_BARRIER_ATTR_TRAINER_ID].v.i, RILL_RPC_BATCH_BARRIER);
}

rill_status *rill_cpu_fetch_barrier(rill_kernel_ctx *ctx) {
  return notify_all(ctx, &ctx->attrs[RILL_FETCH_BARRIER_ATTR_ENDPOINTS],
                    ctx->attrs[RILL_FETCH_BARRIER_ATTR_TRAINER_ID].v.i, RILL_RPC_FETCH_BARRIER);
}

/* ---- listen_and_serv ---- */

static rill_status *run_block(void *arg, int32_t block, rill_scope *scope) {
  return rill_dev_run_block(arg, block, scope);
}

/* RILL_PSERVER_SYNC_QUORUM: the half-sync quorum, 0 (all) when unset. */
static rill_status *env_quorum(const rill_kernel_ctx *ctx, int32_t fanin, int32_t *out) {
  const char *s = getenv("RILL_PSERVER_SYNC_QUORUM");
  *out = 0;
  if (!s || !*s) return NULL;
  char *end;
  long q = strtol(s, &end, 10);
  if (*end || q < 1 || q > fanin)
    return rill_kernel_error(ctx, "RILL_PSERVER_SYNC_QUORUM=%s: expected 1..%d (the trainers)", s,
                             (int)fanin);
  *out = (int32_t)q;
  return NULL;
}

/* ---- cluster snapshots of a pserver (doc/design/cluster-checkpoint.md) ---- */

typedef struct ps_ckpt {
  const rill_kernel_ctx *ctx;
  const rill_attr_value *vars;
  rill_cluster_writer *writer;
  const char **names;
  const rill_tensor **tensors;
} ps_ckpt;

static rill_status *ps_snapshot(void *arg, int64_t id) {
  ps_ckpt *c = arg;
  size_t n = 0;
  for (size_t i = 0; i < c->vars->n; i++) {
    const char *name = c->vars->list.strings[i];
    rill_variable *v = rill_scope_find(c->ctx->scope, name);
    if (!v || v->kind != RILL_VARKIND_TENSOR || !rill_tensor_is_set(&v->u.tensor))
      return rill_kernel_error(c->ctx, "checkpoint_vars names '%s', which holds no tensor", name);
    c->names[n] = name;
    c->tensors[n++] = &v->u.tensor;
  }
  return rill_cluster_writer_submit(c->writer, id, c->names, c->tensors, n);
}

/* A resumed part's tensors must fit the variables the startup program made. */
static rill_status *check_part_fits(const rill_kernel_ctx *ctx, const rill_ckpt_snapshot *s,
                                    const char *dir) {
  for (size_t i = 0; i < s->n; i++) {
    rill_variable *v = rill_scope_find(ctx->scope, s->names[i]);
    if (!v || v->kind != RILL_VARKIND_TENSOR || !rill_tensor_is_set(&v->u.tensor)) continue;
    const rill_tensor *a = &v->u.tensor, *b = &s->tensors[i];
    if (a->dtype != b->dtype || !rill_dims_equal(&a->dims, &b->dims)) {
      char x[RILL_DIMS_STR_MAX], y[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx,
                               "snapshot %lld in '%s' holds '%s' as %s %s, but this program "
                               "makes it %s %s: another model",
                               (long long)s->step, dir, s->names[i], rill_dtype_name(b->dtype),
                               rill_dims_str(&b->dims, y, sizeof y), rill_dtype_name(a->dtype),
                               rill_dims_str(&a->dims, x, sizeof x));
    }
  }
  return NULL;
}

/* Resumes this pserver from the newest complete snapshot of `dir` (if any) and starts
 * its writer. *resumed: the snapshot's id, 0 when none. */
static rill_status *ps_ckpt_start(const rill_kernel_ctx *ctx, const char *dir, ps_ckpt *c,
                                  int64_t *resumed) {
  const rill_attr_value *a = ctx->attrs;
  rill_cluster_shape shape = {a[RILL_LISTEN_AND_SERV_ATTR_PSERVERS].v.i,
                              a[RILL_LISTEN_AND_SERV_ATTR_FANIN].v.i};
  int32_t rank = a[RILL_LISTEN_AND_SERV_ATTR_PSERVER_ID].v.i;
  if (rank < 0 || rank >= shape.pservers)
    return rill_kernel_error(ctx, "checkpoint_dir is set but pserver_id %d is outside 0..%d "
                                  "(pservers %d)",
                             (int)rank, (int)shape.pservers - 1, (int)shape.pservers);
  *resumed = 0;
  rill_ckpt_snapshot mine;
  rill_ckpt_snapshot_init(&mine);
  rill_cluster_listing skipped = {0};
  int64_t k;
  rill_status *st =
      rill_cluster_recover(dir, &shape, RILL_CLUSTER_PSERVER, rank, &k, &mine, &skipped);
  for (size_t i = 0; i < skipped.n; i++)
    fprintf(stderr, "rill pserver %d: skipped snapshot %lld: %s\n", (int)rank,
            (long long)skipped.items[i].step, rill_status_message(skipped.items[i].problem));
  rill_cluster_listing_clear(&skipped);
  if (!st && k >= 0) {
    st = check_part_fits(ctx, &mine, dir);
    if (!st) st = rill_ckpt_install(&mine, ctx->scope);
    if (!st) {
      *resumed = k;
      fprintf(stderr, "rill pserver %d: resumed from snapshot %lld in '%s'\n", (int)rank,
              (long long)k, dir);
    }
  }
  rill_ckpt_snapshot_clear(&mine);
  if (st) return rill_status_wrap(st, "listen_and_serv");
  size_t n = c->vars->n ? c->vars->n : 1;
  c->names = rill_calloc(n, sizeof *c->names);
  c->tensors = rill_calloc(n, sizeof *c->tensors);
  if (!c->names || !c->tensors) return rill_oom();
  return rill_cluster_writer_create(dir, &shape, RILL_CLUSTER_PSERVER, rank,
                                 a[RILL_LISTEN_AND_SERV_ATTR_CHECKPOINT_MAX_TO_KEEP].v.i,
                                 &c->writer);
}

static rill_status *ps_ckpt_stop(ps_ckpt *c, rill_status *st) {
  rill_status *w = rill_cluster_writer_close(c->writer);
  rill_free(c->names);
  rill_free(c->tensors);
  if (!st) return w;
  rill_status_destroy(w);
  return st;
}

static void free_name_blocks(char **names, int32_t *blocks, size_t n) {
  for (size_t i = 0; names && i < n; i++) rill_free(names[i]);
  rill_free(names);
  rill_free(blocks);
}

/* Parses a list of "NAME:BLOCK" entries (grad_to_block_id and its kin). */
static rill_status *name_blocks(const rill_kernel_ctx *ctx, const rill_attr_value *list,
                                const char *attr, const char *form, char ***names,
                                int32_t **blocks) {
  size_t n = list->n;
  *names = rill_calloc(n ? n : 1, sizeof **names);
  *blocks = rill_calloc(n ? n : 1, sizeof **blocks);
  if (!*names || !*blocks) return rill_oom();
  for (size_t i = 0; i < n; i++) {
    const char *pair = list->list.strings[i];
    const char *colon = strrchr(pair, ':');
    char *end = NULL;
    long b = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || colon == pair || !end || *end || b < 1 || b > INT32_MAX)
      return rill_kernel_error(ctx, "%s entry '%s' is not \"%s\"", attr, pair, form);
    if (!((*names)[i] = rill_strndup(pair, (size_t)(colon - pair)))) return rill_oom();
    (*blocks)[i] = (int32_t)b;
  }
  return NULL;
}

rill_status *rill_cpu_listen_and_serv(rill_kernel_ctx *ctx) {
  const rill_attr_value *a = ctx->attrs;
  const rill_attr_value *g2b = &a[RILL_LISTEN_AND_SERV_ATTR_GRAD_TO_BLOCK_ID];
  const rill_attr_value *pf = &a[RILL_LISTEN_AND_SERV_ATTR_PREFETCH_VAR_NAME_TO_BLOCK_ID];
  int32_t mode = a[RILL_LISTEN_AND_SERV_ATTR_DISTRIBUTED_MODE].v.i;
  if (mode != RILL_PSERVER_SYNC && mode != RILL_PSERVER_ASYNC)
    return rill_kernel_error(ctx, "distributed_mode %d is not 0 (sync) or 1 (async); half-sync "
                                  "is sync mode with RILL_PSERVER_SYNC_QUORUM",
                             (int)mode);
  rill_pserver_opts o = {0};
  o.endpoint = a[RILL_LISTEN_AND_SERV_ATTR_ENDPOINT].v.s;
  o.fanin = a[RILL_LISTEN_AND_SERV_ATTR_FANIN].v.i;
  o.mode = (rill_pserver_mode)mode;
  o.lr_block = a[RILL_LISTEN_AND_SERV_ATTR_LR_DECAY_BLOCK_ID].v.i;
  o.threads = ctx->dev ? ctx->dev->num_threads : 1;
  o.scope = ctx->scope;
  o.run_block = run_block;
  o.run_arg = (void *)ctx->dev;
  if (o.fanin < 1) return rill_kernel_error(ctx, "Fanin is %d", (int)o.fanin);
  if (o.mode == RILL_PSERVER_SYNC) RILL_TRY(env_quorum(ctx, o.fanin, &o.quorum));
  const char *ckdir = a[RILL_LISTEN_AND_SERV_ATTR_CHECKPOINT_DIR].v.s;
  ps_ckpt ck = {.ctx = ctx, .vars = &a[RILL_LISTEN_AND_SERV_ATTR_CHECKPOINT_VARS]};
  if (ckdir && *ckdir) {
    rill_status *cs = ps_ckpt_start(ctx, ckdir, &ck, &o.resumed);
    if (cs) return ps_ckpt_stop(&ck, cs);
    o.on_snapshot = ps_snapshot;
    o.snapshot_arg = &ck;
    if (o.mode == RILL_PSERVER_SYNC)
      o.snapshot_every = a[RILL_LISTEN_AND_SERV_ATTR_CHECKPOINT_EVERY_N_STEPS].v.l;
  }
  size_t nb = g2b->n, npf = pf->n;
  char **grads = NULL, **pfnames = NULL;
  int32_t *ids = NULL, *pfblocks = NULL;
  const char **xn = rill_calloc(ctx->nin[0] ? ctx->nin[0] : 1, sizeof *xn);
  rill_status *st = xn ? NULL : rill_oom();
  if (!st) st = name_blocks(ctx, g2b, "grad_to_block_id", "grad:block", &grads, &ids);
  if (!st) st = name_blocks(ctx, pf, "prefetch_var_name_to_block_id", "ids:block", &pfnames,
                            &pfblocks);
  for (size_t i = 0; i < ctx->nin[0] && !st; i++) xn[i] = rill_kin_name(ctx, 0, i);
  if (!st) {
    o.nx = ctx->nin[0];
    o.xnames = xn;
    o.xvars = ctx->in[0];
    o.nblocks = nb;
    o.block_grads = (const char *const *)grads;
    o.block_ids = ids;
    o.nprefetch = npf;
    o.prefetch_names = (const char *const *)pfnames;
    o.prefetch_blocks = pfblocks;
    rill_pserver_stats stats;
    st = rill_pserver_serve(&o, &stats);
  }
  if (ckdir && *ckdir) st = ps_ckpt_stop(&ck, st);
  free_name_blocks(grads, ids, nb);
  free_name_blocks(pfnames, pfblocks, npf);
  rill_free(xn);
  return st;
}
