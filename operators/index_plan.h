/* The slices of X that an index tensor addresses, for the index ops (gather, gather_nd,
 * scatter, scatter_nd_add, index_select, index_sample and their gradients): element
 * offsets of equal-length slices, each coordinate checked against X's dims. The CPU
 * kernels and the CUDA ones (which read the indices back to the host) build the same
 * plan with these functions, so both check and address alike. */
#ifndef RILL_OPERATORS_INDEX_PLAN_H
#define RILL_OPERATORS_INDEX_PLAN_H

#include "framework/base/alloc.h"
#include "operators/tensor_ops.h"

typedef struct rill_index_slices {
  int64_t *off;  /* element offset of each slice in X (rill_free'd by the caller) */
  int64_t count; /* number of slices */
  int64_t len;   /* elements per slice; every offset is a multiple of it */
} rill_index_slices;

/* How an index tensor addresses X: one row coordinate per index (gather, scatter),
 * tuples of Index's last extent (the nd ops), one coordinate along a dim per index for
 * each outer slice (index_select), one per element of a 2-D Index along X's rows
 * (index_sample). */
typedef enum { RILL_INDEX_BY_ROWS, RILL_INDEX_BY_TUPLES, RILL_INDEX_BY_DIM, RILL_INDEX_BY_ROW_SAMPLE } rill_index_mode;

/* The slices of a tensor of dims x (called xname) that input islot addresses, its
 * values read from vals on the host (int64 when vals_i64, else int32); dim is
 * BY_DIM's normalized dim. */
static inline rill_status *rill_index_slices_of(rill_kernel_ctx *ctx, size_t islot, const rill_dims *x,
                                                rill_index_mode mode, int dim, const char *xname, const void *vals,
                                                bool vals_i64, rill_index_slices *s) {
  const char *slot_name = ctx->schema->inputs[islot].name, *iname = rill_kin_name(ctx, islot, 0);
  const rill_tensor *ix = rill_kin(ctx, islot, 0);
  s->off = NULL;
  if (!ix || !rill_tensor_is_set(ix) || (ix->dtype != RILL_DTYPE_INT32 && ix->dtype != RILL_DTYPE_INT64))
    return rill_kernel_error(ctx, "input %s (%s) must be an int32/int64 tensor with data", slot_name, iname);
  int64_t k = 1, outer = 1, per = 1; /* per: indices per outer slice */
  if (mode == RILL_INDEX_BY_TUPLES) {
    if (ix->dims.n < 1) return rill_kernel_error(ctx, "input %s (%s) must have rank >= 1", slot_name, iname);
    k = ix->dims.d[ix->dims.n - 1];
    per = rill_dims_prod(&ix->dims, 0, ix->dims.n - 1);
  } else if (mode == RILL_INDEX_BY_ROW_SAMPLE) {
    if (ix->dims.n != 2 || x->n != 2 || ix->dims.d[0] != x->d[0])
      return rill_kernel_error(ctx,
                               "input %s (%s) and input X (%s) must be 2-D with the same "
                               "first extent",
                               slot_name, iname, xname);
    outer = x->d[0];
    per = ix->dims.d[1];
  } else {
    if (ix->dims.n != 1 && !(ix->dims.n == 2 && ix->dims.d[1] == 1))
      return rill_kernel_error(ctx, "input %s (%s) must be [N] or [N, 1]", slot_name, iname);
    per = ix->dims.d[0];
    if (mode == RILL_INDEX_BY_DIM) outer = rill_dims_prod(x, 0, dim);
  }
  int first = mode == RILL_INDEX_BY_DIM ? dim : mode == RILL_INDEX_BY_ROW_SAMPLE ? 1 : 0;
  if (first + k > x->n)
    return rill_kernel_error(ctx, "input %s (%s) addresses %lld dims of a rank-%d input X (%s)", slot_name, iname,
                             (long long)k, (int)x->n, xname);
  s->len = rill_dims_prod(x, first + (int)k, x->n);
  s->count = outer * per;
  if (!(s->off = rill_malloc(((size_t)s->count + 1) * sizeof *s->off))) return rill_oom();
  /* Elements of X from one outer slice to the next. */
  int64_t outer_stride = rill_dims_prod(x, first, x->n);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t i = 0; i < per; i++) {
      int64_t at = mode == RILL_INDEX_BY_ROW_SAMPLE ? o * per + i : i, c0 = 0;
      for (int64_t j = 0; j < k; j++) {
        int64_t p = at * k + j, c = vals_i64 ? ((const int64_t *)vals)[p] : ((const int32_t *)vals)[p];
        int64_t e = x->d[first + j];
        if (c < 0 || c >= e) {
          rill_free(s->off);
          s->off = NULL;
          return rill_kernel_error(ctx,
                                   "input %s (%s) holds %lld at position %lld, outside [0, "
                                   "%lld) of dim %lld of input X (%s)",
                                   slot_name, iname, (long long)c, (long long)p, (long long)e,
                                   (long long)(first + j), xname);
        }
        c0 = c0 * e + c;
      }
      s->off[o * per + i] = o * outer_stride + c0 * s->len;
    }
  return NULL;
}

/* The slices of X (input 0, dims x) that Index (input 1, values vals) addresses in the
 * mode, dim_attr being index_select's dim; checked against `packed`, the tensor that
 * holds them one after another (Out, or Out@GRAD), called `what`. */
static inline rill_status *rill_index_slices_packed(rill_kernel_ctx *ctx, rill_index_mode mode, int32_t dim_attr,
                                                    const rill_dims *x, const void *vals, bool vals_i64,
                                                    const rill_tensor *packed, const char *what,
                                                    const char *packed_name, rill_index_slices *s) {
  int dim = 0;
  s->off = NULL;
  if (mode == RILL_INDEX_BY_DIM && !rill_norm_axis(dim_attr, x->n, &dim))
    return rill_kernel_error(ctx, "dim %d is out of range for input X (%s) of rank %d", (int)dim_attr,
                             rill_kin_name(ctx, 0, 0), (int)x->n);
  RILL_TRY(rill_index_slices_of(ctx, 1, x, mode, dim, rill_kin_name(ctx, 0, 0), vals, vals_i64, s));
  if (rill_tensor_numel(packed) == s->count * s->len) return NULL;
  rill_free(s->off);
  s->off = NULL;
  return rill_kernel_error(ctx, "%s (%s) holds %lld elements, expected %lld", what, packed_name,
                           (long long)rill_tensor_numel(packed), (long long)(s->count * s->len));
}

#endif
