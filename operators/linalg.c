/* Fluid 1.8's small linear-algebra ops and their gradients: bmm (batched matrix
 * product), dot (row-wise inner product), cross (3-vector cross product along a dim),
 * dist (p-norm of X - Y, broadcast) and addmm (Beta * Input + Alpha * X Y). Shapes follow
 * Paddle 1.8.5's inference; the arithmetic is in doc/design/inference_ops.md. */
#include "operators/linalg.h"

#include <limits.h>
#include <stdio.h>

#include "operators/elementwise.h"
#include "operators/math_grad.h"

static bool same_dtype(rill_infer_ctx *ctx, const rill_tensor_meta *a, size_t sa,
                       const rill_tensor_meta *b, size_t sb, rill_status **st) {
  if (a->dtype == b->dtype) return true;
  *st = rill_infer_error(ctx, "input %s (%s) is %s but input %s (%s) is %s",
                         ctx->schema->inputs[sa].name, rill_infer_in_name(ctx, sa, 0),
                         rill_dtype_name(a->dtype), ctx->schema->inputs[sb].name,
                         rill_infer_in_name(ctx, sb, 0), rill_dtype_name(b->dtype));
  return false;
}

static bool dim_differs(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

/* Grad infer shared by every op here: each `<in>@GRAD` output is shaped like input
 * slot i (outputs in the forward inputs' order). */
static rill_status *grad_like_inputs_infer(rill_infer_ctx *ctx) {
  for (size_t o = 0; o < ctx->schema->noutputs; o++)
    if (rill_infer_out(ctx, o, 0)) rill_grad_infer_like(ctx, o, o);
  return NULL;
}

#define GRAD_SCHEMA(op, doc_text, in_arr, out_arr, attr_arr, nattr, dslot)                   \
  const rill_op_schema rill_schema_##op##_grad = {                                         \
      .type = #op "_grad",                                                                  \
      .doc = doc_text,                                                                      \
      .inputs = in_arr,                                                                     \
      .ninputs = RILL_COUNTOF(in_arr),                                                      \
      .outputs = out_arr,                                                                   \
      .noutputs = RILL_COUNTOF(out_arr),                                                    \
      .attrs = attr_arr,                                                                    \
      .nattrs = nattr,                                                                      \
      .flags = 0,                                                                           \
      .infer = grad_like_inputs_infer,                                                      \
      .grad = NULL,                                                                         \
      .kernel_dtype_slot = dslot,                                                           \
      .dtype_attr = -1,                                                                     \
  }

/* The schema of an op X, Y -> Out whose kernel dtype is X's. */
#define XY_SCHEMA(op, doc_text, attr_arr, nattr, infer_fn, grad_fn)                          \
  const rill_op_schema rill_schema_##op = {                                                \
      .type = #op,                                                                          \
      .doc = doc_text,                                                                      \
      .inputs = xy_inputs,                                                                  \
      .ninputs = RILL_COUNTOF(xy_inputs),                                                   \
      .outputs = out_only,                                                                  \
      .noutputs = RILL_COUNTOF(out_only),                                                   \
      .attrs = attr_arr,                                                                    \
      .nattrs = nattr,                                                                      \
      .flags = 0,                                                                           \
      .infer = infer_fn,                                                                    \
      .grad = grad_fn,                                                                      \
      .kernel_dtype_slot = 0,                                                               \
      .dtype_attr = -1,                                                                     \
  }

static const rill_slot_schema xy_inputs[] = {{"X", 0, "left operand"}, {"Y", 0, "right operand"}};
static const rill_slot_schema out_only[] = {{"Out", 0, "the result"}};
static const rill_slot_schema xy_grad_inputs[] = {
    {"X", 0, "forward X"}, {"Y", 0, "forward Y"}, {"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema xy_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Y"}};

static rill_status *xy_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "Y"), RILL_NAMES("Out"), RILL_NAMES("X", "Y"));
}

/* Both inputs known and of one dtype, else Out unknown (returns false, *st NULL) or an
 * error (*st set). */
