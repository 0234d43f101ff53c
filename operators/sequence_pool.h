/* sequence_pool's rules, shared by its CPU and CUDA kernels: the pooltype names and
 * X's sequences (its last LoD level, checked against its rows). */
#ifndef RILL_OPERATORS_SEQUENCE_POOL_H
#define RILL_OPERATORS_SEQUENCE_POOL_H

#include <string.h>

#include "operators/op_util.h"

typedef enum { RILL_SEQPOOL_AVERAGE, RILL_SEQPOOL_SUM, RILL_SEQPOOL_SQRT, RILL_SEQPOOL_MAX, RILL_SEQPOOL_LAST,
               RILL_SEQPOOL_FIRST } rill_seqpool_kind;

/* The pooltype attribute a as a kind, or an error naming it. */
static inline rill_status *rill_seqpool_kind_of(rill_kernel_ctx *ctx, const rill_attr_value *a, int *kind) {
  static const char *const names[] = {"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"};
  for (int i = 0; i < 6; i++)
    if (a->v.s && strcmp(a->v.s, names[i]) == 0) {
      *kind = i;
      return NULL;
    }
  *kind = -1;
  return rill_kernel_error(ctx, "attribute pooltype \"%s\" is unknown", a->v.s ? a->v.s : "");
}

/* X's sequences (its last LoD level, input 0), checked against its rows; D is a row's
 * width (the product of X's trailing dims). */
static inline rill_status *rill_seqpool_sequences(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_lod_level **lv,
                                                  int64_t *nseq, int64_t *rows, int64_t *D) {
  if (x->lod.nlevels == 0 || x->lod.nlevels > 2)
    return rill_kernel_error(ctx, "input X (%s) has %zu LoD levels, expected 1 or 2", rill_kin_name(ctx, 0, 0),
                             x->lod.nlevels);
  const rill_lod_level *l = *lv = &x->lod.levels[x->lod.nlevels - 1];
  *nseq = (int64_t)l->n - 1, *rows = x->dims.d[0];
  *D = *rows > 0 ? rill_tensor_numel(x) / *rows : rill_dims_prod(&x->dims, 1, x->dims.n);
  for (int64_t i = 0; i < *nseq; i++)
    if (l->offsets[i] > l->offsets[i + 1] || l->offsets[i + 1] > (uint64_t)*rows)
      return rill_kernel_error(ctx, "input X (%s): LoD offsets %llu..%llu do not fit its %lld rows",
                               rill_kin_name(ctx, 0, 0), (unsigned long long)l->offsets[i],
                               (unsigned long long)l->offsets[i + 1], (long long)*rows);
  return NULL;
}

#endif
