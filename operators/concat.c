/* concat: Out = the X tensors joined along `axis` (AxisTensor overrides it at run time).
 * split: the reverse, into `num` equal parts or `sections`. Their gradients are each
 * other: concat_grad splits Out@GRAD, split's gradient is a concat. */
#include "operators/tensor_ops.h"

#include <stdio.h>
#include <string.h>

enum { C_X, C_AXIS_TENSOR };

static const rill_slot_schema concat_inputs[] = {
    [C_X] = {"X", RILL_SLOT_DUPLICABLE, "tensors of equal rank, equal extents except at axis"},
    [C_AXIS_TENSOR] = {"AxisTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
                       "one-element int32/int64 tensor overriding axis"},
};
static const rill_slot_schema concat_outputs[] = {{"Out", 0, "the joined tensor"}};
static const rill_attr_schema concat_attrs[] = {
    {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "dim to join along (negative from the end)"},
    {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"use_quantizer", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},
    {"mkldnn_data_type", RILL_ATTR_STRING, RILL_ATTR_EXTRA, RILL_DEF_STRING("float32"), "ignored"},
};

/* The axis from AxisTensor (run time) or the attribute; *known false at compile time
 * when AxisTensor decides it. */
static rill_status *axis_of(rill_infer_ctx *ctx, size_t slot, int32_t attr, int64_t *axis,
                            bool *known) {
  *known = true;
  *axis = attr;
  if (!rill_infer_in(ctx, slot, 0)) return NULL;
  const rill_tensor *t = rill_infer_tensor(ctx, slot, 0);
  if (!ctx->in_tensors) {
    *known = false;
    return NULL;
  }
  if (!rill_int_tensor_at(t, 0, axis))
    return rill_infer_error(ctx, "input AxisTensor (%s) must hold one int32/int64 value",
                            rill_infer_in_name(ctx, slot, 0));
  return NULL;
}

static rill_status *concat_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  size_t n = ctx->nin[C_X];
  if (!out || n == 0) return rill_infer_error(ctx, "needs inputs X and output Out");
  for (size_t i = 0; i < n; i++)
    if (!ctx->in[C_X][i].known) {
      rill_meta_unknown(out);
      return NULL;
    }
  const rill_tensor_meta *x0 = &ctx->in[C_X][0];
  int r = x0->dims.n;
  int64_t axis64;
  bool known;
  RILL_TRY(axis_of(ctx, C_AXIS_TENSOR, ctx->attrs[RILL_CONCAT_ATTR_AXIS].v.i, &axis64, &known));
  rill_dims d = x0->dims;
  if (!known) {
    for (int k = 0; k < r; k++) d.d[k] = -1;
    rill_meta_set(out, x0->dtype, &d, x0->lod_level, C_X, 0);
    return NULL;
  }
  int axis;
  if (!rill_norm_axis(axis64, r, &axis))
    return rill_infer_error(ctx, "axis %lld is out of range for input X (%s) of rank %d",
                            (long long)axis64, rill_infer_in_name(ctx, C_X, 0), r);
  for (size_t i = 1; i < n; i++) {
    const rill_tensor_meta *xi = &ctx->in[C_X][i];
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    if (xi->dtype != x0->dtype)
      return rill_infer_error(ctx, "input X (%s) is %s but X (%s) is %s",
                              rill_infer_in_name(ctx, C_X, i), rill_dtype_name(xi->dtype),
                              rill_infer_in_name(ctx, C_X, 0), rill_dtype_name(x0->dtype));
    bool bad = xi->dims.n != r;
    for (int k = 0; k < r && !bad; k++) {
      int64_t e = xi->dims.d[k];
      if (k == axis) {
        d.d[k] = d.d[k] < 0 || e < 0 ? -1 : d.d[k] + e;
      } else if (e >= 0) {
        if (d.d[k] >= 0 && d.d[k] != e) bad = true;
        d.d[k] = e;
      }
    }
    if (bad)
      return rill_infer_error(ctx, "input X (%s) of shape %s does not match X (%s) of shape %s "
                              "outside axis %d", rill_infer_in_name(ctx, C_X, i),
                              rill_dims_str(&xi->dims, a, sizeof a), rill_infer_in_name(ctx, C_X, 0),
                              rill_dims_str(&x0->dims, b, sizeof b), axis);
  }
  rill_meta_set(out, x0->dtype, &d, x0->lod_level, C_X, 0);
  return NULL;
}

/* concat's gradient: concat_grad(X, Out@GRAD, AxisTensor) -> X@GRAD, as Paddle. */
static rill_status *concat_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "concat_grad", &op));
  RILL_TRY(rill_grad_forward(ctx, op, "X"));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_forward(ctx, op, "AxisTensor"));
  RILL_TRY(rill_grad_of_input(ctx, op, "X"));
  return NULL;
}