static bool xy_ready(rill_infer_ctx *ctx, const rill_tensor_meta **x, const rill_tensor_meta **y,
                     rill_tensor_meta **out, rill_status **st) {
  *st = NULL;
  *x = rill_infer_in(ctx, 0, 0);
  *y = rill_infer_in(ctx, 1, 0);
  *out = rill_infer_out(ctx, 0, 0);
  if (!*x || !*y || !*out) {
    *st = rill_infer_error(ctx, "needs inputs X, Y and output Out");
    return false;
  }
  if (!(*x)->known || !(*y)->known) {
    rill_meta_unknown(*out);
    return false;
  }
  return same_dtype(ctx, *x, 0, *y, 1, st);
}

/* ---- bmm ---- */

static rill_status *bmm_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x, *y;
  rill_tensor_meta *out;
  rill_status *st;
  if (!xy_ready(ctx, &x, &y, &out, &st)) return st;
  const rill_dims *a = &x->dims, *b = &y->dims;
  char as[RILL_DIMS_STR_MAX], bs[RILL_DIMS_STR_MAX];
  if (a->n != 3 || b->n != 3 || dim_differs(a->d[0], b->d[0]) || dim_differs(a->d[2], b->d[1]))
    return rill_infer_error(ctx, "input X (%s) %s and input Y (%s) %s must be [B, M, K] and "
                            "[B, K, N]", rill_infer_in_name(ctx, 0, 0),
                            rill_dims_str(a, as, sizeof as), rill_infer_in_name(ctx, 1, 0),
                            rill_dims_str(b, bs, sizeof bs));
  rill_dims d = {.n = 3, .d = {a->d[0] >= 0 ? a->d[0] : b->d[0], a->d[1], b->d[2]}};
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

XY_SCHEMA(bmm, "Out[b] = X[b] Y[b] for X [B, M, K], Y [B, K, N].", NULL, 0, bmm_infer,
          xy_maker);
GRAD_SCHEMA(bmm, "X@GRAD = Out@GRAD Y^T, Y@GRAD = X^T Out@GRAD per batch.", xy_grad_inputs,
            xy_grad_outputs, NULL, 0, 2);

/* ---- dot ---- */

static rill_status *dot_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x, *y;
  rill_tensor_meta *out;
  rill_status *st;
  if (!xy_ready(ctx, &x, &y, &out, &st)) return st;
  const rill_dims *a = &x->dims, *b = &y->dims;
  bool ok = a->n == b->n && (a->n == 1 || a->n == 2);
  for (int i = 0; ok && i < a->n; i++) ok = !dim_differs(a->d[i], b->d[i]);
  if (!ok) {
    char as[RILL_DIMS_STR_MAX], bs[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input X (%s) %s and input Y (%s) %s must have one 1-D or "
                            "2-D shape", rill_infer_in_name(ctx, 0, 0),
                            rill_dims_str(a, as, sizeof as), rill_infer_in_name(ctx, 1, 0),
                            rill_dims_str(b, bs, sizeof bs));
  }
  rill_dims d = *a;
  d.d[d.n - 1] = 1;
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

XY_SCHEMA(dot, "Out[i] = sum_j X[i, j] * Y[i, j] over the last dim (kept, as extent 1).", NULL,
          0, dot_infer, xy_maker);
GRAD_SCHEMA(dot, "X@GRAD = Out@GRAD * Y, Y@GRAD = Out@GRAD * X (per row).", xy_grad_inputs,
            xy_grad_outputs, NULL, 0, 2);

/* ---- cross ---- */

static const rill_attr_schema cross_attrs[] = {
    {"dim", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_CROSS_DEFAULT_DIM),
     "dim of extent 3 (negative from the end); the default: the first such dim"},
};

