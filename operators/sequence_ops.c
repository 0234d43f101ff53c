/* Fluid 1.x's sequence ops on LoD tensors, with Paddle 1.8's slots, attributes and
 * gradient makers. Row counts depend on the LoD, so the forward kernels of expand,
 * expand_as, pad and unpad size their outputs (shape inference leaves -1 there).
 *
 *   sequence_reverse(X) -> Y            each sequence of X's last level reversed; its
 *                                       gradient is sequence_reverse of Y@GRAD
 *   sequence_expand(X, Y) -> Out        sequence i of X (row i without LoD) repeated by
 *                                       the length of sequence i of Y's level ref_level
 *   sequence_expand_as(X, Y) -> Out     row i of X repeated by the length of sequence i
 *                                       of Y's level 0; Out takes that level as LoD
 *   sequence_pad(X, PadValue) -> Out, Length   [sequences, padded_length, ...]
 *   sequence_unpad(X, Length) -> Out    the first Length[i] steps of each X[i]
 *   sequence_enumerate(X) -> Out        windows of win_size ids, pad_value past the end
 *   sequence_concat(X...) -> Out        sequence i of every X, one after another
 *   sequence_slice(X, Offset, Length) -> Out   rows Offset[i].. of sequence i
 *   sequence_reshape(X) -> Out          each sequence's elements as rows of new_dim */
#include <stdio.h>
#include <string.h>

#include "framework/transform/opedit.h"
#include "operators/math_grad.h"
#include "operators/op_util.h"

static const rill_slot_schema x_only[] = {{"X", 0, "LoD tensor"}};
static const rill_slot_schema x_grad_out[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"}};

/* Out: `from`'s dtype and trailing dims, rows unknown (-1) until the kernel runs;
 * dim 1 set to `dim1` when dim1 is not 0 (sequence_pad's step axis). */
static void rows_unknown(rill_tensor_meta *out, const rill_tensor_meta *from, int32_t lod) {
  rill_dims d = from->dims;
  if (d.n > 0) d.d[0] = -1;
  rill_meta_set(out, from->dtype, &d, lod, -1, -1);
}

/* The gradient ops' inference: every input present, X@GRAD (output 0, each argument)
 * takes X's meta (input 0). */
static rill_status *x_grad_infer(rill_infer_ctx *ctx) {
  for (size_t s = 0; s < ctx->schema->ninputs; s++)
    if (!rill_infer_in(ctx, s, 0))
      return rill_infer_error(ctx, "needs input %s", ctx->schema->inputs[s].name);
  rill_grad_infer_like(ctx, 0, 0);
  return NULL;
}

/* ---- sequence_reverse ---- */

static const rill_slot_schema reverse_outputs[] = {{"Y", 0, "X with each sequence reversed"}};

static rill_status *reverse_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *y = rill_infer_out(ctx, 0, 0);
  if (!x || !y) return rill_infer_error(ctx, "needs input X and output Y");
  if (!x->known) {
    rill_meta_unknown(y);
    return NULL;
  }
  if (x->dims.n < 1)
    return rill_infer_error(ctx, "input X (%s) needs a row dimension", rill_infer_in_name(ctx, 0, 0));
  rill_meta_set(y, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

/* The name of the gradient of slot `slot`'s first argument of the forward op. */
static rill_status *grad_name(rill_grad_ctx *ctx, const rill_op_slot *s, char *buf, size_t n) {
  if (!s || s->nargs != 1)
    return rill_error(RILL_INVALID_ARGUMENT, "%s: a slot needs one argument", ctx->schema->type);
  if ((size_t)snprintf(buf, n, "%s" RILL_GRAD_SUFFIX, s->args[0]) >= n)
    return rill_error(RILL_INVALID_ARGUMENT, "%s: variable name '%s' is too long",
                      ctx->schema->type, s->args[0]);
  return NULL;
}

/* Paddle's maker: X@GRAD = sequence_reverse(Y@GRAD). */
static rill_status *reverse_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  char dy[1024], dx[1024];
  RILL_TRY(grad_name(ctx, rill_op_output(ctx->fwd, "Y"), dy, sizeof dy));
  RILL_TRY(grad_name(ctx, rill_op_input(ctx->fwd, "X"), dx, sizeof dx));
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "sequence_reverse", &op));
  const char *in = dy, *out = dx;
  RILL_TRY(rill_opd_input(op, "X", &in, 1));
  return rill_opd_output(op, "Y", &out, 1);
}

