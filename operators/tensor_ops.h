/* Helpers shared by the tensor-manipulation ops (reshape2, transpose2, flatten*, squeeze2,
 * unsqueeze2, concat, split, slice, cast, assign, shape, random ops, lookup_table*,
 * top_k, accuracy, arg_max): their shape inference and their CPU kernels compute output
 * shapes with the same functions, so the two never disagree.
 *
 * Shape functions write a message (without the op name) into err and return false on
 * bad input; callers turn it into rill_infer_error / rill_kernel_error. */
#ifndef RILL_OPERATORS_TENSOR_OPS_H
#define RILL_OPERATORS_TENSOR_OPS_H

#include <stdio.h>

#include "operators/op_util.h"

/* Element i of an int32/int64 tensor; false when t is not an integer tensor holding it. */
static inline bool rill_int_tensor_at(const rill_tensor *t, int64_t i, int64_t *out) {
  if (!t || !rill_tensor_ptr(t) || i < 0 || i >= rill_tensor_numel(t)) return false;
  if (t->dtype == RILL_DTYPE_INT32) *out = ((const int32_t *)rill_tensor_ptr(t))[i];
  else if (t->dtype == RILL_DTYPE_INT64) *out = ((const int64_t *)rill_tensor_ptr(t))[i];
  else return false;
  return true;
}

/* Sets output (slot, 0) to Paddle's XShape: dims [0] + x dims, x's dtype, no LoD. An
 * absent XShape is left alone. */
rill_status *rill_xshape_infer(rill_infer_ctx *ctx, size_t slot, const rill_tensor_meta *x);
/* X's dims from an XShape (drops the leading 0); false when xshape has rank 0. */
bool rill_xshape_dims(const rill_dims *xshape, rill_dims *x);

/* reshape: `shape` with 0 = copy the input extent at that index, -1 = infer (at most
 * one). Unknown input extents (compile time) leave an inferred extent -1. */
bool rill_reshape_dims(const int64_t *shape, size_t n, const rill_dims *in, rill_dims *out,
                       char *err, size_t errlen);
/* squeeze: removes the listed axes whose extent is 1 (negative count from the end;
 * at compile time -1 extents count as 1); no axes: every extent-1 axis. */
bool rill_squeeze_dims(const int32_t *axes, size_t n, const rill_dims *in, bool runtime,
                       rill_dims *out, char *err, size_t errlen);
/* unsqueeze: inserts extent-1 axes one after another, as Paddle does (a negative axis
 * counts from the end of the shape grown so far, plus one). */
bool rill_unsqueeze_dims(const int64_t *axes, size_t n, const rill_dims *in, rill_dims *out,
                         char *err, size_t errlen);
/* flatten_contiguous_range: merges [start, stop] into one extent. */
bool rill_flatten_range_dims(int start, int stop, const rill_dims *in, rill_dims *out,
                             char *err, size_t errlen);
/* flatten2: [prod(dims[:axis]), prod(dims[axis:])], 0 <= axis <= rank. */
bool rill_flatten2_dims(int axis, const rill_dims *in, rill_dims *out, char *err, size_t errlen);

/* Product of extents [b, e): -1 when one is unknown, -2 on overflow. */
int64_t rill_span_prod(const rill_dims *d, int b, int e);

/* An output shape from ShapeTensor (a 1-D int tensor), ShapeTensorList (one-element int
 * tensors) or attribute `shape` (LONGS), in that order of priority, as fill_constant,
 * uniform_random and gaussian_random read it. Unknown values are -1 at compile time. */
rill_status *rill_shape_from_inputs(rill_infer_ctx *ctx, size_t shape_tensor_slot,
                                    size_t shape_list_slot, const rill_attr_value *shape,
                                    rill_dims *out, bool *known);

/* Normalizes axis in [-rank, rank) to [0, rank); false when out of range. */
static inline bool rill_norm_axis(int64_t axis, int rank, int *out) {
  if (axis < -rank || axis >= rank) return false;
  *out = (int)(axis < 0 ? axis + rank : axis);
  return true;
}

/* Inference of a gradient op whose output 0 takes the meta of its input 0 (the forward
 * input whose gradient it is); the other inputs are not read. */
rill_status *rill_grad_like_input_infer(rill_infer_ctx *ctx);

/* Inference for the `<op>_grad` of a view op (reshape2, flatten2, squeeze2, ...):
 * inputs XShape and Out@GRAD, output X@GRAD of XShape's dims without the leading 0. */
