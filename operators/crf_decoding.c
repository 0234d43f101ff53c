/* crf_decoding: the best tag sequence (Viterbi) of each sequence under linear_chain_crf's
 * scores. Emission is [T, D] with one LoD level (ViterbiPath [T, 1] with its LoD) or
 * [N, S, D] with Length (ViterbiPath [N, S], 0 past each length). With Label, each path
 * element becomes 1 where the decoded tag equals the label and 0 elsewhere. */
#include "operators/op_util.h"

#include "framework/data/tensor.h"

enum { IN_EMISSION, IN_TRANSITION, IN_LABEL, IN_LENGTH };
static const rill_slot_schema inputs[] = {
    [IN_EMISSION] = {"Emission", RILL_SLOT_NO_GRAD,
                     "float [T, D] with one LoD level, or [N, S, D] with Length"},
    [IN_TRANSITION] = {"Transition", RILL_SLOT_NO_GRAD,
                       "[D + 2, D]: start scores, end scores, then tag to tag"},
    [IN_LABEL] = {"Label", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                  "int64 tags laid out as the path: compared with it when given"},
    [IN_LENGTH] = {"Length", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                   "int64 [N]: the length of each padded row"},
};
static const rill_slot_schema outputs[] = {
    {"ViterbiPath", RILL_SLOT_DTYPE_FIXED, "int64 [T, 1] (Emission's LoD) or [N, S]: the tags, or 1/0 with Label"},
};

static rill_status *crf_decoding_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *e = rill_infer_in(ctx, IN_EMISSION, 0);
  const rill_tensor_meta *t = rill_infer_in(ctx, IN_TRANSITION, 0);
  rill_tensor_meta *path = rill_infer_out(ctx, 0, 0);
  if (!e || !t || !path) return rill_infer_error(ctx, "needs inputs Emission and Transition and output ViterbiPath");
  bool padded = rill_infer_in(ctx, IN_LENGTH, 0) != NULL;
  char s[RILL_DIMS_STR_MAX];
  if (!e->known) {
    rill_meta_unknown(path);
    return NULL;
  }
  if (e->dtype != RILL_DTYPE_FP32 && e->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Emission (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, IN_EMISSION, 0), rill_dtype_name(e->dtype));
  if (e->dims.n != (padded ? 3 : 2))
    return rill_infer_error(ctx, "input Emission (%s) has shape %s, expected %s",
                            rill_infer_in_name(ctx, IN_EMISSION, 0), rill_dims_str(&e->dims, s, sizeof s),
                            padded ? "[N, S, D] (it has Length)" : "[T, D] (without Length)");
  int64_t d = e->dims.d[e->dims.n - 1];
  if (t->known) {
    if (t->dtype != e->dtype)
      return rill_infer_error(ctx, "input Transition (%s) is %s but Emission is %s",
                              rill_infer_in_name(ctx, IN_TRANSITION, 0), rill_dtype_name(t->dtype),
                              rill_dtype_name(e->dtype));
    bool ok = t->dims.n == 2;
    if (ok && d >= 0 && t->dims.d[1] >= 0) ok = t->dims.d[1] == d;
    if (ok && t->dims.d[0] >= 0 && t->dims.d[1] >= 0) ok = t->dims.d[0] == t->dims.d[1] + 2;
    if (!ok)
      return rill_infer_error(ctx, "input Transition (%s) has shape %s, expected [D + 2, D] with "
                              "D = %lld tags", rill_infer_in_name(ctx, IN_TRANSITION, 0),
                              rill_dims_str(&t->dims, s, sizeof s), (long long)d);
  }
  if (padded) {
    rill_dims pd = {.n = 2, .d = {e->dims.d[0], e->dims.d[1]}};
    rill_meta_set(path, RILL_DTYPE_INT64, &pd, 0, -1, -1);
  } else {
    rill_dims pd = {.n = 2, .d = {e->dims.d[0], 1}};
    rill_meta_set(path, RILL_DTYPE_INT64, &pd, 1, IN_EMISSION, 0);
  }
  return NULL;
}

const rill_op_schema rill_schema_crf_decoding = {
    .type = "crf_decoding",
    .doc = "ViterbiPath = the highest-scoring tag sequence of each sequence under a linear-chain "
           "CRF (Emission and Transition as linear_chain_crf's); with Label, 1 where the "
           "decoded tag equals the label, else 0.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = crf_decoding_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_EMISSION,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(crf_decoding);
