#include "support/plugin_infer.h"

rill_status *plugin_infer_same(rill_op_context *ctx, void *user) {
  (void)user;
  rill_dtype dt;
  int64_t dims[RILL_MAX_DIMS];
  size_t n;
  if (!rill_op_context_input_meta(ctx, 0, 0, &dt, dims, &n)) return NULL;
  return rill_op_context_set_output_meta(ctx, 0, 0, dt, dims, n, 0);
}
