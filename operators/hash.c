/* hash: Out[r, k, 0] = XXH64(the bytes of X's row r, seed k) % mod_by for k < num_hash, as
 * Paddle 1.8.5's hash op (X int32 or int64 [N, D], little-endian bytes; Out of X's dtype
 * [N, num_hash, 1], X's LoD kept). No gradient. */
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {{"X", RILL_SLOT_NO_GRAD, "int32/int64 [N, D] rows"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "[N, num_hash, 1] of X's dtype"}};
static const rill_attr_schema attrs[] = {
    {"num_hash", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "hashes per row (seeds 0 .. num_hash-1)"},
    {"mod_by", RILL_ATTR_INT, 0, RILL_DEF_INT(100000), "each hash is taken modulo mod_by"},
};

static rill_status *hash_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  int32_t nh = ctx->attrs[RILL_HASH_ATTR_NUM_HASH].v.i, mod = ctx->attrs[RILL_HASH_ATTR_MOD_BY].v.i;
  if (nh <= 0 || mod <= 0)
    return rill_infer_error(ctx, "attributes num_hash %d and mod_by %d must be positive",
                            (int)nh, (int)mod);
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dims.n != 2 || (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64))
    return rill_infer_error(ctx, "input X (%s) must be int32/int64 [N, D], not %s of rank %d",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype),
                            (int)x->dims.n);
  rill_dims d = {.n = 3, .d = {x->dims.d[0], nh, 1}};
  rill_meta_set(out, x->dtype, &d, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_hash = {
    .type = "hash",
    .doc = "Out[r, k] = XXH64(X row r, seed k) % mod_by, k < num_hash.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = hash_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(hash);
