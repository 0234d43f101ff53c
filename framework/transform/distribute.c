/* The distribute transpiler (rill_program_transpile): Fluid 1.x's DistributeTranspiler
 * in C. doc/design/distributed.md describes the programs it writes; in short:
 *
 *   1. The optimizer ops of block 0 (op_role Optimize, inputs Param, Grad and
 *      LearningRate) give the (parameter, gradient) pairs, in program order.
 *   2. Each pair is cut into row blocks (rill_dist_slice, Paddle's slice_variable) and
 *      the blocks are placed on the pservers (RoundRobin in pair order, or HashName).
 *   3. The trainer program loses the optimizer and LR-schedule ops and gains, after the
 *      last write of each gradient, split_byref / split_selected_rows and send; then
 *      send_barrier (sync), one recv per parameter, fetch_barrier (sync) and concat.
 *   4. Each pserver program holds one listen_and_serv op whose optimize blocks are the
 *      LR schedule (if any) and one block per parameter block held there: sum of the
 *      trainers' gradients and scale by 1/trainers (sync), then the optimizer op on the
 *      block, its state sliced like the parameter.
 *   5. Each pserver startup program runs the original init op of every variable it
 *      holds on the whole shape, under the variable's own name, and slices the block's
 *      rows out of it: a block holds exactly the rows the whole parameter gets locally.
 *   6. The trainer's startup program declares each distributed lookup table through
 *      fake_init (shape and dtype, no data) instead of initializing it.
 *
 * Everything is built on copies; the inputs are never modified. */
#include "framework/transform/distribute.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "framework/base/hash.h"
#include "framework/program/program_impl.h"
#include "framework/rpc/dist.h"
#include "framework/transform/opedit.h"
#include "rill.h"

#define ROLE_RPC 4
#define ROLE_DIST 8
#define ROLE_LRSCHED 16
#define MAX_PSERVERS 1024
#define NAME_MAX_LEN 1100

/* ------------------------------------------------------------- block layout --- */

rill_status *rill_dist_slice(const int64_t *dims, int ndims, int64_t slice_count,
                             int64_t min_block_size, int64_t *rows, size_t cap, size_t *nblocks) {
  if (ndims < 1 || !dims) return rill_error(RILL_INVALID_ARGUMENT, "slice: no dims");
  if (slice_count < 1 || min_block_size < 1)
    return rill_error(RILL_INVALID_ARGUMENT, "slice: slice_count %lld and min_block_size %lld "
                      "must be positive", (long long)slice_count, (long long)min_block_size);
  int64_t numel = 1, width = 1;
  for (int i = 0; i < ndims; i++) {
    if (dims[i] < 1)
      return rill_error(RILL_INVALID_ARGUMENT, "slice: dim %d is %lld", i, (long long)dims[i]);
    if (numel > INT64_MAX / dims[i])
      return rill_error(RILL_INVALID_ARGUMENT, "slice: element count overflows");
    numel *= dims[i];
    if (i > 0) width *= dims[i];
  }
  int64_t max_count = numel / min_block_size;
  if (max_count == 0) max_count = 1;
  int64_t count = slice_count < max_count ? slice_count : max_count;
  int64_t block = (numel + count - 1) / count;
  if (ndims >= 2 && block % width) block += width - block % width;
  count = (numel + block - 1) / block;
  if ((size_t)count > cap)
    return rill_error(RILL_INVALID_ARGUMENT, "slice: %lld blocks, room for %zu", (long long)count,
                      cap);
  for (int64_t k = 0; k < count; k++) {
    int64_t size = numel - k * block < block ? numel - k * block : block;
    rows[k] = size / width;
  }
  *nblocks = (size_t)count;
  return NULL;
}

uint64_t rill_dist_hash(const char *name) {
  return rill_fnv1a64_str(name);
}

/* ------------------------------------------------------------------ model ----- */

typedef struct dblock {
  char *param;  /* block variable on the pserver and trainer: W or W.blockK */
  char *grad;   /* what the trainer sends: G, G.blockK, with .trainer_<id> in sync mode
                   with several trainers */
  char *merged; /* the pserver's gradient: G or G.blockK */
  int64_t row0, rows;
  size_t ep;
} dblock;

typedef struct dpair {
  const char *param, *grad; /* names in main */
  const rill_var_desc *pd, *gd;
  size_t op;                /* the optimizer op in main's block 0 */
  size_t b0, nb;            /* its blocks */
  bool table;               /* a distributed lookup table: looked up on the pservers
                               (prefetch), never received whole */
} dpair;

struct rill_transpiled {
  rill_program *trainer, *tstartup; /* tstartup: NULL when the startup program stays */
  size_t neps;
  char **eps;
  rill_program **pserver, **pstartup;
};

typedef struct xp {
  const rill_program *main, *startup;
  rill_transpile_config cfg;
  char **eps;
  size_t neps;
  dpair *pairs;
  size_t npairs;
  dblock *blocks;
  size_t nblocks;
  size_t nctl; /* control variables made */
} xp;

static char *fmt_name(const char *fmt, ...) RILL_PRINTF(1, 2);
static char *fmt_name(const char *fmt, ...) {
  char buf[NAME_MAX_LEN];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof buf) return NULL;
  return rill_strdup(buf);
}

static int32_t op_role(const rill_op_desc *op) {
  const rill_attr *a = rill_op_attr(op, RILL_OP_ROLE_ATTR);
  if (!a) return 0;
  if (a->value.type == RILL_ATTR_INT) return a->value.v.i;
  if (a->value.type == RILL_ATTR_LONG) return (int32_t)a->value.v.l;
  return 0;
}

static const char *first_in(const rill_op_desc *op, const char *slot) {
  const rill_op_slot *s = rill_op_input(op, slot);
  return s && s->nargs ? s->args[0] : NULL;
}

static bool is_optimizer_op(const rill_op_desc *op) {
  return op_role(op) == RILL_OP_ROLE_OPTIMIZE && first_in(op, "Param") && first_in(op, "Grad") &&
         first_in(op, "LearningRate");
}

static bool is_lr_op(const rill_op_desc *op) { return (op_role(op) & ROLE_LRSCHED) != 0; }

static bool is_lookup(const char *type) {
  return !strcmp(type, "lookup_table") || !strcmp(type, "lookup_table_v2");
}

/* A lookup of `param` marked is_distributed: the table stays on the pservers. */
static bool is_dist_lookup(const rill_op_desc *op, const char *param) {
  if (!is_lookup(op->type)) return false;
  const char *w = first_in(op, "W");
  const rill_attr *a = rill_op_attr(op, "is_distributed");
  return w && !strcmp(w, param) && a && a->value.type == RILL_ATTR_BOOLEAN && a->value.v.b;
}

/* Marks d as a distributed lookup table when a lookup of it says is_distributed; then
 * only its lookups, their gradients and its optimizer may read it: the trainer never
 * holds its values. */
static rill_status *check_table(const rill_program *main, dpair *d) {
  const rill_block_desc *b0 = &main->blocks[0];
  for (size_t j = 0; j < b0->nops; j++) d->table |= is_dist_lookup(&b0->ops[j], d->param);
  if (!d->table) return NULL;
  for (size_t j = 0; j < b0->nops; j++) {
    const rill_op_desc *op = &b0->ops[j];
    if (j == d->op || is_dist_lookup(op, d->param)) continue;
    bool grad = !strcmp(op->type, "lookup_table_grad") || !strcmp(op->type, "lookup_table_v2_grad");
    for (size_t sl = 0; sl < op->ninputs; sl++)
      for (size_t a = 0; a < op->inputs[sl].nargs; a++)
        if (!strcmp(op->inputs[sl].args[a], d->param) && !(grad && !strcmp(op->inputs[sl].param, "W")))
          return rill_error(RILL_UNIMPLEMENTED,
                            "transpile: '%s' is a distributed lookup table (a lookup of it has "
                            "is_distributed) but op #%zu (%s) reads it as %s; only lookups with "
                            "is_distributed may read such a table",
                            d->param, j, op->type, op->inputs[sl].param);
  }
  return NULL;
}

