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

#endif
