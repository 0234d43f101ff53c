/* crf_decoding: the best tag sequence (Viterbi) of each sequence under linear_chain_crf's
 * scores. Emission is [T, D] with one LoD level (ViterbiPath [T, 1] with its LoD) or
 * [N, S, D] with Length (ViterbiPath [N, S], 0 past each length). With Label, each path
 * element becomes 1 where the decoded tag equals the label and 0 elsewhere. */
#include "operators/crf.h"

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
  if (!e->known) {
    rill_meta_unknown(path);
    return NULL;
  }
  int64_t d;
  RILL_TRY(rill_crf_check_inputs(ctx, IN_EMISSION, IN_TRANSITION, padded, &d));
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