/* ------------------------------------------------------------ the plan --------- */

static rill_status *parse_config(xp *x, const rill_transpile_config *cfg) {
  if (!cfg) return rill_error(RILL_INVALID_ARGUMENT, "transpile: config is NULL");
  if (cfg->struct_size != sizeof(rill_transpile_config))
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: unknown config struct_size %u "
                      "(initialize it with RILL_TRANSPILE_CONFIG_INIT)", (unsigned)cfg->struct_size);
  x->cfg = *cfg;
  if (!cfg->pservers || !*cfg->pservers)
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: no pserver endpoints");
  if (cfg->trainers < 1)
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: trainers is %d, must be at least 1",
                      (int)cfg->trainers);
  if (cfg->trainers > 1024)
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: trainers is %d, at most 1024",
                      (int)cfg->trainers);
  if (cfg->trainer_id < 0 || cfg->trainer_id >= cfg->trainers)
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: trainer_id %d is not in 0..%d",
                      (int)cfg->trainer_id, (int)cfg->trainers - 1);
  if (cfg->min_block_size < 8192)
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: min_block_size %lld is below 8192",
                      (long long)cfg->min_block_size);
  if ((unsigned)cfg->split_method >= RILL_SPLIT_METHOD_COUNT)
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: unknown split_method %d",
                      (int)cfg->split_method);
  const char *p = cfg->pservers;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == 0 || len >= 256)
      return rill_error(RILL_INVALID_ARGUMENT, "transpile: pservers \"%s\" has an empty or "
                        "overlong endpoint", cfg->pservers);
    if (x->neps == MAX_PSERVERS)
      return rill_error(RILL_INVALID_ARGUMENT, "transpile: more than %d pservers", MAX_PSERVERS);
    char *ep = rill_strndup(p, len);
    if (!ep) return rill_oom();
    for (size_t i = 0; i < x->neps; i++)
      if (!strcmp(x->eps[i], ep)) {
        rill_status *st = rill_error(RILL_INVALID_ARGUMENT, "transpile: pserver %s is listed "
                                     "twice", ep);
        rill_free(ep);
        return st;
      }
    void *v = x->eps;
    size_t cap = x->neps;
    if (!rill_grow(&v, &cap, x->neps + 1, sizeof(char *))) {
      rill_free(ep);
      return rill_oom();
    }
    x->eps = v;
    x->eps[x->neps++] = ep;
    if (!e) break;
    p = e + 1;
  }
  return NULL;
}

static rill_status *find_pairs(xp *x) {
  const rill_block_desc *b0 = &x->main->blocks[0];
  x->pairs = rill_calloc(b0->nops ? b0->nops : 1, sizeof(dpair));
  if (!x->pairs) return rill_oom();
  for (size_t i = 0; i < b0->nops; i++) {
    const rill_op_desc *op = &b0->ops[i];
    if (!is_optimizer_op(op)) continue;
    const char *pn = first_in(op, "Param"), *gn = first_in(op, "Grad");
    for (size_t k = 0; k < x->npairs; k++)
      if (!strcmp(x->pairs[k].param, pn))
        return rill_error(RILL_UNIMPLEMENTED, "transpile: parameter '%s' has two optimizer ops "
                          "(%s and %s)", pn, b0->ops[x->pairs[k].op].type, op->type);
    dpair *d = &x->pairs[x->npairs];
    d->param = pn;
    d->grad = gn;
    d->op = i;
    d->pd = rill_block_find_var(x->main, 0, pn);
    d->gd = rill_block_find_var(x->main, 0, gn);
    if (!d->pd || !d->gd || !d->pd->has_tensor)
      return rill_error(RILL_INVALID_ARGUMENT, "transpile: op %s: parameter '%s' or gradient "
                        "'%s' is not a tensor declared in block 0", op->type, pn, gn);
    if (d->pd->dims.n < 1)
      return rill_error(RILL_INVALID_ARGUMENT, "transpile: parameter '%s' has no dims", pn);
    const char *lr = first_in(op, "LearningRate");
    for (size_t j = 0; j < b0->nops; j++)
      if (!is_lr_op(&b0->ops[j]) && !is_optimizer_op(&b0->ops[j]) &&
          rill_opd_writes(&b0->ops[j], lr))
        return rill_error(RILL_UNIMPLEMENTED, "transpile: learning rate '%s' of parameter '%s' "
                          "is computed by op #%zu (%s), which is not an LR-schedule op", lr, pn,
                          j, b0->ops[j].type);
    RILL_TRY(check_table(x->main, d));
    x->npairs++;
  }
  if (!x->npairs)
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: the program has no optimizer ops "
                      "(op_role Optimize with Param, Grad and LearningRate): call "
                      "optimizer.minimize first");
  return NULL;
}

static rill_status *plan_blocks(xp *x) {
  bool suffix = x->cfg.sync_mode && x->cfg.trainers > 1;
  int tid = x->cfg.trainer_id;
  size_t total = 0;
  int64_t *rows = rill_calloc(x->neps, sizeof(int64_t));
  if (!rows) return rill_oom();
  rill_status *st = NULL;
  for (size_t i = 0; i < x->npairs && !st; i++) {
    dpair *d = &x->pairs[i];
    size_t nb;
    st = rill_dist_slice(d->pd->dims.d, d->pd->dims.n,
                         x->cfg.slice_var_up ? (int64_t)x->neps : 1, x->cfg.min_block_size, rows,
                         x->neps, &nb);
    if (st) break;
    void *v = x->blocks;
    size_t cap = total;
    if (!rill_grow(&v, &cap, total + nb, sizeof(dblock))) {
      st = rill_oom();
      break;
    }
    x->blocks = v;
    memset(&x->blocks[total], 0, nb * sizeof(dblock));
    d->b0 = total;
    d->nb = nb;
    int64_t row0 = 0;
    for (size_t k = 0; k < nb && !st; k++) {
      dblock *b = &x->blocks[total + k];
      b->row0 = row0;
      b->rows = rows[k];
      row0 += rows[k];
      if (nb == 1) {
        b->param = rill_strdup(d->param);
        b->merged = rill_strdup(d->grad);
        b->grad = suffix ? fmt_name("%s.trainer_%d", d->grad, tid) : rill_strdup(d->grad);
      } else {
        b->param = fmt_name("%s.block%zu", d->param, k);
        b->merged = fmt_name("%s.block%zu", d->grad, k);
        b->grad = suffix ? fmt_name("%s.block%zu.trainer_%d", d->grad, k, tid)
                         : fmt_name("%s.block%zu", d->grad, k);
      }
      if (!b->param || !b->merged || !b->grad) st = rill_error(RILL_INVALID_ARGUMENT,
                                                               "transpile: name too long near "
                                                               "'%s'", d->param);
    }
    total += nb;
    x->nblocks = total;
  }
  rill_free(rows);
  if (st) return st;
  for (size_t k = 0; k < x->nblocks; k++)
    x->blocks[k].ep = x->cfg.split_method == RILL_SPLIT_HASH_NAME
                          ? (size_t)(rill_dist_hash(x->blocks[k].param) % x->neps)
                          : k % x->neps;
  return NULL;
}

/* ---------------------------------------------------------- op building -------- */

static rill_status *attr_strs(rill_op_desc *op, const char *name, char **v, size_t n) {
  return rill_opd_attr_strings(op, name, (const char *const *)v, n);
}

static rill_status *attr_longs_empty(rill_op_desc *op, const char *name) {
  rill_attr_value v = {.type = RILL_ATTR_LONGS};
  return rill_opd_attr(op, name, &v);
}

static rill_status *attr_long(rill_op_desc *op, const char *name, int64_t l) {
  rill_attr_value v = {.type = RILL_ATTR_LONG, .v.l = l};
  return rill_opd_attr(op, name, &v);
}

static rill_status *attr_string(rill_op_desc *op, const char *name, const char *s) {
  rill_attr_value v = {.type = RILL_ATTR_STRING, .v.s = (char *)s};
  return rill_opd_attr(op, name, &v);
}

