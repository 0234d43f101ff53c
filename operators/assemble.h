/* Shape pieces of the assembling ops (operators/assemble.c) that their CPU kernels
 * share. */
#ifndef RILL_OPERATORS_ASSEMBLE_H
#define RILL_OPERATORS_ASSEMBLE_H

#include "operators/op_util.h"

/* diag_embed's output dims for Input dims `in`: the last extent moved onto dims d1 and
 * d2 (as N + |offset|) of a tensor of one more dim; false with a reason in err. */
bool rill_diag_embed_dims(const rill_dims *in, int64_t offset, int64_t dim1, int64_t dim2,
                          rill_dims *out, int *d1, int *d2, char *err, size_t errlen);

#endif
