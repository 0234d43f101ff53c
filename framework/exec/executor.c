/* The sequential executor. See executor.h for where variables live and when memory is
 * released. Everything that needs a lookup (schemas, kernels, attributes, variables,
 * slot layouts) happens in prepare; a run walks a flat array of ops. */
#include "framework/exec/executor.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/base/arena.h"
#include "framework/base/strmap.h"
#include "framework/exec/background.h"

/* ------------------------------------------------------------------ plan ------- */

typedef enum var_kind {
  VAR_LOCAL,    /* temporary: the plan's scope */
  VAR_FED,      /* fed directly by name: the plan's scope, shares the caller's buffer */
  VAR_PERSIST,  /* persistable: the caller's scope (created when absent) */
  VAR_EXTERNAL, /* read before written, not fed: the caller's scope chain */
  VAR_LIST      /* feed / fetch list: the plan's scope */
} var_kind;

typedef struct plan_var {
  const char *name;
  var_kind kind;
  rill_variable *var;   /* bound variable (re-bound each run for caller-scope kinds) */
  rill_variable *local; /* the plan scope's variable of that name, if any */
  bool has_desc;        /* block 0 declares it */
  bool desc_tensor;     /* ... with a tensor description */
  rill_dtype dtype;
  rill_dims dims;
  int32_t first_read, first_write; /* op indices; INT32_MAX: never */
  int32_t required_by;             /* op that needs a value on entry, or -1 */
  const char *required_slot;
  bool feed_out; /* written by a feed op */
  bool absent;   /* RILL_EMPTY_VAR: bound as NULL */
} plan_var;

typedef struct plan_op {
  const rill_op_schema *schema;
  rill_kernel_fn kernel;
  rill_dtype kernel_dtype;
  const char *type;
  int32_t index;
  bool kernel_shapes, has_alias;
  int32_t dtype_arg; /* flat input index whose dtype picks the kernel, or -1 */
  uint32_t in_begin, in_end, out_begin, out_end;
  rill_attr_value *attrs;
  rill_infer_ctx ictx;
  rill_kernel_ctx kctx;
} plan_op;

typedef struct plan_feed {
  uint32_t var;  /* fed variable, or the feed list */
  int32_t col;   /* -1: direct */
  uint32_t desc; /* variable whose VarDesc checks the fed tensor */
} plan_feed;

typedef struct plan_fetch {
  uint32_t var; /* fetched variable, or the fetch list */
  int32_t col;  /* -1: by name */
  const char *name;
} plan_fetch;

struct rill_plan {
  rill_arena mem; /* the plan itself and its tables */
  uint64_t program_id, revision;
  char **feed_names; /* key, in the caller's order */
  size_t nfeeds;
  char **fetch_names;
  size_t nfetch;

  plan_op *ops;
  size_t nops;
  plan_var *vars;
  size_t nvars;
  plan_feed *feeds;
  plan_fetch *fetches;

  /* Flat argument tables, op by op, schema slot by slot. */
  rill_variable **in_var, **out_var;
  uint32_t *in_id, *out_id;
  rill_tensor_meta *in_meta, *out_meta;
  const rill_tensor **in_tensor;
  bool *out_alias;
  size_t nin, nout;

  uint32_t *caller_vars; /* ids of VAR_PERSIST / VAR_EXTERNAL variables */
  size_t ncaller;
  uint32_t *required; /* ids of variables that must hold a value on entry */
  size_t nrequired;
  uint32_t *cleanup; /* ids of variables cleared after every run */
  size_t ncleanup;

  rill_scope *local;

  /* The parallel schedule's dependency graph, and the schedule AUTO picks. */
  rill_sched_graph graph;
  uint32_t crit_path;
  rill_schedule auto_schedule;
  /* Release of temporaries after their last use: per op, the releasable variables it
   * touches (each once); per variable, how many ops touch it (0: never released) and
   * the per-run countdown. */
  uint32_t *touch_start, *touch;
  uint32_t *rel_init;
  atomic_uint *rel_count;
  /* The memory plan (memplan): temporaries whose lifetimes do not overlap share one
   * buffer, passed from one to the next through the group's holder. group[v] is the
   * group of variable v, or -1. */
  bool memplan;
  int32_t *group;
  rill_tensor *holders;
  uint32_t ngroups;
};

size_t rill_plan_num_ops(const rill_plan *plan) { return plan->nops; }

static int cmp_ptr(const void *a, const void *b) {
  uintptr_t x = (uintptr_t) * (void *const *)a, y = (uintptr_t) * (void *const *)b;
  return x < y ? -1 : x > y;
}

size_t rill_plan_temp_bytes(const rill_plan *plan) {
  size_t n = 0, cap = plan->nvars + plan->ngroups, total = 0;
  rill_buffer **bufs = rill_malloc((cap ? cap : 1) * sizeof *bufs);
  if (!bufs) return 0;
  for (size_t v = 0; v < plan->nvars; v++) {
    const plan_var *pv = &plan->vars[v];
    if (pv->kind != VAR_LOCAL || !pv->local || pv->local->kind != RILL_VARKIND_TENSOR) continue;
    if (pv->local->u.tensor.buf) bufs[n++] = pv->local->u.tensor.buf;
  }
  for (uint32_t g = 0; g < plan->ngroups; g++)
    if (plan->holders[g].buf) bufs[n++] = plan->holders[g].buf;
  qsort(bufs, n, sizeof *bufs, cmp_ptr);
  for (size_t i = 0; i < n; i++)
    if (i == 0 || bufs[i] != bufs[i - 1]) total += bufs[i]->size;
  rill_free(bufs);
  return total;
}

size_t rill_plan_num_groups(const rill_plan *plan) { return plan->ngroups; }
rill_schedule rill_plan_auto_schedule(const rill_plan *plan) { return plan->auto_schedule; }
size_t rill_plan_critical_path(const rill_plan *plan) { return plan->crit_path; }
bool rill_plan_holds(const rill_plan *plan, const char *name) {
  for (size_t v = 0; v < plan->nvars; v++)
    if (strcmp(plan->vars[v].name, name) == 0) {
      const rill_variable *var = plan->vars[v].local;
      if (!var) return false;
      if (var->kind == RILL_VARKIND_TENSOR) return var->u.tensor.buf != NULL;
      return var->kind != RILL_VARKIND_EMPTY;
    }
  return false;
}

bool rill_plan_has_edge(const rill_plan *plan, size_t from, size_t to) {
  const rill_sched_graph *g = &plan->graph;
  if (from >= g->nops || to >= g->nops) return false;
  for (uint32_t k = g->succ_start[from]; k < g->succ_start[from + 1]; k++)
    if (g->succ[k] == to) return true;
  return false;
}

static void plan_destroy(rill_plan *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nops; i++)
    if (p->ops[i].attrs) {
      rill_attrs_clear(p->ops[i].attrs, p->ops[i].schema->nattrs);
      rill_free(p->ops[i].attrs);
    }
  for (uint32_t g = 0; g < p->ngroups; g++) rill_tensor_clear(&p->holders[g]);
  if (p->local) {
    p->local->parent = NULL;
    rill_scope_destroy(p->local);
  }
  rill_arena mem = p->mem; /* p itself lives in the arena */
  rill_arena_free(&mem);
}

/* ---- name -> variable id (keys: the variables' names, in the arena) ---- */

typedef rill_strmap name_table;

static long find_var_id(name_table *t, const char *name) {
  const size_t *id = rill_strmap_get(t, name);
  return id ? (long)*id : -1;
}

/* Adds `name` (if new) and returns its id, or -1 when out of memory. */
static long intern_var(rill_plan *p, name_table *t, const rill_program *prog, const char *name) {
  uint64_t h = rill_str_hash(name);
  const rill_strmap_value *have = rill_strmap_find(t, name, h);
  if (have) return (long)have->index;
  plan_var *v = &p->vars[p->nvars];
  v->name = rill_arena_strdup(&p->mem, name);
  if (!v->name) return -1;
  rill_status *st = rill_strmap_set(t, v->name, h, (rill_strmap_value){.index = p->nvars});
  if (st) {
    rill_status_destroy(st);
    return -1;
  }
  v->first_read = v->first_write = INT32_MAX;
  v->required_by = -1;
  const rill_var_desc *d = rill_block_find_var(prog, 0, name);
  if (d) {
    v->has_desc = true;
    v->desc_tensor = d->has_tensor && d->type == RILL_VAR_LOD_TENSOR;
    v->dtype = d->dtype;
    v->dims = d->dims;
    if (d->type == RILL_VAR_FEED_MINIBATCH || d->type == RILL_VAR_FETCH_LIST)
      v->kind = VAR_LIST;
    else if (d->persistable)
      v->kind = VAR_PERSIST;
  }
  return (long)p->nvars++;
}

static void meta_from_var(rill_tensor_meta *m, const plan_var *v) {
  memset(m, 0, sizeof *m);
  m->lod_from[0] = m->lod_from[1] = -1;
  if (!v->desc_tensor) return;
  m->known = true;
  m->dtype = v->dtype;
  m->dims = v->dims;
}

#define OP_CONTEXT_FMT "block 0, op #%d '%s'"