const rill_op_schema rill_schema_sequence_reverse = {
    .type = "sequence_reverse",
    .doc = "Y = X with the rows of each sequence of its last LoD level in reverse order.",
    .inputs = x_only,
    .ninputs = RILL_COUNTOF(x_only),
    .outputs = reverse_outputs,
    .noutputs = RILL_COUNTOF(reverse_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = reverse_infer,
    .grad = reverse_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- sequence_expand and sequence_expand_as ---- */

static const rill_slot_schema expand_inputs[] = {
    {"X", 0, "the rows (or, with one LoD level, the sequences) to repeat"},
    {"Y", RILL_SLOT_NO_GRAD, "LoD tensor whose sequence lengths give the repeats"},
};
static const rill_slot_schema expand_outputs[] = {{"Out", 0, "the repeated rows"}};
static const rill_attr_schema expand_attrs[] = {
    {"ref_level", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "the level of Y's LoD (-1: its last)"},
};

static rill_status *expand_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !y || !out) return rill_infer_error(ctx, "needs inputs X, Y and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dims.n < 1)
    return rill_infer_error(ctx, "input X (%s) needs a row dimension", rill_infer_in_name(ctx, 0, 0));
  rows_unknown(out, x, strcmp(ctx->schema->type, "sequence_expand_as") ? x->lod_level : 1);
  return NULL;
}

static rill_status *expand_maker(rill_grad_ctx *ctx) {
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ctx->schema->type);
  return rill_grad_emit(ctx, type, RILL_NAMES("X", "Y"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

static const rill_slot_schema expand_grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Y", 0, "forward Y (its LoD gives the repeats)"},
    {"Out@GRAD", 0, "gradient of Out"},
};

#define EXPAND_SCHEMAS(NAME, ATTRS, NATTRS, DOC)                                           \
  const rill_op_schema rill_schema_##NAME = {                                             \
      .type = #NAME,                                                                      \
      .doc = DOC,                                                                         \
      .inputs = expand_inputs,                                                            \
      .ninputs = RILL_COUNTOF(expand_inputs),                                             \
      .outputs = expand_outputs,                                                          \
      .noutputs = RILL_COUNTOF(expand_outputs),                                           \
      .attrs = ATTRS,                                                                     \
      .nattrs = NATTRS,                                                                   \
      .flags = RILL_OP_KERNEL_SHAPES,                                                     \
      .infer = expand_infer,                                                              \
      .grad = expand_maker,                                                               \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };                                                                                      \
  const rill_op_schema rill_schema_##NAME##_grad = {                                      \
      .type = #NAME "_grad",                                                              \
      .doc = "X@GRAD: the sum of Out@GRAD over each row's copies.",                       \
      .inputs = expand_grad_inputs,                                                       \
      .ninputs = RILL_COUNTOF(expand_grad_inputs),                                        \
      .outputs = x_grad_out,                                                              \
      .noutputs = RILL_COUNTOF(x_grad_out),                                               \
      .attrs = ATTRS,                                                                     \
      .nattrs = NATTRS,                                                                   \
      .flags = 0,                                                                         \
      .infer = x_grad_infer,                                                              \
      .grad = NULL,                                                                       \
      .kernel_dtype_slot = 0,                                                             \
      .dtype_attr = -1,                                                                   \
  };

EXPAND_SCHEMAS(sequence_expand, expand_attrs, RILL_COUNTOF(expand_attrs),
               "Repeats sequence i of X (row i without LoD) as many times as sequence i of "
               "Y's level ref_level is long.")
EXPAND_SCHEMAS(sequence_expand_as, NULL, 0,
               "Repeats row i of X as many times as sequence i of Y's level 0 is long; Out "
               "takes that level as its LoD.")

/* ---- sequence_pad and sequence_unpad ---- */

static const rill_slot_schema pad_inputs[] = {
    {"X", 0, "LoD tensor [T, ...] of sequences (its last level)"},
    {"PadValue", RILL_SLOT_NO_GRAD, "X's dtype: one value, or one step ([...] of X's trailing dims)"},
};
static const rill_slot_schema pad_outputs[] = {
    {"Out", 0, "[sequences, padded_length, ...]"},
    {"Length", 0, "int64 [sequences]: each sequence's length"},
};
static const rill_attr_schema pad_attrs[] = {
    {"padded_length", RILL_ATTR_INT, 0, RILL_DEF_INT(-1),
     "steps per sequence; -1: the longest sequence's length"},
};