static rill_status *insert(rill_program *p, int32_t block, size_t at, rill_op_desc *op) {
  rill_status *st = rill_block_insert_op(p, block, at, op);
  rill_op_desc_clear(op);
  return st;
}

static rill_status *declare_like(rill_program *p, int32_t block, const char *name,
                                 const rill_var_desc *like, int64_t rows, bool persistable) {
  if (rill_block_find_var(p, block, name)) return NULL;
  rill_dims d = like->dims;
  if (rows >= 0) d.d[0] = rows;
  return rill_block_add_var(p, block, name, (rill_var_type)like->type, like->dtype, d.d,
                            (size_t)d.n, like->lod_level, persistable);
}

static rill_status *control_var(xp *x, rill_program *p, char **out) {
  char *n = fmt_name("__control_var@%zu", x->nctl++);
  if (!n) return rill_oom();
  rill_status *st = rill_block_add_var(p, 0, n, RILL_VAR_RAW, RILL_DTYPE_FP32, NULL, 0, 0, false);
  if (st) {
    rill_free(n);
    return st;
  }
  *out = n;
  return NULL;
}

/* Renames variable `from` of block 0 to `to`, in its declaration and every op. */
static rill_status *rename_var(rill_program *p, const char *from, const char *to) {
  rill_block_desc *b = &p->blocks[0];
  ptrdiff_t pos = rill_block_var_pos(b, from);
  if (pos < 0) return NULL;
  char *n = rill_strdup(to);
  if (!n) return rill_oom();
  rill_free(b->vars[pos].name);
  b->vars[pos].name = n;
  rill_block_index_drop(b);
  for (size_t i = 0; i < b->nops; i++) RILL_TRY(rill_opd_rename(&b->ops[i], from, to, true, true));
  rill_program_touch(p);
  return NULL;
}

/* ------------------------------------------------------- trainer program ------- */

/* ------------------------------------------------------- cluster snapshots --- */

static bool is_checkpoint_op(const rill_op_desc *op) { return !strcmp(op->type, "checkpoint"); }

static const rill_op_desc *main_checkpoint_op(const xp *x) {
  const rill_block_desc *b = &x->main->blocks[0];
  for (size_t j = 0; j < b->nops; j++)
    if (is_checkpoint_op(&b->ops[j])) return &b->ops[j];
  return NULL;
}

/* Whether the pservers hold `name`: a parameter, an optimizer input other than the
 * gradient (its state, the learning rate), or what the LR schedule writes. */
static bool held_by_pservers(const xp *x, const char *name) {
  const rill_block_desc *m0 = &x->main->blocks[0];
  for (size_t i = 0; i < x->npairs; i++) {
    const dpair *d = &x->pairs[i];
    if (!strcmp(name, d->param)) return true;
    const rill_op_desc *op = &m0->ops[d->op];
    for (size_t sl = 0; sl < op->ninputs; sl++) {
      if (!strcmp(op->inputs[sl].param, "Grad")) continue;
      for (size_t a = 0; a < op->inputs[sl].nargs; a++)
        if (!strcmp(op->inputs[sl].args[a], name)) return true;
    }
  }
  for (size_t j = 0; j < m0->nops; j++)
    if (is_lr_op(&m0->ops[j]) && rill_opd_writes(&m0->ops[j], name)) return true;
  return false;
}

/* The trainer's checkpoint op: its part of the cluster snapshots. X keeps what the
 * trainer alone holds (the step counter, trainer-local persistables); Deps makes it
 * run after every parameter was received, so the step is over when it runs. */
static rill_status *trainer_checkpoint_op(xp *x, const rill_op_desc *src, rill_op_desc *op) {
  RILL_TRY(rill_op_desc_copy(op, src));
  rill_status *st = NULL;
  const char **keep = NULL, **deps = NULL;
  size_t nk = 0;
  const rill_op_slot *xs = NULL;
  for (size_t i = 0; i < src->ninputs; i++)
    if (!strcmp(src->inputs[i].param, "X")) xs = &src->inputs[i];
  keep = rill_calloc(xs && xs->nargs ? xs->nargs : 1, sizeof *keep);
  deps = rill_calloc(x->npairs ? x->npairs : 1, sizeof *deps);
  if (!keep || !deps) st = rill_oom();
  for (size_t a = 0; xs && !st && a < xs->nargs; a++)
    if (!held_by_pservers(x, xs->args[a])) keep[nk++] = xs->args[a];
  for (size_t i = 0; i < x->npairs && !st; i++) deps[i] = x->pairs[i].param;
  const char *step = NULL;
  for (size_t i = 0; i < src->ninputs; i++)
    if (!strcmp(src->inputs[i].param, "Step") && src->inputs[i].nargs) step = src->inputs[i].args[0];
  if (!st && !nk && step) keep[nk++] = step; /* X is required: at least the counter */
  if (!st) st = rill_opd_input(op, "X", keep, nk);
  if (!st) st = rill_opd_input(op, "Deps", deps, x->npairs);
  if (!st) st = attr_strs(op, "cluster_endpoints", x->eps, x->neps);
  if (!st) st = rill_opd_attr_int(op, "cluster_trainer_id", x->cfg.trainer_id);
  if (!st) st = rill_opd_attr_int(op, "cluster_trainers", x->cfg.trainers);
  if (!st) st = rill_opd_attr_bool(op, "cluster_sync", x->cfg.sync_mode);
  rill_free(keep);
  rill_free(deps);
  if (st) rill_op_desc_clear(op);
  return st;
}

/* listen_and_serv's snapshot attributes, from main's checkpoint op: the directory, the
 * retention, and the variables of this pserver's part (every persistable it holds but
 * the gradients it receives). */
static rill_status *pserver_checkpoint_attrs(xp *x, const rill_program *p, rill_op_desc *op,
                                             char *const *recv_in, size_t nrecv) {
  const rill_op_desc *ck = main_checkpoint_op(x);
  if (!ck) return NULL;
  const rill_attr *dir = rill_op_attr(ck, "directory");
  const rill_attr *keep = rill_op_attr(ck, "max_to_keep");
  if (!dir || dir->value.type != RILL_ATTR_STRING || !dir->value.v.s || !*dir->value.v.s)
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: the checkpoint op has no directory");
  const rill_block_desc *b0 = &p->blocks[0];
  const char **vars = rill_calloc(b0->nvars ? b0->nvars : 1, sizeof *vars);
  if (!vars) return rill_oom();
  size_t n = 0;
  for (size_t v = 0; v < b0->nvars; v++) {
    const rill_var_desc *d = &b0->vars[v];
    if (!d->persistable || d->type != RILL_VAR_LOD_TENSOR) continue;
    bool received = false;
    for (size_t i = 0; i < nrecv && !received; i++) received = !strcmp(recv_in[i], d->name);
    for (size_t i = 0; i < x->nblocks && !received; i++) received = !strcmp(x->blocks[i].merged, d->name);
    if (!received) vars[n++] = d->name;
  }
  rill_status *st = attr_string(op, "checkpoint_dir", dir->value.v.s);
  if (!st) st = rill_opd_attr_strings(op, "checkpoint_vars", vars, n);
  if (!st)
    st = rill_opd_attr_int(op, "checkpoint_max_to_keep",
                           keep && keep->value.type == RILL_ATTR_INT ? keep->value.v.i : 3);
  /* Sync mode: the snapshots due by the step count are taken after the rounds of their
   * steps, the trainers' checkpoint ops announcing only those due by time. */
  const rill_attr *every = rill_op_attr(ck, "every_n_steps");
  if (!st && x->cfg.sync_mode && every && every->value.type == RILL_ATTR_LONG &&
      every->value.v.l > 0)
    st = rill_opd_attr(op, "checkpoint_every_n_steps", &every->value);
  if (!st) st = rill_opd_attr_int(op, "pservers", (int32_t)x->neps);
  rill_free(vars);
  return st;
}

/* Replaces each is_distributed lookup of table d, in place, by a distributed_lookup_table
 * over d's blocks: the same Ids and output, the rows asked of the pservers holding them. */
