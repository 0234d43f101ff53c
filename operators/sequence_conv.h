/* sequence_conv's rules, shared by its CPU and CUDA kernels: the checks of X, Filter,
 * PaddingData and the context attributes, and which row each context slot reads. */
#ifndef RILL_OPERATORS_SEQUENCE_CONV_H
#define RILL_OPERATORS_SEQUENCE_CONV_H

#include "operators/op_util.h"

/* The checks both kernels make of X (input 0), Filter (input 2), PaddingData (pad,
 * NULL without paddingTrainable) and the context attributes; sets the padding rows
 * before (up) and after (down) a sequence, X's rows and width D, and Filter's width N. */
static inline rill_status *rill_seqconv_geometry(rill_kernel_ctx *ctx, const rill_tensor *x, const rill_tensor *f,
                                                 const rill_tensor *pad, int64_t len, int64_t start, int64_t *up,
                                                 int64_t *down, int64_t *rows, int64_t *D, int64_t *N) {
  *up = start < 0 ? -start : 0;
  *down = start + len - 1 > 0 ? start + len - 1 : 0;
  if (x->dims.n != 2 || f->dims.n != 2 || len < 1 || f->dims.d[0] != len * x->dims.d[1] ||
      (pad && (pad->dims.n != 2 || pad->dims.d[0] != *up + *down || pad->dims.d[1] != x->dims.d[1])))
    return rill_kernel_error(ctx,
                             "inputs X (%s), Filter (%s) and PaddingData do not fit "
                             "contextLength %lld and contextStart %lld",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 2, 0), (long long)len, (long long)start);
  if (x->lod.nlevels != 1)
    return rill_kernel_error(ctx,
                             "input X (%s) has %zu LoD levels, expected 1 (the sequences to "
                             "convolve)",
                             rill_kin_name(ctx, 0, 0), x->lod.nlevels);
  *rows = x->dims.d[0], *D = x->dims.d[1], *N = f->dims.d[1];
  const rill_lod_level *lv = &x->lod.levels[0];
  if (lv->n < 1 || lv->offsets[lv->n - 1] != (uint64_t)*rows)
    return rill_kernel_error(ctx, "input X (%s): its LoD does not end at its %lld rows", rill_kin_name(ctx, 0, 0),
                             (long long)*rows);
  return NULL;
}

/* The row of X (or, with *from_pad, of PaddingData) that context slot j of output row t
 * of sequence [s, e) reads; -1: a zero row. */
static inline int64_t rill_seqconv_context_row(int64_t t, int64_t j, int64_t start, int64_t s, int64_t e, int64_t up,
                                               bool has_pad, bool *from_pad) {
  int64_t r = t + start + j;
  *from_pad = false;
  if (r >= s && r < e) return r;
  if (!has_pad) return -1;
  *from_pad = true;
  return r < s ? up + (r - s) : up + (r - e);
}

#endif
