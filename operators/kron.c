/* kron: the Kronecker product of X and Y (the lower rank padded with leading 1s); trace:
 * sums of the diagonal at offset of the matrices in dims dim1 and dim2. Both with their
 * gradients. */
#include "operators/tensor_ops.h"

#include <stdio.h>

bool rill_kron_dims(const rill_dims *x, const rill_dims *y, rill_dims *out) {
  int r = x->n > y->n ? x->n : y->n;
  out->n = r;
  for (int i = 0; i < r; i++) {
    int xi = i - (r - x->n), yi = i - (r - y->n);
    int64_t a = xi >= 0 ? x->d[xi] : 1, b = yi >= 0 ? y->d[yi] : 1;
    out->d[i] = a < 0 || b < 0 ? -1 : a * b;
  }
  return true;
}

static const rill_slot_schema kron_inputs[] = {{"X", 0, "left factor"}, {"Y", 0, "right factor"}};
static const rill_slot_schema kron_outputs[] = {{"Out", 0, "the Kronecker product"}};

static rill_status *kron_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !y || !out) return rill_infer_error(ctx, "needs inputs X, Y and output Out");
  if (!x->known || !y->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dtype != y->dtype)
    return rill_infer_error(ctx, "input X (%s) is %s but input Y (%s) is %s",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(x->dtype),
                            rill_infer_in_name(ctx, 1, 0), rill_dtype_name(y->dtype));
  rill_dims d;
  rill_kron_dims(&x->dims, &y->dims, &d);
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *kron_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, (const char *const[]){"X", "Y"}, 2,
                        (const char *const[]){"Out"}, 1, (const char *const[]){"X", "Y"}, 2);
}

const rill_op_schema rill_schema_kron = {
    .type = "kron",
    .doc = "Out = the Kronecker product of X and Y: Out[i] = X[i / Y's dims] * Y[i % Y's dims].",
    .inputs = kron_inputs,
    .ninputs = RILL_COUNTOF(kron_inputs),
    .outputs = kron_outputs,
    .noutputs = RILL_COUNTOF(kron_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = kron_infer,
    .grad = kron_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema kron_grad_inputs[] = {
    {"X", 0, "forward X"}, {"Y", 0, "forward Y"}, {"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema kron_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "sum over Y's positions of Out@GRAD * Y"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "sum over X's positions of Out@GRAD * X"},
};

static rill_status *kron_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  if (!x || !y || !rill_infer_in(ctx, 2, 0)) return rill_infer_error(ctx, "needs inputs X, Y and Out@GRAD");
  for (size_t i = 0; i < 2; i++) {
    rill_tensor_meta *m = rill_infer_out(ctx, i, 0);
    const rill_tensor_meta *f = i ? y : x;
    if (!m) continue;
    if (f->known) rill_meta_set(m, f->dtype, &f->dims, 0, -1, -1);
    else rill_meta_unknown(m);
  }
  return NULL;
}

const rill_op_schema rill_schema_kron_grad = {
    .type = "kron_grad",
    .doc = "X@GRAD, Y@GRAD of Out = kron(X, Y).",
    .inputs = kron_grad_inputs,
    .ninputs = RILL_COUNTOF(kron_grad_inputs),
    .outputs = kron_grad_outputs,
    .noutputs = RILL_COUNTOF(kron_grad_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = kron_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 2,
    .dtype_attr = -1,
};

/* ---- trace ---- */

bool rill_trace_dims(const rill_dims *x, int64_t dim1, int64_t dim2, rill_dims *out, int *d1,
                     int *d2, char *err, size_t errlen) {
  if (x->n < 2) {
    snprintf(err, errlen, "rank %d; trace needs rank >= 2", (int)x->n);
    return false;
  }
  if (!rill_norm_axis(dim1, x->n, d1) || !rill_norm_axis(dim2, x->n, d2) || *d1 == *d2) {
    snprintf(err, errlen, "dim1 %lld and dim2 %lld must be two different dims of rank %d",
             (long long)dim1, (long long)dim2, (int)x->n);
    return false;
  }
  if (*d1 > *d2) { /* as Paddle: the lower dim indexes the rows, whatever the order given */
    int t = *d1;
    *d1 = *d2;
    *d2 = t;
  }
  out->n = 0;
  for (int i = 0; i < x->n; i++)
    if (i != *d1 && i != *d2) out->d[out->n++] = x->d[i];
  if (out->n == 0) {
    out->n = 1;
    out->d[0] = 1;
  }
  return true;
}

static const rill_slot_schema trace_inputs[] = {{"Input", 0, "tensor of rank >= 2"}};
static const rill_slot_schema trace_outputs[] = {{"Out", 0, "the diagonal sums"}};
static const rill_attr_schema trace_attrs[] = {
    {"offset", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "diagonal: 0 main, > 0 above, < 0 below"},
    {"dim1", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "first dim of the matrices"},
    {"dim2", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "second dim of the matrices"},
};

static rill_status *trace_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input Input and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_dims d;
  int d1, d2;
  char err[160];
  if (!rill_trace_dims(&x->dims, ctx->attrs[RILL_TRACE_ATTR_DIM1].v.i,
                       ctx->attrs[RILL_TRACE_ATTR_DIM2].v.i, &d, &d1, &d2, err, sizeof err))
    return rill_infer_error(ctx, "input Input (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *trace_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, (const char *const[]){"Input"}, 1,
                        (const char *const[]){"Out"}, 1, (const char *const[]){"Input"}, 1);
}

const rill_op_schema rill_schema_trace = {
    .type = "trace",
    .doc = "Out = the sums along the diagonal at offset of Input's matrices in dims dim1, dim2.",
    .inputs = trace_inputs,
    .ninputs = RILL_COUNTOF(trace_inputs),
    .outputs = trace_outputs,
    .noutputs = RILL_COUNTOF(trace_outputs),
    .attrs = trace_attrs,
    .nattrs = RILL_COUNTOF(trace_attrs),
    .flags = 0,
    .infer = trace_infer,
    .grad = trace_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema trace_grad_inputs[] = {
    {"Input", 0, "forward Input (its shape)"}, {"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema trace_grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD on the diagonal, zeros elsewhere"}};

const rill_op_schema rill_schema_trace_grad = {
    .type = "trace_grad",
    .doc = "Input@GRAD = Out@GRAD on the summed diagonal, zeros elsewhere.",
    .inputs = trace_grad_inputs,
    .ninputs = RILL_COUNTOF(trace_grad_inputs),
    .outputs = trace_grad_outputs,
    .noutputs = RILL_COUNTOF(trace_grad_outputs),
    .attrs = trace_attrs,
    .nattrs = RILL_COUNTOF(trace_attrs),
    .flags = 0,
    .infer = rill_grad_like_input_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(kron);