const rill_op_schema rill_schema_concat = {
    .type = "concat",
    .doc = "Out = the X tensors joined along axis.",
    .inputs = concat_inputs,
    .ninputs = RILL_COUNTOF(concat_inputs),
    .outputs = concat_outputs,
    .noutputs = RILL_COUNTOF(concat_outputs),
    .attrs = concat_attrs,
    .nattrs = RILL_COUNTOF(concat_attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = concat_infer,
    .grad = concat_maker,
    .kernel_dtype_slot = C_X,
    .dtype_attr = -1,
};

enum { CG_X, CG_DOUT, CG_AXIS_TENSOR };
static const rill_slot_schema concat_grad_inputs[] = {
    [CG_X] = {"X", RILL_SLOT_DUPLICABLE, "the forward inputs (only their shapes are read)"},
    [CG_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
    [CG_AXIS_TENSOR] = {"AxisTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
                        "one-element int32/int64 tensor overriding axis"},
};
static const rill_slot_schema concat_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "gradients of X: the pieces of Out@GRAD (@EMPTY@ where not wanted)"},
};

static rill_status *concat_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *dout = rill_infer_in(ctx, CG_DOUT, 0);
  if (!dout) return rill_infer_error(ctx, "needs input Out@GRAD");
  size_t n = ctx->nout[0];
  if (n != ctx->nin[CG_X])
    return rill_infer_error(ctx, "has %zu inputs X but %zu outputs X@GRAD", ctx->nin[CG_X], n);
  for (size_t i = 0; i < n; i++) {
    const rill_tensor_meta *x = &ctx->in[CG_X][i];
    rill_tensor_meta *dx = &ctx->out[0][i];
    if (!x->known || !dout->known) rill_meta_unknown(dx);
    else rill_meta_set(dx, dout->dtype, &x->dims, x->lod_level, CG_X, (int)i);
  }
  return NULL;
}

const rill_op_schema rill_schema_concat_grad = {
    .type = "concat_grad",
    .doc = "X@GRAD = Out@GRAD cut back into pieces of the shapes of X.",
    .inputs = concat_grad_inputs,
    .ninputs = RILL_COUNTOF(concat_grad_inputs),
    .outputs = concat_grad_outputs,
    .noutputs = RILL_COUNTOF(concat_grad_outputs),
    .attrs = concat_attrs,
    .nattrs = RILL_COUNTOF(concat_attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = concat_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = CG_DOUT,
    .dtype_attr = -1,
};

/* ---- split ---- */

enum { S_X, S_AXIS_TENSOR, S_SECTIONS_LIST };
enum { SA_AXIS, SA_NUM, SA_SECTIONS };
static const rill_slot_schema split_inputs[] = {
    [S_X] = {"X", 0, "input"},
    [S_AXIS_TENSOR] = {"AxisTensor", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
                       "one-element int32/int64 tensor overriding axis"},
    [S_SECTIONS_LIST] = {"SectionsTensorList",
                         RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD |
                             RILL_SLOT_INFER_DATA,
                         "one-element int32/int64 tensors overriding sections"},
};
static const rill_slot_schema split_outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE, "the parts, in order along axis"}};
static const rill_attr_schema split_attrs[] = {
    [SA_AXIS] = {"axis", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "dim to split (negative from the end)"},
    [SA_NUM] = {"num", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "number of equal parts (0: use sections)"},
    [SA_SECTIONS] = {"sections", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                     "extent of each part; one -1 takes the rest"},
};