static rill_status *remote_lookups(xp *x, rill_program *p, const dpair *d) {
  char *tables[MAX_PSERVERS], *eps[MAX_PSERVERS];
  int64_t sec[MAX_PSERVERS];
  for (size_t k = 0; k < d->nb; k++) {
    const dblock *b = &x->blocks[d->b0 + k];
    tables[k] = b->param;
    eps[k] = x->eps[b->ep];
    sec[k] = b->rows;
  }
  rill_block_desc *b0 = &p->blocks[0];
  for (size_t j = 0; j < b0->nops; j++) {
    const rill_op_desc *src = &b0->ops[j];
    if (!is_dist_lookup(src, d->param)) continue;
    const rill_op_slot *ids = rill_op_input(src, "Ids"), *out = rill_op_output(src, "Out");
    const rill_attr *pad = rill_op_attr(src, "padding_idx");
    if (!ids || ids->nargs != 1 || !out || out->nargs != 1)
      return rill_error(RILL_INVALID_ARGUMENT, "transpile: op #%zu (%s) of '%s' needs one Ids "
                        "and one Out", j, src->type, d->param);
    rill_op_desc op;
    RILL_TRY(rill_opd_init(&op, "distributed_lookup_table"));
    rill_status *st = rill_opd_input(&op, "Ids", (const char *const *)ids->args, 1);
    if (!st) st = rill_opd_input(&op, "W", &d->param, 1);
    if (!st) st = rill_opd_output(&op, "Outputs", (const char *const *)out->args, 1);
    if (!st) st = attr_strs(&op, "table_names", tables, d->nb);
    if (!st) st = attr_strs(&op, "endpoints", eps, d->nb);
    if (!st) st = rill_opd_attr_longs(&op, "height_sections", sec, d->nb);
    int64_t padding = -1;
    if (pad && pad->value.type == RILL_ATTR_LONG) padding = pad->value.v.l;
    if (pad && pad->value.type == RILL_ATTR_INT) padding = pad->value.v.i;
    if (!st) st = attr_long(&op, "padding_idx", padding);
    if (!st) st = rill_opd_attr_int(&op, "trainer_id", x->cfg.trainer_id);
    if (!st) st = attr_string(&op, "lookup_table_version", src->type);
    if (!st) st = rill_opd_attr_int(&op, RILL_OP_ROLE_ATTR, op_role(src));
    if (!st) st = rill_block_remove_op(p, 0, j);
    if (st) {
      rill_op_desc_clear(&op);
      return st;
    }
    RILL_TRY(insert(p, 0, j, &op));
    b0 = &p->blocks[0];
  }
  return NULL;
}

static rill_status *build_trainer(xp *x, rill_program **out) {
  rill_program *p;
  RILL_TRY(rill_program_clone(x->main, &p));
  rill_status *st = NULL;
  char **send_out = rill_calloc(x->npairs, sizeof(char *));
  char **eps = rill_calloc(x->neps + 1, sizeof(char *));
  char **names = rill_calloc(x->nblocks + 1, sizeof(char *));
  char *barrier = NULL;
  int32_t tid = x->cfg.trainer_id;
  if (!send_out || !eps || !names) st = rill_oom();
  rill_block_desc *b0 = &p->blocks[0];
  /* Optimizer and LR-schedule ops go to the pservers; a checkpoint op moves to the end. */
  for (size_t i = b0->nops; i-- > 0 && !st;)
    if (is_optimizer_op(&b0->ops[i]) || is_lr_op(&b0->ops[i]) || is_checkpoint_op(&b0->ops[i]))
      st = rill_block_remove_op(p, 0, i);
  /* Lookups of a distributed table become remote lookups of its blocks. */
  for (size_t i = 0; i < x->npairs && !st; i++)
    if (x->pairs[i].table) st = remote_lookups(x, p, &x->pairs[i]);
  b0 = &p->blocks[0];
  /* Per gradient: declare its blocks, split it after its last write, send. */
  for (size_t i = 0; i < x->npairs && !st; i++) {
    dpair *d = &x->pairs[i];
    const dblock *bl = &x->blocks[d->b0];
    const char *gname = d->grad;
    if (d->nb == 1 && strcmp(bl->grad, d->grad)) {
      st = rename_var(p, d->grad, bl->grad);
      gname = bl->grad;
    }
    for (size_t k = 0; k < d->nb && !st && d->nb > 1; k++) {
      st = declare_like(p, 0, bl[k].grad, d->gd, bl[k].rows, false);
      if (!st) st = declare_like(p, 0, bl[k].param, d->pd, bl[k].rows, false);
    }
    if (st) break;
    size_t at = 0;
    bool found = false;
    b0 = &p->blocks[0];
    for (size_t j = b0->nops; j-- > 0;)
      if (rill_opd_writes(&b0->ops[j], gname)) {
        at = j + 1;
        found = true;
        break;
      }
    if (!found) {
      st = rill_error(RILL_INVALID_ARGUMENT, "transpile: no op of block 0 writes gradient '%s' "
                      "of parameter '%s'", gname, d->param);
      break;
    }
    rill_op_desc op;
    for (size_t k = 0; k < d->nb; k++) {
      names[k] = bl[k].grad;
      eps[k] = x->eps[bl[k].ep];
    }
    if (d->nb > 1) {
      bool sparse = d->gd->type == RILL_VAR_SELECTED_ROWS;
      st = rill_opd_init(&op, sparse ? "split_selected_rows" : "split_byref");
      if (!st) st = rill_opd_input(&op, "X", &gname, 1);
      if (!st) st = rill_opd_output(&op, "Out", (const char *const *)names, d->nb);
      if (sparse) {
        int64_t sec[MAX_PSERVERS];
        for (size_t k = 0; k < d->nb; k++) sec[k] = bl[k].rows;
        if (!st) st = rill_opd_attr_longs(&op, "height_sections", sec, d->nb);
      } else {
        int32_t sec[MAX_PSERVERS];
        for (size_t k = 0; k < d->nb; k++) sec[k] = (int32_t)bl[k].rows;
        if (!st) st = rill_opd_attr_int(&op, "num", 0);
        if (!st) st = rill_opd_attr_ints(&op, "sections", sec, d->nb);
      }
      if (!st) st = rill_opd_attr_int(&op, RILL_OP_ROLE_ATTR, ROLE_DIST);
      if (st) {
        rill_op_desc_clear(&op);
        break;
      }
      st = insert(p, 0, at++, &op);
      if (st) break;
    }
    st = control_var(x, p, &send_out[i]);
    if (!st) st = rill_opd_init(&op, "send");
    if (st) break;
    const char *rv[2] = {d->param, d->nb > 1 ? d->grad : gname};
    st = rill_opd_input(&op, "X", (const char *const *)names, d->nb);
    if (!st) st = rill_opd_output(&op, "Out", (const char *const *)&send_out[i], 1);
    if (!st) st = attr_strs(&op, "epmap", eps, d->nb);
    if (!st) st = attr_longs_empty(&op, "sections");
    if (!st) st = attr_strs(&op, "send_varnames", NULL, 0);
    if (!st) st = rill_opd_attr_int(&op, "num", 0);
    if (!st) st = rill_opd_attr_bool(&op, "merge_add", false);
    if (!st) st = rill_opd_attr_bool(&op, "use_send_handler", true);
    if (!st) st = rill_opd_attr_int(&op, "trainer_id", tid);
    if (!st) st = rill_opd_attr_int(&op, RILL_OP_ROLE_ATTR, ROLE_RPC);
    if (!st) st = rill_opd_attr_strings(&op, RILL_OP_ROLE_VAR_ATTR, rv, 2);
    if (st) {
      rill_op_desc_clear(&op);
      break;
    }
    st = insert(p, 0, at, &op);
  }
  rill_op_desc op;
  if (!st && x->cfg.sync_mode) {
    st = control_var(x, p, &barrier);
    if (!st) st = rill_opd_init(&op, "send_barrier");
    if (!st) {
      st = rill_opd_input(&op, "X", (const char *const *)send_out, x->npairs);
      if (!st) st = rill_opd_output(&op, "Out", (const char *const *)&barrier, 1);
      if (!st) st = attr_strs(&op, "endpoints", x->eps, x->neps);
      if (!st) st = rill_opd_attr_int(&op, "trainer_id", tid);
      if (!st) st = rill_opd_attr_bool(&op, "half_async", false);
      if (!st) st = rill_opd_attr_int(&op, RILL_OP_ROLE_ATTR, ROLE_RPC);
      if (st) rill_op_desc_clear(&op);
      else st = insert(p, 0, p->blocks[0].nops, &op);
    }
  }
  /* recv per parameter, then fetch_barrier over everything received, then concat. */
  for (size_t i = 0; i < x->npairs && !st; i++) {
    dpair *d = &x->pairs[i];
    if (d->table) continue;
    const dblock *bl = &x->blocks[d->b0];
    for (size_t k = 0; k < d->nb; k++) {
      names[k] = bl[k].param;
      eps[k] = x->eps[bl[k].ep];
    }
    const char *rv[2] = {d->param, d->nb > 1 ? d->grad : bl[0].grad};
    char *dep = x->cfg.sync_mode ? barrier : send_out[i];
    st = rill_opd_init(&op, "recv");
    if (st) break;
    st = rill_opd_input(&op, "X", (const char *const *)&dep, 1);
    if (!st) st = rill_opd_output(&op, "Out", (const char *const *)names, d->nb);
    if (!st) st = attr_strs(&op, "epmap", eps, d->nb);
    if (!st) st = rill_opd_attr_int(&op, "trainer_id", tid);
    if (!st) st = rill_opd_attr_bool(&op, "with_barrier", true);
    if (!st) st = attr_strs(&op, "varnames", NULL, 0);
    if (!st) st = attr_strs(&op, "recv_varnames", NULL, 0);
    if (!st) st = rill_opd_attr_int(&op, "do_not_run", 0);
    if (!st) st = rill_opd_attr_int(&op, RILL_OP_ROLE_ATTR, ROLE_RPC);
    if (!st) st = rill_opd_attr_strings(&op, RILL_OP_ROLE_VAR_ATTR, rv, 2);
    if (st) rill_op_desc_clear(&op);
    else st = insert(p, 0, p->blocks[0].nops, &op);
  }
  if (!st && x->cfg.sync_mode) {
    size_t nrecv = 0;
    for (size_t i = 0; i < x->npairs; i++)
      for (size_t k = 0; k < x->pairs[i].nb && !x->pairs[i].table; k++)
        names[nrecv++] = x->blocks[x->pairs[i].b0 + k].param;
    st = rill_opd_init(&op, "fetch_barrier");
    if (!st) {
      st = rill_opd_input(&op, "X", (const char *const *)&barrier, 1);
      if (!st) st = rill_opd_output(&op, "Out", (const char *const *)names, nrecv);
      if (!st) st = attr_strs(&op, "endpoints", x->eps, x->neps);
      if (!st) st = rill_opd_attr_int(&op, "trainer_id", tid);
      if (!st) st = rill_opd_attr_int(&op, RILL_OP_ROLE_ATTR, ROLE_RPC);
      if (st) rill_op_desc_clear(&op);
      else st = insert(p, 0, p->blocks[0].nops, &op);
    }
  }
  for (size_t i = 0; i < x->npairs && !st; i++) {
    dpair *d = &x->pairs[i];
    if (d->nb < 2 || d->table) continue;
    for (size_t k = 0; k < d->nb; k++) names[k] = x->blocks[d->b0 + k].param;
    st = rill_opd_init(&op, "concat");
    if (st) break;
    st = rill_opd_input(&op, "X", (const char *const *)names, d->nb);
    if (!st) st = rill_opd_output(&op, "Out", &d->param, 1);
    if (!st) st = rill_opd_attr_int(&op, "axis", 0);
    if (!st) st = rill_opd_attr_int(&op, RILL_OP_ROLE_ATTR, ROLE_DIST);
    if (st) rill_op_desc_clear(&op);
    else st = insert(p, 0, p->blocks[0].nops, &op);
  }
  const rill_op_desc *ck = main_checkpoint_op(x);
  if (!st && ck) {
    st = trainer_checkpoint_op(x, ck, &op);
    if (!st) st = insert(p, 0, p->blocks[0].nops, &op);
  }
  if (send_out)
    for (size_t i = 0; i < x->npairs; i++) rill_free(send_out[i]);
  rill_free(send_out);
  rill_free(barrier);
  rill_free(eps);
  rill_free(names);
  if (st) {
    rill_program_free(p);
    return st;
  }
  *out = p;
  return NULL;
}

