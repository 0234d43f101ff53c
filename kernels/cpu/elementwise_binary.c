/* CPU kernels of elementwise_sub / _mul / _div / _max / _min / _pow and of the gradient
 * ops of all elementwise binary ops, with Paddle's broadcasting.
 *
 * A plan collapses the broadcast shape (extent-1 dims dropped, neighbours that
 * broadcast alike merged) and gives each operand element strides (0 where it
 * broadcasts), so the loops run over one flat inner dim. Forward outputs read only the
 * inputs at their own position, so Out may alias X or Y of the same shape. Gradient
 * kernels write the gradient of an operand of the full shape directly; a broadcast
 * one's they zero and sum each output element's contribution into, which reduces over
 * the broadcast dims. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/selected_rows.h"
#include "operators/elementwise.h"

typedef struct bin_plan {
  int n; /* collapsed rank, >= 1 */
  int64_t dims[RILL_MAX_DIMS];
  int64_t xs[RILL_MAX_DIMS], ys[RILL_MAX_DIMS];
  int64_t numel;
  rill_dims out;
} bin_plan;

static rill_status *bin_plan_make(rill_kernel_ctx *ctx, const rill_dims *x, const rill_dims *y,
                                  const char *xname, const char *yname, bin_plan *p) {
  rill_dims xa, ya;
  char why[160];
  if (!rill_elementwise_broadcast(x, y, ctx->attrs[RILL_ELEMENTWISE_SUB_ATTR_AXIS].v.i, &xa, &ya, &p->out, why, sizeof why)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input X (%s) of shape %s does not broadcast with input Y (%s) "
                             "of shape %s: %s", xname, rill_dims_str(x, a, sizeof a), yname,
                             rill_dims_str(y, b, sizeof b), why);
  }
  int64_t ext[RILL_MAX_DIMS];
  bool bx[RILL_MAX_DIMS], by[RILL_MAX_DIMS];
  int n = 0;
  p->numel = 1;
  for (int i = 0; i < p->out.n; i++) {
    p->numel *= p->out.d[i];
    if (p->out.d[i] == 1) continue;
    bool cx = xa.d[i] == 1, cy = ya.d[i] == 1;
    if (n > 0 && bx[n - 1] == cx && by[n - 1] == cy) {
      ext[n - 1] *= p->out.d[i];
      continue;
    }
    ext[n] = p->out.d[i];
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

/* Walks the plan: for each run of the inner dim, BODY sees o (output offset of the run),
 * xo, yo (operand offsets), inner, xsi, ysi (inner strides, 0 or 1). */
#define BIN_WALK(p, ...)                                                                  \
  do {                                                                                    \
    int r_ = (p).n;                                                                       \
    int64_t inner = (p).dims[r_ - 1], xsi = (p).xs[r_ - 1], ysi = (p).ys[r_ - 1];         \
    int64_t outer_ = (p).numel / inner, idx_[RILL_MAX_DIMS] = {0}, xo = 0, yo = 0;        \
    for (int64_t oi_ = 0; oi_ < outer_; oi_++) {                                          \
      int64_t o = oi_ * inner;                                                            \
      __VA_ARGS__;                                                                             \
      for (int k_ = r_ - 2; k_ >= 0; k_--) {                                              \
        xo += (p).xs[k_];                                                                 \
        yo += (p).ys[k_];                                                                 \
        if (++idx_[k_] < (p).dims[k_]) break;                                             \
        xo -= (p).xs[k_] * (p).dims[k_];                                                  \
        yo -= (p).ys[k_] * (p).dims[k_];                                                  \
        idx_[k_] = 0;                                                                     \
      }                                                                                   \
    }                                                                                     \
  } while (0)

/* ---- forward ---- */

#define OP_SUB(a, b) ((a) - (b))
#define OP_MUL(a, b) ((a) * (b))
#define OP_DIV(a, b) ((a) / (b))
#define OP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define OP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define OP_POWF(a, b) powf((a), (b))
#define OP_POW(a, b) pow((a), (b))
#define OP_MOD(a, b) ((b) == -1 ? 0 : (a) % (b)) /* no INT_MIN % -1 overflow */
/* floats as Paddle 1.8.5 (and Python): the remainder takes the divisor's sign */
static inline float mod_fp32(float a, float b) {
  float r = fmodf(a, b);
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
static inline double mod_fp64(double a, double b) {
  double r = fmod(a, b);
  return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

/* Integer division by zero is an error, not a trap. */
#define CHECK_NONE(T, yp, n) (void)0
#define CHECK_INT_DIV(T, yp, n)                                                           \
  for (int64_t z_ = 0; z_ < (n); z_++)                                                    \
    if ((yp)[z_] == 0)                                                                    \
      return rill_kernel_error(ctx, "input Y (%s) holds a zero divisor at element %lld",  \
                               rill_kin_name(ctx, 1, 0), (long long)z_);

/* A selected-rows X (a sparse gradient scaled by clipping) takes a one-element Y, as in
 * Paddle: Out is selected rows with X's rows and height and the values combined with Y
 * (in place when Out is X). */
#define EW_ROWS(T, DT, OP)                                                                \
  do {                                                                                    \
    rill_status *rerr_;                                                                   \
    rill_selected_rows *xr_ = rill_cpu_rows_in(ctx, DT, &rerr_);                          \
    RILL_TRY(rerr_);                                                                      \
    if (xr_) {                                                                            \
      RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                         \
      if (rill_tensor_numel(y) != 1)                                                      \
        return rill_kernel_error(ctx, "input X (%s) is selected rows, so input Y (%s) "   \
                                 "must hold one element, not %lld",                       \
                                 rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0),      \
                                 (long long)rill_tensor_numel(y));                        \
      const T b_ = *(const T *)rill_tensor_ptr(y);                                        \
      const T *xp_ = rill_tensor_ptr(&xr_->value);                                        \
      int64_t n_ = rill_tensor_numel(&xr_->value);                                        \
      RILL_TRY(rill_cpu_rows_out_like(ctx, xr_, &out));                                   \
      T *op_ = rill_tensor_ptr(out);                                                      \
      for (int64_t i = 0; i < n_; i++) op_[i] = OP(xp_[i], b_);                           \
      return NULL;                                                                        \
    }                                                                                     \
  } while (0)
#define EW_ROWS_NONE(T, DT, OP) (void)0

#define EW_FWD_ROWS(T, DT, OP, CHECK, ROWS, NAME)                                         \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *out;                                                             \
    ROWS(T, DT, OP);                                                                      \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    bin_plan p;                                                                           \
    RILL_TRY(bin_plan_make(ctx, &x->dims, &y->dims, rill_kin_name(ctx, 0, 0),             \
                           rill_kin_name(ctx, 1, 0), &p));                                \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &p.out));                               \
    if (p.numel == 0) return NULL;                                                        \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y);                           \
    CHECK(T, yp, rill_tensor_numel(y));                                                   \
    T *op = rill_tensor_ptr(out);                                                         \
    BIN_WALK(p, {                                                                         \
      T *dst = op + o;                                                                    \
      const T *a = xp + xo, *b = yp + yo;                                                 \
      if (xsi && ysi)                                                                     \
        for (int64_t i = 0; i < inner; i++) dst[i] = OP(a[i], b[i]);                      \
      else if (xsi)                                                                       \
        for (int64_t i = 0; i < inner; i++) dst[i] = OP(a[i], b[0]);                      \
      else if (ysi)                                                                       \
        for (int64_t i = 0; i < inner; i++) dst[i] = OP(a[0], b[i]);                      \
      else                                                                                \
        for (int64_t i = 0; i < inner; i++) dst[i] = OP(a[0], b[0]);                      \
    });                                                                                   \
    return NULL;                                                                          \
  }

