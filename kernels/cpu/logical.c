/* Logical CPU kernels over bool tensors: X and Y of one shape (logical_not: X alone). */
#include "kernels/cpu/kernels.h"

_Static_assert(RILL_SAME_POS(RILL_LOGICAL_AND_IN_X, RILL_LOGICAL_NOT_IN_X) &&
                   RILL_SAME_POS(RILL_LOGICAL_AND_OUT_OUT, RILL_LOGICAL_NOT_OUT_OUT),
               "the logical ops share X and Out positions");

enum { L_AND, L_OR, L_XOR, L_NOT };

static rill_status *logical_run(rill_kernel_ctx *ctx, int kind) {
  rill_tensor *x = NULL, *y = NULL, *out = NULL;
  RILL_TRY(rill_kin_need(ctx, RILL_LOGICAL_AND_IN_X, 0, RILL_DTYPE_BOOL, &x));
  if (kind != L_NOT) {
    RILL_TRY(rill_kin_need(ctx, RILL_LOGICAL_AND_IN_Y, 0, RILL_DTYPE_BOOL, &y));
    if (!rill_dims_equal(&x->dims, &y->dims)) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_kernel_error(ctx, "input X (%s) has shape %s but input Y (%s) has shape %s",
                               rill_kin_name(ctx, RILL_LOGICAL_AND_IN_X, 0),
                               rill_dims_str(&x->dims, a, sizeof a),
                               rill_kin_name(ctx, RILL_LOGICAL_AND_IN_Y, 0),
                               rill_dims_str(&y->dims, b, sizeof b));
    }
  }
  RILL_TRY(rill_kout_need(ctx, RILL_LOGICAL_AND_OUT_OUT, 0, RILL_DTYPE_BOOL, &out));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_LOGICAL_AND_OUT_OUT, 0, out, &x->dims));
  const bool *xp = rill_tensor_ptr(x), *yp = y ? rill_tensor_ptr(y) : NULL;
  bool *op = rill_tensor_ptr(out);
  int64_t n = rill_tensor_numel(x);
  switch (kind) {
    case L_AND: for (int64_t i = 0; i < n; i++) op[i] = xp[i] && yp[i]; break;
    case L_OR: for (int64_t i = 0; i < n; i++) op[i] = xp[i] || yp[i]; break;
    case L_XOR: for (int64_t i = 0; i < n; i++) op[i] = xp[i] != yp[i]; break;
    default: for (int64_t i = 0; i < n; i++) op[i] = !xp[i]; break;
  }
  return NULL;
}

rill_status *rill_cpu_logical_and(rill_kernel_ctx *ctx) { return logical_run(ctx, L_AND); }
rill_status *rill_cpu_logical_or(rill_kernel_ctx *ctx) { return logical_run(ctx, L_OR); }
rill_status *rill_cpu_logical_xor(rill_kernel_ctx *ctx) { return logical_run(ctx, L_XOR); }
rill_status *rill_cpu_logical_not(rill_kernel_ctx *ctx) { return logical_run(ctx, L_NOT); }