/* ------------------------------------------------------- pserver program ------- */

/* The pserver's name of optimizer state `name` of a parameter cut into blocks. */
static char *state_name(const dpair *d, const char *name, size_t k) {
  return d->nb > 1 ? fmt_name("%s.block%zu", name, k) : rill_strdup(name);
}

/* True when `v` is shaped like the parameter, so its blocks are row blocks. */
static bool like_param(const rill_var_desc *v, const dpair *d) {
  return v->has_tensor && rill_dims_equal(&v->dims, &d->pd->dims);
}

static rill_status *copy_var(const rill_program *from, rill_program *to, int32_t block,
                             const char *name) {
  if (rill_block_find_var(to, block, name)) return NULL;
  const rill_var_desc *v = rill_program_find_var(from, 0, name);
  if (!v) return rill_error(RILL_NOT_FOUND, "transpile: variable '%s' is not declared", name);
  rill_block_desc *b = rill_program_block(to, block);
  void *items = b->vars;
  if (!rill_grow(&items, &b->capvars, b->nvars + 1, sizeof(rill_var_desc))) return rill_oom();
  b->vars = items;
  RILL_TRY(rill_var_desc_copy(&b->vars[b->nvars], v));
  b->nvars++;
  rill_block_index_drop(b);
  rill_program_touch(to);
  return NULL;
}

/* The optimizer op of pair d rewritten for its block k, appended to block `blk`. */
static rill_status *optimizer_on_block(xp *x, rill_program *p, int32_t blk, const dpair *d,
                                       size_t k) {
  const rill_op_desc *src = &x->main->blocks[0].ops[d->op];
  const dblock *b = &x->blocks[d->b0 + k];
  rill_op_desc op;
  RILL_TRY(rill_op_desc_copy(&op, src));
  rill_status *st = NULL;
  for (int io = 0; io < 2 && !st; io++) {
    rill_op_slot *slots = io ? op.outputs : op.inputs;
    size_t n = io ? op.noutputs : op.ninputs;
    for (size_t s = 0; s < n && !st; s++)
      for (size_t a = 0; a < slots[s].nargs && !st; a++) {
        char *arg = slots[s].args[a];
        char *to = NULL;
        if (!strcmp(arg, d->param)) {
          to = rill_strdup(b->param);
        } else if (!strcmp(arg, d->grad)) {
          to = rill_strdup(b->merged);
        } else if (!strcmp(slots[s].param, "LearningRate")) {
          st = copy_var(x->main, p, 0, arg);
          continue;
        } else {
          const rill_var_desc *v = rill_block_find_var(x->main, 0, arg);
          if (!v) {
            st = rill_error(RILL_NOT_FOUND, "transpile: %s: variable '%s' is not in block 0",
                            src->type, arg);
            break;
          }
          to = state_name(d, arg, k);
          if (to && !rill_block_find_var(p, 0, to))
            st = declare_like(p, 0, to, v, like_param(v, d) ? b->rows : -1, true);
        }
        if (!st && !to) st = rill_oom();
        if (st) {
          rill_free(to);
          break;
        }
        rill_free(slots[s].args[a]);
        slots[s].args[a] = to;
      }
  }
  if (st) {
    rill_op_desc_clear(&op);
    return st;
  }
  return insert(p, blk, p->blocks[blk].nops, &op);
}

/* The prefetch block of table block b: lookup_table(W = the block, Ids = the local ids a
 * trainer sends) -> the rows it is answered with. *entry: "IDS:BLOCK" for
 * listen_and_serv's prefetch_var_name_to_block_id. */