rill_status *rill_xshape_grad_infer(rill_infer_ctx *ctx);
/* Maker for view ops: `<type>_grad` with XShape, Out@GRAD -> X@GRAD (Paddle's layout). */
rill_status *rill_xshape_grad_maker(rill_grad_ctx *ctx);



/* reshape2's target at run time: ShapeTensor (one-element int tensors) wins, then Shape
 * (a 1-D int tensor), then attribute `shape` (INTS). */
bool rill_reshape_target(const rill_tensor *const *list, size_t nlist, const rill_tensor *shape,
                         const rill_attr_value *attr, int64_t *out, size_t *n, char *err,
                         size_t errlen);

/* Where slice reads: per input dim the first index and the extent (whole dims for axes
 * not sliced), and the output dims after decrease_axis. */
typedef struct rill_slice_plan {
  int64_t start[RILL_MAX_DIMS];
  int64_t len[RILL_MAX_DIMS];
  rill_dims out;
} rill_slice_plan;

/* The inputs slice takes its bounds from, in Paddle's priority: StartsTensor, else
 * StartsTensorList, else attribute starts (the same for ends). Tensors may be NULL
 * (absent, or compile time with `present` set: the bounds are then unknown). */
typedef struct rill_slice_bounds {
  bool tensor_present;       /* StartsTensor is bound (its value may be unknown: NULL) */
  const rill_tensor *tensor; /* 1-D int tensor, one value per axis */
  const rill_tensor *const *list; /* StartsTensorList: nlist one-element tensors or NULLs */
  size_t nlist;
  const rill_attr_value *attr; /* INTS */
} rill_slice_bounds;

/* The *_batch_size_like ops' output dims: attribute shape (INTS) with dim oi replaced by
 * input slot's dim ii (for a LoD input and ii 0: its number of sequences, Paddle's
 * rule); -1 while unknown at compile time. */
rill_status *rill_batch_size_like_dims(rill_infer_ctx *ctx, size_t slot, const rill_attr_value *s,
                                       int32_t ii, int32_t oi, rill_dims *d);

/* Bound i: false when unknown (compile time or an unset tensor). The count: the tensor's
 * element count (fallback while its value is unknown), the list's length or the attr's. */
static inline bool rill_slice_bound_at(const rill_slice_bounds *b, size_t i, int64_t *v) {
  if (b->tensor_present) return rill_int_tensor_at(b->tensor, (int64_t)i, v);
  if (b->nlist > 0) return b->list && i < b->nlist && rill_int_tensor_at(b->list[i], 0, v);
  if (i < b->attr->n) {
    *v = b->attr->list.ints[i];
    return true;
  }
  return false;
}

static inline size_t rill_slice_bound_count(const rill_slice_bounds *b, size_t fallback) {
  if (b->tensor_present) return b->tensor ? (size_t)rill_tensor_numel(b->tensor) : fallback;
  if (b->nlist > 0) return b->nlist;
  return b->attr->n;
}

/* The plan of a slice of `in` (inference at compile time, and the kernels of every place:
 * inline so that a backend module has its own copy). */