static rill_status *pad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0), *len = rill_infer_out(ctx, 1, 0);
  if (!x || !rill_infer_in(ctx, 1, 0) || !out || !len)
    return rill_infer_error(ctx, "needs inputs X, PadValue and outputs Out, Length");
  if (!x->known) {
    rill_meta_unknown(out);
    rill_meta_unknown(len);
    return NULL;
  }
  if (x->dims.n < 1 || x->dims.n >= RILL_MAX_DIMS)
    return rill_infer_error(ctx, "input X (%s) has %d dims, expected 1 to %d",
                            rill_infer_in_name(ctx, 0, 0), (int)x->dims.n, RILL_MAX_DIMS - 1);
  int32_t padded = ctx->attrs[RILL_SEQUENCE_PAD_ATTR_PADDED_LENGTH].v.i;
  rill_dims d = {.n = x->dims.n + 1};
  d.d[0] = -1;
  d.d[1] = padded > 0 ? padded : -1;
  for (int i = 1; i < x->dims.n; i++) d.d[i + 1] = x->dims.d[i];
  if (x->dims.n == 1) d.n = 2; /* [T] -> [sequences, padded_length] */
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  rill_dims ld = {.n = 1, .d = {-1}};
  rill_meta_set(len, RILL_DTYPE_INT64, &ld, 0, -1, -1);
  return NULL;
}

static rill_status *pad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "sequence_pad_grad", RILL_NAMES("X"), RILL_NAMES("Out"),
                        RILL_NAMES("X"));
}

const rill_op_schema rill_schema_sequence_pad = {
    .type = "sequence_pad",
    .doc = "Out[i] = sequence i of X (its last LoD level) followed by PadValue up to "
           "padded_length steps; Length[i] its length.",
    .inputs = pad_inputs,
    .ninputs = RILL_COUNTOF(pad_inputs),
    .outputs = pad_outputs,
    .noutputs = RILL_COUNTOF(pad_outputs),
    .attrs = pad_attrs,
    .nattrs = RILL_COUNTOF(pad_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = pad_infer,
    .grad = pad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema pad_grad_inputs[] = {
    {"X", 0, "forward X (its LoD)"},
    {"Out@GRAD", 0, "gradient of Out"},
};

const rill_op_schema rill_schema_sequence_pad_grad = {
    .type = "sequence_pad_grad",
    .doc = "X@GRAD: the unpadded steps of Out@GRAD.",
    .inputs = pad_grad_inputs,
    .ninputs = RILL_COUNTOF(pad_grad_inputs),
    .outputs = x_grad_out,
    .noutputs = RILL_COUNTOF(x_grad_out),
    .attrs = pad_attrs,
    .nattrs = RILL_COUNTOF(pad_attrs),
    .flags = 0,
    .infer = x_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema unpad_inputs[] = {
    {"X", 0, "[N, L, ...] padded sequences"},
    {"Length", RILL_SLOT_NO_GRAD, "int64 [N]: how many steps of each to keep"},
};
static const rill_slot_schema unpad_outputs[] = {{"Out", 0, "[sum of Length, ...], one LoD level"}};

static rill_status *unpad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *len = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !len || !out) return rill_infer_error(ctx, "needs inputs X, Length and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dims.n < 2)
    return rill_infer_error(ctx, "input X (%s) has %d dims, expected [N, L, ...]",
                            rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  if (len->known && len->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input Length (%s) is %s, expected int64",
                            rill_infer_in_name(ctx, 1, 0), rill_dtype_name(len->dtype));
  rill_dims d = {.n = x->dims.n - 1};
  d.d[0] = -1;
  for (int i = 2; i < x->dims.n; i++) d.d[i - 1] = x->dims.d[i];
  if (d.n == 1) { /* [N, L] -> [T, 1], as Paddle */
    d.n = 2;
    d.d[1] = 1;
  }
  rill_meta_set(out, x->dtype, &d, 1, -1, -1);
  return NULL;
}

static rill_status *unpad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, "sequence_unpad_grad", RILL_NAMES("X", "Length"), RILL_NAMES("Out"),
                        RILL_NAMES("X"));
}

const rill_op_schema rill_schema_sequence_unpad = {
    .type = "sequence_unpad",
    .doc = "Out = the first Length[i] steps of each X[i], concatenated, with one LoD level.",
    .inputs = unpad_inputs,
    .ninputs = RILL_COUNTOF(unpad_inputs),
    .outputs = unpad_outputs,
    .noutputs = RILL_COUNTOF(unpad_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = unpad_infer,
    .grad = unpad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema unpad_grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Length", 0, "forward Length"},
    {"Out@GRAD", 0, "gradient of Out"},
};

const rill_op_schema rill_schema_sequence_unpad_grad = {
    .type = "sequence_unpad_grad",
    .doc = "X@GRAD: Out@GRAD's steps back in place, zeros in the padding.",
    .inputs = unpad_grad_inputs,
    .ninputs = RILL_COUNTOF(unpad_grad_inputs),
    .outputs = x_grad_out,
    .noutputs = RILL_COUNTOF(x_grad_out),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = x_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- sequence_enumerate ---- */

static const rill_slot_schema enum_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "int32/int64 ids [T] or [T, 1], one LoD level"},
};
static const rill_slot_schema enum_outputs[] = {{"Out", 0, "[T, win_size], X's LoD"}};
static const rill_attr_schema enum_attrs[] = {
    {"win_size", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0), "ids per window (1 or more)"},
    {"pad_value", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "the id past a sequence's end"},
};

