/* top_k, top_k_grad, accuracy and arg_max CPU kernels.
 *
 * top_k per row: Paddle 1.8.5's std::partial_sort (below), by value descending, tied
 * values in Paddle's order, NaN above every number (where Paddle's comparison would
 * leave NaNs wherever they fall). */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"

#define GT_F(a, b) ((a) > (b) || ((a) != (a) && (b) == (b)))
#define GT_I(a, b) ((a) > (b))
/* arg_min: a NaN ranks below every number, so that it is found as arg_max finds it. */
#define LT_F(a, b) ((a) < (b) || ((a) != (a) && (b) == (b)))
#define LT_I(a, b) ((a) < (b))

static rill_status *top_k_value(rill_kernel_ctx *ctx, int64_t last, int64_t *k) {
  *k = ctx->attrs[RILL_TOP_K_ATTR_K].v.i;
  const rill_tensor *kt = rill_kin(ctx, 1, 0);
  if (kt && !rill_int_tensor_at(kt, 0, k))
    return rill_kernel_error(ctx, "input K (%s) must hold one int32/int64 value", rill_kin_name(ctx, 1, 0));
  if (*k < 1 || *k > last)
    return rill_kernel_error(ctx, "k = %lld is not in [1, %lld] (the last dim of input X (%s))",
                             (long long)*k, (long long)last, rill_kin_name(ctx, 0, 0));
  return NULL;
}

/* libstdc++'s __adjust_heap then __push_heap on the pairs (hv, hi)[0, len), the hole at
 * `hole` filled with (v, vi); its "less" is GT, so the first pair ranks lowest. */
#define TOP_K_ADJUST(T, GT)                                                               \
  static void adjust_##T(T *hv, int64_t *hi, int64_t hole, int64_t len, T v, int64_t vi) { \
    int64_t top = hole, child = hole;                                                     \
    while (child < (len - 1) / 2) {                                                       \
      child = 2 * (child + 1);                                                            \
      if (GT(hv[child], hv[child - 1])) child--;                                          \
      hv[hole] = hv[child];                                                               \
      hi[hole] = hi[child];                                                               \
      hole = child;                                                                       \
    }                                                                                     \
    if ((len & 1) == 0 && child == (len - 2) / 2) {                                       \
      child = 2 * (child + 1);                                                            \
      hv[hole] = hv[child - 1];                                                           \
      hi[hole] = hi[child - 1];                                                           \
      hole = child - 1;                                                                   \
    }                                                                                     \
    for (int64_t parent = (hole - 1) / 2; hole > top && GT(hv[parent], v);                \
         parent = (hole - 1) / 2) {                                                       \
      hv[hole] = hv[parent];                                                              \
      hi[hole] = hi[parent];                                                              \
      hole = parent;                                                                      \
    }                                                                                     \
    hv[hole] = v;                                                                         \
    hi[hole] = vi;                                                                        \
  }

/* Each row as Paddle 1.8.5 orders it: std::partial_sort of its (value, position) pairs
 * by value descending with libstdc++'s heap selection (a heap of the first k, each later
 * pair that beats its lowest replacing it), then the heap sorted, written straight into
 * the row's outputs; so tied values come out in Paddle's order. */
#define TOP_K(T, DT, GT, NAME)                                                            \
  TOP_K_ADJUST(T, GT)                                                                     \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out, *idx;                                                           \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    RILL_TRY(rill_kout_need(ctx, 1, 0, RILL_DTYPE_INT64, &idx));                          \
    if (x->dims.n < 1)                                                                    \
      return rill_kernel_error(ctx, "input X (%s) must have rank >= 1", rill_kin_name(ctx, 0, 0)); \
    int64_t n = x->dims.d[x->dims.n - 1], k;                                              \
    RILL_TRY(top_k_value(ctx, n, &k));                                                    \
    rill_dims d = x->dims;                                                                \
    d.d[d.n - 1] = k;                                                                     \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &d));                                   \
    RILL_TRY(rill_kout_check_dims(ctx, 1, 0, idx, &d));                                   \
    int64_t rows = n ? rill_tensor_numel(x) / n : 0;                                      \
    const T *xp = rill_tensor_ptr(x);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    int64_t *ip = rill_tensor_ptr(idx);                                                   \
    for (int64_t r = 0; r < rows; r++) {                                                  \
      const T *row = xp + r * n;                                                          \
      T *hv = op + r * k;                                                                 \
      int64_t *hi = ip + r * k;                                                           \
      for (int64_t j = 0; j < k; j++) {                                                   \
        hv[j] = row[j];                                                                   \
        hi[j] = j;                                                                        \
      }                                                                                   \
      for (int64_t parent = (k - 2) / 2; k > 1; parent--) { /* make_heap */              \
        adjust_##T(hv, hi, parent, k, hv[parent], hi[parent]);                            \
        if (parent == 0) break;                                                           \
      }                                                                                   \
      for (int64_t j = k; j < n; j++)                                                     \
        if (GT(row[j], hv[0])) adjust_##T(hv, hi, 0, k, row[j], j);                       \
      for (int64_t len = k; len > 1; len--) { /* sort_heap */                             \
        T v = hv[len - 1];                                                                \
        int64_t vi = hi[len - 1];                                                         \
        hv[len - 1] = hv[0];                                                              \
        hi[len - 1] = hi[0];                                                              \
        adjust_##T(hv, hi, 0, len - 1, v, vi);                                            \
      }                                                                                   \
    }                                                                                     \
    return NULL;                                                                          \
  }