static inline bool rill_slice_plan_make(const rill_dims *in, const rill_attr_value *axes,
                                        const rill_slice_bounds *starts, const rill_slice_bounds *ends,
                                        const rill_attr_value *infer_flags, const rill_attr_value *decrease,
                                        bool runtime, rill_slice_plan *plan, char *err, size_t errlen) {
  int r = in->n;
  size_t na = axes->n;
  for (int d = 0; d < r; d++) {
    plan->start[d] = 0;
    plan->len[d] = in->d[d];
  }
  size_t ns = rill_slice_bound_count(starts, na), ne = rill_slice_bound_count(ends, na);
  if (ns != na || ne != na) {
    snprintf(err, errlen, "%zu axes but %zu starts and %zu ends", na, ns, ne);
    return false;
  }
  bool seen[RILL_MAX_DIMS] = {false};
  for (size_t i = 0; i < na; i++) {
    int ax;
    if (!rill_norm_axis(axes->list.ints[i], r, &ax) || seen[ax]) {
      snprintf(err, errlen, "axis %d is out of range for an input of rank %d, or repeated",
               (int)axes->list.ints[i], r);
      return false;
    }
    seen[ax] = true;
    int64_t dim = in->d[ax], s, e;
    bool flagged = !runtime && i < infer_flags->n && infer_flags->list.ints[i] == -1;
    if (dim < 0 || flagged || !rill_slice_bound_at(starts, i, &s) || !rill_slice_bound_at(ends, i, &e)) {
      if (runtime && dim >= 0) {
        snprintf(err, errlen, "the start or end of axis %d is not an int32/int64 value", ax);
        return false;
      }
      plan->len[ax] = -1;
      continue;
    }
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    s = s < 0 ? 0 : s > dim ? dim : s;
    e = e < 0 ? 0 : e > dim ? dim : e;
    plan->start[ax] = s;
    plan->len[ax] = e > s ? e - s : 0;
  }
  bool drop[RILL_MAX_DIMS] = {false};
  for (size_t i = 0; i < decrease->n; i++) {
    int ax;
    if (!rill_norm_axis(decrease->list.ints[i], r, &ax)) {
      snprintf(err, errlen, "decrease_axis %d is out of range for an input of rank %d",
               (int)decrease->list.ints[i], r);
      return false;
    }
    if (plan->len[ax] >= 0 && plan->len[ax] != 1 && runtime) {
      snprintf(err, errlen, "decrease_axis %d has extent %lld after slicing, not 1", ax,
               (long long)plan->len[ax]);
      return false;
    }
    drop[ax] = true;
  }
  plan->out.n = 0;
  for (int d = 0; d < r; d++)
    if (!drop[d]) plan->out.d[plan->out.n++] = plan->len[d];
  if (plan->out.n == 0 && decrease->n > 0) {
    plan->out.n = 1;
    plan->out.d[0] = 1;
  }
  return true;
}


/* The gradient of a slice (slice_grad, strided_slice_grad): checks that Out@GRAD (input
 * dout_slot) holds as many elements as the slice `slice` and gives output 0 the dims of
 * input x_slot (and its LoD with keep_lod). Both inputs must be known. */
rill_status *rill_slice_grad_meta(rill_infer_ctx *ctx, size_t x_slot, size_t dout_slot,
                                  const rill_dims *slice, bool keep_lod);

/* Where strided_slice reads: output element k along dim d comes from input index
 * first[d] + k * step[d]; len holds the output dims before decrease_axis (-1 unknown),
 * out after. Paddle 1.8.5's rules: a negative stride slices [end + 1, start + 1) (ends
 * -1 meaning "through index 0") forwards with |stride| from its clamped lower end and
 * reverses the result, so when the stride does not divide the span the elements differ
 * from Python's x[start:end:stride]. */
typedef struct rill_strided_plan {
  int64_t first[RILL_MAX_DIMS];
  int64_t step[RILL_MAX_DIMS];
  int64_t len[RILL_MAX_DIMS];
  rill_dims out;
} rill_strided_plan;

/* Whether the int list attribute v holds x. */
static inline bool rill_ints_have(const rill_attr_value *v, int64_t x) {
  for (size_t i = 0; i < v->n; i++)
    if (v->list.ints[i] == x) return true;
  return false;
}

/* The plan of a strided slice of `in` (inference at compile time, and the kernels of
 * every place: inline so that a backend module has its own copy). */
