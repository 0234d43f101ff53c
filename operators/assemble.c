/* Ops that assemble a tensor from others, as Fluid 1.8: meshgrid (coordinate grids of
 * 1-D tensors), diag_embed (vectors onto diagonals of new matrices), multiplex (row i
 * from the Ids[i]-th input) and allclose (one bool: every element within tolerance).
 * meshgrid and multiplex have gradients; diag_embed and allclose have none, as in
 * Paddle. */
#include "operators/assemble.h"

#include <stdio.h>
#include <stdlib.h>

#include "operators/math_grad.h"

/* ---- meshgrid ---- */

static const rill_slot_schema mesh_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE, "k 1-D tensors of one dtype, extents n1 ... nk"}};
static const rill_slot_schema mesh_outputs[] = {
    {"Out", RILL_SLOT_DUPLICABLE, "k tensors [n1, ..., nk]; Out[i] varies along dim i"}};

static rill_status *meshgrid_infer(rill_infer_ctx *ctx) {
  size_t k = ctx->nin[0];
  if (k == 0 || k > RILL_MAX_DIMS || ctx->nout[0] != k)
    return rill_infer_error(ctx, "needs 1 to %d inputs X and as many outputs Out (has %zu and "
                            "%zu)", RILL_MAX_DIMS, k, ctx->nout[0]);
  rill_dims d = {.n = (int32_t)k};
  bool known = true;
  for (size_t i = 0; i < k; i++) {
    const rill_tensor_meta *x = &ctx->in[0][i];
    if (!x->known) {
      known = false;
      continue;
    }
    if (x->dims.n > 1)
      return rill_infer_error(ctx, "input X #%zu (%s) has rank %d; meshgrid takes 1-D tensors",
                              i, rill_infer_in_name(ctx, 0, i), (int)x->dims.n);
    if (x->dtype != ctx->in[0][0].dtype)
      return rill_infer_error(ctx, "input X #%zu (%s) is %s but X #0 (%s) is %s", i,
                              rill_infer_in_name(ctx, 0, i), rill_dtype_name(x->dtype),
                              rill_infer_in_name(ctx, 0, 0),
                              rill_dtype_name(ctx->in[0][0].dtype));
    d.d[i] = x->dims.n == 1 ? x->dims.d[0] : 1;
  }
  for (size_t i = 0; i < k; i++) {
    if (known) rill_meta_set(&ctx->out[0][i], ctx->in[0][0].dtype, &d, 0, -1, -1);
    else rill_meta_unknown(&ctx->out[0][i]);
  }
  return NULL;
}

static rill_status *meshgrid_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

const rill_op_schema rill_schema_meshgrid = {
    .type = "meshgrid",
    .doc = "Out[i][j1, ..., jk] = X[i][ji] for 1-D tensors X[0..k-1].",
    .inputs = mesh_inputs,
    .ninputs = RILL_COUNTOF(mesh_inputs),
    .outputs = mesh_outputs,
    .noutputs = RILL_COUNTOF(mesh_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = meshgrid_infer,
    .grad = meshgrid_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema mesh_grad_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE, "the forward inputs"},
    {"Out@GRAD", RILL_SLOT_DUPLICABLE, "gradients of Out (missing ones count as zeros)"}};
static const rill_slot_schema mesh_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "X@GRAD[i][j] = the sum of Out@GRAD[i] over the elements with index j in dim i"}};

/* Each output `<slot>@GRAD` #i shaped like the forward input list `in` #i. */
static rill_status *grad_like_list_infer(rill_infer_ctx *ctx) {
  for (size_t i = 0; i < ctx->nout[0]; i++) {
    rill_tensor_meta *o = &ctx->out[0][i];
    if (i >= ctx->nin[0] || !ctx->in[0][i].known) rill_meta_unknown(o);
    else rill_meta_set(o, ctx->in[0][i].dtype, &ctx->in[0][i].dims, 0, -1, -1);
  }
  return NULL;
}

