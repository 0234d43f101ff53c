/* The memory plan and what it reports (bytes held, groups). */
#include "framework/exec/memplan.h"

#include <stdlib.h>
#include <string.h>

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
bool rill_plan_memory(rill_plan *p, const u32vec *subs, u32vec *efrom, u32vec *eto,
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