static inline bool rill_strided_plan_make(const rill_dims *in, const rill_attr_value *axes,
                                          const rill_slice_bounds *starts, const rill_slice_bounds *ends,
                                          const rill_slice_bounds *strides, const rill_attr_value *infer_flags,
                                          const rill_attr_value *decrease, bool runtime,
                                          rill_strided_plan *plan, char *err, size_t errlen) {
  int r = in->n;
  size_t na = axes->n;
  for (int d = 0; d < r; d++) {
    plan->first[d] = 0;
    plan->step[d] = 1;
    plan->len[d] = in->d[d];
  }
  size_t ns = rill_slice_bound_count(starts, na), ne = rill_slice_bound_count(ends, na);
  size_t nt = rill_slice_bound_count(strides, na);
  if (ns != na || ne != na || nt != na) {
    snprintf(err, errlen, "%zu axes but %zu starts, %zu ends and %zu strides", na, ns, ne, nt);
    return false;
  }
  bool seen[RILL_MAX_DIMS] = {false};
  for (size_t i = 0; i < na; i++) {
    int ax = (int)axes->list.ints[i];
    if (ax < 0 || ax >= r || seen[ax]) {
      snprintf(err, errlen, "axis %d is out of range for an input of rank %d, or repeated",
               (int)axes->list.ints[i], r);
      return false;
    }
    seen[ax] = true;
    int64_t dim = in->d[ax], s, e, st;
    bool flagged = i < infer_flags->n && infer_flags->list.ints[i] == -1;
    if (!rill_slice_bound_at(starts, i, &s) || !rill_slice_bound_at(ends, i, &e) ||
        !rill_slice_bound_at(strides, i, &st)) {
      if (runtime) {
        snprintf(err, errlen, "the start, end or stride of axis %d is not an int32/int64 value",
                 ax);
        return false;
      }
      plan->len[ax] = -1;
      continue;
    }
    /* Paddle's index of a variable (x[i] with i a tensor): start -1, end 0, flagged. */
    bool one = s == -1 && e == 0 && flagged && rill_ints_have(decrease, ax);
    if (!one && flagged && !runtime) {
      plan->len[ax] = -1;
      continue;
    }
    if (st == 0) {
      snprintf(err, errlen, "the stride of axis %d is 0", ax);
      return false;
    }
    if (dim < 0) {
      plan->len[ax] = one ? 1 : -1;
      continue;
    }
    if (s < 0) s += dim;
    if (e < 0 && !(e == -1 && st < 0)) e += dim;
    if (one) e = st < 0 ? s - 1 : s + 1;
    int64_t a = s, b = e, step = st < 0 ? -st : st;
    if (st < 0) {
      a++;
      b++;
    }
    if ((st < 0 && a <= b) || (st > 0 && a >= b)) {
      snprintf(err, errlen, "axis %d: start %lld and end %lld are invalid for stride %lld", ax,
               (long long)s, (long long)e, (long long)st);
      return false;
    }
    int64_t lo = a < b ? a : b, hi = a < b ? b : a;
    int64_t left = lo < 0 ? 0 : lo, right = hi > dim ? dim : hi;
    if (left > right) {
      snprintf(err, errlen, "axis %d: start %lld and end %lld lie outside its extent %lld", ax,
               (long long)s, (long long)e, (long long)dim);
      return false;
    }
    int64_t len = (right - left + step - 1) / step;
    plan->len[ax] = len;
    if (st > 0) {
      plan->first[ax] = left;
      plan->step[ax] = step;
    } else { /* forwards from the lower end, then reversed */
      plan->first[ax] = left + (len > 0 ? (len - 1) * step : 0);
      plan->step[ax] = -step;
    }
  }
  bool drop[RILL_MAX_DIMS] = {false};
  for (size_t i = 0; i < decrease->n; i++) {
    int ax = (int)decrease->list.ints[i];
    if (ax < 0 || ax >= r) {
      snprintf(err, errlen, "decrease_axis %d is out of range for an input of rank %d", ax, r);
      return false;
    }
    if (plan->len[ax] >= 0 && plan->len[ax] != 1) {
      snprintf(err, errlen, "decrease_axis %d has extent %lld after slicing, not 1", ax,
               (long long)plan->len[ax]);
      return false;
    }
    drop[ax] = true;
  }
  plan->out.n = 0;
  for (int d = 0; d < r; d++)
    if (!drop[d]) plan->out.d[plan->out.n++] = plan->len[d];
  if (plan->out.n == 0) {
    plan->out.n = 1;
    plan->out.d[0] = 1;
  }
  return true;
}

_Static_assert(RILL_SAME_POS(RILL_STRIDED_SLICE_GRAD_IN_STARTS_TENSOR, RILL_STRIDED_SLICE_IN_STARTS_TENSOR) &&
                   RILL_SAME_POS(RILL_STRIDED_SLICE_GRAD_IN_STRIDES_TENSOR_LIST, RILL_STRIDED_SLICE_IN_STRIDES_TENSOR_LIST) &&
                   RILL_SAME_POS(RILL_STRIDED_SLICE_GRAD_ATTR_DECREASE_AXIS, RILL_STRIDED_SLICE_ATTR_DECREASE_AXIS),
               "strided_slice and its gradient read their bounds at the same positions");

/* The plan of strided_slice (or its gradient, whose bounds and attributes sit at the
 * same positions) over input x, read by a kernel: the bounds from the op's host
 * tensors, lists and attributes. False with err written on bad bounds. */