#define EW_FWD(T, DT, OP, CHECK, NAME) EW_FWD_ROWS(T, DT, OP, CHECK, EW_ROWS_NONE, NAME)

EW_FWD(float, RILL_DTYPE_FP32, OP_SUB, CHECK_NONE, rill_cpu_elementwise_sub_fp32)
EW_FWD(double, RILL_DTYPE_FP64, OP_SUB, CHECK_NONE, rill_cpu_elementwise_sub_fp64)
EW_FWD(int32_t, RILL_DTYPE_INT32, OP_SUB, CHECK_NONE, rill_cpu_elementwise_sub_int32)
EW_FWD(int64_t, RILL_DTYPE_INT64, OP_SUB, CHECK_NONE, rill_cpu_elementwise_sub_int64)
EW_FWD_ROWS(float, RILL_DTYPE_FP32, OP_MUL, CHECK_NONE, EW_ROWS, rill_cpu_elementwise_mul_fp32)
EW_FWD_ROWS(double, RILL_DTYPE_FP64, OP_MUL, CHECK_NONE, EW_ROWS, rill_cpu_elementwise_mul_fp64)
EW_FWD(int32_t, RILL_DTYPE_INT32, OP_MUL, CHECK_NONE, rill_cpu_elementwise_mul_int32)
EW_FWD(int64_t, RILL_DTYPE_INT64, OP_MUL, CHECK_NONE, rill_cpu_elementwise_mul_int64)
EW_FWD(float, RILL_DTYPE_FP32, OP_DIV, CHECK_NONE, rill_cpu_elementwise_div_fp32)
EW_FWD(double, RILL_DTYPE_FP64, OP_DIV, CHECK_NONE, rill_cpu_elementwise_div_fp64)
EW_FWD(int32_t, RILL_DTYPE_INT32, OP_DIV, CHECK_INT_DIV, rill_cpu_elementwise_div_int32)
EW_FWD(int64_t, RILL_DTYPE_INT64, OP_DIV, CHECK_INT_DIV, rill_cpu_elementwise_div_int64)
EW_FWD(float, RILL_DTYPE_FP32, OP_MAX, CHECK_NONE, rill_cpu_elementwise_max_fp32)
EW_FWD(double, RILL_DTYPE_FP64, OP_MAX, CHECK_NONE, rill_cpu_elementwise_max_fp64)
EW_FWD(int32_t, RILL_DTYPE_INT32, OP_MAX, CHECK_NONE, rill_cpu_elementwise_max_int32)
EW_FWD(int64_t, RILL_DTYPE_INT64, OP_MAX, CHECK_NONE, rill_cpu_elementwise_max_int64)
EW_FWD(float, RILL_DTYPE_FP32, OP_MIN, CHECK_NONE, rill_cpu_elementwise_min_fp32)
EW_FWD(double, RILL_DTYPE_FP64, OP_MIN, CHECK_NONE, rill_cpu_elementwise_min_fp64)
EW_FWD(int32_t, RILL_DTYPE_INT32, OP_MIN, CHECK_NONE, rill_cpu_elementwise_min_int32)
EW_FWD(int64_t, RILL_DTYPE_INT64, OP_MIN, CHECK_NONE, rill_cpu_elementwise_min_int64)
EW_FWD(float, RILL_DTYPE_FP32, mod_fp32, CHECK_NONE, rill_cpu_elementwise_mod_fp32)
EW_FWD(double, RILL_DTYPE_FP64, mod_fp64, CHECK_NONE, rill_cpu_elementwise_mod_fp64)
EW_FWD(int32_t, RILL_DTYPE_INT32, OP_MOD, CHECK_INT_DIV, rill_cpu_elementwise_mod_int32)
EW_FWD(int64_t, RILL_DTYPE_INT64, OP_MOD, CHECK_INT_DIV, rill_cpu_elementwise_mod_int64)
EW_FWD(int32_t, RILL_DTYPE_INT32, OP_DIV, CHECK_INT_DIV, rill_cpu_elementwise_floordiv_int32)
EW_FWD(int64_t, RILL_DTYPE_INT64, OP_DIV, CHECK_INT_DIV, rill_cpu_elementwise_floordiv_int64)
EW_FWD(float, RILL_DTYPE_FP32, OP_POWF, CHECK_NONE, rill_cpu_elementwise_pow_fp32)
EW_FWD(double, RILL_DTYPE_FP64, OP_POW, CHECK_NONE, rill_cpu_elementwise_pow_fp64)

