/* Prototypes of every CPU kernel listed in kernels.def, plus helpers kernels share. */
#ifndef RILL_KERNELS_CPU_KERNELS_H
#define RILL_KERNELS_CPU_KERNELS_H

#include <string.h>

#include "framework/registry/registry.h"
#include "operators/op_index.h"

#define RILL_CPU_KERNEL(op, dtype, fn) rill_status *fn(rill_kernel_ctx *ctx);
#include "kernels/cpu/kernels.def"
#undef RILL_CPU_KERNEL

static inline const char *rill_kin_name(const rill_kernel_ctx *c, size_t slot, size_t i) {
  return c->in_names && i < c->nin[slot] ? c->in_names[slot][i] : "?";
}
static inline const char *rill_kout_name(const rill_kernel_ctx *c, size_t slot, size_t i) {
  return c->out_names && i < c->nout[slot] ? c->out_names[slot][i] : "?";
}
/* Whether input (slot, i) and output (oslot, j) are one variable of the program (an
 * op updating it in place). By name: on another place than the variable's, the input is
 * a staged copy, another tensor than the output's. */
static inline bool rill_k_same_var(const rill_kernel_ctx *c, size_t slot, size_t i, size_t oslot, size_t j) {
  if (!c->in_names || !c->out_names || i >= c->nin[slot] || j >= c->nout[oslot])
    return i < c->nin[slot] && j < c->nout[oslot] && c->in[slot][i] == c->out[oslot][j];
  return strcmp(c->in_names[slot][i], c->out_names[oslot][j]) == 0;
}

/* Input (slot, i) as a dense tensor holding data of `dtype`, or an error naming it. */
static inline rill_status *rill_kin_need(const rill_kernel_ctx *c, size_t slot, size_t i,
                                         rill_dtype dtype, rill_tensor **out) {
  rill_tensor *t = rill_kin(c, slot, i);
  const char *slot_name = c->schema->inputs[slot].name;
  if (!t)
    return rill_kernel_error(c, "input %s (%s) is missing or not a dense tensor", slot_name,
                             rill_kin_name(c, slot, i));
  if (!rill_tensor_is_set(t))
    return rill_kernel_error(c, "input %s (%s) holds no data", slot_name, rill_kin_name(c, slot, i));
  if (t->dtype != dtype)
    return rill_kernel_error(c, "input %s (%s) is %s, this kernel takes %s", slot_name,
                             rill_kin_name(c, slot, i), rill_dtype_name(t->dtype),
                             rill_dtype_name(dtype));
  *out = t;
  return NULL;
}

/* Output (slot, i) as an allocated dense tensor of `dtype` (the executor sizes it). */
static inline rill_status *rill_kout_need(const rill_kernel_ctx *c, size_t slot, size_t i,
                                          rill_dtype dtype, rill_tensor **out) {
  rill_tensor *t = rill_kout(c, slot, i);
  const char *slot_name = c->schema->outputs[slot].name;
  if (!t)
    return rill_kernel_error(c, "output %s (%s) is missing or not a dense tensor", slot_name,
                             rill_kout_name(c, slot, i));
  if (!rill_tensor_is_set(t))
    return rill_kernel_error(c, "output %s (%s) was not allocated", slot_name,
                             rill_kout_name(c, slot, i));
  if (t->dtype != dtype)
    return rill_kernel_error(c, "output %s (%s) is %s, this kernel writes %s", slot_name,
                             rill_kout_name(c, slot, i), rill_dtype_name(t->dtype),
                             rill_dtype_name(dtype));
  *out = t;
  return NULL;
}

/* Checks that an input has the shape the kernel needs. */
static inline rill_status *rill_kin_check_dims(const rill_kernel_ctx *c, size_t slot, const rill_tensor *t,
                                               const rill_dims *want) {
  if (rill_dims_equal(&t->dims, want)) return NULL;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  return rill_kernel_error(c, "input %s (%s) has shape %s, expected %s", c->schema->inputs[slot].name,
                           rill_kin_name(c, slot, 0), rill_dims_str(&t->dims, a, sizeof a),
                           rill_dims_str(want, b, sizeof b));
}

/* Checks that an output has the shape the kernel computes. */
static inline rill_status *rill_kout_check_dims(const rill_kernel_ctx *c, size_t slot, size_t i,
                                                const rill_tensor *t, const rill_dims *want) {
  if (rill_dims_equal(&t->dims, want)) return NULL;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  return rill_kernel_error(c, "output %s (%s) has shape %s, expected %s", c->schema->outputs[slot].name,
                           rill_kout_name(c, slot, i), rill_dims_str(&t->dims, a, sizeof a),
                           rill_dims_str(want, b, sizeof b));
}

/* The outputs of a gradient op that take the shapes of tensors it reads: for each output
 * slot s < n the op has, out[s] := that output, of `dtype`, checked to have like[s]'s
 * shape (out[s] stays NULL for an absent one; like[s] NULL with the output present is an
 * error naming input slot `like_slot[s]`, the tensor it needs). When bit s of
 * `zero_host` is set the output is zeroed in host memory (for a kernel that adds into
 * it). */
static inline rill_status *rill_kout_like(const rill_kernel_ctx *c, size_t n, rill_dtype dtype,
                                          const rill_tensor *const *like, const size_t *like_slot,
                                          unsigned zero_host, rill_tensor **out) {
  for (size_t s = 0; s < n; s++) {
    out[s] = NULL;
    if (!rill_kout(c, s, 0)) continue;
    if (!like[s])
      return rill_kernel_error(c, "output %s (%s) needs input %s", c->schema->outputs[s].name,
                               rill_kout_name(c, s, 0), c->schema->inputs[like_slot[s]].name);
    RILL_TRY(rill_kout_need(c, s, 0, dtype, &out[s]));
    RILL_TRY(rill_kout_check_dims(c, s, 0, out[s], &like[s]->dims));
    if (zero_host & (1u << s)) memset(rill_tensor_ptr(out[s]), 0, rill_tensor_nbytes(out[s]));
  }
  return NULL;
}

/* True when two byte ranges overlap. */
static inline bool rill_overlaps(const void *a, size_t na, const void *b, size_t nb) {
  const char *pa = a, *pb = b;
  return na && nb && pa < pb + nb && pb < pa + na;
}

/* softmax and softmax_with_cross_entropy clip a shifted logit (x - max) from below at
 * -64, as Paddle's CPU softmax does: no probability is under exp(-64) / sum, so the log
 * of one is finite. The comparison leaves a NaN as it is. */
#define RILL_SOFTMAX_CLIP (-64.0)
static inline double rill_softmax_clip_f64(double v) {
  return v < RILL_SOFTMAX_CLIP ? RILL_SOFTMAX_CLIP : v;
}
static inline float rill_softmax_clip_f32(float v) {
  return v < (float)RILL_SOFTMAX_CLIP ? (float)RILL_SOFTMAX_CLIP : v;
}

#endif
