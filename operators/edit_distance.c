/* edit_distance: the Levenshtein distance between each hypothesis and reference token
 * sequence (insertions, deletions and substitutions cost 1), optionally divided by the
 * reference's length. The sequences are Hyps'/Refs' LoD (one level), or the rows of
 * padded [B, T] tensors cut at HypsLength/RefsLength. */
#include "operators/op_util.h"

#include "framework/data/tensor.h"

enum { ED_HYPS, ED_REFS, ED_HYPS_LEN, ED_REFS_LEN };
static const rill_slot_schema inputs[] = {
    [ED_HYPS] = {"Hyps", RILL_SLOT_NO_GRAD, "int64 hypotheses: LoD [T, 1], or [B, T] padded"},
    [ED_REFS] = {"Refs", RILL_SLOT_NO_GRAD, "int64 references, laid out as Hyps"},
    [ED_HYPS_LEN] = {"HypsLength", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                     "int64 [B]: lengths of padded Hyps rows"},
    [ED_REFS_LEN] = {"RefsLength", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                     "int64 [B]: lengths of padded Refs rows"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "float32 [B, 1]: the distance of each pair"},
    {"SequenceNum", 0, "int64 [1]: B"},
};
static const rill_attr_schema attrs[] = {
    {"normalized", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
     "divide each distance by its reference's length (which must not be 0)"},
};

static rill_status *edit_distance_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *h = rill_infer_in(ctx, ED_HYPS, 0), *r = rill_infer_in(ctx, ED_REFS, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0), *num = rill_infer_out(ctx, 1, 0);
  if (!h || !r) return rill_infer_error(ctx, "needs inputs Hyps and Refs");
  if (!out || !num) return rill_infer_error(ctx, "needs outputs Out and SequenceNum");
  bool padded = rill_infer_in(ctx, ED_HYPS_LEN, 0) != NULL;
  if (padded != (rill_infer_in(ctx, ED_REFS_LEN, 0) != NULL))
    return rill_infer_error(ctx, "needs both HypsLength and RefsLength, or neither");
  rill_dims one = {.n = 1, .d = {1}}, od = {.n = 2, .d = {-1, 1}};
  rill_meta_set(num, RILL_DTYPE_INT64, &one, 0, -1, -1);
  for (int s = ED_HYPS; s <= ED_REFS; s++) {
    const rill_tensor_meta *m = s == ED_HYPS ? h : r;
    if (m->known && m->dtype != RILL_DTYPE_INT64 && m->dtype != RILL_DTYPE_INT32)
      return rill_infer_error(ctx, "input %s (%s) is %s, expected int64 or int32",
                              inputs[s].name, rill_infer_in_name(ctx, (size_t)s, 0),
                              rill_dtype_name(m->dtype));
  }
  const rill_tensor *t = rill_infer_tensor(ctx, ED_HYPS, 0);
  if (padded) {
    const rill_tensor_meta *hl = rill_infer_in(ctx, ED_HYPS_LEN, 0);
    if (hl->known && hl->dims.n >= 1) od.d[0] = hl->dims.d[0];
  } else if (t) {
    if (t->lod.nlevels != 1)
      return rill_infer_error(ctx, "input Hyps (%s) has %zu LoD levels, expected 1 (or give "
                              "HypsLength and RefsLength)", rill_infer_in_name(ctx, ED_HYPS, 0),
                              t->lod.nlevels);
    od.d[0] = (int64_t)t->lod.levels[0].n - 1;
  }
  rill_meta_set(out, RILL_DTYPE_FP32, &od, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_edit_distance = {
    .type = "edit_distance",
    .doc = "Out[i] = the Levenshtein distance of hypothesis i to reference i (divided by the "
           "reference's length when normalized); SequenceNum = the number of pairs.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_LOD,
    .infer = edit_distance_infer,
    .grad = NULL,
    .kernel_dtype_slot = ED_HYPS,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(edit_distance);
