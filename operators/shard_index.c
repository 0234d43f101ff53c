/* shard_index: the part of each class index that one shard owns. The index_num classes
 * are split into nshards blocks of shard_size = ceil(index_num / nshards); an index v in
 * block shard_id becomes v - shard_id * shard_size (v % shard_size), any other becomes
 * ignore_value. X is int32 or int64 [..., 1] (at least 2-D); Out has X's shape, dtype
 * and LoD. Every index must lie in [0, index_num). No gradient. */
#include "operators/op_util.h"

enum { SI_A_INDEX_NUM, SI_A_NSHARDS, SI_A_SHARD_ID, SI_A_IGNORE_VALUE };

static const rill_slot_schema inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "int32 or int64 [..., 1] class indices in [0, index_num)"}};
static const rill_slot_schema outputs[] = {{"Out", 0, "X's shape: shard-local index or ignore_value"}};
static const rill_attr_schema attrs[] = {
    [SI_A_INDEX_NUM] = {"index_num", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
                        "the number of classes, > 0"},
    [SI_A_NSHARDS] = {"nshards", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
                      "the number of shards, > 0"},
    [SI_A_SHARD_ID] = {"shard_id", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
                       "this shard, in [0, nshards)"},
    [SI_A_IGNORE_VALUE] = {"ignore_value", RILL_ATTR_INT, 0, RILL_DEF_INT(-1),
                           "Out's value for an index of another shard"},
};

static rill_status *shard_index_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x;
  rill_tensor_meta *out;
  RILL_TRY(rill_infer_unary_begin(ctx, &x, &out));
  int32_t num = ctx->attrs[SI_A_INDEX_NUM].v.i, ns = ctx->attrs[SI_A_NSHARDS].v.i;
  int32_t id = ctx->attrs[SI_A_SHARD_ID].v.i;
  if (num <= 0) return rill_infer_error(ctx, "attribute index_num is %d, expected > 0", (int)num);
  if (ns <= 0) return rill_infer_error(ctx, "attribute nshards is %d, expected > 0", (int)ns);
  if (id < 0 || id >= ns)
    return rill_infer_error(ctx, "attribute shard_id is %d, outside [0, nshards = %d)", (int)id,
                            (int)ns);
  if (!x) return NULL;
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  char s[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected int32 or int64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n < 2 || (x->dims.d[x->dims.n - 1] >= 0 && x->dims.d[x->dims.n - 1] != 1))
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected at least 2-D with last "
                            "dim 1", xn, rill_dims_str(&x->dims, s, sizeof s));
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_shard_index = {
    .type = "shard_index",
    .doc = "Class indices local to one shard of ceil(index_num / nshards), others ignore_value.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = shard_index_infer,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(shard_index);