static rill_status *prefetch_block(rill_program *p, const dpair *d, const dblock *b,
                                   char **entry) {
  int32_t blk;
  RILL_TRY(rill_program_add_block(p, 0, &blk));
  char *ids = fmt_name("%s%s", b->param, RILL_DIST_PREFETCH_IDS);
  char *rows = fmt_name("%s%s", b->param, RILL_DIST_PREFETCH_ROWS);
  rill_status *st = ids && rows ? NULL : rill_oom();
  int64_t idims[2] = {-1, 1};
  if (!st)
    st = rill_block_add_var(p, blk, ids, RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, idims, 2, 0, false);
  if (!st) st = declare_like(p, blk, rows, d->pd, -1, false);
  rill_op_desc op;
  if (!st) st = rill_opd_init(&op, "lookup_table");
  if (!st) {
    st = rill_opd_input(&op, "W", (const char *const *)&b->param, 1);
    if (!st) st = rill_opd_input(&op, "Ids", (const char *const *)&ids, 1);
    if (!st) st = rill_opd_output(&op, "Out", (const char *const *)&rows, 1);
    if (!st) st = rill_opd_attr_bool(&op, "is_sparse", false);
    if (!st) st = rill_opd_attr_bool(&op, "is_distributed", false);
    if (!st) st = attr_long(&op, "padding_idx", -1);
    if (st) rill_op_desc_clear(&op);
    else st = insert(p, blk, 0, &op);
  }
  if (!st && !(*entry = fmt_name("%s:%d", ids, (int)blk))) st = rill_oom();
  rill_free(ids);
  rill_free(rows);
  return st;
}

static rill_status *build_pserver(xp *x, size_t ep, rill_program **out) {
  rill_program *p;
  RILL_TRY(rill_program_create(&p));
  rill_status *st = NULL;
  int32_t T = x->cfg.trainers;
  bool sync = x->cfg.sync_mode;
  size_t cap = x->nblocks * (size_t)(sync ? T : 1) + 1;
  char **recv_in = rill_calloc(cap, sizeof(char *));
  char **g2b = rill_calloc(x->nblocks + 1, sizeof(char *));
  char **sparse = rill_calloc(x->nblocks + 1, sizeof(char *));
  int32_t *blocks = rill_calloc(x->nblocks + 2, sizeof(int32_t));
  char **prefetch = rill_calloc(x->nblocks + 1, sizeof(char *));
  size_t nrecv = 0, ng2b = 0, nsparse = 0, nblk = 0, nprefetch = 0;
  int32_t lr_block = -1;
  if (!recv_in || !g2b || !sparse || !blocks || !prefetch) st = rill_oom();
  /* Variables received and held. */
  for (size_t i = 0; i < x->npairs && !st; i++) {
    const dpair *d = &x->pairs[i];
    for (size_t k = 0; k < d->nb && !st; k++) {
      const dblock *b = &x->blocks[d->b0 + k];
      if (b->ep != ep) continue;
      st = declare_like(p, 0, b->param, d->pd, b->rows, true);
      if (!st) st = declare_like(p, 0, b->merged, d->gd, b->rows, true);
      if (!sync) {
        if (!st && !(recv_in[nrecv++] = rill_strdup(b->merged))) st = rill_oom();
        continue;
      }
      for (int32_t t = 0; t < T && !st; t++) {
        char *n = fmt_name("%s.trainer_%d", b->merged, (int)t);
        if (!n) {
          st = rill_oom();
          break;
        }
        recv_in[nrecv++] = n;
        st = declare_like(p, 0, n, d->gd, b->rows, false);
      }
    }
  }
  /* The LR schedule's block. */
  const rill_block_desc *m0 = &x->main->blocks[0];
  bool has_lr = false;
  for (size_t j = 0; j < m0->nops; j++) has_lr |= is_lr_op(&m0->ops[j]);
  if (!st && has_lr) {
    st = rill_program_add_block(p, 0, &lr_block);
    for (size_t j = 0; j < m0->nops && !st; j++) {
      const rill_op_desc *o = &m0->ops[j];
      if (!is_lr_op(o)) continue;
      for (size_t a = 0; a < o->nattrs; a++)
        if (o->attrs[a].value.type == RILL_ATTR_BLOCK || o->attrs[a].value.type == RILL_ATTR_BLOCKS)
          st = rill_error(RILL_UNIMPLEMENTED, "transpile: LR-schedule op %s has a sub-block",
                          o->type);
      for (int io = 0; io < 2 && !st; io++) {
        const rill_op_slot *sl = io ? o->outputs : o->inputs;
        size_t n = io ? o->noutputs : o->ninputs;
        for (size_t s = 0; s < n && !st; s++)
          for (size_t a = 0; a < sl[s].nargs && !st; a++) {
            st = copy_var(x->main, p, 0, sl[s].args[a]);
            /* What the schedule writes is read by the optimize blocks, each run in a
             * scope of its own: it lives in the pserver's scope, from round to round. */
            rill_var_desc *v = io && !st ? rill_block_find_var(p, 0, sl[s].args[a]) : NULL;
            if (v) v->persistable = true;
          }
      }
      if (!st) st = rill_block_insert_op(p, lr_block, p->blocks[lr_block].nops, o);
    }
    if (!st) blocks[nblk++] = lr_block;
  }
  /* One optimize block per parameter block held, in the order of the optimizer ops. */
  for (size_t i = 0; i < x->npairs && !st; i++) {
    const dpair *d = &x->pairs[i];
    for (size_t k = 0; k < d->nb && !st; k++) {
      const dblock *b = &x->blocks[d->b0 + k];
      if (b->ep != ep) continue;
      int32_t blk;
      st = rill_program_add_block(p, 0, &blk);
      if (st) break;
      blocks[nblk++] = blk;
      if (!(g2b[ng2b++] = fmt_name("%s:%d", b->merged, (int)blk))) st = rill_oom();
      if (!st && d->gd->type == RILL_VAR_SELECTED_ROWS &&
          !(sparse[nsparse++] = fmt_name("%s:%s", b->merged, b->param)))
        st = rill_oom();
      if (!st && sync) {
        rill_op_desc op;
        char *per[1024];
        int32_t nt = T > 1024 ? 1024 : T;
        for (int32_t t = 0; t < nt && !st; t++)
          if (!(per[t] = fmt_name("%s.trainer_%d", b->merged, (int)t))) {
            for (int32_t u = 0; u < t; u++) rill_free(per[u]);
            st = rill_oom();
          }
        if (st) break;
        st = rill_opd_init(&op, "sum");
        if (!st) st = rill_opd_input(&op, "X", (const char *const *)per, (size_t)nt);
        if (!st) st = rill_opd_output(&op, "Out", (const char *const *)&b->merged, 1);
        if (!st) st = rill_opd_attr_bool(&op, "use_mkldnn", false);
        for (int32_t t = 0; t < nt; t++) rill_free(per[t]);
        if (st) rill_op_desc_clear(&op);
        else st = insert(p, blk, p->blocks[blk].nops, &op);
        if (!st) st = rill_opd_init(&op, "scale");
        if (!st) {
          st = rill_opd_input(&op, "X", (const char *const *)&b->merged, 1);
          if (!st) st = rill_opd_output(&op, "Out", (const char *const *)&b->merged, 1);
          if (!st) st = rill_opd_attr_float(&op, "scale", 1.0f / (float)T);
          if (!st) st = rill_opd_attr_float(&op, "bias", 0.0f);
          if (!st) st = rill_opd_attr_bool(&op, "bias_after_scale", true);
          if (st) rill_op_desc_clear(&op);
          else st = insert(p, blk, p->blocks[blk].nops, &op);
        }
      }
      if (!st) st = optimizer_on_block(x, p, blk, d, k);
    }
  }
  if (!st && nblk == (has_lr ? 1u : 0u)) {
    int32_t blk;
    st = rill_program_add_block(p, 0, &blk);
    if (!st) blocks[nblk++] = blk;
  }
  /* One prefetch block per block of a distributed table held here. */
  for (size_t i = 0; i < x->npairs && !st; i++) {
    const dpair *d = &x->pairs[i];
    for (size_t k = 0; k < d->nb && !st && d->table; k++) {
      const dblock *b = &x->blocks[d->b0 + k];
      if (b->ep != ep) continue;
      st = prefetch_block(p, d, b, &prefetch[nprefetch]);
      if (!st) nprefetch++;
    }
  }
  if (!st) {
    rill_op_desc op;
    st = rill_opd_init(&op, "listen_and_serv");
    if (!st) {
      rill_attr_value bv = {.type = RILL_ATTR_BLOCKS, .n = nblk, .list.blocks = blocks};
      st = rill_opd_input(&op, "X", (const char *const *)recv_in, nrecv);
      if (!st) st = rill_opd_attr(&op, "optimize_blocks", &bv);
      if (!st) st = attr_string(&op, "endpoint", x->eps[ep]);
      if (!st) st = rill_opd_attr_int(&op, "pserver_id", (int32_t)ep);
      if (!st) st = rill_opd_attr_int(&op, "Fanin", T);
      if (!st) st = rill_opd_attr_int(&op, "distributed_mode", sync ? 0 : 1);
      if (!st) st = attr_strs(&op, "grad_to_block_id", g2b, ng2b);
      if (!st) st = attr_strs(&op, "sparse_grad_to_param", sparse, nsparse);
      if (!st) st = attr_strs(&op, "prefetch_var_name_to_block_id", prefetch, nprefetch);
      if (!st) st = rill_opd_attr_int(&op, "lr_decay_block_id", lr_block);
      if (!st) st = rill_opd_attr_int(&op, "checkpint_block_id", -1);
      if (!st) st = rill_opd_attr_bool(&op, "dc_asgd", false);
      if (!st) st = rill_opd_attr_int(&op, "rpc_get_thread_num", 12);
      if (!st) st = rill_opd_attr_int(&op, "rpc_send_thread_num", 12);
      if (!st) st = rill_opd_attr_int(&op, "rpc_prefetch_thread_num", 12);
      if (!st) st = pserver_checkpoint_attrs(x, p, &op, recv_in, nrecv);
      if (st) rill_op_desc_clear(&op);
      else st = insert(p, 0, 0, &op);
    }
  }
  if (recv_in)
    for (size_t i = 0; i < nrecv; i++) rill_free(recv_in[i]);
  if (g2b)
    for (size_t i = 0; i < ng2b; i++) rill_free(g2b[i]);
  if (sparse)
    for (size_t i = 0; i < nsparse; i++) rill_free(sparse[i]);
  if (prefetch)
    for (size_t i = 0; i < nprefetch; i++) rill_free(prefetch[i]);
  rill_free(prefetch);
  rill_free(recv_in);
  rill_free(g2b);
  rill_free(sparse);
  rill_free(blocks);
  if (st) {
    rill_program_free(p);
    return st;
  }
  *out = p;
  return NULL;
}