/* ---- gradients ----
 * GX(x, y, d) / GY(x, y, d): one output element's contribution to X@GRAD / Y@GRAD. */

#define GX_ADD(x, y, d) (d)
#define GY_ADD(x, y, d) (d)
#define GX_SUB(x, y, d) (d)
#define GY_SUB(x, y, d) (-(d))
#define GX_MUL(x, y, d) ((d) * (y))
#define GY_MUL(x, y, d) ((d) * (x))
#define GX_DIV(x, y, d) ((d) / (y))
#define GY_DIV(x, y, d) (from_out_ ? -(d) * (x) / (y) : -(d) * (x) / ((y) * (y)))
#define GX_MAX(x, y, d) ((x) > (y) ? (d) : 0)
#define GY_MAX(x, y, d) ((x) > (y) ? 0 : (d))
#define GX_MIN(x, y, d) ((x) < (y) ? (d) : 0)
#define GY_MIN(x, y, d) ((x) < (y) ? 0 : (d))
#define GX_POWF(x, y, d) ((d) * (y) * powf((x), (y) - 1))
#define GY_POWF(x, y, d) ((d) * logf(x) * powf((x), (y)))
#define GX_POW(x, y, d) ((d) * (y) * pow((x), (y) - 1))
#define GY_POW(x, y, d) ((d) * log(x) * pow((x), (y)))