static rill_status *enum_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  int32_t win = ctx->attrs[RILL_SEQUENCE_ENUMERATE_ATTR_WIN_SIZE].v.i;
  if (win < 1) return rill_infer_error(ctx, "attribute win_size is %d, expected 1 or more", (int)win);
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  const char *xn = rill_infer_in_name(ctx, 0, 0);
  if (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected int32 or int64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n < 1 || x->dims.n > 2 || (x->dims.n == 2 && x->dims.d[1] != 1))
    return rill_infer_error(ctx, "input X (%s) must be [T] or [T, 1]", xn);
  rill_dims d = {.n = 2, .d = {x->dims.d[0], win}};
  rill_meta_set(out, x->dtype, &d, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_sequence_enumerate = {
    .type = "sequence_enumerate",
    .doc = "Out[t] = the win_size ids of X from t on, pad_value past the end of t's sequence.",
    .inputs = enum_inputs,
    .ninputs = RILL_COUNTOF(enum_inputs),
    .outputs = enum_outputs,
    .noutputs = RILL_COUNTOF(enum_outputs),
    .attrs = enum_attrs,
    .nattrs = RILL_COUNTOF(enum_attrs),
    .flags = 0,
    .infer = enum_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- sequence_concat, sequence_slice, sequence_reshape ---- */

static const rill_slot_schema concat_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE, "LoD tensors of one LoD level, as many sequences each"},
};
static const rill_slot_schema out_only[] = {{"Out", 0, "LoD tensor, one level"}};

static rill_status *concat_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  const rill_tensor_meta *x0 = rill_infer_in(ctx, 0, 0);
  if (!x0 || !out) return rill_infer_error(ctx, "needs inputs X and output Out");
  for (size_t i = 0; i < ctx->nin[0]; i++) {
    const rill_tensor_meta *x = rill_infer_in(ctx, 0, i);
    if (!x || !x->known) {
      rill_meta_unknown(out);
      return NULL;
    }
    if (x->dtype != x0->dtype || x->dims.n != x0->dims.n || x->dims.n < 1)
      return rill_infer_error(ctx, "input X (%s) is %s of %d dims but input X (%s) is %s of %d",
                              rill_infer_in_name(ctx, 0, i), rill_dtype_name(x->dtype),
                              (int)x->dims.n, rill_infer_in_name(ctx, 0, 0),
                              rill_dtype_name(x0->dtype), (int)x0->dims.n);
  }
  rows_unknown(out, x0, 1);
  return NULL;
}