/* ------------------------------------------------- pserver startup program ----- */

/* Where variable `name` of main lives on pserver `ep`: as is (*whole), or as row blocks
 * / per-block copies (pair *pd, blocks on ep in *mask). */
typedef struct held {
  bool whole;
  const dpair *pair;
  bool is_param, is_state;
} held;

static held where(const xp *x, const rill_program *ps, size_t ep, const char *name) {
  held h = {0};
  for (size_t i = 0; i < x->npairs; i++) {
    const dpair *d = &x->pairs[i];
    if (d->nb < 2) continue;
    bool on = false;
    for (size_t k = 0; k < d->nb; k++) on |= x->blocks[d->b0 + k].ep == ep;
    if (!on) continue;
    if (!strcmp(name, d->param)) {
      h.pair = d;
      h.is_param = true;
      return h;
    }
    const rill_op_desc *op = &x->main->blocks[0].ops[d->op];
    for (size_t s = 0; s < op->ninputs; s++) {
      const char *sl = op->inputs[s].param;
      if (!strcmp(sl, "Param") || !strcmp(sl, "Grad") || !strcmp(sl, "LearningRate")) continue;
      for (size_t a = 0; a < op->inputs[s].nargs; a++)
        if (!strcmp(op->inputs[s].args[a], name)) {
          h.pair = d;
          h.is_state = true;
          return h;
        }
    }
  }
  const rill_var_desc *v = rill_block_find_var(ps, 0, name);
  h.whole = v && v->persistable;
  return h;
}

static rill_status *slice_op(rill_program *s, const char *from, const char *to, int64_t row0,
                             int64_t rows) {
  rill_op_desc op;
  RILL_TRY(rill_opd_init(&op, "slice"));
  int32_t axes[1] = {0}, starts[1] = {(int32_t)row0}, ends[1] = {(int32_t)(row0 + rows)};
  int32_t flags[1] = {1};
  rill_status *st = rill_opd_input(&op, "Input", &from, 1);
  if (!st) st = rill_opd_output(&op, "Out", &to, 1);
  if (!st) st = rill_opd_attr_ints(&op, "axes", axes, 1);
  if (!st) st = rill_opd_attr_ints(&op, "starts", starts, 1);
  if (!st) st = rill_opd_attr_ints(&op, "ends", ends, 1);
  if (!st) st = rill_opd_attr_ints(&op, "infer_flags", flags, 1);
  if (!st) st = rill_opd_attr_ints(&op, "decrease_axis", NULL, 0);
  if (st) {
    rill_op_desc_clear(&op);
    return st;
  }
  return insert(s, 0, s->blocks[0].nops, &op);
}

static rill_status *build_startup(xp *x, size_t ep, const rill_program *ps, rill_program **out) {
  rill_program *s;
  RILL_TRY(rill_program_create(&s));
  rill_status *st = NULL;
  int32_t b;
  if (s->nblocks == 0) st = rill_program_add_block(s, -1, &b);
  /* Every variable of the pserver program's block 0, persistable. */
  for (size_t i = 0; i < ps->blocks[0].nvars && !st; i++) {
    const rill_var_desc *v = &ps->blocks[0].vars[i];
    st = copy_var(ps, s, 0, v->name);
    if (!st) s->blocks[0].vars[s->blocks[0].nvars - 1].persistable = true;
  }
  const rill_block_desc *st0 = x->startup ? &x->startup->blocks[0] : NULL;
  for (size_t j = 0; st0 && j < st0->nops && !st; j++) {
    const rill_op_desc *op = &st0->ops[j];
    bool keep = false;
    const dpair *sliced[8];
    const char *sliced_name[8];
    size_t nsliced = 0;
    for (size_t o = 0; o < op->noutputs && !st; o++)
      for (size_t a = 0; a < op->outputs[o].nargs; a++) {
        const char *name = op->outputs[o].args[a];
        held h = where(x, ps, ep, name);
        if (h.whole) keep = true;
        if (h.pair && nsliced < 8) {
          keep = true;
          sliced[nsliced] = h.pair;
          sliced_name[nsliced++] = name;
        }
      }
    if (!keep) continue;
    /* The whole variable under its own name (not persistable: only its blocks stay). */
    for (size_t q = 0; q < nsliced && !st; q++) {
      if (rill_block_find_var(s, 0, sliced_name[q])) continue;
      const rill_var_desc *v = rill_block_find_var(x->startup, 0, sliced_name[q]);
      if (!v) v = rill_block_find_var(x->main, 0, sliced_name[q]);
      if (!v) {
        st = rill_error(RILL_NOT_FOUND, "transpile: startup op %s writes '%s', declared "
                        "nowhere", op->type, sliced_name[q]);
        break;
      }
      st = declare_like(s, 0, sliced_name[q], v, -1, false);
    }
    if (!st) st = rill_block_insert_op(s, 0, s->blocks[0].nops, op);
    for (size_t q = 0; q < nsliced && !st; q++) {
      const dpair *d = sliced[q];
      const rill_var_desc *v = rill_block_find_var(s, 0, sliced_name[q]);
      bool rows = !strcmp(sliced_name[q], d->param) || like_param(v, d);
      for (size_t k = 0; k < d->nb && !st; k++) {
        const dblock *bl = &x->blocks[d->b0 + k];
        if (bl->ep != ep) continue;
        char *to = !strcmp(sliced_name[q], d->param) ? rill_strdup(bl->param)
                                                      : state_name(d, sliced_name[q], k);
        if (!to) {
          st = rill_oom();
          break;
        }
        st = slice_op(s, sliced_name[q], to, rows ? bl->row0 : 0, rows ? bl->rows : v->dims.d[0]);
        rill_free(to);
      }
    }
  }
  if (st) {
    rill_program_free(s);
    return st;
  }
  *out = s;
  return NULL;
}

