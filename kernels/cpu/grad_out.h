/* Gradient kernels' optional outputs: a gradient nobody wants is absent (RILL_EMPTY_VAR
 * binds as no tensor); a wanted one is sized by the executor and zeroed here before the
 * kernel adds into it. */
#ifndef RILL_KERNELS_CPU_GRAD_OUT_H
#define RILL_KERNELS_CPU_GRAD_OUT_H

#include <string.h>

#include "kernels/cpu/kernels.h"

/* Output (slot, 0) of dtype dt and shape `dims`, zeroed, or *out NULL when unwanted. */
static inline rill_status *rill_kout_zeroed(const rill_kernel_ctx *c, size_t slot, rill_dtype dt,
                                            const rill_dims *dims, rill_tensor **out) {
  *out = NULL;
  if (!rill_kout(c, slot, 0)) return NULL;
  RILL_TRY(rill_kout_need(c, slot, 0, dt, out));
  RILL_TRY(rill_kout_check_dims(c, slot, 0, *out, dims));
  if (rill_tensor_nbytes(*out)) memset(rill_tensor_ptr(*out), 0, rill_tensor_nbytes(*out));
  return NULL;
}

#endif
