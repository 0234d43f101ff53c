/* Shape pieces of the linear-algebra ops (operators/linalg.c) that their CPU kernels
 * share. */
#ifndef RILL_OPERATORS_LINALG_H
#define RILL_OPERATORS_LINALG_H

#include "operators/op_util.h"

/* cross's dim attribute when not given (Paddle's kMaxRank): the first dim of extent 3. */
#define RILL_CROSS_DEFAULT_DIM 9

/* The dim cross works along; false with a reason in err. */
bool rill_cross_dim(const rill_dims *x, int64_t dim, int *out, char *err, size_t errlen);

#endif
