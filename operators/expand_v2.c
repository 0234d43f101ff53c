/* expand_v2: broadcasts X to a target shape (numpy rules: X aligned to the trailing dims,
 * each X dim 1 or equal to the target). The target comes from the Shape input (1-D
 * int32/int64), else the expand_shapes_tensor list (one 1-element tensor per dim), else
 * the `shape` attribute. A target of -1 keeps X's extent (only for dims X has); in the
 * attribute, -2 marks a dim given by expand_shapes_tensor (Paddle 2.5+). */
#include "operators/op_util.h"

#include "framework/data/tensor.h"

enum { IN_X, IN_SHAPE, IN_SHAPES };

static const rill_slot_schema inputs[] = {
    [IN_X] = {"X", 0, "tensor to broadcast"},
    [IN_SHAPE] = {"Shape", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                  "1-D int32/int64 target shape"},
    [IN_SHAPES] = {"expand_shapes_tensor",
                   RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                   "one-element int32/int64 tensors, one per target dim"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "X broadcast to the target shape"}};
static const rill_attr_schema attrs[] = {
    {"shape", RILL_ATTR_INTS, 0, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "target shape; -1 keeps X's extent, -2 is given by expand_shapes_tensor"},
};

static bool read_int(const rill_tensor *t, int64_t i, int64_t *v) {
  if (!t || !rill_tensor_ptr(t) || i >= rill_tensor_numel(t)) return false;
  if (t->dtype == RILL_DTYPE_INT32) *v = ((const int32_t *)rill_tensor_ptr(t))[i];
  else if (t->dtype == RILL_DTYPE_INT64) *v = ((const int64_t *)rill_tensor_ptr(t))[i];
  else return false;
  return true;
}

static rill_status *expand_v2_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  bool runtime = ctx->in_tensors != NULL;
  const rill_attr_value *sa = &ctx->attrs[RILL_EXPAND_V2_ATTR_SHAPE];
  const char *xn = rill_infer_in_name(ctx, IN_X, 0);
  rill_dims t = {0};
  bool known[RILL_MAX_DIMS]; /* false: given by a tensor not readable now */
  size_t nshapes = ctx->nin[IN_SHAPES];
  const rill_tensor_meta *sm = rill_infer_in(ctx, IN_SHAPE, 0);
  if (sm) {
    const rill_tensor *st = rill_infer_tensor(ctx, IN_SHAPE, 0);
    int64_t n = st ? rill_tensor_numel(st) : (sm->known && sm->dims.n == 1 ? sm->dims.d[0] : -1);
    if (n < 0 && sa->n == 0) {
      rill_meta_unknown(out);
      return NULL;
    }
    if (n < 0) n = (int64_t)sa->n;
    if (n > RILL_MAX_DIMS)
      return rill_infer_error(ctx, "input Shape (%s) has %lld values, more than %d dims",
                              rill_infer_in_name(ctx, IN_SHAPE, 0), (long long)n, RILL_MAX_DIMS);
    t.n = (int32_t)n;
    for (int i = 0; i < t.n; i++) {
      known[i] = st != NULL;
      if (st && !read_int(st, i, &t.d[i]))
        return rill_infer_error(ctx, "input Shape (%s) must be an int32/int64 tensor",
                                rill_infer_in_name(ctx, IN_SHAPE, 0));
    }
  } else if (nshapes > 0) {
    if (nshapes > RILL_MAX_DIMS)
      return rill_infer_error(ctx, "input expand_shapes_tensor has %zu tensors, more than %d",
                              nshapes, RILL_MAX_DIMS);
    t.n = (int32_t)nshapes;
    for (size_t i = 0; i < nshapes; i++) {
      const rill_tensor *st = rill_infer_tensor(ctx, IN_SHAPES, i);
      known[i] = st != NULL;
      if (!st && i < sa->n && sa->list.ints[i] != -1 && sa->list.ints[i] != -2) {
        t.d[i] = sa->list.ints[i]; /* a constant Paddle also recorded in the attribute */
        known[i] = true;
      } else if (st && !read_int(st, 0, &t.d[i])) {
        return rill_infer_error(ctx, "input expand_shapes_tensor (%s) must hold one int32/int64 "
                                "value", rill_infer_in_name(ctx, IN_SHAPES, i));
      }
    }
  } else {
    if (sa->n > RILL_MAX_DIMS)
      return rill_infer_error(ctx, "attribute shape has %zu dims, more than %d", sa->n, RILL_MAX_DIMS);
    t.n = (int32_t)sa->n;
    for (size_t i = 0; i < sa->n; i++) {
      t.d[i] = sa->list.ints[i];
      known[i] = t.d[i] != -2;
    }
  }
  char xs[RILL_DIMS_STR_MAX];
  rill_dims_str(&x->dims, xs, sizeof xs);
  if (t.n < x->dims.n)
    return rill_infer_error(ctx, "the target shape has %d dims, fewer than input X (%s) %s",
                            (int)t.n, xn, xs);
  int diff = t.n - x->dims.n;
  rill_dims od = {.n = t.n};
  for (int i = 0; i < t.n; i++) {
    int64_t xd = i < diff ? 1 : x->dims.d[i - diff];
    if (!known[i]) {
      od.d[i] = -1;
      continue;
    }
    int64_t v = t.d[i];
    if (v == -1) {
      if (i < diff)
        return rill_infer_error(ctx, "target dim %d is -1 but input X (%s) %s has no such dim", i,
                                xn, xs);
      od.d[i] = xd;
    } else if (v < 0) {
      return rill_infer_error(ctx, "target dim %d is %lld: must be positive or -1", i, (long long)v);
    } else {
      if (xd >= 0 && xd != 1 && xd != v)
        return rill_infer_error(ctx, "input X (%s) %s cannot expand to %lld at dim %d (X's extent "
                                "must be 1 or equal)", xn, xs, (long long)v, i);
      od.d[i] = v;
    }
    if (runtime && od.d[i] < 0) od.d[i] = 0;
  }
  rill_meta_set(out, x->dtype, &od, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_expand_v2 = {
    .type = "expand_v2",
    .doc = "Out = X broadcast to a target shape (attribute shape, Shape or expand_shapes_tensor).",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = expand_v2_infer,
    .grad = NULL,
    .kernel_dtype_slot = IN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(expand_v2);
