/* meshgrid, diag_embed, multiplex, allclose and the gradients of meshgrid and multiplex
 * on the CPU. The data-moving kernels copy elements of any size. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/tensor_ops.h"
#include "operators/assemble.h"

/* ---- meshgrid: Out[i] element (j1..jk) = X[i][ji] ---- */

rill_status *rill_cpu_meshgrid(rill_kernel_ctx *ctx) {
  size_t k = ctx->nin[0];
  if (k == 0 || k > RILL_MAX_DIMS || ctx->nout[0] != k)
    return rill_kernel_error(ctx, "needs 1 to %d inputs X and as many outputs Out",
                             RILL_MAX_DIMS);
  rill_dims d = {.n = (int32_t)k};
  rill_tensor *x0 = rill_kin(ctx, 0, 0);
  for (size_t i = 0; i < k; i++) {
    rill_tensor *x = rill_kin(ctx, 0, i);
    if (!x || !rill_tensor_is_set(x) || x->dims.n > 1 || x->dtype != x0->dtype)
      return rill_kernel_error(ctx, "input X #%zu (%s) must be a 1-D tensor of X #0's dtype",
                               i, rill_kin_name(ctx, 0, i));
    d.d[i] = x->dims.n ? x->dims.d[0] : 1;
  }
  size_t es = rill_dtype_size(x0->dtype);
  for (size_t i = 0; i < k; i++) {
    rill_tensor *out;
    RILL_TRY(rill_kout_need(ctx, 0, i, x0->dtype, &out));
    RILL_TRY(rill_kout_check_dims(ctx, 0, i, out, &d));
    int64_t inner = rill_dims_prod(&d, (int)i + 1, d.n), n = rill_tensor_numel(out);
    const char *xp = rill_tensor_ptr(rill_kin(ctx, 0, i));
    char *op = rill_tensor_ptr(out);
    for (int64_t e = 0; e < n; e++)
      memcpy(op + (size_t)e * es, xp + (size_t)((e / inner) % d.d[i]) * es, es);
  }
  return NULL;
}

#define MESHGRID_GRAD(T, DT, NAME)                                                           \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    size_t k = ctx->nin[0];                                                                 \
    rill_dims d = {.n = (int32_t)k};                                                        \
    if (k == 0 || k > RILL_MAX_DIMS)                                                        \
      return rill_kernel_error(ctx, "needs 1 to %d inputs X", RILL_MAX_DIMS);               \
    for (size_t i = 0; i < k; i++) {                                                        \
      rill_tensor *x = rill_kin(ctx, 0, i);                                                 \
      if (!x || x->dims.n > 1)                                                              \
        return rill_kernel_error(ctx, "input X #%zu (%s) must be 1-D", i,                   \
                                 rill_kin_name(ctx, 0, i));                                 \
      d.d[i] = x->dims.n ? x->dims.d[0] : 1;                                                \
    }                                                                                       \
    for (size_t i = 0; i < k && i < ctx->nout[0]; i++) {                                    \
      rill_tensor *dx = rill_kout(ctx, 0, i), *g = NULL;                                    \
      if (!dx) continue;                                                                    \
      RILL_TRY(rill_kout_need(ctx, 0, i, DT, &dx));                                         \
      RILL_TRY(rill_kout_check_dims(ctx, 0, i, dx, &rill_kin(ctx, 0, i)->dims));            \
      T *dp = rill_tensor_ptr(dx);                                                          \
      memset(dp, 0, rill_tensor_nbytes(dx));                                                \
      if (i >= ctx->nin[1] || !(g = rill_kin(ctx, 1, i)) || !rill_tensor_is_set(g))         \
        continue; /* no gradient reached Out[i] */                                          \
      RILL_TRY(rill_kin_need(ctx, 1, i, DT, &g));                                           \
      RILL_TRY(rill_kin_check_dims(ctx, 1, g, &d));                                         \
      int64_t inner = rill_dims_prod(&d, (int)i + 1, d.n), n = rill_tensor_numel(g);        \
      const T *gp = rill_tensor_ptr(g);                                                     \
      for (int64_t e = 0; e < n; e++) dp[(e / inner) % d.d[i]] += gp[e];                    \
    }                                                                                       \
    return NULL;                                                                            \
  }