/* s += sum over i_ in [0, n) of EXPR, in eight interleaved partial sums (a fixed order,
 * so results are reproducible) that the compiler keeps in vector registers: a single
 * running sum would serialise every add on the previous one. */
#define EW_SUM(T, s, n, EXPR)                                                             \
  do {                                                                                    \
    T p_[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                   \
    int64_t c_ = 0;                                                                       \
    for (; c_ + 8 <= (n); c_ += 8)                                                        \
      for (int k_ = 0; k_ < 8; k_++) {                                                    \
        const int64_t i_ = c_ + k_;                                                       \
        p_[k_] += (EXPR);                                                                 \
      }                                                                                   \
    for (int64_t i_ = c_; i_ < (n); i_++) (s) += (EXPR);                                  \
    (s) += ((p_[0] + p_[4]) + (p_[1] + p_[5])) + ((p_[2] + p_[6]) + (p_[3] + p_[7]));      \
  } while (0)

/* XMODE: 0, the gradient reads X; 1, X is optional (add, sub: X's shape is then
 * Out@GRAD's); 2, X is optional and Out stands in for it (div: Paddle 1.x's
 * elementwise_div_grad has Y, Out and Out@GRAD only; with x = Out, GY uses -d * out / y). */
#define EW_GRAD(T, DT, GX, GY, XMODE, NAME)                                               \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x = NULL, *y, *dout, *dx = NULL, *dy = NULL;                             \
    bool from_out_ = false;                                                               \
    if (XMODE == 0 || rill_kin(ctx, 0, 0)) RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));    \
    (void)from_out_;                                                                      \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kin_need(ctx, 3, 0, DT, &dout));                                        \
    if (rill_kout(ctx, 0, 0)) RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dx));               \
    if (rill_kout(ctx, 1, 0)) RILL_TRY(rill_kout_need(ctx, 1, 0, DT, &dy));               \
    const rill_dims *xd = x ? &x->dims : &dout->dims;                                     \
    bin_plan p;                                                                           \
    RILL_TRY(bin_plan_make(ctx, xd, &y->dims, x ? rill_kin_name(ctx, 0, 0)                \
                                                : rill_kin_name(ctx, 3, 0),               \
                           rill_kin_name(ctx, 1, 0), &p));                                \
    if (!rill_dims_equal(&dout->dims, &p.out)) {                                          \
      char a_[RILL_DIMS_STR_MAX], b_[RILL_DIMS_STR_MAX];                                  \
      return rill_kernel_error(ctx, "input Out@GRAD (%s) has shape %s, expected %s",      \
                               rill_kin_name(ctx, 3, 0),                                  \
                               rill_dims_str(&dout->dims, a_, sizeof a_),                 \
                               rill_dims_str(&p.out, b_, sizeof b_));                     \
    }                                                                                     \
    if (dx) RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dx, xd));                            \
    if (dy) RILL_TRY(rill_kout_check_dims(ctx, 1, 0, dy, &y->dims));                      \
    /* An operand of the full shape gets its gradient written, a broadcast one summed. */ \
    bool xfull = dx && rill_tensor_numel(dx) == p.numel;                                  \
    bool yfull = dy && rill_tensor_numel(dy) == p.numel;                                  \
    if (dx && !xfull) memset(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx));             \
    if (dy && !yfull) memset(rill_tensor_ptr(dy), 0, rill_tensor_nbytes(dy));             \
    if (p.numel == 0 || (!dx && !dy)) return NULL;                                        \
    const T *xp = x ? (const T *)rill_tensor_ptr(x) : NULL;                               \
    if (!x && XMODE == 2 && dy) {                                                         \
      rill_tensor *o_;                                                                    \
      RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &o_));                                        \
      if (!rill_dims_equal(&o_->dims, &p.out))                                            \
        return rill_kernel_error(ctx, "input Out (%s) does not have Out@GRAD's shape",    \
                                 rill_kin_name(ctx, 2, 0));                               \
      xp = rill_tensor_ptr(o_);                                                           \
      from_out_ = true;                                                                   \
    }                                                                                     \
    const T *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(dout);                        \
    T *dxp = dx ? (T *)rill_tensor_ptr(dx) : NULL, *dyp = dy ? (T *)rill_tensor_ptr(dy) : NULL; \
    T zero_ = 0;                                                                          \
    (void)zero_;                                                                          \
    BIN_WALK(p, {                                                                         \
      const T *g = gp + o, *b = yp + yo;                                                  \
      const T *a = xp ? xp + xo : &zero_;                                                 \
      (void)a;                                                                            \
      (void)b;                                                                            \
      if (dxp) {                                                                          \
        T *d = dxp + xo, s = 0;                                                           \
        if (xfull && ysi)                                                                 \
          for (int64_t i = 0; i < inner; i++) d[i] = GX(a[i], b[i], g[i]);                \
        else if (xfull)                                                                   \
          for (int64_t i = 0; i < inner; i++) d[i] = GX(a[i], b[0], g[i]);                \
        else if (xsi && ysi)                                                              \
          for (int64_t i = 0; i < inner; i++) d[i] += GX(a[i], b[i], g[i]);               \
        else if (xsi)                                                                     \
          for (int64_t i = 0; i < inner; i++) d[i] += GX(a[i], b[0], g[i]);               \
        else if (ysi)                                                                     \
          EW_SUM(T, s, inner, GX(a[0], b[i_], g[i_]));                                    \
        else                                                                              \
          EW_SUM(T, s, inner, GX(a[0], b[0], g[i_]));                                     \
        if (!xsi) d[0] += s;                                                              \
      }                                                                                   \
      if (dyp) {                                                                          \
        T *d = dyp + yo, s = 0;                                                           \
        if (yfull && xsi)                                                                 \
          for (int64_t i = 0; i < inner; i++) d[i] = GY(a[i], b[i], g[i]);                \
        else if (yfull)                                                                   \
          for (int64_t i = 0; i < inner; i++) d[i] = GY(a[0], b[i], g[i]);                \
        else if (xsi && ysi)                                                              \
          for (int64_t i = 0; i < inner; i++) d[i] += GY(a[i], b[i], g[i]);               \
        else if (ysi)                                                                     \
          for (int64_t i = 0; i < inner; i++) d[i] += GY(a[0], b[i], g[i]);               \
        else if (xsi)                                                                     \
          EW_SUM(T, s, inner, GY(a[i_], b[0], g[i_]));                                    \
        else                                                                              \
          EW_SUM(T, s, inner, GY(a[0], b[0], g[i_]));                                     \
        if (!ysi) d[0] += s;                                                              \
      }                                                                                   \
    });                                                                                   \
    return NULL;                                                                          \
  }

