/* sum CPU kernel (any element dtype). Dense inputs are added elementwise (Out may be one
 * of them: each element is read before it is written); selected-rows inputs are added
 * into their rows of a dense Out, or, when every input is selected rows and Out is not
 * already dense, concatenated into selected rows as Paddle's sum does. Uninitialized
 * inputs are skipped, as in Paddle. A dense Out not among the inputs is written in one
 * pass from its first two dense inputs (the pserver merge of two trainers' gradients). */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

static bool var_set(const rill_variable *v) {
  if (!v) return false;
  if (v->kind == RILL_VARKIND_TENSOR) return rill_tensor_is_set(&v->u.tensor);
  if (v->kind == RILL_VARKIND_SELECTED_ROWS) return rill_tensor_is_set(&v->u.rows.value);
  return false;
}

#define ADD_LOOP(T)                                                                       \
  do {                                                                                    \
    T *o_ = dst;                                                                          \
    const T *s_ = src;                                                                    \
    for (int64_t i_ = 0; i_ < n; i_++) o_[i_] += s_[i_];                                  \
  } while (0)

static rill_status *add_into(rill_dtype dt, void *dst, const void *src, int64_t n) {
  switch (dt) {
    case RILL_DTYPE_FP32: ADD_LOOP(float); break;
    case RILL_DTYPE_FP64: ADD_LOOP(double); break;
    case RILL_DTYPE_INT32: ADD_LOOP(int32_t); break;
    case RILL_DTYPE_INT64: ADD_LOOP(int64_t); break;
    default: return rill_error(RILL_UNIMPLEMENTED, "sum: no kernel for %s", rill_dtype_name(dt));
  }
  return NULL;
}

#define ADD2_LOOP(T)                                                                      \
  do {                                                                                    \
    T *o_ = dst;                                                                          \
    const T *a_ = a, *b_ = b;                                                             \
    for (int64_t i_ = 0; i_ < n; i_++) o_[i_] = a_[i_] + b_[i_];                          \
  } while (0)

/* dst = a + b in one pass (dst is neither). */
static rill_status *add2(rill_dtype dt, void *restrict dst, const void *a, const void *b,
                         int64_t n) {
  switch (dt) {
    case RILL_DTYPE_FP32: ADD2_LOOP(float); break;
    case RILL_DTYPE_FP64: ADD2_LOOP(double); break;
    case RILL_DTYPE_INT32: ADD2_LOOP(int32_t); break;
    case RILL_DTYPE_INT64: ADD2_LOOP(int64_t); break;
    default: return rill_error(RILL_UNIMPLEMENTED, "sum: no kernel for %s", rill_dtype_name(dt));
  }
  return NULL;
}

/* Out (selected rows) = concatenation of the inputs' rows and values. */
static rill_status *sum_rows(rill_kernel_ctx *ctx, rill_variable *outv) {
  size_t total = 0;
  const rill_selected_rows *first = NULL;
  for (size_t i = 0; i < ctx->nin[0]; i++) {
    const rill_variable *v = ctx->in[0][i];
    if (!var_set(v)) continue;
    const rill_selected_rows *sr = &v->u.rows;
    if (!first) first = sr;
    int64_t w1 = rill_tensor_numel(&first->value) / (first->nrows ? (int64_t)first->nrows : 1);
    int64_t w2 = rill_tensor_numel(&sr->value) / (sr->nrows ? (int64_t)sr->nrows : 1);
    if (sr->value.dtype != first->value.dtype || (sr->nrows && first->nrows && w1 != w2) ||
        sr->height != first->height)
      return rill_kernel_error(ctx, "input X[%zu] (%s) does not match X's first selected rows "
                               "(dtype, row width or height)", i, rill_kin_name(ctx, 0, i));
    total += sr->nrows;
  }
  if (!first) return rill_kernel_error(ctx, "every input X is uninitialized");
  rill_selected_rows res;
  rill_selected_rows_init(&res);
  res.height = first->height;
  rill_dims d = first->value.dims;
  d.d[0] = (int64_t)total;
  int64_t *rows = total ? rill_malloc(total * sizeof *rows) : NULL;
  rill_status *st = total && !rows ? rill_oom() : rill_tensor_alloc(&res.value, first->value.dtype, &d);
  if (!st) {
    size_t at = 0, esz = rill_dtype_size(first->value.dtype);
    char *vp = rill_tensor_ptr(&res.value);
    for (size_t i = 0; i < ctx->nin[0]; i++) {
      const rill_variable *v = ctx->in[0][i];
      if (!var_set(v)) continue;
      const rill_selected_rows *sr = &v->u.rows;
      if (sr->nrows) memcpy(rows + at, sr->rows, sr->nrows * sizeof *rows);
      size_t bytes = rill_tensor_nbytes(&sr->value);
      if (bytes) memcpy(vp, rill_tensor_ptr(&sr->value), bytes);
      vp += bytes;
      at += sr->nrows;
      (void)esz;
    }
    st = rill_selected_rows_set_rows(&res, rows, total);
  }
  rill_free(rows);
  if (st) {
    rill_selected_rows_clear(&res);
    return st;
  }
  rill_variable_clear(outv);
  outv->kind = RILL_VARKIND_SELECTED_ROWS;
  outv->u.rows = res;
  return NULL;
}