bool rill_cross_dim(const rill_dims *x, int64_t dim, int *out, char *err, size_t errlen) {
  if (dim == RILL_CROSS_DEFAULT_DIM) {
    for (int i = 0; i < x->n; i++)
      if (x->d[i] == 3) {
        *out = i;
        return true;
      }
    snprintf(err, errlen, "no dim has extent 3");
    return false;
  }
  if (dim < -x->n || dim >= x->n) {
    snprintf(err, errlen, "dim %lld is out of range for rank %d", (long long)dim, (int)x->n);
    return false;
  }
  *out = (int)(dim < 0 ? dim + x->n : dim);
  if (x->d[*out] >= 0 && x->d[*out] != 3) {
    snprintf(err, errlen, "dim %d has extent %lld, not 3", *out, (long long)x->d[*out]);
    return false;
  }
  return true;
}

static rill_status *cross_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x, *y;
  rill_tensor_meta *out;
  rill_status *st;
  if (!xy_ready(ctx, &x, &y, &out, &st)) return st;
  bool same = x->dims.n == y->dims.n;
  for (int i = 0; same && i < x->dims.n; i++) same = !dim_differs(x->dims.d[i], y->dims.d[i]);
  char as[RILL_DIMS_STR_MAX], bs[RILL_DIMS_STR_MAX], err[128];
  if (!same)
    return rill_infer_error(ctx, "input X (%s) %s and input Y (%s) %s must have one shape",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, as, sizeof as),
                            rill_infer_in_name(ctx, 1, 0), rill_dims_str(&y->dims, bs, sizeof bs));
  int d;
  if (!rill_cross_dim(&x->dims, ctx->attrs[RILL_CROSS_ATTR_DIM].v.i, &d, err, sizeof err))
    return rill_infer_error(ctx, "input X (%s) %s: %s", rill_infer_in_name(ctx, 0, 0),
                            rill_dims_str(&x->dims, as, sizeof as), err);
  rill_meta_set(out, x->dtype, &x->dims, 0, -1, -1);
  return NULL;
}

XY_SCHEMA(cross, "Out = X x Y, the cross product of the 3-vectors along dim.", cross_attrs,
          RILL_COUNTOF(cross_attrs), cross_infer, xy_maker);
GRAD_SCHEMA(cross, "X@GRAD = Y x Out@GRAD, Y@GRAD = Out@GRAD x X.", xy_grad_inputs,
            xy_grad_outputs, cross_attrs, RILL_COUNTOF(cross_attrs), 2);

/* ---- dist ---- */

static const rill_attr_schema dist_attrs[] = {
    {"p", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(2.0f),
     "the norm: 0 counts nonzeros, inf / -inf take the largest / smallest |X - Y|"},
};

static rill_status *dist_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x, *y;
  rill_tensor_meta *out;
  rill_status *st;
  if (!xy_ready(ctx, &x, &y, &out, &st)) return st;
  rill_dims xa, ya, b;
  char why[128];
  if (!rill_elementwise_broadcast(&x->dims, &y->dims, -1, &xa, &ya, &b, why, sizeof why)) {
    char as[RILL_DIMS_STR_MAX], bs[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input X (%s) %s and input Y (%s) %s do not broadcast: %s",
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, as, sizeof as),
                            rill_infer_in_name(ctx, 1, 0), rill_dims_str(&y->dims, bs, sizeof bs),
                            why);
  }
  rill_dims d = {.n = 1, .d = {1}};
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *dist_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "Y", "Out"), RILL_NAMES("Out"),
                        RILL_NAMES("X", "Y"));
}

/* dist_grad also reads Out */
XY_SCHEMA(dist, "Out = the p-norm of X - Y (broadcast), shape [1].", dist_attrs,
          RILL_COUNTOF(dist_attrs), dist_infer, dist_maker);

static const rill_slot_schema dist_grad_inputs[] = {{"X", 0, "forward X"},
                                                    {"Y", 0, "forward Y"},
                                                    {"Out", 0, "forward Out"},
                                                    {"Out@GRAD", 0, "gradient of Out"}};
GRAD_SCHEMA(dist, "X@GRAD = (|X-Y| / Out)^(p-1) sign(X-Y) Out@GRAD summed to X's shape; "
            "Y@GRAD its negation summed to Y's.", dist_grad_inputs, xy_grad_outputs,
            dist_attrs, RILL_COUNTOF(dist_attrs), 3);