EW_GRAD(float, RILL_DTYPE_FP32, GX_ADD, GY_ADD, 1, rill_cpu_elementwise_add_grad_fp32)
EW_GRAD(double, RILL_DTYPE_FP64, GX_ADD, GY_ADD, 1, rill_cpu_elementwise_add_grad_fp64)
EW_GRAD(float, RILL_DTYPE_FP32, GX_SUB, GY_SUB, 1, rill_cpu_elementwise_sub_grad_fp32)
EW_GRAD(double, RILL_DTYPE_FP64, GX_SUB, GY_SUB, 1, rill_cpu_elementwise_sub_grad_fp64)
EW_GRAD(float, RILL_DTYPE_FP32, GX_MUL, GY_MUL, 0, rill_cpu_elementwise_mul_grad_fp32)
EW_GRAD(double, RILL_DTYPE_FP64, GX_MUL, GY_MUL, 0, rill_cpu_elementwise_mul_grad_fp64)
EW_GRAD(float, RILL_DTYPE_FP32, GX_DIV, GY_DIV, 2, rill_cpu_elementwise_div_grad_fp32)
EW_GRAD(double, RILL_DTYPE_FP64, GX_DIV, GY_DIV, 2, rill_cpu_elementwise_div_grad_fp64)
EW_GRAD(float, RILL_DTYPE_FP32, GX_MAX, GY_MAX, 0, rill_cpu_elementwise_max_grad_fp32)
EW_GRAD(double, RILL_DTYPE_FP64, GX_MAX, GY_MAX, 0, rill_cpu_elementwise_max_grad_fp64)
EW_GRAD(float, RILL_DTYPE_FP32, GX_MIN, GY_MIN, 0, rill_cpu_elementwise_min_grad_fp32)
EW_GRAD(double, RILL_DTYPE_FP64, GX_MIN, GY_MIN, 0, rill_cpu_elementwise_min_grad_fp64)
EW_GRAD(float, RILL_DTYPE_FP32, GX_POWF, GY_POWF, 0, rill_cpu_elementwise_pow_grad_fp32)
EW_GRAD(double, RILL_DTYPE_FP64, GX_POW, GY_POW, 0, rill_cpu_elementwise_pow_grad_fp64)

