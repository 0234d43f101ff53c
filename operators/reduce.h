/* Paddle's reduce_* shape rules, shared by the schemas and the kernels. */
#ifndef RILL_OPERATORS_REDUCE_H
#define RILL_OPERATORS_REDUCE_H

#include <stdio.h>

#include "framework/registry/registry.h"

/* Marks the reduced dims of x from attr `dim` (INTS, negatives count from the end;
 * empty or reduce_all: every dim) and fills out's dims: reduced dims become 1 with
 * keep_dim, else disappear ([1] when none is left, as Fluid 1.x). */
static inline bool rill_reduce_shape(const rill_dims *x, const rill_attr_value *dim, bool keep_dim,
                                     bool reduce_all, bool reduced[RILL_MAX_DIMS], rill_dims *out,
                                     char *why, size_t whysize) {
  for (int i = 0; i < RILL_MAX_DIMS; i++) reduced[i] = false;
  if (reduce_all || dim->n == 0) {
    for (int i = 0; i < x->n; i++) reduced[i] = true;
  } else {
    for (size_t k = 0; k < dim->n; k++) {
      int64_t d = dim->list.ints[k];
      if (d < -x->n || d >= x->n) {
        snprintf(why, whysize, "dim %lld is out of range for rank %d", (long long)d, x->n);
        return false;
      }
      reduced[d < 0 ? d + x->n : d] = true;
    }
  }
  out->n = 0;
  for (int i = 0; i < x->n; i++) {
    if (!reduced[i]) out->d[out->n++] = x->d[i];
    else if (keep_dim) out->d[out->n++] = 1;
  }
  if (out->n == 0) {
    out->n = 1;
    out->d[0] = 1;
  }
  return true;
}

/* A reduction's walk over X, shared by the backends: X's dims merged into n runs, each
 * all reduced or all kept (extent-1 dims dropped); per run its extent and its stride in
 * Out (0 when reduced). xnumel and onumel count X's and Out's elements, count the X
 * elements that reduce to each output element. */
typedef struct rill_reduce_plan {
  int n;
  int64_t dims[RILL_MAX_DIMS], os[RILL_MAX_DIMS];
  int64_t xnumel, onumel, count;
  rill_dims out;
} rill_reduce_plan;

static inline bool rill_reduce_plan_make(const rill_dims *x, const rill_attr_value *dim, bool keep_dim,
                                         bool reduce_all, rill_reduce_plan *p, char *why, size_t whysize) {
  bool reduced[RILL_MAX_DIMS];
  if (!rill_reduce_shape(x, dim, keep_dim, reduce_all, reduced, &p->out, why, whysize)) return false;
  int64_t ext[RILL_MAX_DIMS];
  bool red[RILL_MAX_DIMS];
  int n = 0;
  p->xnumel = 1;
  p->count = 1;
  for (int i = 0; i < x->n; i++) {
    p->xnumel *= x->d[i];
    if (reduced[i]) p->count *= x->d[i];
    if (x->d[i] == 1) continue;
    if (n > 0 && red[n - 1] == reduced[i]) {
      ext[n - 1] *= x->d[i];
      continue;
    }
    ext[n] = x->d[i];
    red[n] = reduced[i];
    n++;
  }
  if (n == 0) {
    ext[0] = 1;
    red[0] = false;
    n = 1;
  }
  int64_t s = 1;
  for (int i = n - 1; i >= 0; i--) {
    p->dims[i] = ext[i];
    p->os[i] = red[i] ? 0 : s;
    if (!red[i]) s *= ext[i];
  }
  p->onumel = s;
  p->n = n;
  return true;
}

#endif
