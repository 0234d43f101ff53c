/* Ops that make a tensor from numbers rather than from another tensor's elements: range,
 * linspace, eye, fill_any_like, diag and size. None has a gradient (Paddle's layers mark
 * their outputs stop_gradient). */
#include "operators/tensor_ops.h"

#include <math.h>
#include <stdio.h>

/* A one-element tensor's value as double and (exactly, for int64) as int64. */
bool rill_scalar_at(const rill_tensor *t, double *d, int64_t *l) {
  if (!t || !rill_tensor_ptr(t) || rill_tensor_numel(t) < 1) return false;
  const void *p = rill_tensor_ptr(t);
  switch (t->dtype) {
  case RILL_DTYPE_FP32: *d = *(const float *)p; *l = (int64_t)0; break;
  case RILL_DTYPE_FP64: *d = *(const double *)p; *l = (int64_t)0; break;
  case RILL_DTYPE_INT32: *l = *(const int32_t *)p; *d = (double)*l; break;
  case RILL_DTYPE_INT64: *l = *(const int64_t *)p; *d = (double)*l; break;
  default: return false;
  }
  return true;
}

bool rill_range_count(const rill_tensor *start, const rill_tensor *end, const rill_tensor *step,
                      int64_t *count, char *err, size_t errlen) {
  double s, e, st;
  int64_t si, ei, sti;
  if (!rill_scalar_at(start, &s, &si) || !rill_scalar_at(end, &e, &ei) ||
      !rill_scalar_at(step, &st, &sti)) {
    snprintf(err, errlen, "Start, End and Step must each hold one float32/64 or int32/64 value");
    return false;
  }
  if (st == 0) {
    snprintf(err, errlen, "the step is 0");
    return false;
  }
  if ((s < e && st < 0) || (s > e && st > 0)) {
    snprintf(err, errlen, "the step %g moves away from the end %g (start %g)", st, e, s);
    return false;
  }
  bool integral = start->dtype == RILL_DTYPE_INT32 || start->dtype == RILL_DTYPE_INT64;
  if (integral) {
    int64_t span = ei > si ? ei - si : si - ei, a = sti > 0 ? sti : -sti;
    *count = span / a + (span % a != 0);
  } else {
    /* In the element type, as Paddle computes it. */
    double c = start->dtype == RILL_DTYPE_FP32
                   ? (double)ceilf(fabsf(((float)e - (float)s) / (float)st))
                   : ceil(fabs((e - s) / st));
    if (!(c <= (double)INT64_MAX / 16)) {
      snprintf(err, errlen, "the range from %g to %g by %g has too many elements", s, e, st);
      return false;
    }
    *count = (int64_t)c;
  }
  return true;
}

/* ---- range ---- */

static const rill_slot_schema range_inputs[] = {
    {"Start", RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "one-element tensor: the first value"},
    {"End", RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "one-element tensor: the bound (excluded)"},
    {"Step", RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "one-element tensor: the increment (not 0)"},
};
static const rill_slot_schema range_outputs[] = {
    {"Out", 0, "1-D: Start, Start + Step, ... while before End"}};

