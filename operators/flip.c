/* The ops that move elements along some dims without changing the shape: flip and
 * reverse (elements in reverse order along the listed dims; each is its own gradient)
 * and roll (a cyclic shift per dim; roll_grad shifts back). */
#include "operators/tensor_ops.h"

#include <stdio.h>

static const rill_slot_schema x_inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema out_outputs[] = {{"Out", 0, "X with its elements moved"}};
static const rill_attr_schema flip_attrs[] = {
    {"dims", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "dims reversed (negative from the end)"},
};
static const rill_attr_schema reverse_attrs[] = {
    {"axis", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "dims reversed (negative from the end)"},
};
static const rill_attr_schema roll_attrs[] = {
    {"shifts", RILL_ATTR_LONGS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_LONGS),
     "shift of each dim in dims (element i moves to i + shift, cyclically)"},
    {"dims", RILL_ATTR_LONGS, 0, RILL_DEF_EMPTY(RILL_ATTR_LONGS),
     "dims shifted (negative from the end); empty: X flattened, shifted by shifts[0]"},
};

bool rill_flip_axes(const rill_attr_value *axes, int rank, bool *flip, char *err, size_t errlen) {
  for (int i = 0; i < rank; i++) flip[i] = false;
  for (size_t i = 0; i < axes->n; i++) {
    int64_t v = axes->type == RILL_ATTR_LONGS ? axes->list.longs[i] : axes->list.ints[i];
    int a;
    if (!rill_norm_axis(v, rank, &a)) {
      snprintf(err, errlen, "axis %lld is out of range for rank %d", (long long)v, rank);
      return false;
    }
    if (flip[a]) {
      snprintf(err, errlen, "axis %lld is listed twice", (long long)v);
      return false;
    }
    flip[a] = true;
  }
  return true;
}

bool rill_roll_shifts(const rill_attr_value *shifts, const rill_attr_value *dims,
                      const rill_dims *x, int64_t *shift, char *err, size_t errlen) {
  for (int i = 0; i < x->n; i++) shift[i] = 0;
  if (dims->n == 0) {
    if (shifts->n != 1) {
      snprintf(err, errlen, "without dims, shifts must have one entry, not %zu", shifts->n);
      return false;
    }
    return true;
  }
  if (shifts->n != dims->n) {
    snprintf(err, errlen, "shifts has %zu entries but dims %zu", shifts->n, dims->n);
    return false;
  }
  for (size_t i = 0; i < dims->n; i++) {
    int a;
    if (!rill_norm_axis(dims->list.longs[i], x->n, &a)) {
      snprintf(err, errlen, "dim %lld is out of range for rank %d", (long long)dims->list.longs[i],
               (int)x->n);
      return false;
    }
    shift[a] += shifts->list.longs[i];
  }
  return true;
}

/* Out: X's meta, after checking the flipped axes or (roll) the shifts and dims. */
static rill_status *moved_infer(rill_infer_ctx *ctx, const rill_attr_value *axes,
                                const rill_attr_value *shifts, const rill_attr_value *dims) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  char err[128];
  bool flip[RILL_MAX_DIMS];
  int64_t shift[RILL_MAX_DIMS];
  bool ok = axes ? rill_flip_axes(axes, x->dims.n, flip, err, sizeof err)
                 : rill_roll_shifts(shifts, dims, &x->dims, shift, err, sizeof err);
  if (!ok) return rill_infer_error(ctx, "input X (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  rill_meta_set(out, x->dtype, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

static rill_status *flip_infer(rill_infer_ctx *ctx) {
  return moved_infer(ctx, &ctx->attrs[RILL_FLIP_ATTR_DIMS], NULL, NULL);
}
static rill_status *reverse_infer(rill_infer_ctx *ctx) {
  if (ctx->attrs[RILL_REVERSE_ATTR_AXIS].n == 0)
    return rill_infer_error(ctx, "attribute axis is empty; list the dims of X (%s) to reverse",
                            rill_infer_in_name(ctx, 0, 0));
  return moved_infer(ctx, &ctx->attrs[RILL_REVERSE_ATTR_AXIS], NULL, NULL);
}
static rill_status *roll_infer(rill_infer_ctx *ctx) {
  return moved_infer(ctx, NULL, &ctx->attrs[RILL_ROLL_ATTR_SHIFTS], &ctx->attrs[RILL_ROLL_ATTR_DIMS]);
}

/* Gradient of a self-inverse op: the same op on Out@GRAD. */
static rill_status *self_inverse_maker(rill_grad_ctx *ctx) {
  if (rill_grad_none_wanted(ctx, "X")) return NULL;
  rill_op_desc *op;
  RILL_TRY(rill_grad_begin(ctx, ctx->fwd->type, &op));
  RILL_TRY(rill_grad_of_output_as(ctx, op, "Out", "X"));
  RILL_TRY(rill_grad_of_input_as(ctx, op, "X", "Out"));
  return NULL;
}

static rill_status *roll_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X"}, *const og[] = {"Out"}, *const ig[] = {"X"};
  return rill_grad_emit(ctx, NULL, fwd, 1, og, 1, ig, 1);
}

const rill_op_schema rill_schema_flip = {
    .type = "flip",
    .doc = "Out = X with the elements along each of dims in reverse order.",
    .inputs = x_inputs,
    .ninputs = RILL_COUNTOF(x_inputs),
    .outputs = out_outputs,
    .noutputs = RILL_COUNTOF(out_outputs),
    .attrs = flip_attrs,
    .nattrs = RILL_COUNTOF(flip_attrs),
    .flags = 0,
    .infer = flip_infer,
    .grad = self_inverse_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_reverse = {
    .type = "reverse",
    .doc = "Out = X with the elements along each of axis in reverse order.",
    .inputs = x_inputs,
    .ninputs = RILL_COUNTOF(x_inputs),
    .outputs = out_outputs,
    .noutputs = RILL_COUNTOF(out_outputs),
    .attrs = reverse_attrs,
    .nattrs = RILL_COUNTOF(reverse_attrs),
    .flags = 0,
    .infer = reverse_infer,
    .grad = self_inverse_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

const rill_op_schema rill_schema_roll = {
    .type = "roll",
    .doc = "Out = X shifted cyclically: along dims[i] element j moves to j + shifts[i] (X "
           "flattened when dims is empty).",
    .inputs = x_inputs,
    .ninputs = RILL_COUNTOF(x_inputs),
    .outputs = out_outputs,
    .noutputs = RILL_COUNTOF(out_outputs),
    .attrs = roll_attrs,
    .nattrs = RILL_COUNTOF(roll_attrs),
    .flags = 0,
    .infer = roll_infer,
    .grad = roll_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema roll_grad_inputs[] = {
    {"X", 0, "the forward input (only its shape is read)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema roll_grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD shifted back"}};

static rill_status *roll_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *dout = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x || !dout) return rill_infer_error(ctx, "needs inputs X and Out@GRAD");
  if (!dx) return NULL;
  if (!dout->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_meta_set(dx, dout->dtype, &dout->dims, dout->lod_level, 1, 0);
  return NULL;
}

const rill_op_schema rill_schema_roll_grad = {
    .type = "roll_grad",
    .doc = "X@GRAD = Out@GRAD shifted by -shifts.",
    .inputs = roll_grad_inputs,
    .ninputs = RILL_COUNTOF(roll_grad_inputs),
    .outputs = roll_grad_outputs,
    .noutputs = RILL_COUNTOF(roll_grad_outputs),
    .attrs = roll_attrs,
    .nattrs = RILL_COUNTOF(roll_attrs),
    .flags = 0,
    .infer = roll_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(flip);