/* ---- addmm ---- */

static const rill_slot_schema addmm_inputs[] = {
    {"Input", 0, "[M, N], or [1, N] / [M, 1] / [1, 1] broadcast over Out"},
    {"X", 0, "[M, K]"},
    {"Y", 0, "[K, N]"}};
static const rill_attr_schema addmm_attrs[] = {
    {"Alpha", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "factor of X Y"},
    {"Beta", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1.0f), "factor of Input"},
};

static rill_status *addmm_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *in = rill_infer_in(ctx, 0, 0), *x = rill_infer_in(ctx, 1, 0);
  const rill_tensor_meta *y = rill_infer_in(ctx, 2, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!in || !x || !y || !out)
    return rill_infer_error(ctx, "needs inputs Input, X, Y and output Out");
  if (!in->known || !x->known || !y->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_status *st = NULL;
  if (!same_dtype(ctx, x, 1, y, 2, &st) || !same_dtype(ctx, in, 0, x, 1, &st)) return st;
  const rill_dims *a = &x->dims, *b = &y->dims, *c = &in->dims;
  char as[RILL_DIMS_STR_MAX], bs[RILL_DIMS_STR_MAX], cs[RILL_DIMS_STR_MAX];
  if (a->n != 2 || b->n != 2 || c->n != 2 || dim_differs(a->d[1], b->d[0]))
    return rill_infer_error(ctx, "inputs Input (%s) %s, X (%s) %s and Y (%s) %s must be 2-D, "
                            "X's columns Y's rows", rill_infer_in_name(ctx, 0, 0),
                            rill_dims_str(c, cs, sizeof cs), rill_infer_in_name(ctx, 1, 0),
                            rill_dims_str(a, as, sizeof as), rill_infer_in_name(ctx, 2, 0),
                            rill_dims_str(b, bs, sizeof bs));
  rill_dims d = {.n = 2, .d = {a->d[0], b->d[1]}};
  for (int i = 0; i < 2; i++)
    if (c->d[i] != 1 && dim_differs(c->d[i], d.d[i]))
      return rill_infer_error(ctx, "input Input (%s) %s does not broadcast to X Y's shape "
                              "[%lld, %lld]", rill_infer_in_name(ctx, 0, 0),
                              rill_dims_str(c, cs, sizeof cs), (long long)d.d[0],
                              (long long)d.d[1]);
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *addmm_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("Input", "X", "Y"), RILL_NAMES("Out"),
                        RILL_NAMES("Input", "X", "Y"));
}

const rill_op_schema rill_schema_addmm = {
    .type = "addmm",
    .doc = "Out = Beta * Input + Alpha * X Y (Input broadcast over Out).",
    .inputs = addmm_inputs,
    .ninputs = RILL_COUNTOF(addmm_inputs),
    .outputs = out_only,
    .noutputs = RILL_COUNTOF(out_only),
    .attrs = addmm_attrs,
    .nattrs = RILL_COUNTOF(addmm_attrs),
    .flags = 0,
    .infer = addmm_infer,
    .grad = addmm_maker,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

static const rill_slot_schema addmm_grad_inputs[] = {{"Input", 0, "forward Input"},
                                                     {"X", 0, "forward X"},
                                                     {"Y", 0, "forward Y"},
                                                     {"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema addmm_grad_outputs[] = {
    {"Input@GRAD", RILL_SLOT_DISPENSABLE, "Beta * Out@GRAD summed over broadcast dims"},
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "Alpha * Out@GRAD Y^T"},
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "Alpha * X^T Out@GRAD"}};
GRAD_SCHEMA(addmm, "Input@GRAD, X@GRAD, Y@GRAD of Out = Beta * Input + Alpha * X Y.",
            addmm_grad_inputs, addmm_grad_outputs, addmm_attrs, RILL_COUNTOF(addmm_attrs), 3);

RILL_OP_TABLE_CHECKS(linalg);
