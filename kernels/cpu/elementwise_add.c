/* elementwise_add CPU kernels with Paddle's broadcasting.
 *
 * The broadcast shape is collapsed first: dims of extent 1 are dropped and neighbours
 * that broadcast the same way on both sides merge, so the common cases (same shape, a
 * bias row, a per-channel vector) become one or two tight loops. Each output element
 * reads only the X and Y elements at its own broadcast position, so Out may alias X
 * (or Y) when it has the same shape. */
#include "kernels/cpu/kernels.h"
#include "operators/elementwise.h"

typedef struct ew_plan {
  int n;                                    /* collapsed rank, >= 1 */
  int64_t dims[RILL_MAX_DIMS];
  int64_t xs[RILL_MAX_DIMS], ys[RILL_MAX_DIMS]; /* element strides, 0 = broadcast */
  int64_t numel;
} ew_plan;

static rill_status *ew_prepare(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                               rill_tensor **y, rill_tensor **out, ew_plan *p) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, y));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, out));
  rill_dims xa, ya, od;
  char why[160];
  if (!rill_elementwise_broadcast(&(*x)->dims, &(*y)->dims, ctx->attrs[RILL_ELEMENTWISE_ADD_ATTR_AXIS].v.i, &xa, &ya, &od,
                                  why, sizeof why)) {
    char xs[RILL_DIMS_STR_MAX], ys[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input X (%s) of shape %s does not broadcast with input Y (%s) "
                             "of shape %s: %s", rill_kin_name(ctx, 0, 0),
                             rill_dims_str(&(*x)->dims, xs, sizeof xs), rill_kin_name(ctx, 1, 0),
                             rill_dims_str(&(*y)->dims, ys, sizeof ys), why);
  }
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, *out, &od));
  int64_t ext[RILL_MAX_DIMS];
  bool bx[RILL_MAX_DIMS], by[RILL_MAX_DIMS];
  int n = 0;
  p->numel = 1;
  for (int i = 0; i < od.n; i++) {
    p->numel *= od.d[i];
    if (od.d[i] == 1) continue;
    bool cx = xa.d[i] == 1, cy = ya.d[i] == 1;
    if (n > 0 && bx[n - 1] == cx && by[n - 1] == cy) {
      ext[n - 1] *= od.d[i];
      continue;
    }
    ext[n] = od.d[i];
    bx[n] = cx;
    by[n] = cy;
    n++;
  }
  if (n == 0) {
    ext[0] = 1;
    bx[0] = by[0] = false;
    n = 1;
  }
  int64_t sx = 1, sy = 1;
  for (int i = n - 1; i >= 0; i--) {
    p->dims[i] = ext[i];
    p->xs[i] = bx[i] ? 0 : sx;
    p->ys[i] = by[i] ? 0 : sy;
    if (!bx[i]) sx *= ext[i];
    if (!by[i]) sy *= ext[i];
  }
  p->n = n;
  return NULL;
}

#define EW_ADD(T, DT, NAME)                                                               \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *out;                                                             \
    ew_plan p;                                                                            \
    RILL_TRY(ew_prepare(ctx, DT, &x, &y, &out, &p));                                      \
    if (p.numel == 0) return NULL;                                                        \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                           \
    T *op = rill_tensor_ptr(out);                                                         \
    int r = p.n;                                                                          \
    int64_t inner = p.dims[r - 1], xsi = p.xs[r - 1], ysi = p.ys[r - 1];                  \
    int64_t outer = p.numel / inner, idx[RILL_MAX_DIMS] = {0}, xo = 0, yo = 0;            \
    for (int64_t o = 0; o < outer; o++) {                                                 \
      T *dst = op + o * inner;                                                            \
      const T *a = xp + xo, *b = yp + yo;                                                 \
      if (xsi == 1 && ysi == 1)                                                           \
        for (int64_t i = 0; i < inner; i++) dst[i] = a[i] + b[i];                         \
      else if (xsi == 1)                                                                  \
        for (int64_t i = 0; i < inner; i++) dst[i] = a[i] + b[0];                         \
      else if (ysi == 1)                                                                  \
        for (int64_t i = 0; i < inner; i++) dst[i] = a[0] + b[i];                         \
      else                                                                                \
        for (int64_t i = 0; i < inner; i++) dst[i] = a[0] + b[0];                         \
      for (int k = r - 2; k >= 0; k--) {                                                  \
        xo += p.xs[k];                                                                    \
        yo += p.ys[k];                                                                    \
        if (++idx[k] < p.dims[k]) break;                                                  \
        xo -= p.xs[k] * p.dims[k];                                                        \
        yo -= p.ys[k] * p.dims[k];                                                        \
        idx[k] = 0;                                                                       \
      }                                                                                   \
    }                                                                                     \
    return NULL;                                                                          \
  }

EW_ADD(float, RILL_DTYPE_FP32, rill_cpu_elementwise_add_fp32)
EW_ADD(double, RILL_DTYPE_FP64, rill_cpu_elementwise_add_fp64)
EW_ADD(int32_t, RILL_DTYPE_INT32, rill_cpu_elementwise_add_int32)
EW_ADD(int64_t, RILL_DTYPE_INT64, rill_cpu_elementwise_add_int64)
