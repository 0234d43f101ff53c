/* What linear_chain_crf, its gradient and crf_decoding share: where each sequence's rows
 * are (a LoD level, or padded rows cut at Length) and float tensors seen as float64. The
 * three ops put Emission, Transition, Label and Length at input positions 0 to 3. */
#ifndef RILL_KERNELS_CPU_CRF_H
#define RILL_KERNELS_CPU_CRF_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/cpu/kernels.h"

enum { RILL_CRF_EMISSION, RILL_CRF_TRANSITION, RILL_CRF_LABEL, RILL_CRF_LENGTH };
_Static_assert(RILL_SAME_POS(RILL_LINEAR_CHAIN_CRF_IN_EMISSION, RILL_CRF_EMISSION) &&
                   RILL_SAME_POS(RILL_LINEAR_CHAIN_CRF_IN_TRANSITION, RILL_CRF_TRANSITION) &&
                   RILL_SAME_POS(RILL_LINEAR_CHAIN_CRF_IN_LABEL, RILL_CRF_LABEL) &&
                   RILL_SAME_POS(RILL_LINEAR_CHAIN_CRF_IN_LENGTH, RILL_CRF_LENGTH) &&
                   RILL_SAME_POS(RILL_LINEAR_CHAIN_CRF_GRAD_IN_EMISSION, RILL_CRF_EMISSION) &&
                   RILL_SAME_POS(RILL_LINEAR_CHAIN_CRF_GRAD_IN_TRANSITION, RILL_CRF_TRANSITION) &&
                   RILL_SAME_POS(RILL_LINEAR_CHAIN_CRF_GRAD_IN_LABEL, RILL_CRF_LABEL) &&
                   RILL_SAME_POS(RILL_LINEAR_CHAIN_CRF_GRAD_IN_LENGTH, RILL_CRF_LENGTH) &&
                   RILL_SAME_POS(RILL_CRF_DECODING_IN_EMISSION, RILL_CRF_EMISSION) &&
                   RILL_SAME_POS(RILL_CRF_DECODING_IN_TRANSITION, RILL_CRF_TRANSITION) &&
                   RILL_SAME_POS(RILL_CRF_DECODING_IN_LABEL, RILL_CRF_LABEL) &&
                   RILL_SAME_POS(RILL_CRF_DECODING_IN_LENGTH, RILL_CRF_LENGTH),
               "the CRF ops' inputs are at the same positions");

typedef struct rill_crf_layout {
  int64_t nseq;             /* sequences */
  int64_t rows;             /* Emission's rows: T, or N * S */
  int64_t d;                /* tags */
  int64_t stride;           /* padded: S (sequence i starts at row i * S); 0 with LoD */
  const uint64_t *offsets;  /* LoD: nseq + 1 row offsets */
  const int64_t *lengths;   /* padded: nseq lengths */
} rill_crf_layout;

/* Reads Emission (float of rank 2, or 3 with Length), Transition [D + 2, D] of its dtype,
 * and Length (int64, one per padded row, each in [0, S]); without Length the sequences
 * are level 0 of input `lod_slot`'s LoD, or of Emission's when that input has none, and
 * must fit Emission's rows. Label, when present, must be int64 with one tag per row. */
rill_status *rill_crf_layout_of(rill_kernel_ctx *ctx, size_t lod_slot, rill_crf_layout *l);

static inline void rill_crf_seq(const rill_crf_layout *l, int64_t i, int64_t *start, int64_t *len) {
  if (l->lengths) {
    *start = i * l->stride;
    *len = l->lengths[i];
  } else {
    *start = (int64_t)l->offsets[i];
    *len = (int64_t)(l->offsets[i + 1] - l->offsets[i]);
  }
}

/* Tensor t's elements as float64: t's own buffer when it is float64 (*owned NULL), else
 * a converted copy in *owned, which the caller frees with rill_free. */
rill_status *rill_crf_f64(rill_kernel_ctx *ctx, const rill_tensor *t, const char *what,
                          const double **v, double **owned);
/* Writes n float64 values into t (float32 or float64). */
void rill_crf_store(rill_tensor *t, const double *v, int64_t n);

#endif