static rill_status *sum_dense(rill_kernel_ctx *ctx, rill_variable *outv,
                              const rill_selected_rows *held, rill_dtype dt,
                              const rill_dims *dimsp, int64_t n, int64_t width, size_t alias);

rill_status *rill_cpu_sum(rill_kernel_ctx *ctx) {
  rill_variable *outv = ctx->nout[0] ? ctx->out[0][0] : NULL;
  if (!outv) return rill_kernel_error(ctx, "output Out is missing");
  bool any_dense = false, any = false;
  size_t alias = SIZE_MAX;
  for (size_t i = 0; i < ctx->nin[0]; i++) {
    rill_variable *v = ctx->in[0][i];
    if (v == outv) alias = i;
    if (!var_set(v)) continue;
    any = true;
    any_dense |= v->kind == RILL_VARKIND_TENSOR;
  }
  if (!any) return rill_kernel_error(ctx, "every input X is uninitialized");
  if (!any_dense && (outv->kind == RILL_VARKIND_SELECTED_ROWS || outv->kind == RILL_VARKIND_EMPTY ||
                     (outv->kind == RILL_VARKIND_TENSOR && !rill_tensor_is_set(&outv->u.tensor))))
    return sum_rows(ctx, outv);

  /* dense Out: shape and dtype from the first input */
  rill_dtype dt = RILL_DTYPE_FP32;
  rill_dims dims = {0};
  bool found = false;
  for (size_t i = 0; i < ctx->nin[0] && !found; i++) {
    rill_variable *v = ctx->in[0][i];
    if (!var_set(v)) continue;
    found = true;
    if (v->kind == RILL_VARKIND_TENSOR) {
      dt = v->u.tensor.dtype;
      dims = v->u.tensor.dims;
    } else {
      dt = v->u.rows.value.dtype;
      dims = v->u.rows.value.dims;
      dims.d[0] = v->u.rows.height;
    }
  }
  int64_t n = 1;
  for (int k = 0; k < dims.n; k++) n *= dims.d[k];
  int64_t width = dims.n ? n / (dims.d[0] ? dims.d[0] : 1) : n;
  for (size_t i = 0; i < ctx->nin[0]; i++) {
    rill_variable *v = ctx->in[0][i];
    if (!var_set(v)) continue;
    const rill_tensor *t = v->kind == RILL_VARKIND_TENSOR ? &v->u.tensor : &v->u.rows.value;
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    if (t->dtype != dt)
      return rill_kernel_error(ctx, "input X[%zu] (%s) is %s, X[0] is %s", i, rill_kin_name(ctx, 0, i),
                               rill_dtype_name(t->dtype), rill_dtype_name(dt));
    bool ok;
    if (v->kind == RILL_VARKIND_TENSOR) {
      ok = rill_dims_equal(&t->dims, &dims);
    } else {
      rill_dims full = t->dims;
      full.d[0] = v->u.rows.height;
      ok = t->dims.n == dims.n && (t->dims.n == 0 || rill_dims_equal(&full, &dims));
    }
    if (!ok)
      return rill_kernel_error(ctx, "input X[%zu] (%s) has shape %s, expected %s", i,
                               rill_kin_name(ctx, 0, i), rill_dims_str(&t->dims, a, sizeof a),
                               rill_dims_str(&dims, b, sizeof b));
  }
  /* Out holding selected rows becomes dense; when it is also an input its rows are
   * held aside and added like any other selected-rows input. */
  rill_selected_rows held;
  rill_selected_rows_init(&held);
  bool holding = false;
  if (outv->kind == RILL_VARKIND_SELECTED_ROWS) {
    if (alias != SIZE_MAX && var_set(outv)) {
      held = outv->u.rows;
      rill_selected_rows_init(&outv->u.rows);
      holding = true;
      alias = SIZE_MAX;
    }
    rill_variable_clear(outv);
  }
  rill_status *st = sum_dense(ctx, outv, holding ? &held : NULL, dt, &dims, n, width, alias);
  rill_selected_rows_clear(&held);
  return st;
}