/* Reports every op type without a schema in one message. */
static rill_status *check_schemas(const rill_block_desc *b) {
  size_t missing = 0, len = 0;
  for (size_t i = 0; i < b->nops; i++)
    if (!rill_schema_find(b->ops[i].type)) {
      missing++;
      len += strlen(b->ops[i].type) + 32;
    }
  if (!missing) return NULL;
  char *list = rill_malloc(len + 1);
  if (!list) return rill_oom();
  size_t at = 0;
  list[0] = 0;
  for (size_t i = 0; i < b->nops; i++) {
    const char *type = b->ops[i].type;
    if (rill_schema_find(type)) continue;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = strcmp(b->ops[j].type, type) == 0;
    if (seen) continue;
    at += (size_t)snprintf(list + at, len + 1 - at, "%s'%s' (op #%zu)", at ? ", " : "", type, i);
  }
  rill_status *st = rill_error(RILL_UNIMPLEMENTED,
                               "block 0: %zu op%s of unsupported type%s: %s (load an op library "
                               "that registers them: 'rill run --plugin LIB' or "
                               "rill_load_op_library(), see examples/plugin/README.md; or add "
                               "them to operators/ and kernels/cpu/)",
                               missing, missing == 1 ? "" : "s", missing == 1 ? "" : "s", list);
  rill_free(list);
  return st;
}

static rill_dtype op_kernel_dtype(const plan_op *op, const rill_plan *p) {
  if (op->dtype_arg >= 0) {
    const plan_var *v = &p->vars[p->in_id[op->dtype_arg]];
    if (v->desc_tensor) return v->dtype;
  } else if (op->schema->dtype_attr >= 0 && (size_t)op->schema->dtype_attr < op->schema->nattrs &&
             op->attrs[op->schema->dtype_attr].type == RILL_ATTR_INT) {
    return (rill_dtype)op->attrs[op->schema->dtype_attr].v.i;
  }
  return RILL_DTYPE_FP32;
}

/* Lays out one op's slots: per-slot counts and pointer tables into the flat arrays. */
static rill_status *layout_op(rill_plan *p, name_table *names, const rill_program *prog,
                              const rill_op_desc *d, plan_op *op, size_t *in_at,
                              size_t *out_at) {
  const rill_op_schema *s = op->schema;
  rill_arena *a = &p->mem;
  size_t ns_in = s->ninputs ? s->ninputs : 1, ns_out = s->noutputs ? s->noutputs : 1;
  size_t *nin = rill_arena_alloc(a, ns_in, sizeof *nin);
  size_t *nout = rill_arena_alloc(a, ns_out, sizeof *nout);
  rill_variable *const **kin = rill_arena_alloc(a, ns_in, sizeof *kin);
  rill_variable *const **kout = rill_arena_alloc(a, ns_out, sizeof *kout);
  const rill_tensor_meta **min = rill_arena_alloc(a, ns_in, sizeof *min);
  rill_tensor_meta **mout = rill_arena_alloc(a, ns_out, sizeof *mout);
  const rill_tensor *const **tin = rill_arena_alloc(a, ns_in, sizeof *tin);
  const char *const **nmin = rill_arena_alloc(a, ns_in, sizeof *nmin);
  const char *const **nmout = rill_arena_alloc(a, ns_out, sizeof *nmout);
  if (!nin || !nout || !kin || !kout || !min || !mout || !tin || !nmin || !nmout) return rill_oom();

  op->in_begin = (uint32_t)*in_at;
  for (size_t si = 0; si < s->ninputs; si++) {
    const rill_op_slot *slot = rill_op_input(d, s->inputs[si].name);
    size_t n = slot ? slot->nargs : 0;
    if (!n && !(s->inputs[si].flags & RILL_SLOT_DISPENSABLE))
      return rill_error(RILL_INVALID_ARGUMENT, "input slot %s is missing", s->inputs[si].name);
    const char **nm = rill_arena_alloc(a, n ? n : 1, sizeof *nm);
    if (!nm) return rill_oom();
    nin[si] = n;
    kin[si] = &p->in_var[*in_at];
    min[si] = &p->in_meta[*in_at];
    tin[si] = &p->in_tensor[*in_at];
    nmin[si] = nm;
    for (size_t k = 0; k < n; k++) {
      long id = intern_var(p, names, prog, slot->args[k]);
      if (id < 0) return rill_oom();
      plan_var *v = &p->vars[id];
      nm[k] = v->name;
      p->in_id[*in_at] = (uint32_t)id;
      if (v->first_read == INT32_MAX) v->first_read = op->index;
      if (v->first_write > op->index && v->required_by < 0 &&
          !(s->inputs[si].flags & RILL_SLOT_DISPENSABLE)) {
        v->required_by = op->index;
        v->required_slot = s->inputs[si].name;
      }
      if ((int)si == s->kernel_dtype_slot && k == 0) op->dtype_arg = (int32_t)*in_at;
      (*in_at)++;
    }
  }
  op->in_end = (uint32_t)*in_at;
  op->out_begin = (uint32_t)*out_at;
  for (size_t so = 0; so < s->noutputs; so++) {
    const rill_op_slot *slot = rill_op_output(d, s->outputs[so].name);
    size_t n = slot ? slot->nargs : 0;
    const char **nm = rill_arena_alloc(a, n ? n : 1, sizeof *nm);
    if (!nm) return rill_oom();
    nout[so] = n;
    kout[so] = &p->out_var[*out_at];
    mout[so] = &p->out_meta[*out_at];
    nmout[so] = nm;
    for (size_t k = 0; k < n; k++) {
      long id = intern_var(p, names, prog, slot->args[k]);
      if (id < 0) return rill_oom();
      plan_var *v = &p->vars[id];
      nm[k] = v->name;
      p->out_id[*out_at] = (uint32_t)id;
      if (v->first_write == INT32_MAX) v->first_write = op->index;
      if (s->flags & RILL_OP_FEED) v->feed_out = true;
      for (uint32_t j = op->in_begin; j < op->in_end; j++)
        if (p->in_id[j] == (uint32_t)id) {
          p->out_alias[*out_at] = true;
          op->has_alias = true;
        }
      (*out_at)++;
    }
  }
  op->out_end = (uint32_t)*out_at;

  op->ictx = (rill_infer_ctx){.schema = s,
                              .attrs = op->attrs,
                              .nin = nin,
                              .in = (const rill_tensor_meta *const *)min,
                              .nout = nout,
                              .out = (rill_tensor_meta *const *)mout,
                              .in_tensors = NULL,
                              .in_names = nmin,
                              .out_names = nmout};
  op->kctx = (rill_kernel_ctx){.schema = s,
                               .attrs = op->attrs,
                               .nin = nin,
                               .in = kin,
                               .nout = nout,
                               .out = kout,
                               .in_names = nmin,
                               .out_names = nmout};
  /* Run-time inference sees the tensors too. */
  op->ictx.in_tensors = (const rill_tensor *const *const *)tin;
  return NULL;
}

static rill_status *plan_key(rill_plan *p, const char *const *feed_names, size_t nfeeds,
                             const char *const *fetch_names, size_t nfetch) {
  p->feed_names = rill_arena_alloc(&p->mem, nfeeds ? nfeeds : 1, sizeof(char *));
  p->fetch_names = rill_arena_alloc(&p->mem, nfetch ? nfetch : 1, sizeof(char *));
  if (!p->feed_names || !p->fetch_names) return rill_oom();
  for (size_t i = 0; i < nfeeds; i++)
    if (!(p->feed_names[i] = rill_arena_strdup(&p->mem, feed_names[i]))) return rill_oom();
  for (size_t i = 0; i < nfetch; i++)
    if (!(p->fetch_names[i] = rill_arena_strdup(&p->mem, fetch_names[i]))) return rill_oom();
  p->nfeeds = nfeeds;
  p->nfetch = nfetch;
  return NULL;
}

static int32_t col_attr(const plan_op *op) {
  int ci = rill_schema_attr_index(op->schema, "col");
  if (ci < 0 || op->attrs[ci].type != RILL_ATTR_INT) return -1;
  return op->attrs[ci].v.i;
}