/* ------------------------------------------------- trainer startup program ----- */

/* A fake_init of `name` (declared as v): its shape and dtype, no data. */
static rill_status *fake_init_op(const char *name, const rill_var_desc *v, rill_op_desc *op) {
  RILL_TRY(rill_opd_init(op, "fake_init"));
  int64_t dims[RILL_MAX_DIMS];
  int32_t n = v->dims.n < 0 ? 0 : v->dims.n > RILL_MAX_DIMS ? RILL_MAX_DIMS : v->dims.n;
  for (int32_t i = 0; i < n; i++) dims[i] = v->dims.d[i];
  rill_status *st = rill_opd_output(op, "Out", &name, 1);
  if (!st) st = rill_opd_attr_longs(op, "shape", dims, (size_t)n);
  if (!st) st = rill_opd_attr_int(op, "dtype", (int32_t)v->dtype);
  if (st) rill_op_desc_clear(op);
  return st;
}

/* The trainer's startup program: the startup program with each op that writes only a
 * distributed lookup table replaced by a fake_init of it, so a trainer declares the table
 * (its lookups read the shape) but never allocates or initializes it; the pservers hold
 * it. NULL (*out) when nothing changes. */
static rill_status *build_trainer_startup(const xp *x, rill_program **out) {
  *out = NULL;
  if (!x->startup) return NULL;
  rill_program *s = NULL;
  rill_status *st = NULL;
  for (size_t i = 0; i < x->npairs && !st; i++) {
    const dpair *d = &x->pairs[i];
    if (!d->table) continue;
    const rill_var_desc *v = rill_block_find_var(x->startup, 0, d->param);
    if (!v || !v->has_tensor || v->dims.n < 1) v = rill_block_find_var(x->main, 0, d->param);
    if (!v || !v->has_tensor || v->dims.n < 1) continue;
    bool placed = false;
    for (size_t j = 0; !st && j < (s ? s : x->startup)->blocks[0].nops;) {
      const rill_op_desc *op = &(s ? s : x->startup)->blocks[0].ops[j];
      size_t nout = 0;
      for (size_t o = 0; o < op->noutputs; o++) nout += op->outputs[o].nargs;
      if (nout != 1 || !rill_opd_writes(op, d->param)) {
        j++;
        continue;
      }
      if (!s && (st = rill_program_clone(x->startup, &s))) break;
      if ((st = rill_block_remove_op(s, 0, j))) break;
      if (!placed) {
        rill_op_desc fi;
        if ((st = fake_init_op(d->param, v, &fi))) break;
        if ((st = insert(s, 0, j, &fi))) break;
        placed = true;
        j++;
      }
    }
  }
  if (st) {
    rill_program_free(s);
    return rill_status_wrap(st, "transpile: the trainer's startup program");
  }
  *out = s;
  return NULL;
}

/* ------------------------------------------------------------- public ---------- */

rill_transpile_config rill_transpile_default_config(void) {
  rill_transpile_config c = RILL_TRANSPILE_CONFIG_INIT;
  return c;
}

void rill_transpiled_destroy(rill_transpiled *t) {
  if (!t) return;
  rill_program_free(t->trainer);
  rill_program_free(t->tstartup);
  for (size_t i = 0; i < t->neps; i++) {
    rill_free(t->eps[i]);
    if (t->pserver) rill_program_free(t->pserver[i]);
    if (t->pstartup) rill_program_free(t->pstartup[i]);
  }
  rill_free(t->eps);
  rill_free(t->pserver);
  rill_free(t->pstartup);
  rill_free(t);
}

static void xp_clear(xp *x) {
  for (size_t k = 0; k < x->nblocks; k++) {
    rill_free(x->blocks[k].param);
    rill_free(x->blocks[k].grad);
    rill_free(x->blocks[k].merged);
  }
  rill_free(x->blocks);
  rill_free(x->pairs);
  for (size_t i = 0; i < x->neps; i++) rill_free(x->eps[i]);
  rill_free(x->eps);
}

rill_status *rill_program_transpile(const rill_program *main, const rill_program *startup,
                                    const rill_transpile_config *config, rill_transpiled **out) {
  if (!main || !out)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_program_transpile: NULL argument");
  if (main->nblocks == 0)
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: the main program has no blocks");
  if (startup && startup->nblocks == 0)
    return rill_error(RILL_INVALID_ARGUMENT, "transpile: the startup program has no blocks");
  xp x = {.main = main, .startup = startup};
  rill_transpiled *t = NULL;
  rill_status *st = parse_config(&x, config);
  if (!st) st = find_pairs(&x);
  if (!st) st = plan_blocks(&x);
  if (!st) {
    t = rill_calloc(1, sizeof *t);
    if (t) {
      t->pserver = rill_calloc(x.neps, sizeof(rill_program *));
      t->pstartup = rill_calloc(x.neps, sizeof(rill_program *));
    }
    if (!t || !t->pserver || !t->pstartup) st = rill_oom();
  }
  if (!st) st = build_trainer(&x, &t->trainer);
  if (!st) st = build_trainer_startup(&x, &t->tstartup);
  for (size_t i = 0; i < x.neps && !st; i++) {
    st = build_pserver(&x, i, &t->pserver[i]);
    if (!st) st = build_startup(&x, i, t->pserver[i], &t->pstartup[i]);
  }
  if (st) {
    if (t) {
      rill_program_free(t->trainer);
      rill_program_free(t->tstartup);
      for (size_t i = 0; i < x.neps && t->pserver && t->pstartup; i++) {
        rill_program_free(t->pserver[i]);
        rill_program_free(t->pstartup[i]);
      }
      rill_free(t->pserver);
      rill_free(t->pstartup);
      rill_free(t);
    }
    xp_clear(&x);
    return st;
  }
  t->eps = x.eps;
  t->neps = x.neps;
  x.eps = NULL;
  x.neps = 0;
  xp_clear(&x);
  *out = t;
  return NULL;
}

const rill_program *rill_transpiled_trainer_program(const rill_transpiled *t) {
  return t ? t->trainer : NULL;
}

const rill_program *rill_transpiled_trainer_startup(const rill_transpiled *t) {
  return t ? t->tstartup : NULL;
}

size_t rill_transpiled_num_pservers(const rill_transpiled *t) { return t ? t->neps : 0; }

const char *rill_transpiled_pserver_endpoint(const rill_transpiled *t, size_t i) {
  return t && i < t->neps ? t->eps[i] : NULL;
}

static rill_status *find_ep(const rill_transpiled *t, const char *ep, size_t *i) {
  if (!t || !ep) return rill_error(RILL_INVALID_ARGUMENT, "transpiled: NULL argument");
  for (size_t k = 0; k < t->neps; k++)
    if (!strcmp(t->eps[k], ep)) {
      *i = k;
      return NULL;
    }
  return rill_error(RILL_NOT_FOUND, "transpiled: endpoint %s is not one of the %zu pservers "
                    "given to the transpiler", ep, t->neps);
}

rill_status *rill_transpiled_pserver_program(const rill_transpiled *t, const char *endpoint,
                                             const rill_program **out) {
  size_t i;
  RILL_TRY(find_ep(t, endpoint, &i));
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "transpiled: NULL argument");
  *out = t->pserver[i];
  return NULL;
}

rill_status *rill_transpiled_pserver_startup(const rill_transpiled *t, const char *endpoint,
                                             const rill_program **out) {
  size_t i;
  RILL_TRY(find_ep(t, endpoint, &i));
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "transpiled: NULL argument");
  *out = t->pstartup[i];
  return NULL;
}
