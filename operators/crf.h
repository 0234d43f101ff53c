/* The input checks linear_chain_crf (forward and gradient) and crf_decoding share. */
#ifndef RILL_OPERATORS_CRF_H
#define RILL_OPERATORS_CRF_H

#include "operators/op_util.h"

/* Emission float of rank 2 (rank 3 with Length), Transition [D + 2, D] of the same dtype.
 * *d gets D (-1 unknown). */
rill_status *rill_crf_check_inputs(rill_infer_ctx *ctx, size_t e_slot, size_t t_slot, bool padded,
                                   int64_t *d);

#endif
