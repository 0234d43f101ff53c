/* Comparison CPU kernels (bool output, Paddle's broadcasting). Same-shape operands and a
 * scalar operand run as flat loops; other broadcasts walk the output with an odometer
 * over per-operand strides (0 on broadcast dims). */
#include "kernels/cpu/kernels.h"
#include "operators/elementwise.h"

static rill_status *compare_prepare(rill_kernel_ctx *ctx, rill_dtype dt, rill_tensor **x,
                                    rill_tensor **y, rill_tensor **out, rill_dims *xa,
                                    rill_dims *ya) {
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, x));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, y));
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_BOOL, out));
  rill_dims od;
  char why[160];
  if (!rill_elementwise_broadcast(&(*x)->dims, &(*y)->dims, ctx->attrs[RILL_EQUAL_ATTR_AXIS].v.i, xa, ya, &od, why,
                                  sizeof why))
    return rill_kernel_error(ctx, "inputs X (%s) and Y (%s) do not broadcast: %s",
                             rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0), why);
  return rill_kout_check_dims(ctx, 0, 0, *out, &od);
}

#define COMPARE(T, DT, OPER, NAME)                                                         \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                \
    rill_tensor *x = NULL, *y = NULL, *out = NULL;                                         \
    rill_dims xa, ya;                                                                      \
    RILL_TRY(compare_prepare(ctx, DT, &x, &y, &out, &xa, &ya));                            \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                            \
    bool *op = rill_tensor_ptr(out);                                                       \
    int64_t n = rill_tensor_numel(out), nx = rill_tensor_numel(x), ny = rill_tensor_numel(y); \
    if (n == 0) return NULL;                                                               \
    if (nx == n && ny == n) {                                                              \
      for (int64_t i = 0; i < n; i++) op[i] = xp[i] OPER yp[i];                            \
    } else if (nx == n && ny == 1) {                                                       \
      T b = yp[0];                                                                         \
      for (int64_t i = 0; i < n; i++) op[i] = xp[i] OPER b;                                \
    } else if (nx == 1 && ny == n) {                                                       \
      T a = xp[0];                                                                         \
      for (int64_t i = 0; i < n; i++) op[i] = a OPER yp[i];                                \
    } else {                                                                               \
      int r = xa.n;                                                                        \
      int64_t ext[RILL_MAX_DIMS], sx[RILL_MAX_DIMS], sy[RILL_MAX_DIMS], idx[RILL_MAX_DIMS]; \
      int64_t ax = 1, ay = 1;                                                              \
      for (int i = r - 1; i >= 0; i--) {                                                   \
        ext[i] = xa.d[i] > ya.d[i] ? xa.d[i] : ya.d[i];                                    \
        sx[i] = xa.d[i] == 1 ? 0 : ax;                                                     \
        sy[i] = ya.d[i] == 1 ? 0 : ay;                                                     \
        ax *= xa.d[i];                                                                     \
        ay *= ya.d[i];                                                                     \
        idx[i] = 0;                                                                        \
      }                                                                                    \
      int64_t inner = r ? ext[r - 1] : 1, isx = r ? sx[r - 1] : 0, isy = r ? sy[r - 1] : 0; \
      int64_t xo = 0, yo = 0;                                                              \
      for (int64_t o = 0; o < n; o += inner) {                                             \
        for (int64_t j = 0; j < inner; j++) op[o + j] = xp[xo + j * isx] OPER yp[yo + j * isy]; \
        for (int k = r - 2; k >= 0; k--) {                                                 \
          xo += sx[k];                                                                     \
          yo += sy[k];                                                                     \
          if (++idx[k] < ext[k]) break;                                                    \
          xo -= sx[k] * ext[k];                                                            \
          yo -= sy[k] * ext[k];                                                            \
          idx[k] = 0;                                                                      \
        }                                                                                  \
      }                                                                                    \
    }                                                                                      \
    return NULL;                                                                           \
  }

#define COMPARE_ALL(OPNAME, OPER)                                                          \
  COMPARE(float, RILL_DTYPE_FP32, OPER, rill_cpu_##OPNAME##_fp32)                          \
  COMPARE(double, RILL_DTYPE_FP64, OPER, rill_cpu_##OPNAME##_fp64)                         \
  COMPARE(int32_t, RILL_DTYPE_INT32, OPER, rill_cpu_##OPNAME##_int32)                      \
  COMPARE(int64_t, RILL_DTYPE_INT64, OPER, rill_cpu_##OPNAME##_int64)

COMPARE_ALL(less_than, <)
COMPARE_ALL(less_equal, <=)
COMPARE_ALL(greater_than, >)
COMPARE_ALL(greater_equal, >=)
COMPARE_ALL(equal, ==)
COMPARE_ALL(not_equal, !=)
COMPARE(bool, RILL_DTYPE_BOOL, ==, rill_cpu_equal_bool)
COMPARE(bool, RILL_DTYPE_BOOL, !=, rill_cpu_not_equal_bool)
