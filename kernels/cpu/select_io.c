/* select_input and select_output CPU kernels (operators/select_io.c): the chosen variable
 * is copied whatever it holds, a dense tensor, selected rows or a tensor array. */
#include "kernels/cpu/tensor_ops.h"

/* The branch number in Mask (int32, one element), checked against n branches. */
static rill_status *select_branch(const rill_kernel_ctx *ctx, size_t n, size_t *b) {
  const rill_tensor *m = rill_kin(ctx, 1, 0);
  const char *mn = rill_kin_name(ctx, 1, 0);
  char s[RILL_DIMS_STR_MAX];
  if (!m || !rill_tensor_is_set(m) || m->dtype != RILL_DTYPE_INT32 || rill_tensor_numel(m) != 1)
    return rill_kernel_error(ctx, "input Mask (%s) must be an int32 tensor of one element, got "
                             "%s %s", mn, m ? rill_dtype_name(m->dtype) : "nothing",
                             m ? rill_dims_str(&m->dims, s, sizeof s) : "");
  int32_t v = *(const int32_t *)rill_tensor_ptr(m);
  if (v < 0 || (size_t)v >= n)
    return rill_kernel_error(ctx, "input Mask (%s) is %d, but there are %zu branches", mn, (int)v, n);
  *b = (size_t)v;
  return NULL;
}

/* Whether variable v holds anything to pass on. */
static bool holds_value(const rill_variable *v) {
  if (!v) return false;
  switch (v->kind) {
  case RILL_VARKIND_TENSOR: return rill_tensor_is_set(&v->u.tensor);
  case RILL_VARKIND_SELECTED_ROWS:
  case RILL_VARKIND_TENSOR_ARRAY: return true;
  default: return false;
  }
}

rill_status *rill_cpu_select_input(rill_kernel_ctx *ctx) {
  size_t b;
  RILL_TRY(select_branch(ctx, ctx->nin[0], &b));
  if (!holds_value(ctx->in[0][b]))
    return rill_kernel_error(ctx, "input X[%zu] (%s), the branch Mask takes, holds no tensor", b,
                             rill_kin_name(ctx, 0, b));
  if (!ctx->out[0][0]) return rill_kernel_error(ctx, "output Out is missing");
  return rill_cpu_copy_variable(ctx, 0, b, 0, 0);
}

rill_status *rill_cpu_select_output(rill_kernel_ctx *ctx) {
  size_t b;
  RILL_TRY(select_branch(ctx, ctx->nout[0], &b));
  if (!holds_value(ctx->in[0][0]))
    return rill_kernel_error(ctx, "input X (%s) holds no tensor", rill_kin_name(ctx, 0, 0));
  if (!ctx->out[0][b]) return NULL; /* the branch taken wants nothing (an unwanted gradient) */
  return rill_cpu_copy_variable(ctx, 0, 0, 0, b);
}