static rill_status *x_grad_maker(rill_grad_ctx *ctx) {
  char type[64];
  snprintf(type, sizeof type, "%s_grad", ctx->schema->type);
  if (ctx->schema->ninputs == 3)
    return rill_grad_emit(ctx, type, RILL_NAMES("X", "Offset", "Length"), RILL_NAMES("Out"),
                          RILL_NAMES("X"));
  return rill_grad_emit(ctx, type, RILL_NAMES("X"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

const rill_op_schema rill_schema_sequence_concat = {
    .type = "sequence_concat",
    .doc = "Out's sequence i = sequence i of X[0], then of X[1], ...",
    .inputs = concat_inputs,
    .ninputs = RILL_COUNTOF(concat_inputs),
    .outputs = out_only,
    .noutputs = RILL_COUNTOF(out_only),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = concat_infer,
    .grad = x_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema concat_grad_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE, "forward X"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema concat_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE, "gradients of X"},
};

const rill_op_schema rill_schema_sequence_concat_grad = {
    .type = "sequence_concat_grad",
    .doc = "X[k]@GRAD: the rows of Out@GRAD that came from X[k].",
    .inputs = concat_grad_inputs,
    .ninputs = RILL_COUNTOF(concat_grad_inputs),
    .outputs = concat_grad_outputs,
    .noutputs = RILL_COUNTOF(concat_grad_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = x_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema slice_inputs[] = {
    {"X", 0, "LoD tensor, one level"},
    {"Offset", RILL_SLOT_NO_GRAD, "int64 [N] or [N, 1]: first row of each slice, within its sequence"},
    {"Length", RILL_SLOT_NO_GRAD, "int64 [N] or [N, 1]: rows of each slice"},
};

static rill_status *slice_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0) || !out)
    return rill_infer_error(ctx, "needs inputs X, Offset, Length and output Out");
  for (size_t s = 1; s < 3; s++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, s, 0);
    if (m->known && m->dtype != RILL_DTYPE_INT64)
      return rill_infer_error(ctx, "input %s (%s) is %s, expected int64", ctx->schema->inputs[s].name,
                              rill_infer_in_name(ctx, s, 0), rill_dtype_name(m->dtype));
  }
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dims.n < 1)
    return rill_infer_error(ctx, "input X (%s) needs a row dimension", rill_infer_in_name(ctx, 0, 0));
  rows_unknown(out, x, 1);
  return NULL;
}

const rill_op_schema rill_schema_sequence_slice = {
    .type = "sequence_slice",
    .doc = "Out's sequence i = rows Offset[i] .. Offset[i] + Length[i] of X's sequence i.",
    .inputs = slice_inputs,
    .ninputs = RILL_COUNTOF(slice_inputs),
    .outputs = out_only,
    .noutputs = RILL_COUNTOF(out_only),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = slice_infer,
    .grad = x_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema slice_grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Offset", 0, "forward Offset"},
    {"Length", 0, "forward Length"},
    {"Out@GRAD", 0, "gradient of Out"},
};

const rill_op_schema rill_schema_sequence_slice_grad = {
    .type = "sequence_slice_grad",
    .doc = "X@GRAD: Out@GRAD's rows back in their slices, zeros elsewhere.",
    .inputs = slice_grad_inputs,
    .ninputs = RILL_COUNTOF(slice_grad_inputs),
    .outputs = x_grad_out,
    .noutputs = RILL_COUNTOF(x_grad_out),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = x_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_attr_schema reshape_attrs[] = {
    {"new_dim", RILL_ATTR_INT, RILL_ATTR_REQUIRED, RILL_DEF_INT(0), "the width of Out's rows"},
};

static rill_status *reshape_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  int32_t nd = ctx->attrs[RILL_SEQUENCE_RESHAPE_ATTR_NEW_DIM].v.i;
  if (nd < 1) return rill_infer_error(ctx, "attribute new_dim is %d, expected 1 or more", (int)nd);
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dims.n != 2)
    return rill_infer_error(ctx, "input X (%s) has %d dims, expected [T, D]",
                            rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  rill_dims d = {.n = 2, .d = {-1, nd}};
  rill_meta_set(out, x->dtype, &d, 1, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_sequence_reshape = {
    .type = "sequence_reshape",
    .doc = "Out = each sequence of X [T, D] as rows of new_dim (its length times D / new_dim).",
    .inputs = x_only,
    .ninputs = RILL_COUNTOF(x_only),
    .outputs = out_only,
    .noutputs = RILL_COUNTOF(out_only),
    .attrs = reshape_attrs,
    .nattrs = RILL_COUNTOF(reshape_attrs),
    .flags = RILL_OP_KERNEL_SHAPES,
    .infer = reshape_infer,
    .grad = x_grad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema reshape_grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Out@GRAD", 0, "gradient of Out"},
};

const rill_op_schema rill_schema_sequence_reshape_grad = {
    .type = "sequence_reshape_grad",
    .doc = "X@GRAD: Out@GRAD's elements in X's shape.",
    .inputs = reshape_grad_inputs,
    .ninputs = RILL_COUNTOF(reshape_grad_inputs),
    .outputs = x_grad_out,
    .noutputs = RILL_COUNTOF(x_grad_out),
    .attrs = reshape_attrs,
    .nattrs = RILL_COUNTOF(reshape_attrs),
    .flags = 0,
    .infer = x_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(sequence_ops);