MESHGRID_GRAD(float, RILL_DTYPE_FP32, rill_cpu_meshgrid_grad_fp32)
MESHGRID_GRAD(double, RILL_DTYPE_FP64, rill_cpu_meshgrid_grad_fp64)

/* ---- diag_embed ---- */

rill_status *rill_cpu_diag_embed(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input Input (%s) is missing or holds no data",
                             rill_kin_name(ctx, 0, 0));
  int64_t offset = ctx->attrs[RILL_DIAG_EMBED_ATTR_OFFSET].v.i;
  rill_dims od;
  int d1, d2;
  char err[160];
  if (!rill_diag_embed_dims(&x->dims, offset, ctx->attrs[RILL_DIAG_EMBED_ATTR_DIM1].v.i,
                            ctx->attrs[RILL_DIAG_EMBED_ATTR_DIM2].v.i, &od, &d1, &d2, err,
                            sizeof err))
    return rill_kernel_error(ctx, "input Input (%s): %s", rill_kin_name(ctx, 0, 0), err);
  RILL_TRY(rill_kout_need(ctx, 0, 0, x->dtype, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));
  size_t es = rill_dtype_size(x->dtype);
  char *op = rill_tensor_ptr(out);
  const char *xp = rill_tensor_ptr(x);
  memset(op, 0, rill_tensor_nbytes(out));
  int64_t stride[RILL_MAX_DIMS], s = 1;
  for (int i = od.n - 1; i >= 0; i--) {
    stride[i] = s;
    s *= od.d[i];
  }
  int64_t n = x->dims.d[x->dims.n - 1], batch = rill_tensor_numel(x) / (n ? n : 1);
  for (int64_t b = 0; b < batch && n; b++) {
    /* the output offset of batch element b: its index over the dims other than d1, d2 */
    int64_t base = 0, rest = b;
    for (int i = od.n - 1; i >= 0; i--) {
      if (i == d1 || i == d2) continue;
      base += (rest % od.d[i]) * stride[i];
      rest /= od.d[i];
    }
    for (int64_t j = 0; j < n; j++) {
      int64_t r = offset >= 0 ? j : j - offset, c = offset >= 0 ? j + offset : j;
      memcpy(op + (size_t)(base + r * stride[d1] + c * stride[d2]) * es,
             xp + (size_t)(b * n + j) * es, es);
    }
  }
  return NULL;
}

/* ---- multiplex ---- */

static rill_status *multiplex_check(rill_kernel_ctx *ctx, size_t xslot, size_t ids_slot,
                                    int64_t *rows, int64_t *width, const rill_tensor **ids) {
  size_t k = ctx->nin[xslot];
  rill_tensor *x0 = k ? rill_kin(ctx, xslot, 0) : NULL;
  *ids = rill_kin(ctx, ids_slot, 0);
  if (!x0 || x0->dims.n < 1 || !*ids)
    return rill_kernel_error(ctx, "needs inputs X (rank >= 1) and Ids");
  for (size_t i = 0; i < k; i++) {
    rill_tensor *x = rill_kin(ctx, xslot, i);
    if (!x || !rill_dims_equal(&x->dims, &x0->dims))
      return rill_kernel_error(ctx, "input X #%zu (%s) must have X #0's shape", i,
                               rill_kin_name(ctx, xslot, i));
  }
  *rows = x0->dims.d[0];
  *width = *rows ? rill_tensor_numel(x0) / *rows : 0;
  if (rill_tensor_numel(*ids) != *rows)
    return rill_kernel_error(ctx, "input Ids (%s) has %lld elements, X has %lld rows",
                             rill_kin_name(ctx, ids_slot, 0),
                             (long long)rill_tensor_numel(*ids), (long long)*rows);
  for (int64_t r = 0; r < *rows; r++) {
    int64_t v = -1; /* shown when the element is not an int */
    if (!rill_int_tensor_at(*ids, r, &v) || v < 0 || v >= (int64_t)k)
      return rill_kernel_error(ctx, "input Ids (%s) row %lld names input %lld; there are %zu",
                               rill_kin_name(ctx, ids_slot, 0), (long long)r, (long long)v, k);
  }
  return NULL;
}