/* ---- double gradients ----
 * Absent DDX / DDY count as zero. add and sub: DDOut = DDX +- DDY over the plan of
 * (DDX's shape, or DOut's without DDX; Y's). mul: DDOut = DDX * Y + X * DDY, X@GRAD =
 * DOut * DDY and Y@GRAD = DOut * DDX, each summed into its operand's shape. */

/* Input `slot`, when present, must have the shape `want` of operand `of`. */
static rill_status *gg_operand(rill_kernel_ctx *ctx, size_t slot, rill_dtype dt, const rill_tensor *of,
                               size_t of_slot, rill_tensor **t) {
  *t = NULL;
  if (!rill_kin(ctx, slot, 0)) return NULL;
  RILL_TRY(rill_kin_need(ctx, slot, 0, dt, t));
  if (of && !rill_dims_equal(&(*t)->dims, &of->dims))
    return rill_kernel_error(ctx, "input %s (%s) does not have the shape of %s (%s)",
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0),
                             ctx->schema->inputs[of_slot].name, rill_kin_name(ctx, of_slot, 0));
  return NULL;
}

/* The plan of operands shaped xd and yd, whose broadcast shape must be that of input
 * dslot (DOut; Out for div). */
static rill_status *gg_plan(rill_kernel_ctx *ctx, const rill_dims *xd, const char *xname,
                            const rill_tensor *y, size_t yslot, const rill_tensor *dout,
                            size_t dslot, bin_plan *p) {
  RILL_TRY(bin_plan_make(ctx, xd, &y->dims, xname, rill_kin_name(ctx, yslot, 0), p));
  if (!rill_dims_equal(&dout->dims, &p->out)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input %s (%s) has shape %s, expected %s", ctx->schema->inputs[dslot].name,
                             rill_kin_name(ctx, dslot, 0), rill_dims_str(&dout->dims, a, sizeof a),
                             rill_dims_str(&p->out, b, sizeof b));
  }
  return NULL;
}

