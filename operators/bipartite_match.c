/* bipartite_match: for each instance (DistMat's LoD gives its rows; no LoD: one instance)
 * of a [K, M] distance matrix, greedily matches columns to rows by the largest distance
 * first, each row and column at most once; with match_type per_prediction each column
 * left unmatched then takes its best row when that distance reaches dist_threshold.
 * Outputs [N, M]: the matched row within the instance (-1: none) and its distance
 * (0: none). */
#include <string.h>

#include "operators/op_util.h"

enum { IN_DIST };
enum { OUT_INDICES, OUT_DIST };

static const rill_slot_schema inputs[] = {
    [IN_DIST] = {"DistMat", RILL_SLOT_NO_GRAD,
                 "[K, M] distances, larger is better; one LoD level splits the rows into instances"},
};
static const rill_slot_schema outputs[] = {
    [OUT_INDICES] = {"ColToRowMatchIndices", 0, "int32 [N, M]: matched row per column, -1 none"},
    [OUT_DIST] = {"ColToRowMatchDist", 0, "[N, M]: the matched distance, 0 none"},
};
static const rill_attr_schema attrs[] = {
    {"match_type", RILL_ATTR_STRING, 0, RILL_DEF_STRING("bipartite"),
     "bipartite, or per_prediction (then each unmatched column's best row over the threshold)"},
    {"dist_threshold", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.5f),
     "per_prediction: the smallest distance of an extra match"},
};

static rill_status *bipartite_match_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *dist = rill_infer_in(ctx, IN_DIST, 0);
  rill_tensor_meta *idx = rill_infer_out(ctx, OUT_INDICES, 0), *md = rill_infer_out(ctx, OUT_DIST, 0);
  if (!dist || !idx || !md)
    return rill_infer_error(ctx, "needs input DistMat and outputs ColToRowMatchIndices and "
                            "ColToRowMatchDist");
  const char *type = ctx->attrs[RILL_BIPARTITE_MATCH_ATTR_MATCH_TYPE].v.s;
  if (!type || (strcmp(type, "bipartite") != 0 && strcmp(type, "per_prediction") != 0))
    return rill_infer_error(ctx, "attribute match_type \"%s\" is not bipartite or per_prediction",
                            type ? type : "");
  if (!dist->known) {
    rill_meta_unknown(idx);
    rill_meta_unknown(md);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  const char *name = rill_infer_in_name(ctx, IN_DIST, 0);
  if (dist->dtype != RILL_DTYPE_FP32 && dist->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input DistMat (%s) is %s, expected float32 or float64", name,
                            rill_dtype_name(dist->dtype));
  if (dist->dims.n != 2)
    return rill_infer_error(ctx, "input DistMat (%s) has shape %s, expected [K, M]", name,
                            rill_dims_str(&dist->dims, s, sizeof s));
  rill_dims d = {.n = 2, .d = {-1, dist->dims.d[1]}};
  rill_meta_set(idx, RILL_DTYPE_INT32, &d, 0, -1, -1);
  rill_meta_set(md, dist->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_bipartite_match = {
    .type = "bipartite_match",
    .doc = "Greedy bipartite matching of columns to rows by the largest distance.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = bipartite_match_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_DIST,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(bipartite_match);
