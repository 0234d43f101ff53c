/* Helpers for kernels that take a selected-rows X (a sparse gradient): Out as selected
 * rows shaped like X, and Paddle's MergeAdd (ascending unique rows, the values of a
 * repeated row added). */
#ifndef RILL_KERNELS_CPU_SELECTED_ROWS_H
#define RILL_KERNELS_CPU_SELECTED_ROWS_H

#include "kernels/cpu/kernels.h"

/* Input X (slot 0) when it holds selected rows with values of dtype dt, else NULL
 * (*err set when it holds selected rows of another dtype or without values). */
rill_selected_rows *rill_cpu_rows_in(rill_kernel_ctx *ctx, rill_dtype dt, rill_status **err);

/* Output Out (slot 0) made selected rows with x's rows and height and a value of x's
 * shape and dtype (left as is when Out is X itself); *value is Out's value. */
rill_status *rill_cpu_rows_out_like(rill_kernel_ctx *ctx, const rill_selected_rows *x,
                                    rill_tensor **value);

/* Output Out (slot 0) made selected rows holding x merged. Out must not be X. */
rill_status *rill_cpu_rows_out_merged(rill_kernel_ctx *ctx, const rill_selected_rows *x,
                                      rill_tensor **value);

/* Output `slot` made selected rows over the distinct non-negative values of ids[0..n)
 * (ascending), of height `height`, with a zeroed value [rows, width] of dtype dt: a
 * sparse gradient of a table whose rows the ids name. */
rill_status *rill_cpu_rows_out_ids(rill_kernel_ctx *ctx, size_t slot, const int64_t *ids,
                                   int64_t n, int64_t height, int64_t width, rill_dtype dt,
                                   rill_selected_rows **out);

/* The position of row `id` in sr's ascending rows (it must be there). */
static inline int64_t rill_cpu_rows_find(const rill_selected_rows *sr, int64_t id) {
  size_t lo = 0, hi = sr->nrows ? sr->nrows - 1 : 0;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (sr->rows[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  return (int64_t)lo;
}

#endif
