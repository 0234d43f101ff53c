/* The backward pass: appends the gradient ops of a loss to block 0 of a program,
 * following Paddle's append_backward (python/paddle/fluid/backward.py). See
 * doc/design/backward.md. */
#ifndef RILL_FRAMEWORK_TRANSFORM_BACKWARD_H
#define RILL_FRAMEWORK_TRANSFORM_BACKWARD_H

#include "framework/program/program.h"

struct rill_param_grads {
  size_t n;
  char **param;
  char **grad;
};

/* Suffix of renamed repeated gradient writes: x@GRAD@RENAME@block0@k (Paddle 2.x). */
#define RILL_GRAD_RENAME "@RENAME@block"
/* Prefix, once per pass, of a later backward pass's gradient whose name exists:
 * grad/grad/x@GRAD in the second pass (Paddle 1.8). */
#define RILL_GRAD_PASS_PREFIX "grad/"

/* Adds (param, grad) to a result (used by the transforms and tests). */
rill_status *rill_param_grads_add(rill_param_grads *pg, const char *param, const char *grad);

#endif
