/* The plan: prepare turns a block of a program (block 0, or a sub-block that an op
 * runs), its feed names and its fetch names into flat tables. Every op gets its schema,
 * resolved attributes, kernel and the variable pointers of its arguments, laid out slot
 * by slot (layout_op); feeds and fetches are matched to feed/fetch ops or to variables
 * (bind_feeds_fetches); compile-time shape inference runs over the VarDescs; variables
 * are classified by where they live (executor.h; a sub-block's: executor.md). rill_plan_build then hands over to the dependency graph (graph.c),
 * which also runs the memory plan (memplan.c). */
#include "framework/exec/plan.h"

#include <stdio.h>
#include <string.h>

#include "framework/exec/graph.h"

size_t rill_plan_num_ops(const rill_plan *plan) { return plan->nops; }

void rill_plan_destroy(rill_plan *p) {
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

long rill_plan_var_id(name_table *t, const char *name) {
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
  const rill_var_desc *d = rill_block_find_var(prog, p->block, name);
  if (p->block != 0) {
    /* A sub-block's own variables live in the run's scope; the others are its
     * ancestors' (or undeclared) and are found through the scope chain. */
    v->kind = d ? VAR_STEP : VAR_OUTER;
    if (!d) d = rill_program_find_var(prog, p->block, name);
    if (d) {
      v->has_desc = true;
      v->outer_persist = v->kind == VAR_OUTER && d->persistable;
      v->desc_tensor = d->has_tensor && d->type == RILL_VAR_LOD_TENSOR;
      v->desc_array = d->type == RILL_VAR_LOD_TENSOR_ARRAY;
      v->desc_scopes = d->type == RILL_VAR_STEP_SCOPES;
      v->dtype = d->dtype;
      v->dims = d->dims;
    }
  } else if (d) {
    v->has_desc = true;
    v->desc_tensor = d->has_tensor && d->type == RILL_VAR_LOD_TENSOR;
    v->need_check_feed = d->need_check_feed;
    v->desc_array = d->type == RILL_VAR_LOD_TENSOR_ARRAY;
    v->desc_scopes = d->type == RILL_VAR_STEP_SCOPES;
    v->dtype = d->dtype;
    v->dims = d->dims;
    if (d->type == RILL_VAR_FEED_MINIBATCH || d->type == RILL_VAR_FETCH_LIST)
      v->kind = VAR_LIST;
    else if (d->persistable)
      v->kind = VAR_PERSIST;
  }
  return (long)p->nvars++;
}

/* Variables bound to the caller's (or, for a sub-block, the run's) scope at every run. */
static bool binds_per_run(const plan_var *v) {
  return v->kind == VAR_PERSIST || v->kind == VAR_EXTERNAL || v->kind == VAR_STEP ||
         v->kind == VAR_OUTER;
}

static void meta_from_var(rill_tensor_meta *m, const plan_var *v) {
  memset(m, 0, sizeof *m);
  m->lod_from[0] = m->lod_from[1] = -1;
  if (!v->desc_tensor) return;
  m->known = true;
  m->dtype = v->dtype;
  m->dims = v->dims;
}

/* Reports every op type without a schema in one message. */
static rill_status *check_schemas(const rill_block_desc *b, int32_t block) {
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
  rill_status *st =
      rill_error(RILL_UNIMPLEMENTED,
                 "block %d: %zu op%s of unsupported type%s: %s (load an op library "
                 "that registers them: 'rill run --plugin LIB' or "
                 "rill_load_op_library(), see examples/plugin/README.md; or add "
                 "them to operators/ and kernels/cpu/)",
                 (int)block, missing, missing == 1 ? "" : "s", missing == 1 ? "" : "s", list);
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

  /* A schema that marks the slots its inference reads the elements of names them; one
   * that marks none may read any. */
  bool marks = false;
  for (size_t si = 0; si < s->ninputs; si++) marks = marks || (s->inputs[si].flags & RILL_SLOT_INFER_DATA);
  op->infer_reads = s->flags & RILL_OP_INFER_READS_DATA ? (marks ? INFER_METAS : INFER_VALUES)
                    : s->flags & RILL_OP_INFER_READS_LOD ? INFER_LOD
                                                         : INFER_METAS;
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
      unsigned f = s->inputs[si].flags;
      p->in_stage[*in_at] = f & (RILL_SLOT_ANY_PLACE | RILL_SLOT_DECL_ONLY) ? STAGE_NONE
                            : f & RILL_SLOT_HOST_DATA                      ? STAGE_ON_HOST
                                                                           : STAGE_AT_OP;
      p->in_infer[*in_at] = !marks || (f & RILL_SLOT_INFER_DATA);
      /* A marked input given: the inference reads its elements. */
      if (marks && (f & RILL_SLOT_INFER_DATA) && (s->flags & RILL_OP_INFER_READS_DATA))
        op->infer_reads = INFER_VALUES;
      if (v->first_read == INT32_MAX) v->first_read = op->index;
      if (v->first_write > op->index && v->required_by < 0 &&
          !(s->inputs[si].flags & (RILL_SLOT_DISPENSABLE | RILL_SLOT_DECL_ONLY))) {
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
        return rill_error(RILL_INVALID_ARGUMENT, "block %d, op #%zu '%s': feed op without X or Out",
                          (int)p->block, i, op->type);
      int32_t col = col_attr(op);
      if (col < 0)
        return rill_error(RILL_INVALID_ARGUMENT, "block %d, op #%zu '%s': bad col %d",
                          (int)p->block, i, op->type, (int)col);
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
      long id = rill_plan_var_id(names, p->feed_names[f]);
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
          return rill_error(RILL_INVALID_ARGUMENT, "block %d, op #%zu '%s': bad col %d",
                            (int)p->block, i, op->type, (int)col);
        p->fetches[f] = (plan_fetch){.var = p->out_id[op->out_begin], .col = col, .name = name};
        p->vars[p->out_id[op->out_begin]].kind = VAR_LIST;
        done = true;
      }
    if (done) continue;
    long id = rill_plan_var_id(names, name);
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

static bool same_place(rill_place a, rill_place b) { return a.device == b.device && a.id == b.id; }

/* Whether input k of op counts where it is read, and the place it is read on: a slot
 * that reads elements reads them where the op runs (or on the host, for HOST_DATA); a
 * sub-block op's pass-through input (RILL_SLOT_ANY_PLACE) is read by its block's ops,
 * which run where the program's ops run by default, the executor's place; any other
 * ANY_PLACE input reads no elements, and any place serves it. */
static bool read_place(const rill_plan *p, const plan_op *op, uint32_t k, rill_place runs_at, rill_place *at) {
  if (p->in_stage[k] == STAGE_NONE) {
    *at = runs_at;
    return (op->schema->flags & RILL_OP_SUBBLOCK) != 0;
  }
  *at = p->in_stage[k] == STAGE_ON_HOST ? (rill_place){RILL_HOST_DEVICE, 0} : op->place;
  return true;
}

/* Sets plan_var.has_home and .home (plan.h) for a temporary or fed variable, not
 * fetched, whose readers all run on one place, and marks where it moves there: after a
 * writer (out_move) or at the feed (move_fed) whose value some op reads before the next
 * write, found in one pass from the last op back. A persistable that no op writes and
 * whose readers all run on one device gets .move_persist: it moves there at the run's
 * start (a program on the host alone checks nothing). */
static rill_status *choose_homes(rill_plan *p, rill_place runs_at) {
  enum { NO_READER, ONE_PLACE, MIXED };
  uint8_t *state = rill_calloc(p->nvars ? p->nvars : 1, 2);
  p->out_move = rill_arena_alloc(&p->mem, p->nout ? p->nout : 1, sizeof *p->out_move);
  if (!state || !p->out_move) {
    rill_free(state);
    return rill_oom();
  }
  uint8_t *read_next = state + p->nvars; /* a read of v follows, before v's next write */
  for (size_t i = 0; i < p->nops; i++) {
    const plan_op *op = &p->ops[i];
    for (uint32_t k = op->in_begin; k < op->in_end; k++) {
      rill_place at;
      if (!read_place(p, op, k, runs_at, &at)) continue;
      uint32_t v = p->in_id[k];
      plan_var *pv = &p->vars[v];
      if (state[v] == NO_READER) {
        state[v] = ONE_PLACE;
        pv->home = at;
      } else if (state[v] == ONE_PLACE && !same_place(pv->home, at)) {
        state[v] = MIXED;
      }
    }
  }
  for (size_t f = 0; f < p->nfetch; f++) state[p->fetches[f].var] = MIXED;
  p->persist_homes = rill_arena_alloc(&p->mem, p->nvars ? p->nvars : 1, sizeof *p->persist_homes);
  if (!p->persist_homes) {
    rill_free(state);
    return rill_oom();
  }
  for (size_t v = 0; v < p->nvars; v++) {
    plan_var *pv = &p->vars[v];
    pv->has_home = state[v] == ONE_PLACE && !pv->absent && !pv->desc_scopes &&
                   (pv->kind == VAR_LOCAL || pv->kind == VAR_FED);
    pv->move_persist = state[v] == ONE_PLACE && !pv->absent && pv->kind == VAR_PERSIST &&
                       pv->first_write == INT32_MAX && pv->home.device != RILL_HOST_DEVICE;
    if (pv->move_persist) p->persist_homes[p->npersist_homes++] = (uint32_t)v;
    if (pv->has_home || pv->move_persist)
      pv->home_mem = rill_backend_tensor_memory(rill_backend_find(pv->home.device));
  }
  for (size_t i = p->nops; i-- > 0;) {
    const plan_op *op = &p->ops[i];
    for (uint32_t k = op->out_begin; k < op->out_end; k++) {
      uint32_t v = p->out_id[k];
      /* A writer on the home place leaves its output there already. */
      p->out_move[k] = p->vars[v].has_home && read_next[v] && !same_place(op->place, p->vars[v].home);
    }
    for (uint32_t k = op->out_begin; k < op->out_end; k++) read_next[p->out_id[k]] = 0;
    rill_place at;
    for (uint32_t k = op->in_begin; k < op->in_end; k++)
      if (read_place(p, op, k, runs_at, &at)) read_next[p->in_id[k]] = 1;
  }
  /* Feeds arrive on the host. */
  for (size_t v = 0; v < p->nvars; v++)
    p->vars[v].move_fed = p->vars[v].has_home && read_next[v] && p->vars[v].home.device != RILL_HOST_DEVICE;
  rill_free(state);
  return NULL;
}

/* An op with a RILL_ATTR_ON_HOST attribute set (Paddle's force_cpu), from its
 * description: a boolean true, or a nonzero integer as some writers store booleans. */
static bool set_on_host(const rill_op_schema *s, const rill_op_desc *d) {
  for (size_t i = 0; s && i < s->nattrs; i++) {
    if (!(s->attrs[i].flags & RILL_ATTR_ON_HOST)) continue;
    const rill_attr *a = rill_op_attr(d, s->attrs[i].name);
    if (!a) continue;
    const rill_attr_value *v = &a->value;
    if ((v->type == RILL_ATTR_BOOLEAN && v->v.b) || (v->type == RILL_ATTR_INT && v->v.i) ||
        (v->type == RILL_ATTR_LONG && v->v.l))
      return true;
  }
  return false;
}

/* Whether variable `name` is kept on the host: an op set on the host writes it, in any
 * block of the program, and every other writer is an op that runs where its input is
 * kept (RILL_OP_PLACE_OF_INPUT: the counter's increment) or a sub-block op (while,
 * which lists what its block's ops write, scanned here as every block is). */
static bool kept_on_host(const rill_program *prog, const char *name) {
  size_t set = 0;
  for (size_t b = 0; b < prog->nblocks; b++) {
    const rill_block_desc *blk = &prog->blocks[b];
    for (size_t i = 0; i < blk->nops; i++) {
      const rill_op_desc *e = &blk->ops[i];
      bool writes = false;
      for (size_t o = 0; o < e->noutputs && !writes; o++)
        for (size_t k = 0; k < e->outputs[o].nargs && !writes; k++)
          writes = strcmp(e->outputs[o].args[k], name) == 0;
      if (!writes) continue;
      const rill_op_schema *s = rill_schema_find(e->type);
      if (set_on_host(s, e))
        set++;
      else if (!s || !(s->flags & (RILL_OP_PLACE_OF_INPUT | RILL_OP_SUBBLOCK)))
        return false;
    }
  }
  return set > 0;
}

/* Where an op runs: on the host when a RILL_ATTR_ON_HOST attribute says so, or when it
 * runs where its first input is kept and that is the host; else the place its
 * `op_device` attribute names (Paddle's per-op placement: "cpu", "gpu:0", or a
 * backend's name) when that place has a registered backend; else the executor's.
 * Paddle runs an op marked "gpu" on the CPU when it was built without CUDA, so models
 * saved with op_device set still run on a CPU-only build; a malformed op_device is an
 * error. */
static rill_status *op_place(const rill_executor *exe, const rill_program *prog, const plan_op *op,
                             const rill_op_desc *d, rill_place *place, const rill_backend **backend) {
  *place = exe->options.place;
  const rill_attr *a = rill_op_attr(d, RILL_OP_DEVICE_ATTR);
  if (a && a->value.type == RILL_ATTR_STRING && a->value.v.s && *a->value.v.s) {
    rill_place want;
    RILL_TRY(rill_place_parse(a->value.v.s, &want));
    if (rill_backend_find(want.device)) *place = want;
  }
  const rill_op_schema *s = op->schema;
  const rill_op_slot *first = s->ninputs ? rill_op_input(d, s->inputs[0].name) : NULL;
  if (place->device != RILL_HOST_DEVICE &&
      (set_on_host(s, d) || ((s->flags & RILL_OP_PLACE_OF_INPUT) && first && first->nargs &&
                             kept_on_host(prog, first->args[0]))))
    *place = (rill_place){RILL_HOST_DEVICE, 0};
  RILL_TRY(rill_place_check(*place));
  *backend = rill_backend_find(place->device);
  return NULL;
}

rill_status *rill_plan_build(rill_executor *exe, const rill_program *prog, int32_t block,
                             const char *const *feed_names, size_t nfeeds,
                             const char *const *fetch_names, size_t nfetch, rill_plan **out) {
  RILL_TRY(rill_registry_init());
  if (prog->nblocks < 1) return rill_error(RILL_INVALID_ARGUMENT, "the program has no blocks");
  if (block < 0 || (size_t)block >= prog->nblocks)
    return rill_error(RILL_INVALID_ARGUMENT, "block %d does not exist (the program has %zu blocks)",
                      (int)block, prog->nblocks);
  if (block != 0 && (nfeeds || nfetch))
    return rill_error(RILL_INVALID_ARGUMENT,
                      "block %d: a sub-block is run without feeds or fetches", (int)block);
  const rill_block_desc *b = &prog->blocks[block];
  RILL_TRY(check_schemas(b, block));
  /* The sub-blocks' plans are built when they first run; their unsupported ops are
   * reported now, with block 0's. */
  if (block == 0)
    for (size_t k = 1; k < prog->nblocks; k++)
      RILL_TRY(check_schemas(&prog->blocks[k], (int32_t)k));

  rill_arena a = {0};
  rill_plan *p = rill_arena_alloc(&a, 1, sizeof *p);
  if (!p) return rill_oom();
  p->mem = a;
  rill_status *st = NULL;
  name_table names = {.borrow_keys = true};
  p->program_id = prog->id;
  p->revision = prog->revision;
  p->block = block;
  /* A sub-block's variables live in the scope of each run, not in the plan. */
  p->memplan = block == 0 && exe->memory_plan;
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
  p->in_stage = rill_arena_alloc(&p->mem, nin + 1, sizeof *p->in_stage);
  p->in_infer = rill_arena_alloc(&p->mem, nin + 1, sizeof *p->in_infer);
  if ((st = rill_strmap_reserve(&names, maxvars))) goto fail;
  if (!p->ops || !p->vars || !p->in_var || !p->in_id || !p->in_meta || !p->in_tensor ||
      !p->out_var || !p->out_id || !p->out_meta || !p->out_alias || !p->in_stage ||
      !p->in_infer) {
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
      st = rill_status_wrap(st, OP_CONTEXT_FMT, (int)block, (int)i, d->type);
      goto fail;
    }
    if ((st = layout_op(p, &names, prog, d, op, &in_at, &out_at))) {
      st = rill_status_wrap(st, OP_CONTEXT_FMT, (int)block, (int)i, d->type);
      goto fail;
    }
  }

  if ((st = bind_feeds_fetches(p, &names, prog))) goto fail;

  /* Kernels. */
  for (size_t i = 0; i < p->nops; i++) {
    plan_op *op = &p->ops[i];
    op->kernel_dtype = op_kernel_dtype(op, p);
    if ((st = op_place(exe, prog, op, &b->ops[i], &op->place, &op->backend))) {
      st = rill_status_wrap(st, OP_CONTEXT_FMT, (int)block, (int)op->index, op->type);
      goto fail;
    }
    rill_kernel_accepts_fn accepts;
    op->kernel = rill_kernel_find_accepts(op->type, op->place.device, op->kernel_dtype, &accepts);
    if (op->kernel && accepts && !accepts(&op->kctx)) op->kernel = NULL; /* declined */
    if (!op->kernel && op->place.device != RILL_HOST_DEVICE) {
      /* An op its place's backend has no kernel for (or whose kernel declines it) runs
       * on the host: the run stages its inputs to the host and its outputs back where
       * they are read. */
      rill_kernel_fn host = rill_kernel_find(op->type, RILL_HOST_DEVICE, op->kernel_dtype);
      if (host) {
        op->kernel = host;
        op->place = (rill_place){RILL_HOST_DEVICE, 0};
        op->backend = rill_backend_find(RILL_HOST_DEVICE);
      }
    }
    if (!op->kernel) {
      st = rill_error(RILL_UNIMPLEMENTED, "block %d, op #%zu '%s': backend '%s' has no kernel for dtype %s",
                      (int)block, i, op->type, op->backend->name,
                      rill_dtype_name(op->kernel_dtype));
      goto fail;
    }
    op->kctx.dev = &exe->device.services;
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
      st = rill_status_wrap(st, OP_CONTEXT_FMT, (int)block, (int)i, op->type);
      goto fail;
    }
  }

  /* Classify variables not yet placed. */
  size_t ncaller = 0, nreq = 0, nclean = 0, narr = 0;
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
    if (binds_per_run(pv)) ncaller++;
    if (binds_per_run(pv) && pv->required_by >= 0) nreq++;
    if (pv->kind == VAR_FED || pv->kind == VAR_LIST || pv->feed_out || pv->desc_scopes) nclean++;
    if (pv->desc_array) narr++;
  }
  p->caller_vars = rill_arena_alloc(&p->mem, ncaller + 1, sizeof *p->caller_vars);
  p->required = rill_arena_alloc(&p->mem, nreq + 1, sizeof *p->required);
  p->cleanup = rill_arena_alloc(&p->mem, nclean + 1, sizeof *p->cleanup);
  p->arrays = rill_arena_alloc(&p->mem, narr + 1, sizeof *p->arrays);
  if (!p->caller_vars || !p->required || !p->cleanup || !p->arrays) {
    st = rill_oom();
    goto fail;
  }
  if ((st = rill_scope_create(NULL, &p->local))) goto fail;
  for (size_t v = 0; v < p->nvars; v++) {
    plan_var *pv = &p->vars[v];
    if (binds_per_run(pv)) {
      p->caller_vars[p->ncaller++] = (uint32_t)v;
      if (pv->required_by >= 0) p->required[p->nrequired++] = (uint32_t)v;
    }
    if (pv->kind == VAR_FED || pv->kind == VAR_LIST || pv->feed_out || pv->desc_scopes)
      p->cleanup[p->ncleanup++] = (uint32_t)v;
    if (pv->desc_array) p->arrays[p->narrays++] = (uint32_t)v;
    /* Variables of the caller's scope bind at run time; an EXTERNAL one that the
     * caller does not have falls back to the plan's scope. */
    if (pv->absent || pv->kind == VAR_STEP || pv->kind == VAR_OUTER) continue;
    if (pv->kind != VAR_PERSIST) {
      if ((st = rill_scope_var(p->local, pv->name, &pv->local))) goto fail;
      pv->var = pv->local;
    }
  }
  if ((st = choose_homes(p, exe->options.place))) goto fail;
  for (size_t k = 0; k < nin; k++) p->in_var[k] = p->vars[p->in_id[k]].var;
  for (size_t k = 0; k < nout; k++) p->out_var[k] = p->vars[p->out_id[k]].var;
  for (size_t i = 0; i < p->nops; i++) p->ops[i].kctx.scope = p->local;
  if ((st = rill_plan_build_graph(p, &names, prog, b, exe->device.services.num_threads))) goto fail;
  rill_strmap_clear(&names);
  *out = p;
  return NULL;

fail:
  rill_strmap_clear(&names);
  rill_plan_destroy(p);
  return st;
}