static inline bool rill_strided_kernel_plan(const rill_kernel_ctx *ctx, const rill_tensor *x,
                                            rill_strided_plan *plan, char *err, size_t errlen) {
  static const int attr_of[] = {RILL_STRIDED_SLICE_ATTR_STARTS, RILL_STRIDED_SLICE_ATTR_ENDS,
                                RILL_STRIDED_SLICE_ATTR_STRIDES};
  const rill_tensor *lists[3][RILL_MAX_DIMS];
  rill_slice_bounds b[3];
  for (int k = 0; k < 3; k++) {
    size_t n = ctx->nin[RILL_STRIDED_SLICE_IN_STARTS_TENSOR_LIST + k];
    if (n > RILL_MAX_DIMS) {
      snprintf(err, errlen, "more than %d tensors in a bound list", RILL_MAX_DIMS);
      return false;
    }
    for (size_t i = 0; i < n; i++) lists[k][i] = rill_kin(ctx, RILL_STRIDED_SLICE_IN_STARTS_TENSOR_LIST + k, i);
    const rill_tensor *t = rill_kin(ctx, RILL_STRIDED_SLICE_IN_STARTS_TENSOR + k, 0);
    b[k] = (rill_slice_bounds){t != NULL, t, lists[k], n, &ctx->attrs[attr_of[k]]};
  }
  return rill_strided_plan_make(&x->dims, &ctx->attrs[RILL_STRIDED_SLICE_ATTR_AXES], &b[0], &b[1], &b[2],
                                &ctx->attrs[RILL_STRIDED_SLICE_ATTR_INFER_FLAGS],
                                &ctx->attrs[RILL_STRIDED_SLICE_ATTR_DECREASE_AXIS], true, plan, err, errlen);
}

/* Defines rill_schema_<op>_grad for a view op whose gradient is XShape, Out@GRAD ->
 * X@GRAD (extra attributes of the forward op are carried but not read), with double_ the
 * maker of its own gradient (NULL: none). The kernel is rill_cpu_xshape_grad for every
 * such op. */
extern const rill_slot_schema rill_xshape_grad_inputs[2];
extern const rill_slot_schema rill_xshape_grad_outputs[1];
#define RILL_XSHAPE_GRAD_SCHEMA(op, attrs_, nattrs_, double_)                             \
  const rill_op_schema rill_schema_##op##_grad = {                                        \
      .type = #op "_grad",                                                                \
      .doc = "X@GRAD = Out@GRAD viewed with X's shape (from XShape); shares the buffer.", \
      .inputs = rill_xshape_grad_inputs,                                                  \
      .ninputs = 2,                                                                       \
      .outputs = rill_xshape_grad_outputs,                                                \
      .noutputs = 1,                                                                      \
      .attrs = attrs_,                                                                    \
      .nattrs = nattrs_,                                                                  \
      .flags = RILL_OP_KERNEL_SHAPES,                                                     \
      .infer = rill_xshape_grad_infer,                                                    \
      .grad = double_,                                                                    \
      .kernel_dtype_slot = 1,                                                             \
      .dtype_attr = -1,                                                                   \
  }
/* unsqueeze2's axes at run time: AxesTensor wins, then AxesTensorList, then `axes`. */
bool rill_unsqueeze_axes(const rill_tensor *axes_t, const rill_tensor *const *list, size_t nlist,
                         const rill_attr_value *attr, int64_t *axes, size_t *n, char *err,
                         size_t errlen);

/* transpose2's permutation of a rank-r input from attribute axis; false with a message
 * when it is not a permutation. Inline: the CUDA backend's kernels read it too. */
static inline bool rill_transpose_perm(const rill_attr_value *axis, int r, int *perm, char *err, size_t errlen) {
  if ((int)axis->n != r) {
    snprintf(err, errlen, "axis has %zu entries for rank %d", axis->n, r);
    return false;
  }
  bool seen[RILL_MAX_DIMS] = {false};
  for (int i = 0; i < r; i++) {
    int a;
    if (!rill_norm_axis(axis->list.ints[i], r, &a) || seen[a]) {
      snprintf(err, errlen, "axis is not a permutation of 0..%d (entry %d is %d)", r - 1, i, (int)axis->list.ints[i]);
      return false;
    }
    seen[a] = true;
    perm[i] = a;
  }
  return true;
}

