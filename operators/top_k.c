/* top_k: the k largest values of X's last dim, in descending order (ties: lower index
 * first), and their int64 indices. K (a one-element int tensor) overrides k at run time.
 * top_k_grad scatters Out@GRAD back to those positions. */
#include "operators/tensor_ops.h"

#include <stdio.h>

enum { IN_X, IN_K };
enum { OUT_OUT, OUT_INDICES };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "input; top k along the last dim"},
    [IN_K] = {"K", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
              "one-element int32/int64 tensor overriding k"},
};
static const rill_slot_schema outputs[] = {
    [OUT_OUT] = {"Out", 0, "the k largest values per row, descending"},
    [OUT_INDICES] = {"Indices", 0, "int64 positions of Out in X's last dim"},
};
static const rill_attr_schema attrs[] = {
    {"k", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "how many values per row"},
};

static rill_status *top_k_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, OUT_OUT, 0), *idx = rill_infer_out(ctx, OUT_INDICES, 0);
  if (!x || !out || !idx) return rill_infer_error(ctx, "needs input X and outputs Out, Indices");
  if (!x->known) {
    rill_meta_unknown(out);
    rill_meta_unknown(idx);
    return NULL;
  }
  const char *xn = rill_infer_in_name(ctx, IN_X, 0);
  if (x->dims.n < 1) return rill_infer_error(ctx, "input X (%s) must have rank >= 1", xn);
  int64_t k = ctx->attrs[RILL_TOP_K_ATTR_K].v.i;
  if (rill_infer_in(ctx, IN_K, 0)) {
    if (!ctx->in_tensors) k = -1;
    else if (!rill_int_tensor_at(rill_infer_tensor(ctx, IN_K, 0), 0, &k))
      return rill_infer_error(ctx, "input K (%s) must hold one int32/int64 value",
                              rill_infer_in_name(ctx, IN_K, 0));
    else if (k < 1)
      return rill_infer_error(ctx, "input K (%s) holds %lld; k must be >= 1",
                              rill_infer_in_name(ctx, IN_K, 0), (long long)k);
  } else if (k < 1) {
    return rill_infer_error(ctx, "attribute k is %lld; it must be >= 1", (long long)k);
  }
  int64_t last = x->dims.d[x->dims.n - 1];
  if (k >= 0 && last >= 0 && k > last)
    return rill_infer_error(ctx, "k = %lld exceeds the last dim %lld of input X (%s)", (long long)k,
                            (long long)last, xn);
  rill_dims d = x->dims;
  d.d[d.n - 1] = k;
  rill_meta_set(out, x->dtype, &d, x->lod_level, IN_X, 0);
  rill_meta_set(idx, RILL_DTYPE_INT64, &d, x->lod_level, IN_X, 0);
  return NULL;
}

/* top_k_grad(X, Indices, Out@GRAD) -> X@GRAD (Paddle 2.x). */
static rill_status *top_k_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, "top_k_grad", &op));
  RILL_TRY(rill_grad_forward(ctx, op, "X"));
  RILL_TRY(rill_grad_forward(ctx, op, "Indices"));
  RILL_TRY(rill_grad_of_output(ctx, op, "Out"));
  RILL_TRY(rill_grad_of_input(ctx, op, "X"));
  return NULL;
}

const rill_op_schema rill_schema_top_k = {
    .type = "top_k",
    .doc = "Out, Indices = the k largest values of X's last dim (descending; ties in the "
           "order of Paddle's std::partial_sort) and their positions.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = top_k_infer,
    .grad = top_k_maker,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

enum { G_X, G_INDICES, G_DOUT };
static const rill_slot_schema grad_inputs[] = {
    [G_X] = {"X", 0, "the forward input (only its shape is read)"},
    [G_INDICES] = {"Indices", RILL_SLOT_NO_GRAD, "the forward positions"},
    [G_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "zeros with Out@GRAD at the chosen positions"}};

static rill_status *top_k_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, G_X, 0), *dout = rill_infer_in(ctx, G_DOUT, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x || !dout || !rill_infer_in(ctx, G_INDICES, 0))
    return rill_infer_error(ctx, "needs inputs X, Indices and Out@GRAD");
  if (!dx) return NULL;
  if (!x->known || !dout->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_meta_set(dx, dout->dtype, &x->dims, x->lod_level, G_X, 0);
  return NULL;
}

const rill_op_schema rill_schema_top_k_grad = {
    .type = "top_k_grad",
    .doc = "X@GRAD = zeros of X's shape with Out@GRAD written at Indices along the last dim.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = 0,
    .infer = top_k_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = G_DOUT,
    .dtype_attr = -1,
};

/* ---- accuracy ---- */

enum { AC_OUT, AC_INDICES, AC_LABEL };
static const rill_slot_schema acc_inputs[] = {
    [AC_OUT] = {"Out", RILL_SLOT_NO_GRAD, "top-k values [N, k] (only the shape is read)"},
    [AC_INDICES] = {"Indices", RILL_SLOT_NO_GRAD, "top-k int64 class indices [N, k]"},
    [AC_LABEL] = {"Label", RILL_SLOT_NO_GRAD, "int64 labels [N, 1]"},
};
static const rill_slot_schema acc_outputs[] = {
    {"Accuracy", 0, "float32 [1]: Correct / Total"},
    {"Correct", 0, "int32 [1]: samples whose label is among their top k"},
    {"Total", 0, "int32 [1]: samples"},
};