#define EW_LINEAR_GG(T, DT, SIGN, NAME)                                                   \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *y, *dout, *ddx, *ddy, *ddout;                                            \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &y));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &dout));                                        \
    RILL_TRY(gg_operand(ctx, 2, DT, NULL, 0, &ddx));                                      \
    RILL_TRY(gg_operand(ctx, 3, DT, y, 0, &ddy));                                         \
    bin_plan p;                                                                           \
    RILL_TRY(gg_plan(ctx, ddx ? &ddx->dims : &dout->dims,                                 \
                     rill_kin_name(ctx, ddx ? 2 : 1, 0), y, 0, dout, 1, &p));             \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &ddout));                                      \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, ddout, &dout->dims));                        \
    const T *a = ddx ? (const T *)rill_tensor_ptr(ddx) : NULL;                            \
    const T *b = ddy ? (const T *)rill_tensor_ptr(ddy) : NULL;                            \
    T *dst = rill_tensor_ptr(ddout);                                                      \
    if (p.numel == 0) return NULL;                                                        \
    BIN_WALK(p, {                                                                         \
      for (int64_t i = 0; i < inner; i++)                                                 \
        dst[o + i] = (a ? a[xo + i * xsi] : (T)0) SIGN (b ? b[yo + i * ysi] : (T)0);      \
    });                                                                                   \
    return NULL;                                                                          \
  }

EW_LINEAR_GG(float, RILL_DTYPE_FP32, +, rill_cpu_elementwise_add_grad_grad_fp32)
EW_LINEAR_GG(double, RILL_DTYPE_FP64, +, rill_cpu_elementwise_add_grad_grad_fp64)
EW_LINEAR_GG(float, RILL_DTYPE_FP32, -, rill_cpu_elementwise_sub_grad_grad_fp32)
EW_LINEAR_GG(double, RILL_DTYPE_FP64, -, rill_cpu_elementwise_sub_grad_grad_fp64)

#define EW_MUL_GG(T, DT, NAME)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *x, *y, *dout, *ddx, *ddy, *out[3] = {NULL, NULL, NULL};                  \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &x));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &y));                                           \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                        \
    RILL_TRY(gg_operand(ctx, 3, DT, x, 0, &ddx));                                         \
    RILL_TRY(gg_operand(ctx, 4, DT, y, 1, &ddy));                                         \
    bin_plan p;                                                                           \
    RILL_TRY(gg_plan(ctx, &x->dims, rill_kin_name(ctx, 0, 0), y, 1, dout, 2, &p));        \
    const rill_tensor *like[3] = {x, y, dout};                                            \
    RILL_TRY(rill_kout_like(ctx, 3, DT, like, (const size_t[]){0, 1, 2}, 3u, out));       \
    const T *xp = rill_tensor_ptr(x), *yp = rill_tensor_ptr(y), *gp = rill_tensor_ptr(dout); \
    const T *ddxp = ddx ? (const T *)rill_tensor_ptr(ddx) : NULL;                         \
    const T *ddyp = ddy ? (const T *)rill_tensor_ptr(ddy) : NULL;                         \
    T *dxp = out[0] && ddyp ? (T *)rill_tensor_ptr(out[0]) : NULL;                        \
    T *dyp = out[1] && ddxp ? (T *)rill_tensor_ptr(out[1]) : NULL;                        \
    T *ddop = out[2] ? (T *)rill_tensor_ptr(out[2]) : NULL;                               \
    if (p.numel == 0) return NULL;                                                        \
    BIN_WALK(p, {                                                                         \
      for (int64_t i = 0; i < inner; i++) {                                               \
        int64_t xi = xo + i * xsi, yi = yo + i * ysi;                                     \
        T g = gp[o + i];                                                                  \
        if (ddop)                                                                         \
          ddop[o + i] = (ddxp ? ddxp[xi] * yp[yi] : (T)0) + (ddyp ? xp[xi] * ddyp[yi] : (T)0); \
        if (dxp) dxp[xi] += g * ddyp[yi];                                                 \
        if (dyp) dyp[yi] += g * ddxp[xi];                                                 \
      }                                                                                   \
    });                                                                                   \
    return NULL;                                                                          \
  }

