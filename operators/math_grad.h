/* Helpers for the math ops' gradient schemas (mul, matmul, elementwise, reductions,
 * unary math): shape inference of `<X>@GRAD` outputs and the common makers. */
#ifndef RILL_OPERATORS_MATH_GRAD_H
#define RILL_OPERATORS_MATH_GRAD_H

#include "operators/op_util.h"

/* A list of names and its length, as the makers' helpers take them. */
#define RILL_NAMES(...)                                                                   \
  ((const char *const[]){__VA_ARGS__}),                                                   \
      (sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

/* Output slot `out` takes, argument by argument, the meta of input slot `in` (its dtype,
 * dims and LoD level); outputs whose input is absent or unknown are marked unknown. */
static inline void rill_grad_infer_like(rill_infer_ctx *ctx, size_t out, size_t in) {
  for (size_t i = 0; i < ctx->nout[out]; i++) {
    const rill_tensor_meta *m = rill_infer_in(ctx, in, i);
    rill_tensor_meta *o = rill_infer_out(ctx, out, i);
    if (!m || !m->known) {
      rill_meta_unknown(o);
      continue;
    }
    rill_meta_set(o, m->dtype, &m->dims, m->lod_level, (int)in, (int)i);
  }
}

/* Checks that input slot `g` (an upstream gradient) has the dtype and, where both are
 * known, the dims of `like` (another input slot, e.g. Out@GRAD against Out or X). */
static inline rill_status *rill_grad_infer_same(rill_infer_ctx *ctx, size_t g, size_t like) {
  const rill_tensor_meta *a = rill_infer_in(ctx, g, 0), *b = rill_infer_in(ctx, like, 0);
  if (!a || !b || !a->known || !b->known) return NULL;
  char as[RILL_DIMS_STR_MAX], bs[RILL_DIMS_STR_MAX];
  if (a->dtype != b->dtype)
    return rill_infer_error(ctx, "input %s (%s) is %s but input %s (%s) is %s",
                            ctx->schema->inputs[g].name, rill_infer_in_name(ctx, g, 0),
                            rill_dtype_name(a->dtype), ctx->schema->inputs[like].name,
                            rill_infer_in_name(ctx, like, 0), rill_dtype_name(b->dtype));
  bool same = a->dims.n == b->dims.n;
  for (int i = 0; same && i < a->dims.n; i++)
    if (a->dims.d[i] >= 0 && b->dims.d[i] >= 0 && a->dims.d[i] != b->dims.d[i]) same = false;
  if (!same)
    return rill_infer_error(ctx, "input %s (%s) has shape %s but input %s (%s) has shape %s",
                            ctx->schema->inputs[g].name, rill_infer_in_name(ctx, g, 0),
                            rill_dims_str(&a->dims, as, sizeof as), ctx->schema->inputs[like].name,
                            rill_infer_in_name(ctx, like, 0),
                            rill_dims_str(&b->dims, bs, sizeof bs));
  return NULL;
}

/* The maker of the gradient of an elementwise gradient op that reads X and Out@GRAD
 * (square_grad, elu_grad), as Paddle's double-gradient makers: X, Out@GRAD as DOut and
 * X@GRAD's gradient DDX in; X's gradient DX and Out@GRAD's DDOut out. */
static inline rill_status *rill_double_grad_from_x(rill_grad_ctx *ctx) {
  return rill_grad_emit_as(ctx, RILL_NAMES("X", "X", "Out@GRAD", "DOut"), RILL_NAMES("X@GRAD", "DDX"),
                           RILL_NAMES("X", "DX", "Out@GRAD", "DDOut"));
}

/* The inputs of the op that maker emits: X, DOut, DDX (operators/unary_math.c). */
extern const rill_slot_schema rill_double_grad_x_inputs[3];

/* Shape inference of such an op, and of sqrt_grad_grad: inputs A (X; Out), B (DOut; DX)
 * and the optional DDX, all of A's shape; both outputs take A's meta. */
static inline rill_status *rill_double_grad_infer(rill_infer_ctx *ctx) {
  if (!rill_infer_in(ctx, 0, 0) || !rill_infer_in(ctx, 1, 0))
    return rill_infer_error(ctx, "needs inputs %s and %s", ctx->schema->inputs[0].name,
                            ctx->schema->inputs[1].name);
  RILL_TRY(rill_grad_infer_same(ctx, 1, 0));
  if (rill_infer_in(ctx, 2, 0)) RILL_TRY(rill_grad_infer_same(ctx, 2, 0));
  rill_grad_infer_like(ctx, 0, 0);
  rill_grad_infer_like(ctx, 1, 0);
  return NULL;
}

/* Defines rill_schema_<name>_grad_grad, the gradient op of <name>_grad (backward.md,
 * "Double gradients"): slot tables INS and OUTS, the forward op's attribute table ATTRS
 * (gradient ops carry its attributes), shape inference INFER, FLAGS, and the input
 * DTYPE_SLOT whose dtype picks the kernel. */
#define RILL_GRAD_GRAD_SCHEMA(NAME, DOC, INS, OUTS, ATTRS, INFER, FLAGS, DTYPE_SLOT)      \
  const rill_op_schema rill_schema_##NAME##_grad_grad = {                                 \
      .type = #NAME "_grad_grad",                                                         \
      .doc = DOC,                                                                         \
      .inputs = INS,                                                                      \
      .ninputs = RILL_COUNTOF(INS),                                                       \
      .outputs = OUTS,                                                                    \
      .noutputs = RILL_COUNTOF(OUTS),                                                     \
      .attrs = ATTRS,                                                                     \
      .nattrs = RILL_COUNTOF(ATTRS),                                                      \
      .flags = FLAGS,                                                                     \
      .infer = INFER,                                                                     \
      .grad = NULL,                                                                       \
      .kernel_dtype_slot = DTYPE_SLOT,                                                    \
      .dtype_attr = -1,                                                                   \
  }


#endif
