/* Gradient access for the optimizer kernels added after sgd/momentum/adam/adagrad: a
 * row cursor over a merged selected-rows gradient (rows it lacks read as zero), and
 * the check of the ops whose Paddle kernels take dense gradients only. */
#ifndef RILL_KERNELS_CPU_OPTIMIZER_ROWS_H
#define RILL_KERNELS_CPU_OPTIMIZER_ROWS_H

#include "kernels/cpu/optimizer.h"

/* Row `row` of g (elements of size esz): its values, or NULL when a selected-rows
 * gradient lacks the row. Rows must be asked in ascending order; *k starts at 0. */
static inline const void *rill_opt_grad_row(const rill_opt_grad *g, int64_t row, size_t *k,
                                            size_t esz) {
  if (!g->sparse) return (const char *)g->dense + (size_t)(row * g->width) * esz;
  while (*k < g->nrows && g->rows[*k] < row) (*k)++;
  if (*k < g->nrows && g->rows[*k] == row)
    return (const char *)g->vals + (size_t)((int64_t)*k * g->width) * esz;
  return NULL;
}

/* Rows of Param (a 0-d Param counts as one row). */
static inline int64_t rill_opt_param_rows(const rill_tensor *p) {
  return p->dims.n ? p->dims.d[0] : 1;
}

/* The dense gradient of input `slot`; a selected-rows one is an error, as in Paddle. */
static inline rill_status *rill_opt_dense_grad(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt,
                                               const rill_tensor *param, rill_opt_grad *g) {
  rill_variable *v = slot < ctx->schema->ninputs && ctx->nin[slot] ? ctx->in[slot][0] : NULL;
  if (v && v->kind == RILL_VARKIND_SELECTED_ROWS)
    return rill_kernel_error(ctx, "input Grad (%s) is selected rows; %s takes a dense gradient "
                             "(Paddle's kernel does too)", rill_kin_name(ctx, slot, 0),
                             ctx->schema->type);
  return rill_opt_grad_get(ctx, slot, dt, param, g);
}

#endif