/* Matches feeds and fetches to feed/fetch ops or to variables. */
static rill_status *bind_feeds_fetches(rill_plan *p, name_table *names, const rill_program *prog) {
  bool feed_ops = false, fetch_ops = false;
  for (size_t i = 0; i < p->nops; i++) {
    feed_ops |= (p->ops[i].schema->flags & RILL_OP_FEED) != 0;
    fetch_ops |= (p->ops[i].schema->flags & RILL_OP_FETCH) != 0;
  }
  p->feeds = rill_arena_alloc(&p->mem, p->nfeeds ? p->nfeeds : 1, sizeof *p->feeds);
  p->fetches = rill_arena_alloc(&p->mem, p->nfetch ? p->nfetch : 1, sizeof *p->fetches);
  if (!p->feeds || !p->fetches) return rill_oom();

  for (size_t f = 0; f < p->nfeeds; f++)
    for (size_t g = 0; g < f; g++)
      if (strcmp(p->feed_names[f], p->feed_names[g]) == 0)
        return rill_error(RILL_INVALID_ARGUMENT, "variable '%s' is fed twice", p->feed_names[f]);

  if (feed_ops) {
    /* Every feed op needs a feed; every feed needs a feed op. */
    for (size_t i = 0; i < p->nops; i++) {
      plan_op *op = &p->ops[i];
      if (!(op->schema->flags & RILL_OP_FEED)) continue;
      if (op->in_end - op->in_begin < 1 || op->out_end - op->out_begin < 1)
        return rill_error(RILL_INVALID_ARGUMENT, "block 0, op #%zu '%s': feed op without X or Out",
                          i, op->type);
      int32_t col = col_attr(op);
      if (col < 0)
        return rill_error(RILL_INVALID_ARGUMENT, "block 0, op #%zu '%s': bad col %d", i, op->type,
                          (int)col);
      uint32_t out = p->out_id[op->out_begin];
      const char *name = p->vars[out].name;
      size_t f = 0;
      while (f < p->nfeeds && strcmp(p->feed_names[f], name) != 0) f++;
      if (f == p->nfeeds)
        return rill_error(RILL_INVALID_ARGUMENT, "missing feed '%s' (feed op #%zu, col %d)", name, i,
                          (int)col);
      p->feeds[f] = (plan_feed){.var = p->in_id[op->in_begin], .col = col, .desc = out};
      p->vars[p->in_id[op->in_begin]].kind = VAR_LIST;
    }
    for (size_t f = 0; f < p->nfeeds; f++) {
      bool matched = false;
      for (size_t i = 0; i < p->nops && !matched; i++)
        matched = (p->ops[i].schema->flags & RILL_OP_FEED) &&
                  strcmp(p->vars[p->out_id[p->ops[i].out_begin]].name, p->feed_names[f]) == 0;
      if (!matched)
        return rill_error(RILL_INVALID_ARGUMENT,
                          "unknown feed '%s': no feed op of the program writes it", p->feed_names[f]);
    }
  } else {
    for (size_t f = 0; f < p->nfeeds; f++) {
      long id = find_var_id(names, p->feed_names[f]);
      if (id < 0) {
        if (!rill_block_find_var(prog, 0, p->feed_names[f]))
          return rill_error(RILL_INVALID_ARGUMENT, "unknown feed '%s': block 0 has no such variable",
                            p->feed_names[f]);
        id = intern_var(p, names, prog, p->feed_names[f]);
        if (id < 0) return rill_oom();
      }
      p->vars[id].kind = VAR_FED;
      p->feeds[f] = (plan_feed){.var = (uint32_t)id, .col = -1, .desc = (uint32_t)id};
    }
  }

  /* Fetch lists live in the plan's scope and are emptied after every run, so fetched
   * buffers are not held between runs even when the caller fetches nothing. */
  for (size_t i = 0; i < p->nops; i++)
    if ((p->ops[i].schema->flags & RILL_OP_FETCH) && p->ops[i].out_end > p->ops[i].out_begin)
      p->vars[p->out_id[p->ops[i].out_begin]].kind = VAR_LIST;

  for (size_t f = 0; f < p->nfetch; f++) {
    const char *name = p->fetch_names[f];
    bool done = false;
    if (fetch_ops)
      for (size_t i = 0; i < p->nops && !done; i++) {
        plan_op *op = &p->ops[i];
        if (!(op->schema->flags & RILL_OP_FETCH) || op->in_end == op->in_begin ||
            op->out_end == op->out_begin)
          continue;
        if (strcmp(p->vars[p->in_id[op->in_begin]].name, name) != 0) continue;
        int32_t col = col_attr(op);
        if (col < 0)
          return rill_error(RILL_INVALID_ARGUMENT, "block 0, op #%zu '%s': bad col %d", i, op->type,
                            (int)col);
        p->fetches[f] = (plan_fetch){.var = p->out_id[op->out_begin], .col = col, .name = name};
        p->vars[p->out_id[op->out_begin]].kind = VAR_LIST;
        done = true;
      }
    if (done) continue;
    long id = find_var_id(names, name);
    if (id < 0) {
      if (!rill_block_find_var(prog, 0, name))
        return rill_error(RILL_NOT_FOUND, "unknown fetch '%s': block 0 has no such variable", name);
      id = intern_var(p, names, prog, name);
      if (id < 0) return rill_oom();
    }
    p->fetches[f] = (plan_fetch){.var = (uint32_t)id, .col = -1, .name = name};
  }
  return NULL;
}

static rill_status *build_graph(rill_plan *p, name_table *names, const rill_program *prog,
                                const rill_block_desc *bd, int32_t nthreads);

static rill_status *build_plan(rill_executor *exe, const rill_program *prog,
                               const char *const *feed_names, size_t nfeeds,
                               const char *const *fetch_names, size_t nfetch, rill_plan **out) {
  RILL_TRY(rill_registry_init());
  if (prog->nblocks < 1) return rill_error(RILL_INVALID_ARGUMENT, "the program has no blocks");
  const rill_block_desc *b = &prog->blocks[0];
  RILL_TRY(check_schemas(b));

  rill_arena a = {0};
  rill_plan *p = rill_arena_alloc(&a, 1, sizeof *p);
  if (!p) return rill_oom();
  p->mem = a;
  rill_status *st = NULL;
  name_table names = {.borrow_keys = true};
  p->program_id = prog->id;
  p->revision = prog->revision;
  p->memplan = exe->memory_plan;
  if ((st = plan_key(p, feed_names, nfeeds, fetch_names, nfetch))) goto fail;

  /* Count arguments in schema slots. */
  size_t nin = 0, nout = 0;
  for (size_t i = 0; i < b->nops; i++) {
    const rill_op_schema *s = rill_schema_find(b->ops[i].type);
    for (size_t k = 0; k < s->ninputs; k++) {
      const rill_op_slot *sl = rill_op_input(&b->ops[i], s->inputs[k].name);
      nin += sl ? sl->nargs : 0;
    }
    for (size_t k = 0; k < s->noutputs; k++) {
      const rill_op_slot *sl = rill_op_output(&b->ops[i], s->outputs[k].name);
      nout += sl ? sl->nargs : 0;
    }
  }
  size_t maxvars = nin + nout + nfeeds + nfetch;
  p->ops = rill_arena_alloc(&p->mem, b->nops ? b->nops : 1, sizeof *p->ops);
  p->vars = rill_arena_alloc(&p->mem, maxvars ? maxvars : 1, sizeof *p->vars);
  p->in_var = rill_arena_alloc(&p->mem, nin + 1, sizeof *p->in_var);
  p->in_id = rill_arena_alloc(&p->mem, nin + 1, sizeof *p->in_id);
  p->in_meta = rill_arena_alloc(&p->mem, nin + 1, sizeof *p->in_meta);
  p->in_tensor = rill_arena_alloc(&p->mem, nin + 1, sizeof *p->in_tensor);
  p->out_var = rill_arena_alloc(&p->mem, nout + 1, sizeof *p->out_var);
  p->out_id = rill_arena_alloc(&p->mem, nout + 1, sizeof *p->out_id);
  p->out_meta = rill_arena_alloc(&p->mem, nout + 1, sizeof *p->out_meta);
  p->out_alias = rill_arena_alloc(&p->mem, nout + 1, sizeof *p->out_alias);
  if ((st = rill_strmap_reserve(&names, maxvars))) goto fail;
  if (!p->ops || !p->vars || !p->in_var || !p->in_id || !p->in_meta ||
      !p->in_tensor || !p->out_var || !p->out_id || !p->out_meta || !p->out_alias) {
    st = rill_oom();
    goto fail;
  }
  p->nin = nin;
  p->nout = nout;
  p->nops = b->nops;

  /* Ops: schema, attributes, slot layout. */
  size_t in_at = 0, out_at = 0;
  for (size_t i = 0; i < b->nops; i++) {
    plan_op *op = &p->ops[i];
    const rill_op_desc *d = &b->ops[i];
    op->schema = rill_schema_find(d->type);
    op->index = (int32_t)i;
    op->dtype_arg = -1;
    /* Feed and fetch kernels share buffers; kernel-shaped ops size their own outputs. */
    op->kernel_shapes =
        (op->schema->flags & (RILL_OP_KERNEL_SHAPES | RILL_OP_FEED | RILL_OP_FETCH)) != 0;
    if (!(op->type = rill_arena_strdup(&p->mem, d->type))) {
      st = rill_oom();
      goto fail;
    }
    op->attrs = rill_calloc(op->schema->nattrs ? op->schema->nattrs : 1, sizeof *op->attrs);
    if (!op->attrs) {
      st = rill_oom();
      goto fail;
    }
    if ((st = rill_resolve_attrs(op->schema, d, op->attrs))) {
      rill_free(op->attrs);
      op->attrs = NULL;
      st = rill_status_wrap(st, OP_CONTEXT_FMT, (int)i, d->type);
      goto fail;
    }
    if ((st = layout_op(p, &names, prog, d, op, &in_at, &out_at))) {
      st = rill_status_wrap(st, OP_CONTEXT_FMT, (int)i, d->type);
      goto fail;
    }
  }

  if ((st = bind_feeds_fetches(p, &names, prog))) goto fail;

  /* Kernels. */
  for (size_t i = 0; i < p->nops; i++) {
    plan_op *op = &p->ops[i];
    op->kernel_dtype = op_kernel_dtype(op, p);
    op->kernel = rill_kernel_find(op->type, exe->options.place.device, op->kernel_dtype);
    if (!op->kernel) {
      st = rill_error(RILL_UNIMPLEMENTED, "block 0, op #%zu '%s': no %s kernel for dtype %s", i,
                      op->type, exe->options.place.device == RILL_DEVICE_CPU ? "CPU" : "CUDA",
                      rill_dtype_name(op->kernel_dtype));
      goto fail;
    }
    op->kctx.device = &exe->device;
  }

  /* Compile-time shape inference over the VarDescs. */
  for (size_t i = 0; i < p->nops; i++) {
    plan_op *op = &p->ops[i];
    if (!op->schema->infer) continue;
    for (uint32_t k = op->in_begin; k < op->in_end; k++) meta_from_var(&p->in_meta[k], &p->vars[p->in_id[k]]);
    for (uint32_t k = op->out_begin; k < op->out_end; k++) meta_from_var(&p->out_meta[k], &p->vars[p->out_id[k]]);
    const rill_tensor *const *const *tensors = op->ictx.in_tensors;
    op->ictx.in_tensors = NULL;
    st = op->schema->infer(&op->ictx);
    op->ictx.in_tensors = tensors;
    if (st) {
      st = rill_status_wrap(st, OP_CONTEXT_FMT, (int)i, op->type);
      goto fail;
    }
  }

  /* Classify variables not yet placed. */
  size_t ncaller = 0, nreq = 0, nclean = 0;
  for (size_t v = 0; v < p->nvars; v++) {
    plan_var *pv = &p->vars[v];
    /* RILL_EMPTY_VAR names an argument nobody wants (an unneeded gradient): it is bound
     * as absent, so kernels see NULL and skip it. */
    pv->absent = strcmp(pv->name, RILL_EMPTY_VAR) == 0;
    if (pv->absent) {
      pv->kind = VAR_LOCAL;
      continue;
    }
    if (pv->kind == VAR_LOCAL && pv->first_read != INT32_MAX && pv->first_read <= pv->first_write)
      pv->kind = VAR_EXTERNAL;
    if (pv->kind == VAR_PERSIST || pv->kind == VAR_EXTERNAL) ncaller++;
    if ((pv->kind == VAR_PERSIST || pv->kind == VAR_EXTERNAL) && pv->required_by >= 0) nreq++;
    if (pv->kind == VAR_FED || pv->kind == VAR_LIST || pv->feed_out) nclean++;
  }
  p->caller_vars = rill_arena_alloc(&p->mem, ncaller + 1, sizeof *p->caller_vars);
  p->required = rill_arena_alloc(&p->mem, nreq + 1, sizeof *p->required);
  p->cleanup = rill_arena_alloc(&p->mem, nclean + 1, sizeof *p->cleanup);
  if (!p->caller_vars || !p->required || !p->cleanup) {
    st = rill_oom();
    goto fail;
  }
  if ((st = rill_scope_create(NULL, &p->local))) goto fail;
  for (size_t v = 0; v < p->nvars; v++) {
    plan_var *pv = &p->vars[v];
    if (pv->kind == VAR_PERSIST || pv->kind == VAR_EXTERNAL) {
      p->caller_vars[p->ncaller++] = (uint32_t)v;
      if (pv->required_by >= 0) p->required[p->nrequired++] = (uint32_t)v;
    }
    if (pv->kind == VAR_FED || pv->kind == VAR_LIST || pv->feed_out) p->cleanup[p->ncleanup++] = (uint32_t)v;
    /* Variables of the caller's scope bind at run time; an EXTERNAL one that the
     * caller does not have falls back to the plan's scope. */
    if (pv->absent) continue;
    if (pv->kind != VAR_PERSIST) {
      if ((st = rill_scope_var(p->local, pv->name, &pv->local))) goto fail;
      pv->var = pv->local;
    }
  }
  for (size_t k = 0; k < nin; k++) p->in_var[k] = p->vars[p->in_id[k]].var;
  for (size_t k = 0; k < nout; k++) p->out_var[k] = p->vars[p->out_id[k]].var;
  for (size_t i = 0; i < p->nops; i++) p->ops[i].kctx.scope = p->local;
  if ((st = build_graph(p, &names, prog, b, exe->device.num_threads))) goto fail;
  rill_strmap_clear(&names);
  *out = p;
  return NULL;

fail:
  rill_strmap_clear(&names);
  plan_destroy(p);
  return st;
}

