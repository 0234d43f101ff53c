/* Helpers of the gradient kernels of sub-block ops (while_grad, recurrent_grad), which
 * sum the gradients their steps leave in the step scopes. The steps' ops may have run on
 * a device: the sum is kept where the first step's gradient lies and added to there by
 * that place's backend (rill_tensor_accumulate), so a device's steps are summed on the
 * device; it moves to the host only when that backend does not add its dtype. */
#ifndef RILL_KERNELS_CPU_STEP_GRAD_H
#define RILL_KERNELS_CPU_STEP_GRAD_H

#include "kernels/cpu/kernels.h"

/* dst := a copy of the first step's gradient src, on src's place. */
rill_status *rill_cpu_step_grad_start(rill_tensor *dst, const rill_tensor *src, const char *name);

/* dst (from rill_cpu_step_grad_start) += src elementwise (same dtype and shape, on any
 * place), on dst's place, else on the host (dst moved there) when that backend does
 * not add the dtype; `name` names the step's gradient in the error. */
rill_status *rill_cpu_step_grad_add(const rill_kernel_ctx *ctx, rill_tensor *dst,
                                    const rill_tensor *src, const char *name);

/* `dst` := zeros of `like`'s dtype and dims. */
rill_status *rill_cpu_zeros_like(rill_tensor *dst, const rill_tensor *like);

#endif
