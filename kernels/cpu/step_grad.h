/* Helpers of the gradient kernels of sub-block ops (while_grad, recurrent_grad), which
 * sum the gradients their steps leave in the step scopes. The steps' ops may have run on
 * a device: a step's gradient is read wherever it lies, through the backends, and the
 * sum is kept on the host. */
#ifndef RILL_KERNELS_CPU_STEP_GRAD_H
#define RILL_KERNELS_CPU_STEP_GRAD_H

#include "kernels/cpu/kernels.h"

/* dst := a host copy of the first step's gradient src. */
rill_status *rill_cpu_step_grad_start(rill_tensor *dst, const rill_tensor *src, const char *name);

/* dst (on the host, from rill_cpu_step_grad_start) += src elementwise (float32 or
 * float64, same dtype and shape, on any place); `name` names the step's gradient in the
 * error. */
rill_status *rill_cpu_step_grad_add(const rill_kernel_ctx *ctx, rill_tensor *dst,
                                    const rill_tensor *src, const char *name);

/* `dst` := zeros of `like`'s dtype and dims. */
rill_status *rill_cpu_zeros_like(rill_tensor *dst, const rill_tensor *like);

#endif
