/* Shared by the kernels that index tensor arrays by time step. */
#ifndef RILL_KERNELS_CPU_TENSOR_ARRAY_H
#define RILL_KERNELS_CPU_TENSOR_ARRAY_H

#include "kernels/cpu/kernels.h"

/* The index held by input `slot` (int64 or int32, one element); negative is an error. */
rill_status *rill_cpu_array_index(rill_kernel_ctx *ctx, size_t slot, size_t *out);

#endif