/* ------------------------------------------------------------------ graph ------ */

/* A growable array of uint32_t, freed by the caller. */
typedef struct u32vec {
  uint32_t *v;
  size_t n, cap;
} u32vec;

static bool u32_push(u32vec *a, uint32_t x) {
  if (a->n == a->cap) {
    void *items = a->v;
    if (!rill_grow(&items, &a->cap, a->n + 1, sizeof *a->v)) return false;
    a->v = items;
  }
  a->v[a->n++] = x;
  return true;
}

/* What one op reads and writes, as resource ids: the plan's variable ids, then ids for
 * names only sub-blocks use (`extra`). */
typedef struct access_builder {
  rill_plan *p;
  name_table *names;
  const rill_program *prog;
  char const **extra_str;
  size_t nextra, capextra;
  bool *visited; /* per block */
} access_builder;

static long resource_of(access_builder *b, const char *name) {
  long id = find_var_id(b->names, name);
  if (id >= 0) return id;
  for (size_t k = 0; k < b->nextra; k++)
    if (strcmp(b->extra_str[k], name) == 0) return (long)(b->p->nvars + k);
  if (b->nextra == b->capextra) {
    void *items = (void *)b->extra_str;
    if (!rill_grow(&items, &b->capextra, b->nextra + 1, sizeof *b->extra_str)) return -1;
    b->extra_str = items;
  }
  b->extra_str[b->nextra++] = name;
  return (long)(b->p->nvars + b->nextra - 1);
}

/* Every variable a sub-block (and its own sub-blocks) names counts as read and written
 * by the op that runs it. */
static bool add_block_accesses(access_builder *b, int32_t block, u32vec *rw) {
  if (block < 0 || (size_t)block >= b->prog->nblocks || b->visited[block]) return true;
  b->visited[block] = true;
  const rill_block_desc *bd = &b->prog->blocks[block];
  for (size_t i = 0; i < bd->nops; i++) {
    const rill_op_desc *d = &bd->ops[i];
    for (int side = 0; side < 2; side++) {
      const rill_op_slot *slots = side ? d->outputs : d->inputs;
      size_t n = side ? d->noutputs : d->ninputs;
      for (size_t k = 0; k < n; k++)
        for (size_t a = 0; a < slots[k].nargs; a++) {
          long r = resource_of(b, slots[k].args[a]);
          if (r < 0 || !u32_push(rw, (uint32_t)r)) return false;
        }
    }
    for (size_t k = 0; k < d->nattrs; k++) {
      const rill_attr_value *v = &d->attrs[k].value;
      if (v->type == RILL_ATTR_BLOCK && !add_block_accesses(b, v->v.block, rw)) return false;
      if (v->type == RILL_ATTR_BLOCKS)
        for (size_t j = 0; j < v->n; j++)
          if (!add_block_accesses(b, v->list.blocks[j], rw)) return false;
    }
  }
  return true;
}

/* Bytes a variable's declared shape needs, unknown extents counted as 1 (a batch of one);
 * only used to pair temporaries of similar sizes. */
static size_t est_bytes(const plan_var *v) {
  size_t n = rill_dtype_size(v->dtype);
  for (int32_t i = 0; i < v->dims.n; i++)
    if (v->dims.d[i] > 0 && !rill_mul_size(n, (size_t)v->dims.d[i], &n)) return SIZE_MAX;
  return n;
}

/* The memory plan. A temporary (a dense tensor of the plan's scope, not fed, not fetched
 * by name, not named by a sub-block) lives from the first op that touches it to the last
 * one, in program order. Walking the temporaries by first use, each joins a group whose
 * last member is dead by then (best fit by declared size), or starts a new group; at run
 * time the last user of a member hands its buffer to the group's holder and the next
 * member's first writer takes it. For the parallel schedule, that first writer also
 * waits for every op touching the previous member (edges added here), so the handover
 * never races. Returns false when out of memory. */