const rill_op_schema rill_schema_meshgrid_grad = {
    .type = "meshgrid_grad",
    .doc = "X@GRAD of meshgrid: each Out@GRAD[i] summed over every dim but i.",
    .inputs = mesh_grad_inputs,
    .ninputs = RILL_COUNTOF(mesh_grad_inputs),
    .outputs = mesh_grad_outputs,
    .noutputs = RILL_COUNTOF(mesh_grad_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = grad_like_list_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- diag_embed ---- */

static const rill_slot_schema de_inputs[] = {{"Input", 0, "tensor [..., N] of the diagonals"}};
static const rill_slot_schema de_outputs[] = {{"Out", 0, "rank + 1, zeros off the diagonal"}};
static const rill_attr_schema de_attrs[] = {
    {"offset", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "diagonal: 0 main, > 0 above, < 0 below"},
    {"dim1", RILL_ATTR_INT, 0, RILL_DEF_INT(-2), "first dim of the matrices in Out"},
    {"dim2", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "second dim of the matrices in Out"},
};

bool rill_diag_embed_dims(const rill_dims *in, int64_t offset, int64_t dim1, int64_t dim2,
                          rill_dims *out, int *d1, int *d2, char *err, size_t errlen) {
  int r = in->n + 1;
  if (in->n < 1 || r > RILL_MAX_DIMS) {
    snprintf(err, errlen, "rank %d; diag_embed takes rank 1 to %d", (int)in->n, RILL_MAX_DIMS - 1);
    return false;
  }
  if (dim1 < -r || dim1 >= r || dim2 < -r || dim2 >= r) {
    snprintf(err, errlen, "dim1 %lld or dim2 %lld is out of range [%d, %d]", (long long)dim1,
             (long long)dim2, -r, r - 1);
    return false;
  }
  *d1 = (int)(dim1 < 0 ? dim1 + r : dim1);
  *d2 = (int)(dim2 < 0 ? dim2 + r : dim2);
  if (*d1 == *d2) {
    snprintf(err, errlen, "dim1 %lld and dim2 %lld are the same dim", (long long)dim1,
             (long long)dim2);
    return false;
  }
  int64_t n = in->d[in->n - 1];
  int64_t side = n < 0 ? -1 : n + llabs((long long)offset);
  out->n = r;
  for (int i = 0, j = 0; i < r; i++)
    out->d[i] = i == *d1 || i == *d2 ? side : in->d[j++];
  return true;
}

static rill_status *diag_embed_infer(rill_infer_ctx *ctx) {
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
  if (!rill_diag_embed_dims(&x->dims, ctx->attrs[RILL_DIAG_EMBED_ATTR_OFFSET].v.i,
                            ctx->attrs[RILL_DIAG_EMBED_ATTR_DIM1].v.i,
                            ctx->attrs[RILL_DIAG_EMBED_ATTR_DIM2].v.i, &d, &d1, &d2, err,
                            sizeof err))
    return rill_infer_error(ctx, "input Input (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_diag_embed = {
    .type = "diag_embed",
    .doc = "Out: Input's last dim laid on the offset diagonal of the matrices in dims dim1, "
           "dim2 of a zero tensor of one more dim.",
    .inputs = de_inputs,
    .ninputs = RILL_COUNTOF(de_inputs),
    .outputs = de_outputs,
    .noutputs = RILL_COUNTOF(de_outputs),
    .attrs = de_attrs,
    .nattrs = RILL_COUNTOF(de_attrs),
    .flags = RILL_OP_NO_GRADIENT,
    .infer = diag_embed_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- multiplex ---- */

static const rill_slot_schema mx_inputs[] = {
    {"Ids", RILL_SLOT_NO_GRAD, "int32/int64 [N, 1]: the input each row of Out comes from"},
    {"X", RILL_SLOT_DUPLICABLE, "candidates of one shape [N, ...]"}};
static const rill_slot_schema mx_outputs[] = {{"Out", 0, "Out[i] = X[Ids[i]][i]"}};

static rill_status *multiplex_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *ids = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!ids || !out || ctx->nin[1] == 0)
    return rill_infer_error(ctx, "needs inputs Ids, X and output Out");
  const rill_tensor_meta *x0 = &ctx->in[1][0];
  char s1[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];
  if (ids->known && ((ids->dtype != RILL_DTYPE_INT32 && ids->dtype != RILL_DTYPE_INT64) ||
                     ids->dims.n != 2 || ids->dims.d[1] != 1))
    return rill_infer_error(ctx, "input Ids (%s) is %s %s; it must be int32/int64 [N, 1]",
                            rill_infer_in_name(ctx, 0, 0), rill_dtype_name(ids->dtype),
                            rill_dims_str(&ids->dims, s1, sizeof s1));
  for (size_t i = 0; i < ctx->nin[1]; i++) {
    const rill_tensor_meta *x = &ctx->in[1][i];
    if (!x->known || !x0->known) continue;
    bool same = x->dtype == x0->dtype && x->dims.n == x0->dims.n;
    for (int j = 0; same && j < x->dims.n; j++)
      if (x->dims.d[j] >= 0 && x0->dims.d[j] >= 0 && x->dims.d[j] != x0->dims.d[j]) same = false;
    if (!same)
      return rill_infer_error(ctx, "input X #%zu (%s) %s %s differs from X #0 (%s) %s %s", i,
                              rill_infer_in_name(ctx, 1, i), rill_dtype_name(x->dtype),
                              rill_dims_str(&x->dims, s1, sizeof s1), rill_infer_in_name(ctx, 1, 0),
                              rill_dtype_name(x0->dtype), rill_dims_str(&x0->dims, s2, sizeof s2));
  }
  if (!x0->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x0->dims.n < 1)
    return rill_infer_error(ctx, "input X #0 (%s) must have rank >= 1",
                            rill_infer_in_name(ctx, 1, 0));
  rill_meta_set(out, x0->dtype, &x0->dims, 0, -1, -1);
  return NULL;
}

static rill_status *multiplex_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("Ids", "X"), RILL_NAMES("Out"), RILL_NAMES("X"));
}