TOP_K(float, RILL_DTYPE_FP32, GT_F, rill_cpu_top_k_fp32)
TOP_K(double, RILL_DTYPE_FP64, GT_F, rill_cpu_top_k_fp64)
TOP_K(int32_t, RILL_DTYPE_INT32, GT_I, rill_cpu_top_k_int32)
TOP_K(int64_t, RILL_DTYPE_INT64, GT_I, rill_cpu_top_k_int64)

#define TOP_K_GRAD(T, DT, NAME)                                                           \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *dx = rill_kout(ctx, 0, 0), *x = rill_kin(ctx, 0, 0), *idx, *dout;        \
    if (!dx) return NULL;                                                                 \
    if (!x || x->dims.n < 1)                                                              \
      return rill_kernel_error(ctx, "input X (%s) is missing or has rank 0", rill_kin_name(ctx, 0, 0)); \
    RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT64, &idx));                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                        \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, &x->dims));                              \
    if (!rill_dims_equal(&idx->dims, &dout->dims) || idx->dims.n != x->dims.n)            \
      return rill_kernel_error(ctx, "inputs Indices (%s) and Out@GRAD (%s) differ in shape", \
                               rill_kin_name(ctx, 1, 0), rill_kin_name(ctx, 2, 0));       \
    int64_t n = x->dims.d[x->dims.n - 1], k = idx->dims.d[idx->dims.n - 1];               \
    int64_t rows = k ? rill_tensor_numel(idx) / k : 0;                                    \
    T *dp = rill_tensor_ptr(dx);                                                          \
    const T *gp = rill_tensor_ptr(dout);                                                  \
    const int64_t *ip = rill_tensor_ptr(idx);                                             \
    if (rill_tensor_nbytes(dx)) memset(dp, 0, rill_tensor_nbytes(dx));                    \
    for (int64_t r = 0; r < rows; r++)                                                    \
      for (int64_t j = 0; j < k; j++) {                                                   \
        int64_t p = ip[r * k + j];                                                        \
        if (p < 0 || p >= n)                                                              \
          return rill_kernel_error(ctx, "input Indices (%s) holds %lld, outside [0, %lld)", \
                                   rill_kin_name(ctx, 1, 0), (long long)p, (long long)n); \
        dp[r * n + p] = gp[r * k + j];                                                    \
      }                                                                                   \
    return NULL;                                                                          \
  }

TOP_K_GRAD(float, RILL_DTYPE_FP32, rill_cpu_top_k_grad_fp32)
TOP_K_GRAD(double, RILL_DTYPE_FP64, rill_cpu_top_k_grad_fp64)

rill_status *rill_cpu_accuracy(rill_kernel_ctx *ctx) {
  rill_tensor *o = rill_kin(ctx, 0, 0), *idx, *label = rill_kin(ctx, 2, 0);
  rill_tensor *acc, *correct, *total;
  RILL_TRY(rill_kin_need(ctx, 1, 0, RILL_DTYPE_INT64, &idx));
  if (!label || !rill_tensor_is_set(label) ||
      (label->dtype != RILL_DTYPE_INT64 && label->dtype != RILL_DTYPE_INT32))
    return rill_kernel_error(ctx, "input Label (%s) must be an int64 tensor with data",
                             rill_kin_name(ctx, 2, 0));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &acc));
  RILL_TRY(rill_kout_need(ctx, 1, 0, RILL_DTYPE_INT32, &correct));
  RILL_TRY(rill_kout_need(ctx, 2, 0, RILL_DTYPE_INT32, &total));
  const rill_dims *shape = o && o->dims.n == 2 ? &o->dims : &idx->dims;
  if (shape->n != 2 || !rill_dims_equal(shape, &idx->dims))
    return rill_kernel_error(ctx, "input Indices (%s) must be [N, k] like input Out",
                             rill_kin_name(ctx, 1, 0));
  int64_t n = shape->d[0], k = shape->d[1];
  if (rill_tensor_numel(label) < n)
    return rill_kernel_error(ctx, "input Label (%s) has %lld labels for %lld samples",
                             rill_kin_name(ctx, 2, 0), (long long)rill_tensor_numel(label),
                             (long long)n);
  const int64_t *ip = rill_tensor_ptr(idx);
  int64_t hits = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t l = label->dtype == RILL_DTYPE_INT64 ? ((const int64_t *)rill_tensor_ptr(label))[i]
                                                 : ((const int32_t *)rill_tensor_ptr(label))[i];
    for (int64_t j = 0; j < k; j++)
      if (ip[i * k + j] == l) {
        hits++;
        break;
      }
  }
  *(float *)rill_tensor_ptr(acc) = n ? (float)hits / (float)n : 0.0f;
  *(int32_t *)rill_tensor_ptr(correct) = (int32_t)hits;
  *(int32_t *)rill_tensor_ptr(total) = (int32_t)n;
  return NULL;
}