static bool plan_memory(rill_plan *p, const u32vec *subs, u32vec *efrom, u32vec *eto,
                        uint32_t *stamp) {
  size_t nv = p->nvars, nops = p->nops;
  bool ok = false;
  uint32_t *first = rill_malloc((nv + 1) * sizeof *first);
  uint32_t *last = rill_malloc((nv + 1) * sizeof *last);
  uint32_t *order = rill_malloc((nv + 1) * sizeof *order);
  uint32_t *tstart = rill_calloc(nv + 2, sizeof *tstart);
  uint32_t *gend = rill_malloc((nv + 1) * sizeof *gend);
  uint32_t *gprev = rill_malloc((nv + 1) * sizeof *gprev);
  size_t *gsize = rill_malloc((nv + 1) * sizeof *gsize);
  bool *elig = rill_calloc(nv + 1, sizeof *elig);
  uint32_t *tops = NULL;
  p->group = rill_arena_alloc(&p->mem, nv + 1, sizeof *p->group);
  if (!first || !last || !order || !tstart || !gend || !gprev || !gsize || !elig || !p->group)
    goto out;
  for (size_t v = 0; v < nv; v++) {
    const plan_var *pv = &p->vars[v];
    elig[v] = pv->kind == VAR_LOCAL && !pv->feed_out && !pv->absent && pv->desc_tensor;
    first[v] = UINT32_MAX;
    last[v] = 0;
    p->group[v] = -1;
  }
  for (size_t f = 0; f < p->nfetch; f++) elig[p->fetches[f].var] = false;
  /* What fetch ops read keeps its own buffer: the caller gets a reference to it, and
   * once the caller lets go the next run writes it again without allocating. */
  for (size_t i = 0; i < nops; i++)
    if (p->ops[i].schema->flags & RILL_OP_FETCH)
      for (uint32_t k = p->ops[i].in_begin; k < p->ops[i].in_end; k++) elig[p->in_id[k]] = false;
  for (size_t i = 0; i < nops; i++)
    for (size_t k = 0; k < subs[i].n; k++)
      if (subs[i].v[k] < nv) elig[subs[i].v[k]] = false;
  /* Lifetimes and, per variable, the ops touching it (counted, then listed; gprev is
   * the per-variable "last op seen" stamp, then the fill cursor). */
  for (size_t v = 0; v < nv; v++) gprev[v] = UINT32_MAX;
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t i = 0; i < nops; i++) {
      const plan_op *op = &p->ops[i];
      size_t nargs = (op->in_end - op->in_begin) + (op->out_end - op->out_begin);
      for (size_t k = 0; k < nargs; k++) {
        size_t nin_ = op->in_end - op->in_begin;
        uint32_t v = k < nin_ ? p->in_id[op->in_begin + k] : p->out_id[op->out_begin + k - nin_];
        if (v >= nv || !elig[v]) continue;
        if (pass == 0) {
          if (gprev[v] == i) continue;
          gprev[v] = i;
          if (first[v] == UINT32_MAX) first[v] = i;
          last[v] = i;
          tstart[v + 1]++;
        } else {
          uint32_t at = tstart[v] + gprev[v];
          if (gprev[v] > 0 && tops[at - 1] == i) continue;
          tops[at] = i;
          gprev[v]++;
        }
      }
    }
    if (pass == 0) {
      for (size_t v = 0; v < nv; v++) tstart[v + 1] += tstart[v];
      if (!(tops = rill_calloc(tstart[nv] + 1, sizeof *tops))) goto out;
      for (size_t v = 0; v < nv; v++) gprev[v] = 0;
    }
  }
  uint32_t *tcount = gprev; /* entries per variable */
  size_t n = 0;
  for (uint32_t v = 0; v < nv; v++)
    if (elig[v] && first[v] != UINT32_MAX) order[n++] = v;
  /* By first use (stable: ties keep variable order). */
  for (size_t i = 1; i < n; i++) {
    uint32_t x = order[i];
    size_t j = i;
    while (j > 0 && first[order[j - 1]] > first[x]) {
      order[j] = order[j - 1];
      j--;
    }
    order[j] = x;
  }
  uint32_t ng = 0;
  uint32_t *glast = rill_malloc((nv + 1) * sizeof *glast); /* each group's last member */
  if (!glast) goto out;
  for (size_t i = 0; i < n; i++) {
    uint32_t v = order[i];
    size_t want = est_bytes(&p->vars[v]);
    int32_t best = -1;
    for (uint32_t g = 0; g < ng; g++) {
      if (gend[g] >= first[v]) continue;
      if (best < 0) {
        best = (int32_t)g;
        continue;
      }
      size_t bs = gsize[best], gs = gsize[g];
      bool g_fits = gs >= want, b_fits = bs >= want;
      if (g_fits ? (!b_fits || gs < bs) : (!b_fits && gs > bs)) best = (int32_t)g;
    }
    if (best < 0) {
      best = (int32_t)ng++;
      gsize[best] = 0;
    } else {
      /* The first writer of v waits for every op touching the previous member. */
      uint32_t u = glast[best], to = first[v];
      for (uint32_t k = tstart[u]; k < tstart[u] + tcount[u]; k++) {
        uint32_t f_ = tops[k];
        if (f_ != to && stamp[f_] != to) {
          stamp[f_] = to;
          if (!u32_push(efrom, f_) || !u32_push(eto, to)) {
            rill_free(glast);
            goto out;
          }
        }
      }
    }
    p->group[v] = best;
    glast[best] = v;
    gend[best] = last[v];
    if (want > gsize[best]) gsize[best] = want;
  }
  rill_free(glast);
  p->holders = rill_arena_alloc(&p->mem, ng + 1, sizeof *p->holders);
  if (!p->holders) goto out;
  for (uint32_t g = 0; g < ng; g++) rill_tensor_init(&p->holders[g]);
  p->ngroups = ng;
  ok = true;
out:
  rill_free(first);
  rill_free(last);
  rill_free(order);
  rill_free(tstart);
  rill_free(gend);
  rill_free(gprev);
  rill_free(gsize);
  rill_free(elig);
  rill_free(tops);
  return ok;
}

/* Builds the dependency graph of the parallel schedule (read-after-write,
 * write-after-read, write-after-write; side-effect ops and random ops each in program
 * order), the critical path, the schedule AUTO picks, and the release lists. */
