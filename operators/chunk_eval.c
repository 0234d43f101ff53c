/* chunk_eval: precision, recall and F1 of the chunks (labelled spans, as in named-entity
 * tagging) an Inference tag sequence finds against those of Label. A label encodes a tag
 * (label % tags of the scheme) and a chunk type (label / tags); num_chunk_types * tags is
 * the "other" label, outside every chunk. The sequences are Label's LoD (one level, equal
 * to Inference's), or, when Label has no LoD, rows of [N, S] (or [N, S, 1]) cut at
 * SeqLength. The chunk rules are in kernels/cpu/chunk_eval.c. */
#include <string.h>

#include "operators/op_util.h"

#include "framework/data/tensor.h"

enum { IN_INFERENCE, IN_LABEL, IN_SEQ_LENGTH };
static const rill_slot_schema inputs[] = {
    [IN_INFERENCE] = {"Inference", RILL_SLOT_NO_GRAD,
                      "int64 predicted labels: [T, 1] with one LoD level, or [N, S] padded"},
    [IN_LABEL] = {"Label", RILL_SLOT_NO_GRAD, "int64 true labels, laid out as Inference"},
    [IN_SEQ_LENGTH] = {"SeqLength", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                       "int64 [N]: the length of each padded row (Label without LoD)"},
};
static const rill_slot_schema outputs[] = {
    {"Precision", 0, "float32 [1]: correct / inferred chunks (0 when none inferred)"},
    {"Recall", 0, "float32 [1]: correct / labelled chunks (0 when none labelled)"},
    {"F1-Score", 0, "float32 [1]: 2 P R / (P + R) (0 when none correct)"},
    {"NumInferChunks", 0, "int64 [1]: chunks in Inference, excluded types not counted"},
    {"NumLabelChunks", 0, "int64 [1]: chunks in Label, excluded types not counted"},
    {"NumCorrectChunks", 0, "int64 [1]: chunks in both (same start, end and type)"},
};
static const rill_attr_schema attrs[] = {
    {"num_chunk_types", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0),
     "chunk types; the other label is num_chunk_types * the scheme's tags"},
    {"chunk_scheme", RILL_ATTR_STRING, 0, RILL_DEF_STRING("IOB"),
     "IOB (B 0, I 1), IOE (I 0, E 1), IOBES (B 0, I 1, E 2, S 3) or plain (one tag)"},
    {"excluded_chunk_types", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "chunk types left out of every count"},
};

static rill_status *chunk_eval_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INFERENCE, 0), *y = rill_infer_in(ctx, IN_LABEL, 0);
  if (!x || !y) return rill_infer_error(ctx, "needs inputs Inference and Label");
  for (size_t o = 0; o < RILL_COUNTOF(outputs); o++)
    if (!rill_infer_out(ctx, o, 0))
      return rill_infer_error(ctx, "needs output %s", outputs[o].name);
  const char *scheme = ctx->attrs[RILL_CHUNK_EVAL_ATTR_CHUNK_SCHEME].v.s;
  if (!scheme || (strcmp(scheme, "IOB") && strcmp(scheme, "IOE") && strcmp(scheme, "IOBES") &&
                  strcmp(scheme, "plain")))
    return rill_infer_error(ctx, "attribute chunk_scheme is \"%s\", expected IOB, IOE, IOBES or plain",
                            scheme ? scheme : "");
  if (ctx->attrs[RILL_CHUNK_EVAL_ATTR_NUM_CHUNK_TYPES].v.i <= 0)
    return rill_infer_error(ctx, "attribute num_chunk_types is %d, expected at least 1",
                            (int)ctx->attrs[RILL_CHUNK_EVAL_ATTR_NUM_CHUNK_TYPES].v.i);
  for (size_t s = IN_INFERENCE; s <= IN_LABEL; s++) {
    const rill_tensor_meta *m = s == IN_INFERENCE ? x : y;
    if (m->known && m->dtype != RILL_DTYPE_INT64)
      return rill_infer_error(ctx, "input %s (%s) is %s, expected int64", inputs[s].name,
                              rill_infer_in_name(ctx, s, 0), rill_dtype_name(m->dtype));
  }
  if (x->known && y->known && x->dims.n == y->dims.n) {
    bool same = true;
    for (int32_t i = 0; i < x->dims.n; i++)
      if (x->dims.d[i] >= 0 && y->dims.d[i] >= 0 && x->dims.d[i] != y->dims.d[i]) same = false;
    if (!same) {
      char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
      return rill_infer_error(ctx, "input Label (%s) has shape %s but Inference (%s) has %s",
                              rill_infer_in_name(ctx, IN_LABEL, 0), rill_dims_str(&y->dims, a, sizeof a),
                              rill_infer_in_name(ctx, IN_INFERENCE, 0),
                              rill_dims_str(&x->dims, b, sizeof b));
    }
  } else if (x->known && y->known) {
    return rill_infer_error(ctx, "input Label (%s) has rank %d but Inference (%s) has rank %d",
                            rill_infer_in_name(ctx, IN_LABEL, 0), (int)y->dims.n,
                            rill_infer_in_name(ctx, IN_INFERENCE, 0), (int)x->dims.n);
  }
  rill_dims one = {.n = 1, .d = {1}};
  for (size_t o = 0; o < RILL_COUNTOF(outputs); o++)
    rill_meta_set(rill_infer_out(ctx, o, 0), o < 3 ? RILL_DTYPE_FP32 : RILL_DTYPE_INT64, &one, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_chunk_eval = {
    .type = "chunk_eval",
    .doc = "Precision, Recall and F1-Score of the chunks Inference finds against Label's "
           "(IOB, IOE, IOBES or plain tags), with the three chunk counts.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = chunk_eval_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_INFERENCE,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(chunk_eval);