/* arg_max's output dims (and the normalized axis). */
static inline bool rill_arg_max_dims(const rill_dims *x, int64_t axis, bool keepdims, bool flatten,
                                     rill_dims *out, int *axis_out, char *err, size_t errlen) {
  if (flatten) {
    out->n = 1;
    out->d[0] = 1;
    *axis_out = 0;
    return true;
  }
  int a;
  if (!rill_norm_axis(axis, x->n, &a)) {
    snprintf(err, errlen, "axis %lld is out of range for rank %d", (long long)axis, (int)x->n);
    return false;
  }
  *axis_out = a;
  out->n = 0;
  for (int i = 0; i < x->n; i++) {
    if (i == a) {
      if (keepdims) out->d[out->n++] = 1;
    } else {
      out->d[out->n++] = x->d[i];
    }
  }
  return true;
}

/* A one-element float32/64 or int32/64 tensor's value (l exact for the integers). */
bool rill_scalar_at(const rill_tensor *t, double *d, int64_t *l);
/* range's element count from its Start, End and Step tensors, as Paddle computes it
 * (integers: ceil of the span over |step| in integers); false on a zero step or one
 * pointing away from End. */
bool rill_range_count(const rill_tensor *start, const rill_tensor *end, const rill_tensor *step,
                      int64_t *count, char *err, size_t errlen);

/* pad: out = x grown (sign 1) or shrunk (sign -1) by paddings [b0, a0, b1, a1, ...]
 * (INTS, >= 0, two per dim). Unknown extents stay -1. */
bool rill_pad_dims(const rill_attr_value *pads, const rill_dims *x, int sign, rill_dims *out,
                   char *err, size_t errlen);

/* pad2d's plan for a 4-D x: mode 0 constant, 1 reflect, 2 edge; pad = [top, bottom, left,
 * right]; h, w the input's spatial extents; out the padded dims. */
typedef struct rill_pad2d {
  int mode;
  bool nhwc;
  int64_t pad[4], h, w;
  rill_dims out;
} rill_pad2d;
bool rill_pad2d_plan(const rill_dims *x, const int64_t *pads, const char *mode, const char *fmt,
                     rill_pad2d *p, char *err, size_t errlen);
/* pad2d's paddings at inference: Paddings (tensor_bound; t NULL at compile time, then
 * *known is false) or attribute paddings. */
rill_status *rill_pad2d_pads(rill_infer_ctx *ctx, const rill_tensor *t, bool tensor_bound,
                             const rill_attr_value *attr, int64_t *pads, bool *known);

/* crop / crop_tensor: n values from a 1-D int tensor t (t_bound: the input is given; t
 * NULL at compile time), else a list of one-element int tensors (entries NULL at compile
 * time), else an INTS attribute (empty: zeros). known is false when tensors not read yet
 * decide (the values are then -1). False with a message on a count that is not n. */
bool rill_crop_values(const rill_tensor *t, bool t_bound, const rill_tensor *const *list,
                      size_t nlist, const rill_attr_value *attr, int n, int64_t *v, bool *known,
                      char *err, size_t errlen);
/* The box's dims: shape with -1 as x's extent minus the offset, checked to fit in x. */
bool rill_crop_box(const rill_dims *x, const int64_t *shape, const int64_t *offsets,
                   bool offsets_known, rill_dims *out, char *err, size_t errlen);

/* trace: Out's dims (Input's without dim1 and dim2, [1] when none is left) and the two
 * normalized dims, the lower first (Paddle takes the matrices' rows along the lower dim
 * whichever is named first); false when they are out of range or equal. */
bool rill_trace_dims(const rill_dims *x, int64_t dim1, int64_t dim2, rill_dims *out, int *d1,
                     int *d2, char *err, size_t errlen);
/* kron: Out's dims (X's and Y's, the lower rank padded with leading 1s, multiplied). */
bool rill_kron_dims(const rill_dims *x, const rill_dims *y, rill_dims *out);

/* flip / reverse: flip[i] for each dim listed in axes (INTS or LONGS, negative from the
 * end); false on an axis out of range or listed twice. */
bool rill_flip_axes(const rill_attr_value *axes, int rank, bool *flip, char *err, size_t errlen);
/* roll: the shift of each dim of x (summed when a dim is listed twice); with dims empty
 * only shifts[0] is meaningful (X flattened). */
bool rill_roll_shifts(const rill_attr_value *shifts, const rill_attr_value *dims,
                      const rill_dims *x, int64_t *shift, char *err, size_t errlen);

#endif