static rill_status *build_graph(rill_plan *p, name_table *names, const rill_program *prog,
                                const rill_block_desc *bd, int32_t nthreads) {
  rill_status *st = NULL;
  size_t nops = p->nops;
  access_builder b = {.p = p, .names = names, .prog = prog};
  u32vec efrom = {0}, eto = {0}, rnode_op = {0}, rnode_next = {0};
  uint32_t *stamp = NULL, *last_writer = NULL, *rhead = NULL;
  size_t nres = 0;
  b.visited = rill_calloc(prog->nblocks ? prog->nblocks : 1, sizeof *b.visited);
  u32vec *subs = rill_calloc(nops ? nops : 1, sizeof *subs); /* sub-block accesses per op */
  if (!b.visited || !subs) goto oom;
  for (size_t i = 0; i < nops; i++) {
    if (!(p->ops[i].schema->flags & RILL_OP_SUBBLOCK)) continue;
    memset(b.visited, 0, prog->nblocks * sizeof *b.visited);
    b.visited[0] = true; /* block 0's own ops are scheduled one by one */
    const rill_op_desc *d = &bd->ops[i];
    for (size_t k = 0; k < d->nattrs; k++) {
      const rill_attr_value *v = &d->attrs[k].value;
      bool ok = true;
      if (v->type == RILL_ATTR_BLOCK) ok = add_block_accesses(&b, v->v.block, &subs[i]);
      if (v->type == RILL_ATTR_BLOCKS)
        for (size_t j = 0; j < v->n && ok; j++) ok = add_block_accesses(&b, v->list.blocks[j], &subs[i]);
      if (!ok) goto oom;
    }
  }
  nres = p->nvars + b.nextra;
  stamp = rill_malloc((nops ? nops : 1) * sizeof *stamp);
  last_writer = rill_malloc((nres ? nres : 1) * sizeof *last_writer);
  rhead = rill_malloc((nres ? nres : 1) * sizeof *rhead);
  if (!stamp || !last_writer || !rhead) goto oom;
  for (size_t i = 0; i < nops; i++) stamp[i] = UINT32_MAX;
  for (size_t r = 0; r < nres; r++) last_writer[r] = rhead[r] = UINT32_MAX;

#define EDGE(from, to)                                                          \
  do {                                                                          \
    uint32_t f_ = (from), t_ = (to);                                            \
    if (f_ != UINT32_MAX && f_ != t_ && stamp[f_] != t_) {                      \
      stamp[f_] = t_;                                                           \
      if (!u32_push(&efrom, f_) || !u32_push(&eto, t_)) goto oom;               \
    }                                                                           \
  } while (0)

  uint32_t last_side = UINT32_MAX, last_random = UINT32_MAX;
  for (uint32_t i = 0; i < nops; i++) {
    const plan_op *op = &p->ops[i];
    if (op->schema->flags & RILL_OP_SIDE_EFFECT) {
      EDGE(last_side, i);
      last_side = i;
    }
    if (op->schema->flags & RILL_OP_RANDOM) {
      EDGE(last_random, i);
      last_random = i;
    }
    /* Reads: after the last writer. */
    for (int pass = 0; pass < 2; pass++) {
      size_t n = pass ? subs[i].n : op->in_end - op->in_begin;
      for (size_t k = 0; k < n; k++) {
        uint32_t r = pass ? subs[i].v[k] : p->in_id[op->in_begin + k];
        if (r < p->nvars && p->vars[r].absent) continue; /* nothing to order on */
        EDGE(last_writer[r], i);
        if (!u32_push(&rnode_op, i) || !u32_push(&rnode_next, rhead[r])) goto oom;
        rhead[r] = (uint32_t)(rnode_op.n - 1);
      }
    }
    /* Writes: after the last writer and every reader since. */
    for (int pass = 0; pass < 2; pass++) {
      size_t n = pass ? subs[i].n : op->out_end - op->out_begin;
      for (size_t k = 0; k < n; k++) {
        uint32_t r = pass ? subs[i].v[k] : p->out_id[op->out_begin + k];
        if (r < p->nvars && p->vars[r].absent) continue;
        EDGE(last_writer[r], i);
        for (uint32_t node = rhead[r]; node != UINT32_MAX; node = rnode_next.v[node]) EDGE(rnode_op.v[node], i);
        rhead[r] = UINT32_MAX;
        last_writer[r] = i;
      }
    }
  }
  if (p->memplan && !plan_memory(p, subs, &efrom, &eto, stamp)) goto oom;
#undef EDGE

  /* Compressed successor lists. */
  rill_sched_graph *g = &p->graph;
  size_t ne = efrom.n;
  uint32_t *npred = rill_arena_alloc(&p->mem, nops + 1, sizeof *npred);
  uint32_t *start = rill_arena_alloc(&p->mem, nops + 1, sizeof *start);
  uint32_t *succ = rill_arena_alloc(&p->mem, ne + 1, sizeof *succ);
  uint8_t *blocking = rill_arena_alloc(&p->mem, nops + 1, sizeof *blocking);
  int32_t *io_index = rill_arena_alloc(&p->mem, nops + 1, sizeof *io_index);
  atomic_uint *pending = rill_arena_alloc(&p->mem, nops + 1, sizeof *pending);
  uint32_t *roots = rill_arena_alloc(&p->mem, nops + 1, sizeof *roots);
  uint32_t *cp = stamp; /* reused: longest chain ending at each op */
  if (!npred || !start || !succ || !blocking || !io_index || !pending || !roots) goto oom;
  for (size_t e = 0; e < ne; e++) {
    start[efrom.v[e] + 1]++;
    npred[eto.v[e]]++;
  }
  for (size_t i = 0; i < nops; i++) start[i + 1] += start[i];
  {
    uint32_t *cursor = rill_malloc((nops ? nops : 1) * sizeof *cursor);
    if (!cursor) goto oom;
    for (size_t i = 0; i < nops; i++) cursor[i] = start[i];
    for (size_t e = 0; e < ne; e++) succ[cursor[efrom.v[e]]++] = eto.v[e];
    rill_free(cursor);
  }
  uint32_t nio = 0, nroots = 0, crit = 0;
  for (size_t i = 0; i < nops; i++) {
    blocking[i] = (p->ops[i].schema->flags & RILL_OP_BLOCKING) != 0;
    io_index[i] = blocking[i] ? (int32_t)nio++ : -1;
    if (!npred[i]) roots[nroots++] = (uint32_t)i;
    cp[i] = 1;
  }
  for (size_t i = 0; i < nops; i++) {
    if (cp[i] > crit) crit = cp[i];
    for (uint32_t k = start[i]; k < start[i + 1]; k++)
      if (cp[succ[k]] < cp[i] + 1) cp[succ[k]] = cp[i] + 1;
  }
  rill_sched_io *io = NULL;
  if (nio && !(io = rill_arena_alloc(&p->mem, nio, rill_sched_io_size()))) goto oom;
  *g = (rill_sched_graph){.nops = (uint32_t)nops, .npred = npred, .succ_start = start, .succ = succ,
                          .blocking = blocking, .roots = roots, .nroots = nroots,
                          .pending = pending, .io = io, .io_index = io_index, .nio = nio};
  p->crit_path = crit;
  p->auto_schedule = nio || (nthreads > 1 && nops >= 16 && 2 * (size_t)crit <= nops)
                         ? RILL_SCHEDULE_PARALLEL
                         : RILL_SCHEDULE_SEQUENTIAL;

  /* Release after last use: temporaries only (never persistable, fed, feed-op outputs,
   * lists, or variables fetched by name). */
  bool *keep = rill_calloc(p->nvars + 1, sizeof *keep);
  if (!keep) goto oom;
  for (size_t f = 0; f < p->nfetch; f++) keep[p->fetches[f].var] = true;
  for (size_t v = 0; v < p->nvars; v++)
    if (p->vars[v].kind != VAR_LOCAL || p->vars[v].feed_out || p->vars[v].absent) keep[v] = true;
  p->rel_init = rill_arena_alloc(&p->mem, p->nvars + 1, sizeof *p->rel_init);
  p->rel_count = rill_arena_alloc(&p->mem, p->nvars + 1, sizeof *p->rel_count);
  p->touch_start = rill_arena_alloc(&p->mem, nops + 1, sizeof *p->touch_start);
  u32vec touch = {0};
  bool ok = p->rel_init && p->rel_count && p->touch_start;
  uint32_t *vstamp = last_writer; /* reused: per resource, last op that touched it */
  for (size_t r = 0; r < nres; r++) vstamp[r] = UINT32_MAX;
  for (uint32_t i = 0; i < nops && ok; i++) {
    const plan_op *op = &p->ops[i];
    p->touch_start[i] = (uint32_t)touch.n;
    for (int pass = 0; pass < 3 && ok; pass++) {
      size_t n = pass == 0 ? op->in_end - op->in_begin : pass == 1 ? op->out_end - op->out_begin : subs[i].n;
      for (size_t k = 0; k < n && ok; k++) {
        uint32_t r = pass == 0 ? p->in_id[op->in_begin + k]
                     : pass == 1 ? p->out_id[op->out_begin + k]
                                 : subs[i].v[k];
        if (r >= p->nvars || keep[r] || vstamp[r] == i) continue;
        vstamp[r] = i;
        p->rel_init[r]++;
        ok = u32_push(&touch, r);
      }
    }
  }
  rill_free(keep);
  if (ok) {
    p->touch_start[nops] = (uint32_t)touch.n;
    p->touch = rill_arena_alloc(&p->mem, touch.n + 1, sizeof *p->touch);
    ok = p->touch != NULL;
    if (ok && touch.n) memcpy(p->touch, touch.v, touch.n * sizeof *touch.v);
  }
  rill_free(touch.v);
  if (!ok) goto oom;
  goto done;
oom:
  st = rill_oom();
done:
  if (subs)
    for (size_t i = 0; i < nops; i++) rill_free(subs[i].v);
  rill_free(subs);
  rill_free(efrom.v);
  rill_free(eto.v);
  rill_free(rnode_op.v);
  rill_free(rnode_next.v);
  rill_free(stamp);
  rill_free(last_writer);
  rill_free(rhead);
  rill_free(b.visited);
  rill_free((void *)b.extra_str);
  return st;
}

/* ------------------------------------------------------------------ cache ------ */

static bool names_equal(char *const *a, size_t na, const char *const *b, size_t nb) {
  if (na != nb) return false;
  for (size_t i = 0; i < na; i++)
    if (strcmp(a[i], b[i]) != 0) return false;
  return true;
}

rill_status *rill_exec_prepare(rill_executor *exe, const rill_program *program,
                               const char *const *feed_names, size_t nfeeds,
                               const char *const *fetch_names, size_t nfetch, rill_plan **out) {
  for (size_t i = 0; i < exe->nplans; i++) {
    rill_plan *p = exe->plans[i];
    if (p->program_id == program->id && p->revision == program->revision &&
        p->memplan == exe->memory_plan &&
        names_equal(p->feed_names, p->nfeeds, feed_names, nfeeds) &&
        names_equal(p->fetch_names, p->nfetch, fetch_names, nfetch)) {
      memmove(exe->plans + 1, exe->plans, i * sizeof *exe->plans);
      exe->plans[0] = p;
      exe->plan_hits++;
      *out = p;
      return NULL;
    }
  }
  rill_plan *p = NULL;
  RILL_TRY(build_plan(exe, program, feed_names, nfeeds, fetch_names, nfetch, &p));
  exe->plan_builds++;
  if (exe->nplans == exe->plan_cap) {
    plan_destroy(exe->plans[exe->nplans - 1]);
    exe->nplans--;
  }
  memmove(exe->plans + 1, exe->plans, exe->nplans * sizeof *exe->plans);
  exe->plans[0] = p;
  exe->nplans++;
  *out = p;
  return NULL;
}

void rill_exec_set_plan_cache_size(rill_executor *exe, size_t n) {
  if (n < 1) n = 1;
  if (n > exe->plan_cap) {
    void *items = exe->plans;
    size_t cap = exe->plan_cap;
    if (!rill_grow(&items, &cap, n, sizeof *exe->plans)) return; /* keep the old bound */
    exe->plans = items;
  }
  while (exe->nplans > n) plan_destroy(exe->plans[--exe->nplans]);
  exe->plan_cap = n;
}

rill_status *rill_exec_create(const rill_executor_options *options, rill_executor **out) {
  rill_executor_options opts = {{RILL_DEVICE_CPU, 0}, 0};
  if (options) opts = *options;
  if (opts.place.device != RILL_DEVICE_CPU)
    return rill_error(RILL_UNIMPLEMENTED, "executor: device %d is not available (CPU only)",
                      (int)opts.place.device);
  if (opts.num_threads < 0)
    return rill_error(RILL_INVALID_ARGUMENT, "executor: num_threads must be >= 0, not %d",
                      (int)opts.num_threads);
  rill_executor *e = rill_calloc(1, sizeof *e);
  if (!e) return rill_oom();
  e->plans = rill_calloc(RILL_EXEC_DEFAULT_PLAN_CACHE, sizeof *e->plans);
  if (!e->plans) {
    rill_free(e);
    return rill_oom();
  }
  e->plan_cap = RILL_EXEC_DEFAULT_PLAN_CACHE;
  e->options = opts;
  atomic_init(&e->busy, false);
  atomic_init(&e->busy_program, 0);
  int32_t threads = opts.num_threads;
  if (threads == 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    threads = n > 0 && n < 4096 ? (int32_t)n : 1;
  }
  rill_device_ctx_init(&e->device, opts.place, threads, RILL_DEVICE_DEFAULT_SEED);
  rill_status *st = rill_sched_create(e->device.num_threads, &e->sched);
  if (!st && (st = rill_bg_create(&e->device.bg))) rill_sched_destroy(e->sched);
  if (st) {
    rill_free(e->plans);
    rill_free(e);
    return st;
  }
  *out = e;
  return NULL;
}