const rill_op_schema rill_schema_multiplex = {
    .type = "multiplex",
    .doc = "Out[i] = X[Ids[i]][i]: each row taken from the input Ids names.",
    .inputs = mx_inputs,
    .ninputs = RILL_COUNTOF(mx_inputs),
    .outputs = mx_outputs,
    .noutputs = RILL_COUNTOF(mx_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = multiplex_infer,
    .grad = multiplex_maker,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

static const rill_slot_schema mx_grad_inputs[] = {
    {"X", RILL_SLOT_DUPLICABLE, "the forward inputs (only their shapes are read)"},
    {"Ids", 0, "forward Ids"},
    {"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema mx_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE,
     "X@GRAD[k][i] = Out@GRAD[i] where Ids[i] = k, else 0"}};

const rill_op_schema rill_schema_multiplex_grad = {
    .type = "multiplex_grad",
    .doc = "X@GRAD of multiplex: each row of Out@GRAD back to the input it came from.",
    .inputs = mx_grad_inputs,
    .ninputs = RILL_COUNTOF(mx_grad_inputs),
    .outputs = mx_grad_outputs,
    .noutputs = RILL_COUNTOF(mx_grad_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = grad_like_list_infer,
    .grad = NULL,
    .kernel_dtype_slot = 2,
    .dtype_attr = -1,
};

/* ---- allclose ---- */

static const rill_slot_schema ac_inputs[] = {{"Input", 0, "a"}, {"Other", 0, "b, Input's shape"}};
static const rill_slot_schema ac_outputs[] = {
    {"Out", 0, "bool [1]: every |a - b| <= atol + rtol * |b|"}};
static const rill_attr_schema ac_attrs[] = {
    {"rtol", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-5f), "relative tolerance (of |b|)"},
    {"atol", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-8f), "absolute tolerance"},
    {"equal_nan", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(false), "NaN equals NaN"},
};

static rill_status *allclose_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *a = rill_infer_in(ctx, 0, 0), *b = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!a || !b || !out) return rill_infer_error(ctx, "needs inputs Input, Other and output Out");
  if (a->known && b->known) {
    bool same = a->dtype == b->dtype && a->dims.n == b->dims.n;
    for (int i = 0; same && i < a->dims.n; i++)
      if (a->dims.d[i] >= 0 && b->dims.d[i] >= 0 && a->dims.d[i] != b->dims.d[i]) same = false;
    char s1[RILL_DIMS_STR_MAX], s2[RILL_DIMS_STR_MAX];
    if (!same)
      return rill_infer_error(ctx, "input Input (%s) %s %s and input Other (%s) %s %s differ",
                              rill_infer_in_name(ctx, 0, 0), rill_dtype_name(a->dtype),
                              rill_dims_str(&a->dims, s1, sizeof s1), rill_infer_in_name(ctx, 1, 0),
                              rill_dtype_name(b->dtype), rill_dims_str(&b->dims, s2, sizeof s2));
  }
  rill_dims d = {.n = 1, .d = {1}};
  rill_meta_set(out, RILL_DTYPE_BOOL, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_allclose = {
    .type = "allclose",
    .doc = "Out = all(|Input - Other| <= atol + rtol * |Other|), NaN equal to NaN with "
           "equal_nan.",
    .inputs = ac_inputs,
    .ninputs = RILL_COUNTOF(ac_inputs),
    .outputs = ac_outputs,
    .noutputs = RILL_COUNTOF(ac_outputs),
    .attrs = ac_attrs,
    .nattrs = RILL_COUNTOF(ac_attrs),
    .flags = RILL_OP_NO_GRADIENT,
    .infer = allclose_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(assemble);
