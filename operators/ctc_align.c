/* ctc_align: CTC's greedy alignment to a label sequence. Each sequence of token ids
 * loses its runs of a repeated token but the first (with merge_repeated) and then its
 * blank tokens; a blank ends a run, so "a blank a" keeps both a's.
 *
 * LoD form: Input [T, 1] with one LoD level; Output [T', 1] holds the aligned sequences
 * one after another under the new LoD. When every sequence comes out empty, Output is
 * the single row [-1] under an all-zero LoD (Paddle 1.8's marker of "nothing decoded").
 * Padded form (InputLength [N, 1] given): Input [N, T], row n cut at InputLength[n];
 * Output [N, T] holds row n's alignment followed by padding_value, OutputLength [N, 1]
 * its length. InputLength and OutputLength have Input's dtype, as Paddle's kernel reads
 * and writes them. */
#include "operators/op_util.h"

enum { IN_INPUT, IN_INPUT_LENGTH };
enum { OUT_OUTPUT, OUT_OUTPUT_LENGTH };

static const rill_slot_schema inputs[] = {
    [IN_INPUT] = {"Input", RILL_SLOT_NO_GRAD,
                  "int32 / int64 token ids: LoD [T, 1], or [N, T] padded with InputLength"},
    [IN_INPUT_LENGTH] = {"InputLength", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                         "[N, 1] lengths of the padded rows, Input's dtype"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUTPUT] = {"Output", 0, "the aligned sequences: LoD [T', 1], or [N, T] padded"},
    [OUT_OUTPUT_LENGTH] = {"OutputLength", RILL_SLOT_DISPENSABLE,
                           "[N, 1] lengths of the padded output rows (padded form)"},
};
static const rill_attr_schema attrs[] = {
    {"blank", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the blank token, removed"},
    {"merge_repeated", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),
     "keep one token of each run of repeats"},
    {"padding_value", RILL_ATTR_INT, 0, RILL_DEF_INT(0),
     "fills the padded output rows after their alignment"},
};

static rill_status *ctc_align_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_INPUT, 0);
  const rill_tensor_meta *len = rill_infer_in(ctx, IN_INPUT_LENGTH, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUTPUT, 0);
  rill_tensor_meta *olen = rill_infer_out(ctx, OUT_OUTPUT_LENGTH, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input Input and output Output");
  if (len && !olen)
    return rill_infer_error(ctx, "input InputLength (%s) is given without output OutputLength",
                            rill_infer_in_name(ctx, IN_INPUT_LENGTH, 0));
  if (!x->known) {
    rill_meta_unknown(out);
    if (olen) rill_meta_unknown(olen);
    return NULL;
  }
  char s[RILL_DIMS_STR_MAX];
  const char *xn = rill_infer_in_name(ctx, IN_INPUT, 0);
  if (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input Input (%s) is %s, expected int32 or int64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 2)
    return rill_infer_error(ctx, "input Input (%s) has shape %s, expected [T, 1] (LoD) or [N, T] "
                            "(padded)", xn, rill_dims_str(&x->dims, s, sizeof s));
  if (len) {
    if (len->known && len->dtype != x->dtype)
      return rill_infer_error(ctx, "input InputLength (%s) is %s, expected Input's dtype %s",
                              rill_infer_in_name(ctx, IN_INPUT_LENGTH, 0),
                              rill_dtype_name(len->dtype), rill_dtype_name(x->dtype));
    rill_dims ld = {.n = 2, .d = {x->dims.d[0], 1}};
    rill_meta_set(out, x->dtype, &x->dims, 0, -1, -1);
    rill_meta_set(olen, x->dtype, &ld, 0, -1, -1);
    return NULL;
  }
  rill_dims od = {.n = 2, .d = {-1, 1}};
  rill_meta_set(out, x->dtype, &od, x->lod_level > 0 ? x->lod_level : 1, -1, -1);
  if (olen) {
    rill_dims ld = {.n = 2, .d = {-1, 1}};
    rill_meta_set(olen, x->dtype, &ld, 0, -1, -1);
  }
  return NULL;
}

const rill_op_schema rill_schema_ctc_align = {
    .type = "ctc_align",
    .doc = "CTC greedy alignment: merges repeated tokens and removes blanks from each "
           "sequence of token ids (LoD, or padded rows with their lengths).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = ctc_align_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_INPUT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(ctc_align);