void rill_exec_destroy(rill_executor *exe) {
  if (!exe) return;
  /* Work that outlives a run (checkpoint writes) finishes first. */
  rill_bg_destroy(exe->device.bg);
  rill_sched_destroy(exe->sched);
  for (size_t i = 0; i < exe->nplans; i++) plan_destroy(exe->plans[i]);
  rill_free(exe->plans);
  rill_free(exe);
}

void rill_device_ctx_init(struct rill_device_ctx *d, rill_place place, int32_t num_threads,
                          uint64_t seed) {
  d->place = place;
  d->num_threads = num_threads > 0 ? num_threads : 1;
  d->seed = seed;
  rill_rng_seed(&d->rng, seed);
  d->bg = NULL;
  d->program = NULL;
}

/* ------------------------------------------------------------------ run -------- */

static rill_status *check_fed(const plan_var *v, const rill_tensor *t) {
  if (!t->buf && rill_dims_known(&t->dims) && rill_dims_prod(&t->dims, 0, t->dims.n) != 0)
    return rill_error(RILL_INVALID_ARGUMENT, "feed '%s': the tensor has no data", v->name);
  if (!v->desc_tensor) return NULL;
  char want[RILL_DIMS_STR_MAX], got[RILL_DIMS_STR_MAX];
  if (t->dtype != v->dtype)
    return rill_error(RILL_INVALID_ARGUMENT, "feed '%s': dtype %s, but the variable is %s", v->name,
                      rill_dtype_name(t->dtype), rill_dtype_name(v->dtype));
  bool ok = t->dims.n == v->dims.n;
  for (int32_t i = 0; ok && i < t->dims.n; i++) ok = v->dims.d[i] < 0 || v->dims.d[i] == t->dims.d[i];
  if (!ok)
    return rill_error(RILL_INVALID_ARGUMENT, "feed '%s': shape %s does not match the variable's %s",
                      v->name, rill_dims_str(&t->dims, got, sizeof got),
                      rill_dims_str(&v->dims, want, sizeof want));
  return NULL;
}

static rill_status *bind_caller_vars(rill_plan *p, rill_scope *scope) {
  bool changed = false;
  for (size_t i = 0; i < p->ncaller; i++) {
    plan_var *v = &p->vars[p->caller_vars[i]];
    rill_variable *var = rill_scope_find(scope, v->name);
    if (!var) {
      if (v->kind == VAR_PERSIST)
        RILL_TRY(rill_status_wrap(rill_scope_var(scope, v->name, &var), "persistable variable '%s'",
                                  v->name));
      else
        var = v->local;
    }
    if (var != v->var) {
      v->var = var;
      changed = true;
    }
  }
  if (!changed) return NULL;
  for (size_t k = 0; k < p->nin; k++) p->in_var[k] = p->vars[p->in_id[k]].var;
  for (size_t k = 0; k < p->nout; k++) p->out_var[k] = p->vars[p->out_id[k]].var;
  return NULL;
}

static bool var_has_value(const rill_variable *v) {
  switch (v->kind) {
    case RILL_VARKIND_EMPTY: return false;
    case RILL_VARKIND_TENSOR: return v->u.tensor.buf != NULL;
    default: return true;
  }
}

static rill_status *bind_feeds(rill_plan *p, rill_tensor *const *feeds) {
  for (size_t f = 0; f < p->nfeeds; f++) {
    plan_feed *pf = &p->feeds[f];
    if (!feeds[f])
      return rill_error(RILL_INVALID_ARGUMENT, "feed '%s' is NULL", p->feed_names[f]);
    RILL_TRY(check_fed(&p->vars[pf->desc], feeds[f]));
    rill_variable *var = p->vars[pf->var].var;
    rill_tensor *dst;
    if (pf->col < 0) {
      dst = rill_variable_tensor(var);
      if (!dst)
        return rill_error(RILL_INVALID_ARGUMENT, "feed '%s': the variable holds a %s", p->feed_names[f],
                          rill_var_kind_name(var->kind));
    } else {
      rill_tensor_array *arr = rill_variable_array(var);
      if (!arr)
        return rill_error(RILL_INVALID_ARGUMENT, "feed list '%s' holds a %s", p->vars[pf->var].name,
                          rill_var_kind_name(var->kind));
      RILL_TRY(rill_tensor_array_resize(arr, (size_t)pf->col + 1));
      dst = &arr->items[pf->col];
    }
    RILL_TRY(rill_status_wrap(rill_tensor_share(dst, feeds[f]), "feed '%s'", p->feed_names[f]));
  }
  return NULL;
}

/* Gives an in-place output its own copy of the data before it is resized. */
static rill_status *privatize(rill_tensor *t) {
  if (!t->buf || (atomic_load_explicit(&t->buf->refs, memory_order_acquire) == 1 && t->buf->owned))
    return NULL;
  rill_tensor tmp;
  rill_tensor_init(&tmp);
  RILL_TRY(rill_tensor_copy(&tmp, t));
  rill_tensor_swap(&tmp, t);
  rill_tensor_clear(&tmp);
  return NULL;
}

/* Allocation of a temporary in a memory-plan group: takes the group's buffer when the
 * tensor has none, and keeps any private buffer that is large enough (a shared buffer
 * is sized for the largest member, so the "not more than twice too large" rule of
 * rill_tensor_alloc does not apply). */
static rill_status *alloc_shared(rill_tensor *t, rill_tensor *holder, rill_dtype dtype,
                                 const rill_dims *dims) {
  if (!t->buf && holder->buf) {
    t->buf = holder->buf;
    t->offset = 0;
    holder->buf = NULL;
  }
  rill_buffer *b = t->buf;
  int64_t numel;
  size_t bytes, esize = rill_dtype_size(dtype);
  if (b && esize && b->owned && t->offset == 0 &&
      atomic_load_explicit(&b->refs, memory_order_acquire) == 1 &&
      rill_dims_numel(dims, INT64_MAX, &numel) && rill_mul_size((size_t)numel, esize, &bytes) &&
      b->size >= bytes) {
    t->dtype = dtype;
    t->dims = *dims;
    return NULL;
  }
  return rill_tensor_alloc(t, dtype, dims);
}

static rill_status *run_op(rill_plan *p, plan_op *op, struct rill_device_ctx *dev) {
  rill_status *st;
  if (op->schema->infer) {
    for (uint32_t k = op->in_begin; k < op->in_end; k++) {
      rill_variable *v = p->in_var[k];
      rill_tensor_meta *m = &p->in_meta[k];
      if (v && v->kind == RILL_VARKIND_TENSOR) {
        const rill_tensor *t = &v->u.tensor;
        p->in_tensor[k] = t;
        m->known = t->buf != NULL;
        m->dtype = t->dtype;
        m->dims = t->dims;
        m->lod_level = (int32_t)t->lod.nlevels;
      } else {
        p->in_tensor[k] = NULL;
        m->known = false;
      }
    }
    for (uint32_t k = op->out_begin; k < op->out_end; k++) {
      rill_tensor_meta *m = &p->out_meta[k];
      m->known = false;
      m->lod_level = 0;
      m->lod_from[0] = m->lod_from[1] = -1;
    }
    if ((st = op->schema->infer(&op->ictx))) return st;
  }
  if (op->dtype_arg >= 0) {
    rill_variable *v = p->in_var[op->dtype_arg];
    if (v && v->kind == RILL_VARKIND_TENSOR && v->u.tensor.buf && v->u.tensor.dtype != op->kernel_dtype) {
      rill_kernel_fn fn = rill_kernel_find(op->type, dev->place.device, v->u.tensor.dtype);
      if (!fn)
        return rill_error(RILL_UNIMPLEMENTED, "no CPU kernel for dtype %s",
                          rill_dtype_name(v->u.tensor.dtype));
      op->kernel = fn;
      op->kernel_dtype = v->u.tensor.dtype;
    }
  }
  if (!op->kernel_shapes && op->schema->infer) {
    for (uint32_t k = op->out_begin; k < op->out_end; k++) {
      const rill_tensor_meta *m = &p->out_meta[k];
      if (!m->known || !p->out_var[k]) continue;
      rill_tensor *t = rill_variable_tensor(p->out_var[k]);
      if (!t) continue;
      if (p->out_alias[k] && (st = privatize(t))) return st;
      int32_t g = p->memplan ? p->group[p->out_id[k]] : -1;
      if ((st = g >= 0 ? alloc_shared(t, &p->holders[g], m->dtype, &m->dims)
                       : rill_tensor_alloc(t, m->dtype, &m->dims)))
        return rill_status_wrap(st, "output '%s'", p->vars[p->out_id[k]].name);
      if (m->lod_from[0] >= 0) {
        size_t slot = (size_t)m->lod_from[0], idx = (size_t)m->lod_from[1];
        const rill_tensor *src = slot < op->schema->ninputs && idx < op->ictx.nin[slot]
                                     ? op->ictx.in_tensors[slot][idx]
                                     : NULL;
        if (src && src != t) {
          if (src->lod.nlevels) {
            if ((st = rill_lod_copy(&t->lod, &src->lod))) return st;
          } else if (t->lod.nlevels) {
            rill_lod_clear(&t->lod);
          }
        }
      } else if (t->lod.nlevels && !p->out_alias[k]) {
        rill_lod_clear(&t->lod);
      }
    }
  }
  return op->kernel(&op->kctx);
}