EW_MUL_GG(float, RILL_DTYPE_FP32, rill_cpu_elementwise_mul_grad_grad_fp32)
EW_MUL_GG(double, RILL_DTYPE_FP64, rill_cpu_elementwise_mul_grad_grad_fp64)

/* elementwise_div_grad_grad, as Paddle's ElementwiseDivDoubleGradKernel over the plan of
 * (DX's shape, Y's): with q = DX / Y, Y@GRAD sums DDY * Out * q - DDX * q into Y's shape,
 * DOut = -(DX * DDY), DDOut = (DDX - DDY * Out) / Y. */
#define EW_DIV_GG(T, DT, NAME)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *y, *out, *dx, *ddx, *ddy, *res[3] = {NULL, NULL, NULL};                  \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &y));                                           \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &out));                                         \
    RILL_TRY(rill_kin_need(ctx, 4, 0, DT, &dx));                                          \
    RILL_TRY(gg_operand(ctx, 2, DT, dx, 4, &ddx));                                        \
    RILL_TRY(gg_operand(ctx, 3, DT, y, 0, &ddy));                                         \
    bin_plan p;                                                                           \
    RILL_TRY(gg_plan(ctx, &dx->dims, rill_kin_name(ctx, 4, 0), y, 0, out, 1, &p));        \
    const rill_tensor *like[3] = {y, out, out};                                           \
    RILL_TRY(rill_kout_like(ctx, 3, DT, like, (const size_t[]){0, 1, 1}, 7u, res));       \
    const T *yp = rill_tensor_ptr(y), *outp = rill_tensor_ptr(out), *dxp = rill_tensor_ptr(dx); \
    const T *ddxp = ddx ? (const T *)rill_tensor_ptr(ddx) : NULL;                         \
    const T *ddyp = ddy ? (const T *)rill_tensor_ptr(ddy) : NULL;                         \
    T *dyp = res[0] ? (T *)rill_tensor_ptr(res[0]) : NULL;                                \
    T *doutp = res[1] && ddyp ? (T *)rill_tensor_ptr(res[1]) : NULL;                      \
    T *ddop = res[2] ? (T *)rill_tensor_ptr(res[2]) : NULL;                               \
    if (p.numel == 0) return NULL;                                                        \
    BIN_WALK(p, {                                                                         \
      for (int64_t i = 0; i < inner; i++) {                                               \
        int64_t xi = xo + i * xsi, yi = yo + i * ysi;                                     \
        T a = ddxp ? ddxp[xi] : (T)0, b = ddyp ? ddyp[yi] : (T)0, ov = outp[o + i];       \
        if (dyp) {                                                                        \
          T q = dxp[xi] / yp[yi];                                                         \
          dyp[yi] += b * ov * q - a * q;                                                  \
        }                                                                                 \
        if (doutp) doutp[o + i] = -(dxp[xi] * b);                                         \
        if (ddop) ddop[o + i] = (a - b * ov) / yp[yi];                                    \
      }                                                                                   \
    });                                                                                   \
    return NULL;                                                                          \
  }

EW_DIV_GG(float, RILL_DTYPE_FP32, rill_cpu_elementwise_div_grad_grad_fp32)
EW_DIV_GG(double, RILL_DTYPE_FP64, rill_cpu_elementwise_div_grad_grad_fp64)