rill_status *rill_cpu_multiplex(rill_kernel_ctx *ctx) {
  int64_t rows, width;
  const rill_tensor *ids;
  RILL_TRY(multiplex_check(ctx, 1, 0, &rows, &width, &ids));
  rill_tensor *x0 = rill_kin(ctx, 1, 0), *out;
  RILL_TRY(rill_kout_need(ctx, 0, 0, x0->dtype, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x0->dims));
  size_t row_bytes = (size_t)width * rill_dtype_size(x0->dtype);
  for (int64_t r = 0; r < rows; r++) {
    int64_t v = 0; /* multiplex_check read every row */
    rill_int_tensor_at(ids, r, &v);
    const char *src = rill_tensor_ptr(rill_kin(ctx, 1, (size_t)v));
    memcpy((char *)rill_tensor_ptr(out) + (size_t)r * row_bytes, src + (size_t)r * row_bytes,
           row_bytes);
  }
  return NULL;
}

rill_status *rill_cpu_multiplex_grad(rill_kernel_ctx *ctx) {
  int64_t rows, width;
  const rill_tensor *ids;
  RILL_TRY(multiplex_check(ctx, 0, 1, &rows, &width, &ids));
  rill_tensor *g = rill_kin(ctx, 2, 0), *x0 = rill_kin(ctx, 0, 0);
  if (!g || !rill_dims_equal(&g->dims, &x0->dims))
    return rill_kernel_error(ctx, "input Out@GRAD (%s) must have X's shape",
                             rill_kin_name(ctx, 2, 0));
  size_t row_bytes = (size_t)width * rill_dtype_size(g->dtype);
  for (size_t k = 0; k < ctx->nout[0]; k++) {
    rill_tensor *dx = rill_kout(ctx, 0, k);
    if (!dx) continue;
    RILL_TRY(rill_kout_need(ctx, 0, k, g->dtype, &dx));
    RILL_TRY(rill_kout_check_dims(ctx, 0, k, dx, &x0->dims));
    char *dp = rill_tensor_ptr(dx);
    memset(dp, 0, rill_tensor_nbytes(dx));
    for (int64_t r = 0; r < rows; r++) {
      int64_t v = -1;
      rill_int_tensor_at(ids, r, &v);
      if (v == (int64_t)k)
        memcpy(dp + (size_t)r * row_bytes, (const char *)rill_tensor_ptr(g) + (size_t)r * row_bytes,
               row_bytes);
    }
  }
  return NULL;
}

/* ---- allclose ---- */

#define ALLCLOSE(T, DT, NAME)                                                                \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                 \
    rill_tensor *a, *b, *out;                                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &a));                                             \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &b));                                             \
    if (!rill_dims_equal(&a->dims, &b->dims))                                               \
      return rill_kernel_error(ctx, "inputs Input (%s) and Other (%s) differ in shape",     \
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));         \
    rill_dims od = {.n = 1, .d = {1}};                                                      \
    RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_BOOL, &out));                             \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &od));                                    \
    double rtol = ctx->attrs[RILL_ALLCLOSE_ATTR_RTOL].v.f;                                  \
    double atol = ctx->attrs[RILL_ALLCLOSE_ATTR_ATOL].v.f;                                  \
    bool equal_nan = ctx->attrs[RILL_ALLCLOSE_ATTR_EQUAL_NAN].v.b, all = true;              \
    const T *ap = rill_tensor_ptr(a), *bp = rill_tensor_ptr(b);                             \
    for (int64_t i = 0, n = rill_tensor_numel(a); i < n && all; i++) {                      \
      double x = (double)ap[i], y = (double)bp[i];                                          \
      if (isnan(x) || isnan(y)) all = equal_nan && isnan(x) && isnan(y);                    \
      else all = x == y || fabs(x - y) <= atol + rtol * fabs(y);                            \
    }                                                                                       \
    *(bool *)rill_tensor_ptr(out) = all;                                                    \
    return NULL;                                                                            \
  }

ALLCLOSE(float, RILL_DTYPE_FP32, rill_cpu_allclose_fp32)
ALLCLOSE(double, RILL_DTYPE_FP64, rill_cpu_allclose_fp64)