static void run_cleanup(rill_plan *p) {
  for (size_t i = 0; i < p->ncleanup; i++) {
    plan_var *v = &p->vars[p->cleanup[i]];
    rill_variable *var = v->local;
    if (!var) continue;
    if (var->kind == RILL_VARKIND_TENSOR_ARRAY) {
      /* Keep the list's storage for the next run; drop what it references. */
      for (size_t k = 0; k < var->u.array.n; k++) rill_tensor_clear(&var->u.array.items[k]);
    } else if (var->kind == RILL_VARKIND_TENSOR) {
      rill_tensor_clear(&var->u.tensor);
    } else {
      rill_variable_clear(var);
    }
  }
  p->local->parent = NULL;
}

static rill_status *fetch_outputs(rill_plan *p, rill_tensor **outputs) {
  for (size_t f = 0; f < p->nfetch; f++) {
    plan_fetch *pf = &p->fetches[f];
    rill_variable *var = p->vars[pf->var].var;
    const rill_tensor *src = NULL;
    if (pf->col >= 0) {
      if (var->kind == RILL_VARKIND_TENSOR_ARRAY && (size_t)pf->col < var->u.array.n)
        src = &var->u.array.items[pf->col];
    } else if (var->kind == RILL_VARKIND_TENSOR) {
      src = &var->u.tensor;
    }
    rill_status *st = NULL;
    if (!src || !src->buf)
      st = rill_error(RILL_FAILED_PRECONDITION, "fetch '%s' has no value after the run", pf->name);
    rill_tensor *t = NULL;
    if (!st && !(t = rill_malloc(sizeof *t))) st = rill_oom();
    if (!st) {
      rill_tensor_init(t);
      if ((st = rill_tensor_share(t, src))) rill_free(t);
    }
    if (st) {
      for (size_t g = 0; g < f; g++) {
        rill_tensor_clear(outputs[g]);
        rill_free(outputs[g]);
      }
      return st;
    }
    outputs[f] = t;
  }
  return NULL;
}

/* Releases the temporaries whose last user was op i (per-run countdowns, so the order
 * in which the parallel schedule finishes the users does not matter). */
static void release_after(rill_plan *p, uint32_t i, bool release) {
  for (uint32_t k = p->touch_start[i]; k < p->touch_start[i + 1]; k++) {
    uint32_t v = p->touch[k];
    if (atomic_fetch_sub_explicit(&p->rel_count[v], 1, memory_order_acq_rel) != 1) continue;
    rill_variable *var = p->vars[v].var;
    if (p->memplan && p->group[v] >= 0 && var->kind == RILL_VARKIND_TENSOR) {
      /* Hand the buffer to the group, unless someone else (a fetched output, a view)
       * still holds it. */
      rill_tensor *t = &var->u.tensor, *h = &p->holders[p->group[v]];
      rill_buffer *b = t->buf;
      if (b && b->owned && t->offset == 0 &&
          atomic_load_explicit(&b->refs, memory_order_acquire) == 1 &&
          (!h->buf || h->buf->size < b->size)) {
        rill_buffer_release(h->buf);
        h->buf = b;
        t->buf = NULL;
      }
      rill_tensor_clear(t);
      continue;
    }
    if (!release) continue;
    if (var->kind == RILL_VARKIND_TENSOR)
      rill_tensor_clear(&var->u.tensor);
    else
      rill_variable_clear(var);
  }
}

typedef struct run_ctx {
  rill_executor *exe;
  rill_plan *p;
} run_ctx;

static rill_status *par_run(void *ctx, uint32_t i) {
  run_ctx *c = ctx;
  plan_op *op = &c->p->ops[i];
  rill_status *st = run_op(c->p, op, &c->exe->device);
  return st ? rill_status_wrap(st, OP_CONTEXT_FMT, (int)op->index, op->type) : NULL;
}

static void par_done(void *ctx, uint32_t i) {
  run_ctx *c = ctx;
  if (c->exe->release_temporaries || c->p->memplan)
    release_after(c->p, i, c->exe->release_temporaries);
}

static rill_status *par_wrap(void *ctx, uint32_t i, rill_status *st) {
  run_ctx *c = ctx;
  return rill_status_wrap(st, "before " OP_CONTEXT_FMT, (int)i, c->p->ops[i].type);
}

static const rill_sched_fns par_fns = {par_run, par_done, par_wrap};

static rill_status *run_sequential(rill_executor *exe, rill_plan *p, int64_t deadline) {
  bool release = exe->release_temporaries, handover = release || p->memplan;
  for (size_t i = 0; i < p->nops; i++) {
    plan_op *op = &p->ops[i];
    rill_status *st = NULL;
    if (rill_sched_cancelled(exe->sched))
      st = rill_error(RILL_CANCELLED, "the run was cancelled");
    else if (deadline && rill_sched_now_ns() >= deadline)
      st = rill_error(RILL_DEADLINE_EXCEEDED, "the run passed its deadline");
    if (st) return rill_status_wrap(st, "before " OP_CONTEXT_FMT, (int)op->index, op->type);
    if ((st = run_op(p, op, &exe->device)))
      return rill_status_wrap(st, OP_CONTEXT_FMT, (int)op->index, op->type);
    if (handover) release_after(p, (uint32_t)i, release);
  }
  return NULL;
}

rill_status *rill_exec_run_plan(rill_executor *exe, rill_plan *p, rill_scope *scope,
                                rill_tensor *const *feeds, rill_tensor **outputs) {
  rill_status *st = NULL;
  rill_tensor *tmp_small[8];
  rill_tensor **tmp = tmp_small;
  int64_t deadline = exe->timeout_us > 0 ? rill_sched_now_ns() + exe->timeout_us * 1000 : 0;
  if (p->nfetch > 8 && !(tmp = rill_calloc(p->nfetch, sizeof *tmp))) return rill_oom();
  rill_sched_begin(exe->sched);
  p->local->parent = scope;
  if ((st = bind_caller_vars(p, scope))) goto done;
  if ((st = bind_feeds(p, feeds))) goto done;
  for (size_t i = 0; i < p->nrequired; i++) {
    plan_var *v = &p->vars[p->required[i]];
    if (!var_has_value(v->var)) {
      const plan_op *op = &p->ops[v->required_by];
      st = rill_error(RILL_FAILED_PRECONDITION,
                      "block 0, op #%d '%s': input %s variable '%s' has no value (%s)", (int)op->index,
                      op->type, v->required_slot, v->name,
                      v->kind == VAR_PERSIST ? "the persistable variable is not initialized in the scope"
                                             : "not fed and not set in the scope");
      goto done;
    }
  }
  if (exe->release_temporaries || p->memplan)
    for (size_t v = 0; v < p->nvars; v++)
      atomic_store_explicit(&p->rel_count[v], p->rel_init[v], memory_order_relaxed);
  rill_schedule sched = exe->schedule == RILL_SCHEDULE_AUTO ? p->auto_schedule : exe->schedule;
  if (sched == RILL_SCHEDULE_PARALLEL) {
    exe->parallel_runs++;
    run_ctx c = {exe, p};
    st = rill_sched_run(exe->sched, &p->graph, &par_fns, &c, deadline);
  } else {
    exe->sequential_runs++;
    st = run_sequential(exe, p, deadline);
  }
  if (st) goto done;
  if ((st = fetch_outputs(p, tmp))) goto done;
  if (p->nfetch) memcpy(outputs, tmp, p->nfetch * sizeof *outputs);
done:
  run_cleanup(p);
  rill_sched_end(exe->sched);
  rill_bg_release(exe->device.bg); /* background work queued by this run may start */
  if (tmp != tmp_small) rill_free(tmp);
  return st;
}

rill_status *rill_exec_enter(rill_executor *exe, const rill_program *program, const char *what) {
  bool idle = false;
  if (atomic_compare_exchange_strong_explicit(&exe->busy, &idle, true, memory_order_acquire,
                                              memory_order_relaxed)) {
    atomic_store_explicit(&exe->busy_program, program ? program->id : 0, memory_order_relaxed);
    return NULL;
  }
  uint64_t running = atomic_load_explicit(&exe->busy_program, memory_order_relaxed);
  char doing[48] = "another call";
  if (running) snprintf(doing, sizeof doing, "program #%" PRIu64, running);
  char target[48] = "";
  if (program) snprintf(target, sizeof target, " program #%" PRIu64, program->id);
  return rill_error(RILL_FAILED_PRECONDITION,
                    "%s%s: executor %p is in use by another thread (running %s); an executor "
                    "runs one program at a time: give each thread its own executor "
                    "(rill_executor_create) or wait for the run to return",
                    what, target, (void *)exe, doing);
}

void rill_exec_leave(rill_executor *exe) {
  atomic_store_explicit(&exe->busy_program, 0, memory_order_relaxed);
  atomic_store_explicit(&exe->busy, false, memory_order_release);
}

rill_status *rill_exec_run(rill_executor *exe, const rill_program *program, rill_scope *scope,
                           const char *const *feed_names, rill_tensor *const *feeds,
                           size_t nfeeds, const char *const *fetch_names, size_t nfetch,
                           rill_tensor **outputs) {
  RILL_TRY(rill_exec_enter(exe, program, "rill_executor_run"));
  rill_plan *p;
  rill_status *st = rill_exec_prepare(exe, program, feed_names, nfeeds, fetch_names, nfetch, &p);
  if (!st) {
    exe->device.program = program;
    st = rill_exec_run_plan(exe, p, scope, feeds, outputs);
    exe->device.program = NULL;
  }
  rill_exec_leave(exe);
  return st;
}