#define ARG_MAX(T, DT, GT, NAME)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *out = rill_kout(ctx, 0, 0);                                          \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    rill_dtype odt = ctx->attrs[RILL_ARG_MAX_ATTR_DTYPE].v.i == RILL_DTYPE_INT32 ? RILL_DTYPE_INT32 : RILL_DTYPE_INT64; \
    RILL_TRY(rill_kout_need(ctx, 0, 0, odt, &out));                                       \
    rill_dims d;                                                                          \
    int axis;                                                                             \
    char err[128];                                                                        \
    bool flatten = ctx->attrs[RILL_ARG_MAX_ATTR_FLATTEN].v.b;                             \
    if (!rill_arg_max_dims(&x->dims, ctx->attrs[RILL_ARG_MAX_ATTR_AXIS].v.l, ctx->attrs[RILL_ARG_MAX_ATTR_KEEPDIMS].v.b, flatten, &d,   \
                           &axis, err, sizeof err))                                       \
      return rill_kernel_error(ctx, "input X (%s): %s", rill_kin_name(ctx, 0, 0), err);   \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &d));                                   \
    int64_t outer = 1, n = rill_tensor_numel(x), inner = 1;                               \
    if (!flatten) {                                                                       \
      outer = rill_dims_prod(&x->dims, 0, axis);                                          \
      n = x->dims.d[axis];                                                                \
      inner = rill_dims_prod(&x->dims, axis + 1, x->dims.n);                              \
    }                                                                                     \
    if (n == 0 && outer * inner > 0)                                                      \
      return rill_kernel_error(ctx, "input X (%s) is empty along the axis",               \
                               rill_kin_name(ctx, 0, 0));                                 \
    const T *xp = rill_tensor_ptr(x);                                                     \
    void *op = rill_tensor_ptr(out);                                                      \
    for (int64_t o = 0; o < outer; o++)                                                   \
      for (int64_t i = 0; i < inner; i++) {                                               \
        const T *p = xp + o * n * inner + i;                                              \
        int64_t best = 0;                                                                 \
        for (int64_t j = 1; j < n; j++)                                                   \
          if (GT(p[j * inner], p[best * inner])) best = j;                                \
        if (odt == RILL_DTYPE_INT32) ((int32_t *)op)[o * inner + i] = (int32_t)best;      \
        else ((int64_t *)op)[o * inner + i] = best;                                       \
      }                                                                                   \
    return NULL;                                                                          \
  }

ARG_MAX(float, RILL_DTYPE_FP32, GT_F, rill_cpu_arg_max_fp32)
ARG_MAX(double, RILL_DTYPE_FP64, GT_F, rill_cpu_arg_max_fp64)
ARG_MAX(int32_t, RILL_DTYPE_INT32, GT_I, rill_cpu_arg_max_int32)
ARG_MAX(int64_t, RILL_DTYPE_INT64, GT_I, rill_cpu_arg_max_int64)
ARG_MAX(uint8_t, RILL_DTYPE_UINT8, GT_I, rill_cpu_arg_max_uint8)
ARG_MAX(int16_t, RILL_DTYPE_INT16, GT_I, rill_cpu_arg_max_int16)
ARG_MAX(int8_t, RILL_DTYPE_INT8, GT_I, rill_cpu_arg_max_int8)
ARG_MAX(float, RILL_DTYPE_FP32, LT_F, rill_cpu_arg_min_fp32)
ARG_MAX(double, RILL_DTYPE_FP64, LT_F, rill_cpu_arg_min_fp64)
ARG_MAX(int32_t, RILL_DTYPE_INT32, LT_I, rill_cpu_arg_min_int32)
ARG_MAX(int64_t, RILL_DTYPE_INT64, LT_I, rill_cpu_arg_min_int64)
ARG_MAX(uint8_t, RILL_DTYPE_UINT8, LT_I, rill_cpu_arg_min_uint8)
ARG_MAX(int16_t, RILL_DTYPE_INT16, LT_I, rill_cpu_arg_min_int16)
ARG_MAX(int8_t, RILL_DTYPE_INT8, LT_I, rill_cpu_arg_min_int8)