/* The dense part of sum: Out = the inputs added in order. `held`, when set, stands for
 * every input that is Out itself (its rows, moved aside before Out became dense). */
static rill_status *sum_dense(rill_kernel_ctx *ctx, rill_variable *outv,
                              const rill_selected_rows *held, rill_dtype dt,
                              const rill_dims *dimsp, int64_t n, int64_t width, size_t alias) {
  const rill_dims dims = *dimsp;
  rill_tensor *out = rill_variable_tensor(outv);
  if (!out) return rill_kernel_error(ctx, "output Out (%s) is not a dense tensor", rill_kout_name(ctx, 0, 0));
  size_t esz = rill_dtype_size(dt), skip_to = 0;
  if (alias == SIZE_MAX || !var_set(outv)) {
    if (!rill_tensor_is_set(out) || out->dtype != dt || !rill_dims_equal(&out->dims, &dims))
      RILL_TRY(rill_tensor_alloc(out, dt, &dims));
    alias = SIZE_MAX;
    /* The first two inputs set, when both are dense and neither is Out, are added in one
     * pass (the pserver's merge of two trainers' gradients reads each once and writes
     * Out once); otherwise Out starts from zeros. The order of the additions is the same. */
    size_t f[2], nf = 0;
    for (size_t i = 0; i < ctx->nin[0] && nf < 2; i++)
      if (var_set(ctx->in[0][i])) f[nf++] = i;
    const rill_variable *v0 = nf == 2 ? ctx->in[0][f[0]] : NULL;
    const rill_variable *v1 = nf == 2 ? ctx->in[0][f[1]] : NULL;
    if (v0 && v0 != outv && v1 != outv && v0->kind == RILL_VARKIND_TENSOR &&
        v1->kind == RILL_VARKIND_TENSOR) {
      RILL_TRY(add2(dt, rill_tensor_ptr(out), rill_tensor_ptr(&v0->u.tensor),
                    rill_tensor_ptr(&v1->u.tensor), n));
      skip_to = f[1] + 1;
    } else {
      memset(rill_tensor_ptr(out), 0, (size_t)n * esz);
    }
  }
  char *op = rill_tensor_ptr(out);
  for (size_t i = skip_to; i < ctx->nin[0]; i++) {
    rill_variable *v = ctx->in[0][i];
    const rill_selected_rows *sr;
    if (v == outv && held) {
      sr = held;
    } else {
      if (i == alias || !var_set(v)) continue;
      if (v == outv) {
        /* Out listed twice: double what it holds */
        RILL_TRY(add_into(dt, op, op, n));
        continue;
      }
      if (v->kind == RILL_VARKIND_TENSOR) {
        RILL_TRY(add_into(dt, op, rill_tensor_ptr(&v->u.tensor), n));
        continue;
      }
      sr = &v->u.rows;
    }
    const char *vp = rill_tensor_ptr(&sr->value);
    for (size_t r = 0; r < sr->nrows; r++) {
      if (sr->rows[r] < 0 || sr->rows[r] >= dims.d[0])
        return rill_kernel_error(ctx, "input X[%zu] (%s): row %lld outside [0, %lld)", i,
                                 rill_kin_name(ctx, 0, i), (long long)sr->rows[r],
                                 (long long)dims.d[0]);
      RILL_TRY(add_into(dt, op + (size_t)(sr->rows[r] * width) * esz, vp + r * (size_t)width * esz,
                        width));
    }
  }
  return NULL;
}