static rill_status *split_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, S_X, 0);
  size_t n = ctx->nout[0];
  if (!x || n == 0) return rill_infer_error(ctx, "needs input X and outputs Out");
  if (!x->known) {
    for (size_t i = 0; i < n; i++) rill_meta_unknown(&ctx->out[0][i]);
    return NULL;
  }
  const char *xname = rill_infer_in_name(ctx, S_X, 0);
  int r = x->dims.n, axis;
  int64_t axis64;
  bool known;
  RILL_TRY(axis_of(ctx, S_AXIS_TENSOR, ctx->attrs[SA_AXIS].v.i, &axis64, &known));
  if (!known) {
    rill_dims d = {.n = r};
    for (int k = 0; k < r; k++) d.d[k] = -1;
    for (size_t i = 0; i < n; i++) rill_meta_set(&ctx->out[0][i], x->dtype, &d, x->lod_level, S_X, 0);
    return NULL;
  }
  if (!rill_norm_axis(axis64, r, &axis))
    return rill_infer_error(ctx, "axis %lld is out of range for input X (%s) of rank %d",
                            (long long)axis64, xname, r);
  int64_t dim = x->dims.d[axis], parts[64];
  if (n > 64) return rill_infer_error(ctx, "has %zu outputs Out, more than 64", n);
  int32_t num = ctx->attrs[SA_NUM].v.i;
  const rill_attr_value *sec = &ctx->attrs[SA_SECTIONS];
  size_t nlist = ctx->nin[S_SECTIONS_LIST];
  if (num > 0) {
    if ((size_t)num != n)
      return rill_infer_error(ctx, "num is %d but there are %zu outputs Out", (int)num, n);
    if (dim >= 0 && dim % num)
      return rill_infer_error(ctx, "input X (%s) has extent %lld at axis %d, not divisible by "
                              "num %d", xname, (long long)dim, axis, (int)num);
    for (size_t i = 0; i < n; i++) parts[i] = dim < 0 ? -1 : dim / num;
  } else {
    size_t ns = nlist ? nlist : sec->n;
    if (ns != n)
      return rill_infer_error(ctx, "%zu sections for %zu outputs Out (set num or sections)", ns, n);
    int unk = -1;
    int64_t sum = 0;
    bool any_unknown = false;
    for (size_t i = 0; i < n; i++) {
      int64_t s = -1;
      if (nlist) {
        const rill_tensor *t = rill_infer_tensor(ctx, S_SECTIONS_LIST, i);
        if (ctx->in_tensors && !rill_int_tensor_at(t, 0, &s))
          return rill_infer_error(ctx, "input SectionsTensorList (%s) must hold one int32/int64 "
                                  "value", rill_infer_in_name(ctx, S_SECTIONS_LIST, i));
        if (!ctx->in_tensors) {
          any_unknown = true;
          parts[i] = -1;
          continue;
        }
      } else {
        s = sec->list.ints[i];
      }
      if (s == -1) {
        if (unk >= 0) return rill_infer_error(ctx, "sections have more than one -1");
        unk = (int)i;
      } else if (s < 0) {
        return rill_infer_error(ctx, "section %zu is %lld", i, (long long)s);
      } else {
        sum += s;
      }
      parts[i] = s;
    }
    if (dim >= 0 && !any_unknown) {
      if (unk >= 0) {
        if (sum > dim)
          return rill_infer_error(ctx, "sections add up to %lld, more than extent %lld of input X "
                                  "(%s) at axis %d", (long long)sum, (long long)dim, xname, axis);
        parts[unk] = dim - sum;
      } else if (sum != dim) {
        return rill_infer_error(ctx, "sections add up to %lld but input X (%s) has extent %lld at "
                                "axis %d", (long long)sum, xname, (long long)dim, axis);
      }
    }
  }
  for (size_t i = 0; i < n; i++) {
    rill_dims d = x->dims;
    d.d[axis] = parts[i];
    rill_meta_set(&ctx->out[0][i], x->dtype, &d, axis ? x->lod_level : 0, axis ? S_X : -1, 0);
  }
  return NULL;
}

/* split's gradient is concat(Out@GRAD...) -> X@GRAD with the same axis (Paddle). */
static rill_status *split_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "concat", &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "Out", "X"));
  RILL_TRY(rill_grad_forward(ctx, op, "AxisTensor"));
  RILL_TRY(rill_grad_of_input_as(ctx, op, "X", "Out"));
  return NULL;
}

const rill_op_schema rill_schema_split = {
    .type = "split",
    .doc = "Out = X cut along axis into num equal parts or parts of the given sections.",
    .inputs = split_inputs,
    .ninputs = RILL_COUNTOF(split_inputs),
    .outputs = split_outputs,
    .noutputs = RILL_COUNTOF(split_outputs),
    .attrs = split_attrs,
    .nattrs = RILL_COUNTOF(split_attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = split_infer,
    .grad = split_maker,
    .kernel_dtype_slot = S_X,
    .dtype_attr = -1,
};

/* split_byref: Paddle's split of a gradient into the row blocks the pservers hold
 * (DistributeTranspiler's trainer program): split's tables, used with axis 0 and
 * `sections`, so that split's inference serves it unchanged. Paddle's op has no `axis`
 * attribute; its programs leave it at the default 0. KERNEL_SHAPES: its kernel makes
 * the blocks views of X's buffer (no copy) and sizes them itself. */
const rill_op_schema rill_schema_split_byref = {
    .type = "split_byref",
    .doc = "Out = X cut into row blocks of the given sections (split along axis 0).",
    .inputs = split_inputs,
    .ninputs = RILL_COUNTOF(split_inputs),
    .outputs = split_outputs,
    .noutputs = RILL_COUNTOF(split_outputs),
    .attrs = split_attrs,
    .nattrs = RILL_COUNTOF(split_attrs),
    .flags = RILL_OP_INFER_READS_DATA | RILL_OP_KERNEL_SHAPES,
    .infer = split_infer,
    .grad = NULL,
    .kernel_dtype_slot = S_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(concat);