static rill_status *range_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *s = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!s || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0) || !out)
    return rill_infer_error(ctx, "needs inputs Start, End, Step and output Out");
  if (!s->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_dims d = {.n = 1, .d = {-1}};
  if (ctx->in_tensors) {
    char err[160];
    if (!rill_range_count(rill_infer_tensor(ctx, 0, 0), rill_infer_tensor(ctx, 1, 0),
                          rill_infer_tensor(ctx, 2, 0), &d.d[0], err, sizeof err))
      return rill_infer_error(ctx, "inputs Start (%s), End (%s), Step (%s): %s",
                              rill_infer_in_name(ctx, 0, 0), rill_infer_in_name(ctx, 1, 0),
                              rill_infer_in_name(ctx, 2, 0), err);
  }
  rill_meta_set(out, s->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_range = {
    .type = "range",
    .doc = "Out = Start, Start + Step, ... up to End (excluded), each value the previous plus Step.",
    .inputs = range_inputs,
    .ninputs = RILL_COUNTOF(range_inputs),
    .outputs = range_outputs,
    .noutputs = RILL_COUNTOF(range_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = range_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- linspace ---- */

static const rill_slot_schema linspace_inputs[] = {
    {"Start", RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "one-element float tensor: the first value"},
    {"Stop", RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "one-element float tensor: the last value"},
    {"Num", RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "one-element int32 tensor: how many values (> 0)"},
};
static const rill_slot_schema linspace_outputs[] = {{"Out", 0, "1-D: Num evenly spaced values"}};

static rill_status *linspace_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *s = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!s || !rill_infer_in(ctx, 1, 0) || !rill_infer_in(ctx, 2, 0) || !out)
    return rill_infer_error(ctx, "needs inputs Start, Stop, Num and output Out");
  if (!s->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_dims d = {.n = 1, .d = {-1}};
  if (ctx->in_tensors) {
    if (!rill_int_tensor_at(rill_infer_tensor(ctx, 2, 0), 0, &d.d[0]) || d.d[0] < 1)
      return rill_infer_error(ctx, "input Num (%s) must hold one int32 value > 0",
                              rill_infer_in_name(ctx, 2, 0));
  }
  rill_meta_set(out, s->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_linspace = {
    .type = "linspace",
    .doc = "Out = Num values from Start to Stop: each the previous plus (Stop - Start) / (Num - 1).",
    .inputs = linspace_inputs,
    .ninputs = RILL_COUNTOF(linspace_inputs),
    .outputs = linspace_outputs,
    .noutputs = RILL_COUNTOF(linspace_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = linspace_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- eye ---- */

static const rill_slot_schema eye_outputs[] = {{"Out", 0, "[num_rows, num_columns] identity"}};
static const rill_attr_schema eye_attrs[] = {
    {"num_rows", RILL_ATTR_LONG, RILL_ATTR_REQUIRED, RILL_DEF_LONG(0), "rows (>= 0)"},
    {"num_columns", RILL_ATTR_LONG, 0, RILL_DEF_LONG(-1), "columns; -1: num_rows"},
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(RILL_DTYPE_FP32), "dtype of Out"},
};

static rill_status *eye_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  int64_t r = ctx->attrs[RILL_EYE_ATTR_NUM_ROWS].v.l, c = ctx->attrs[RILL_EYE_ATTR_NUM_COLUMNS].v.l;
  if (c == -1) c = r;
  if (r < 0 || c < 0)
    return rill_infer_error(ctx, "num_rows %lld and num_columns %lld of output Out (%s) must be "
                            ">= 0", (long long)r, (long long)c, rill_infer_out_name(ctx, 0, 0));
  rill_dims d = {.n = 2, .d = {r, c}};
  rill_meta_set(out, (rill_dtype)ctx->attrs[RILL_EYE_ATTR_DTYPE].v.i, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_eye = {
    .type = "eye",
    .doc = "Out = ones on the main diagonal of a [num_rows, num_columns] matrix, zeros elsewhere.",
    .inputs = NULL,
    .ninputs = 0,
    .outputs = eye_outputs,
    .noutputs = RILL_COUNTOF(eye_outputs),
    .attrs = eye_attrs,
    .nattrs = RILL_COUNTOF(eye_attrs),
    .flags = 0,
    .infer = eye_infer,
    .grad = NULL,
    .kernel_dtype_slot = -1,
    .dtype_attr = RILL_EYE_ATTR_DTYPE,
};

/* ---- fill_any_like ---- */

static const rill_slot_schema fal_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD | RILL_SLOT_ANY_PLACE, "gives the shape (and the dtype unless dtype says)"}};
static const rill_slot_schema fal_outputs[] = {{"Out", 0, "X's shape filled with value"}};
static const rill_attr_schema fal_attrs[] = {
    {"value", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "the value"},
    {"dtype", RILL_ATTR_INT, 0, RILL_DEF_INT(-1), "dtype of Out; -1: X's"},
};

static rill_status *fill_any_like_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  int32_t dt = ctx->attrs[RILL_FILL_ANY_LIKE_ATTR_DTYPE].v.i;
  rill_meta_set(out, dt == -1 ? x->dtype : (rill_dtype)dt, &x->dims, x->lod_level, 0, 0);
  return NULL;
}

const rill_op_schema rill_schema_fill_any_like = {
    .type = "fill_any_like",
    .doc = "Out = X's shape filled with value, of X's dtype or dtype.",
    .inputs = fal_inputs,
    .ninputs = RILL_COUNTOF(fal_inputs),
    .outputs = fal_outputs,
    .noutputs = RILL_COUNTOF(fal_outputs),
    .attrs = fal_attrs,
    .nattrs = RILL_COUNTOF(fal_attrs),
    .flags = 0,
    .infer = fill_any_like_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- diag ---- */

static const rill_slot_schema diag_inputs[] = {
    {"Diagonal", RILL_SLOT_NO_GRAD, "1-D values of the diagonal"}};
static const rill_slot_schema diag_outputs[] = {{"Out", 0, "[n, n]: Diagonal on the diagonal"}};

static rill_status *diag_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input Diagonal and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dims.n != 1)
    return rill_infer_error(ctx, "input Diagonal (%s) has rank %d; it must be 1-D",
                            rill_infer_in_name(ctx, 0, 0), (int)x->dims.n);
  rill_dims d = {.n = 2, .d = {x->dims.d[0], x->dims.d[0]}};
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_diag = {
    .type = "diag",
    .doc = "Out = the square matrix with Diagonal on its main diagonal, zeros elsewhere.",
    .inputs = diag_inputs,
    .ninputs = RILL_COUNTOF(diag_inputs),
    .outputs = diag_outputs,
    .noutputs = RILL_COUNTOF(diag_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = diag_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- size ---- */

static const rill_slot_schema size_inputs[] = {
    {"Input", RILL_SLOT_NO_GRAD, "any tensor (only its shape is read)"}};
static const rill_slot_schema size_outputs[] = {{"Out", 0, "int64 [1]: Input's element count"}};

static rill_status *size_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!rill_infer_in(ctx, 0, 0) || !out) return rill_infer_error(ctx, "needs input Input and output Out");
  rill_dims d = {.n = 1, .d = {1}};
  rill_meta_set(out, RILL_DTYPE_INT64, &d, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_size = {
    .type = "size",
    .doc = "Out = the number of elements of Input (int64 [1]).",
    .inputs = size_inputs,
    .ninputs = RILL_COUNTOF(size_inputs),
    .outputs = size_outputs,
    .noutputs = RILL_COUNTOF(size_outputs),
    .attrs = NULL,
    .nattrs = 0,
    .flags = 0,
    .infer = size_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(creation);
