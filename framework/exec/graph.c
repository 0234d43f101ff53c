/* The dependency graph of the parallel schedule: which ops each op waits for, from what
 * every op (and the sub-blocks it runs) reads and writes; then the compressed successor
 * lists the scheduler walks, the critical path and the schedule AUTO picks, and the
 * release lists (which temporaries each op is the last user of). */
#include "framework/exec/graph.h"

#include <string.h>

#include "framework/exec/memplan.h"

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
  long id = rill_plan_var_id(b->names, name);
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

/* Builds the dependency graph of the parallel schedule (read-after-write,
 * write-after-read, write-after-write; side-effect ops and random ops each in program
 * order), the critical path, the schedule AUTO picks, and the release lists. */
rill_status *rill_plan_build_graph(rill_plan *p, name_table *names, const rill_program *prog,
                                   const rill_block_desc *bd, int32_t nthreads) {
  rill_status *st = NULL;
  size_t nops = p->nops;
  access_builder b = {.p = p, .names = names, .prog = prog};
  u32vec efrom = {0}, eto = {0}, rnode_op = {0}, rnode_next = {0}, unordered = {0};
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

  /* Side-effect ops in program order, except that the concurrent ones since the last
   * ordered one (`unordered`) wait only for it, and the next ordered one for them all. */
  uint32_t last_side = UINT32_MAX, last_random = UINT32_MAX;
  for (uint32_t i = 0; i < nops; i++) {
    const plan_op *op = &p->ops[i];
    unsigned fl = op->schema->flags;
    if (fl & RILL_OP_SIDE_EFFECT) {
      EDGE(last_side, i);
      if (fl & RILL_OP_CONCURRENT_EFFECT) {
        if (!u32_push(&unordered, i)) goto oom;
      } else {
        for (size_t k = 0; k < unordered.n; k++) EDGE(unordered.v[k], i);
        unordered.n = 0;
        last_side = i;
      }
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
  if (p->memplan && !rill_plan_memory(p, subs, &efrom, &eto, stamp)) goto oom;
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
  rill_free(unordered.v);
  rill_free(stamp);
  rill_free(last_writer);
  rill_free(rhead);
  rill_free(b.visited);
  rill_free((void *)b.extra_str);
  return st;
}

rill_schedule rill_plan_auto_schedule(const rill_plan *plan) { return plan->auto_schedule; }
size_t rill_plan_critical_path(const rill_plan *plan) { return plan->crit_path; }

bool rill_plan_has_edge(const rill_plan *plan, size_t from, size_t to) {
  const rill_sched_graph *g = &plan->graph;
  if (from >= g->nops || to >= g->nops) return false;
  for (uint32_t k = g->succ_start[from]; k < g->succ_start[from + 1]; k++)
    if (g->succ[k] == to) return true;
  return false;
}