static rill_status *accuracy_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *o = rill_infer_in(ctx, AC_OUT, 0), *idx = rill_infer_in(ctx, AC_INDICES, 0),
                         *label = rill_infer_in(ctx, AC_LABEL, 0);
  if (!o || !idx || !label) return rill_infer_error(ctx, "needs inputs Out, Indices and Label");
  rill_dims one = {.n = 1, .d = {1}};
  static const rill_dtype dts[3] = {RILL_DTYPE_FP32, RILL_DTYPE_INT32, RILL_DTYPE_INT32};
  for (size_t i = 0; i < 3; i++) {
    rill_tensor_meta *m = rill_infer_out(ctx, i, 0);
    if (!m) return rill_infer_error(ctx, "needs outputs Accuracy, Correct and Total");
    rill_meta_set(m, dts[i], &one, 0, -1, -1);
  }
  if (!idx->known || !label->known) return NULL;
  char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
  rill_dims_str(&idx->dims, a, sizeof a);
  rill_dims_str(&label->dims, b, sizeof b);
  if (idx->dims.n != 2)
    return rill_infer_error(ctx, "input Indices (%s) has shape %s; it must be [N, k]",
                            rill_infer_in_name(ctx, AC_INDICES, 0), a);
  if (idx->dtype != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "input Indices (%s) is %s; it must be int64",
                            rill_infer_in_name(ctx, AC_INDICES, 0), rill_dtype_name(idx->dtype));
  if (label->dims.n != 2 || (label->dims.d[1] != 1 && label->dims.d[1] >= 0))
    return rill_infer_error(ctx, "input Label (%s) has shape %s; it must be [N, 1]",
                            rill_infer_in_name(ctx, AC_LABEL, 0), b);
  if (label->dtype != RILL_DTYPE_INT64 && label->dtype != RILL_DTYPE_INT32)
    return rill_infer_error(ctx, "input Label (%s) is %s; it must be int64",
                            rill_infer_in_name(ctx, AC_LABEL, 0), rill_dtype_name(label->dtype));
  if (idx->dims.d[0] >= 0 && label->dims.d[0] >= 0 && idx->dims.d[0] != label->dims.d[0])
    return rill_infer_error(ctx, "input Indices (%s) of shape %s and input Label (%s) of shape %s "
                            "differ in the number of samples", rill_infer_in_name(ctx, AC_INDICES, 0),
                            a, rill_infer_in_name(ctx, AC_LABEL, 0), b);
  return NULL;
}

const rill_op_schema rill_schema_accuracy = {
    .type = "accuracy",
    .doc = "Accuracy = the fraction of samples whose Label is among their top-k Indices.",
    .inputs = acc_inputs,
    .ninputs = RILL_COUNTOF(acc_inputs),
    .outputs = acc_outputs,
    .noutputs = RILL_COUNTOF(acc_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = accuracy_infer,
    .grad = NULL,
    .kernel_dtype_slot = AC_OUT,
    .dtype_attr = -1,
};

/* ---- arg_max, arg_min ---- */

enum { AM_AXIS, AM_KEEPDIMS, AM_FLATTEN, AM_DTYPE };
static const rill_slot_schema am_inputs[] = {{"X", RILL_SLOT_NO_GRAD, "input"}};
static const rill_slot_schema am_outputs[] = {{"Out", 0, "positions of the maxima along axis"}};
static const rill_attr_schema am_attrs[] = {
    [AM_AXIS] = {"axis", RILL_ATTR_LONG, RILL_ATTR_REQUIRED, RILL_DEF_LONG(0),
                 "dim searched (negative from the end)"},
    [AM_KEEPDIMS] = {"keepdims", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                     "keep the searched dim with extent 1"},
    [AM_FLATTEN] = {"flatten", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false),
                    "search the flattened X (Out is [1])"},
    [AM_DTYPE] = {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(-1),
                  "index dtype: int32 (2) or int64 (3, or -1)"},
};

/* Output dims of arg_max; false with a message on a bad axis. */
static rill_status *arg_max_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  int32_t dt = ctx->attrs[AM_DTYPE].v.i;
  if (dt != -1 && dt != RILL_DTYPE_INT32 && dt != RILL_DTYPE_INT64)
    return rill_infer_error(ctx, "attribute dtype %d of output Out (%s) must be int32 (2) or "
                            "int64 (3)", (int)dt, rill_infer_out_name(ctx, 0, 0));
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_dims d;
  int a;
  char err[128];
  if (!rill_arg_max_dims(&x->dims, ctx->attrs[AM_AXIS].v.l, ctx->attrs[AM_KEEPDIMS].v.b,
                         ctx->attrs[AM_FLATTEN].v.b, &d, &a, err, sizeof err))
    return rill_infer_error(ctx, "input X (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  rill_meta_set(out, dt == RILL_DTYPE_INT32 ? RILL_DTYPE_INT32 : RILL_DTYPE_INT64, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_arg_max = {
    .type = "arg_max",
    .doc = "Out = the position of the first maximum of X along axis (or of all of X).",
    .inputs = am_inputs,
    .ninputs = RILL_COUNTOF(am_inputs),
    .outputs = am_outputs,
    .noutputs = RILL_COUNTOF(am_outputs),
    .attrs = am_attrs,
    .nattrs = RILL_COUNTOF(am_attrs),
    .flags = 0,
    .infer = arg_max_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_arg_min = {
    .type = "arg_min",
    .doc = "Out = the position of the first minimum of X along axis (or of all of X).",
    .inputs = am_inputs,
    .ninputs = RILL_COUNTOF(am_inputs),
    .outputs = am_outputs,
    .noutputs = RILL_COUNTOF(am_outputs),
    .attrs = am_attrs,
    .nattrs = RILL_COUNTOF(am_attrs),
    .flags = 0,
    .infer = arg_max_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(top_k);
