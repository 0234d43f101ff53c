/* The plan cache: per executor, a small most-recently-used list of plans keyed by
 * (program id, revision, memory plan on/off, feed names, fetch names). */
#include <string.h>

#include "framework/exec/plan.h"

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
  RILL_TRY(rill_plan_build(exe, program, 0, feed_names, nfeeds, fetch_names, nfetch, &p));
  exe->plan_builds++;
  if (exe->nplans == exe->plan_cap) {
    rill_plan_destroy(exe->plans[exe->nplans - 1]);
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
  while (exe->nplans > n) rill_plan_destroy(exe->plans[--exe->nplans]);
  exe->plan_cap = n;
}
