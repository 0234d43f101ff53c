/* The activations the fused inference ops (fc, conv2d_fusion) apply to their output, by
 * the names of their string attributes. Shared by their shape inference (which rejects
 * an unknown name) and their kernels. */
#ifndef RILL_OPERATORS_FUSED_ACT_H
#define RILL_OPERATORS_FUSED_ACT_H

#include <string.h>

#include "framework/program/program.h"

typedef enum rill_fused_act {
  RILL_FUSED_IDENTITY,
  RILL_FUSED_RELU,
  RILL_FUSED_RELU6,
  RILL_FUSED_SIGMOID,
  RILL_FUSED_TANH,
  RILL_FUSED_UNKNOWN
} rill_fused_act;

/* "" and "identity" are the identity; fc (as in Paddle) takes only "" and "relu". */
static inline rill_fused_act rill_fused_act_of(const rill_attr_value *a, bool fc) {
  const char *s = a->type == RILL_ATTR_STRING && a->v.s ? a->v.s : "";
  if (s[0] == 0 || strcmp(s, "identity") == 0) return RILL_FUSED_IDENTITY;
  if (strcmp(s, "relu") == 0) return RILL_FUSED_RELU;
  if (fc) return RILL_FUSED_UNKNOWN;
  if (strcmp(s, "relu6") == 0) return RILL_FUSED_RELU6;
  if (strcmp(s, "sigmoid") == 0) return RILL_FUSED_SIGMOID;
  if (strcmp(s, "tanh") == 0) return RILL_FUSED_TANH;
  return RILL_FUSED_UNKNOWN;
}

#endif
