/* Helpers shared by the optimizer kernels: in-place state (input -> output copy when
 * they are different variables), one-element inputs, and gradients that may be
 * selected rows (merged: unique sorted rows, values of duplicates added). */
#ifndef RILL_KERNELS_CPU_OPTIMIZER_H
#define RILL_KERNELS_CPU_OPTIMIZER_H

#include <stdlib.h>
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

/* The output tensor of state (in_slot -> out_slot), holding the input's values. */
static inline rill_status *rill_opt_state(rill_kernel_ctx *ctx, size_t in_slot, size_t out_slot,
                                          rill_dtype dt, const rill_tensor *param, void **out) {
  rill_tensor *in = NULL, *o;
  RILL_TRY(rill_kin_need(ctx, in_slot, 0, dt, &in));
  if (param && !rill_dims_equal(&in->dims, &param->dims)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input %s (%s) has shape %s but Param has %s",
                             ctx->schema->inputs[in_slot].name, rill_kin_name(ctx, in_slot, 0),
                             rill_dims_str(&in->dims, a, sizeof a),
                             rill_dims_str(&param->dims, b, sizeof b));
  }
  o = rill_kout(ctx, out_slot, 0);
  if (!o)
    return rill_kernel_error(ctx, "output %s (%s) is missing or not a dense tensor",
                             ctx->schema->outputs[out_slot].name, rill_kout_name(ctx, out_slot, 0));
  if (o != in) {
    if (!rill_tensor_is_set(o) || o->dtype != dt || !rill_dims_equal(&o->dims, &in->dims))
      RILL_TRY(rill_tensor_alloc(o, dt, &in->dims));
    if (rill_tensor_ptr(o) != rill_tensor_ptr(in))
      memcpy(rill_tensor_ptr(o), rill_tensor_ptr(in), rill_tensor_nbytes(in));
  }
  *out = rill_tensor_ptr(o);
  return NULL;
}

/* The one element of input `slot` as a double (float or double tensors). */
static inline rill_status *rill_opt_scalar(rill_kernel_ctx *ctx, size_t slot, double *v) {
  rill_tensor *t = rill_kin(ctx, slot, 0);
  if (!t || !rill_tensor_is_set(t) || rill_tensor_numel(t) != 1)
    return rill_kernel_error(ctx, "input %s (%s) must be a tensor of one element",
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0));
  switch (t->dtype) {
    case RILL_DTYPE_FP32: *v = *(const float *)rill_tensor_ptr(t); return NULL;
    case RILL_DTYPE_FP64: *v = *(const double *)rill_tensor_ptr(t); return NULL;
    default:
      return rill_kernel_error(ctx, "input %s (%s) is %s, expected float32 or float64",
                               ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0),
                               rill_dtype_name(t->dtype));
  }
}

typedef struct rill_opt_grad {
  bool sparse;
  const void *dense; /* dense gradient, Param's shape */
  size_t nrows;      /* sparse: unique rows, ascending */
  int64_t *rows;
  void *vals;        /* sparse: nrows x width values (owned) */
  int64_t width;     /* elements per row of Param */
} rill_opt_grad;

static inline void rill_opt_grad_free(rill_opt_grad *g) {
  rill_free(g->rows);
  rill_free(g->vals);
  memset(g, 0, sizeof *g);
}

typedef struct rill_opt_rowix {
  int64_t row;
  size_t at;
} rill_opt_rowix;

static inline int rill_opt_rowix_cmp(const void *a, const void *b) {
  const rill_opt_rowix *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  return x->at < y->at ? -1 : x->at > y->at;
}

/* Gradient input `slot` against param (dense tensor of dtype dt). */
static inline rill_status *rill_opt_grad_get(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt,
                                             const rill_tensor *param, rill_opt_grad *g) {
  memset(g, 0, sizeof *g);
  rill_variable *v = slot < ctx->schema->ninputs && ctx->nin[slot] ? ctx->in[slot][0] : NULL;
  const char *name = rill_kin_name(ctx, slot, 0);
  int64_t prow = param->dims.n ? param->dims.d[0] : 1;
  g->width = prow ? rill_tensor_numel(param) / prow : 0;
  if (v && v->kind == RILL_VARKIND_SELECTED_ROWS) {
    const rill_selected_rows *sr = &v->u.rows;
    if (sr->value.dtype != dt)
      return rill_kernel_error(ctx, "input Grad (%s) is %s, Param is %s", name,
                               rill_dtype_name(sr->value.dtype), rill_dtype_name(dt));
    if (sr->nrows && rill_tensor_numel(&sr->value) != (int64_t)sr->nrows * g->width)
      return rill_kernel_error(ctx, "input Grad (%s): %zu rows of %lld values do not match "
                               "Param's rows of %lld", name, sr->nrows,
                               (long long)(rill_tensor_numel(&sr->value) / (int64_t)sr->nrows),
                               (long long)g->width);
    g->sparse = true;
    size_t n = sr->nrows, esz = rill_dtype_size(dt);
    rill_opt_rowix *ix = rill_malloc((n ? n : 1) * sizeof *ix);
    g->rows = rill_malloc((n ? n : 1) * sizeof *g->rows);
    g->vals = rill_calloc((n ? n : 1) * (size_t)(g->width ? g->width : 1), esz);
    if (!ix || !g->rows || !g->vals) {
      rill_free(ix);
      rill_opt_grad_free(g);
      return rill_oom();
    }
    for (size_t i = 0; i < n; i++) {
      if (sr->rows[i] < 0 || sr->rows[i] >= prow) {
        rill_status *st = rill_kernel_error(ctx, "input Grad (%s): row %lld outside Param's %lld rows",
                                            name, (long long)sr->rows[i], (long long)prow);
        rill_free(ix);
        rill_opt_grad_free(g);
        return st;
      }
      ix[i].row = sr->rows[i];
      ix[i].at = i;
    }
    qsort(ix, n, sizeof *ix, rill_opt_rowix_cmp);
    const char *src = rill_tensor_ptr(&sr->value);
    for (size_t i = 0; i < n; i++) {
      if (g->nrows == 0 || g->rows[g->nrows - 1] != ix[i].row) g->rows[g->nrows++] = ix[i].row;
      size_t k = g->nrows - 1;
      if (dt == RILL_DTYPE_FP32) {
        float *d = (float *)g->vals + k * (size_t)g->width;
        const float *s = (const float *)src + ix[i].at * (size_t)g->width;
        for (int64_t j = 0; j < g->width; j++) d[j] += s[j];
      } else {
        double *d = (double *)g->vals + k * (size_t)g->width;
        const double *s = (const double *)src + ix[i].at * (size_t)g->width;
        for (int64_t j = 0; j < g->width; j++) d[j] += s[j];
      }
    }
    rill_free(ix);
    return NULL;
  }
  rill_tensor *t;
  RILL_TRY(rill_kin_need(ctx, slot, 0, dt, &t));
  if (!rill_dims_equal(&t->dims, &param->dims)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input Grad (%s) has shape %s but Param has %s", name,
                             rill_dims_str(&t->dims, a, sizeof a),
                             rill_dims_str(&param->dims, b, sizeof b));
  }
  g->dense = rill_tensor_ptr(t);
  return NULL;
}

#endif
