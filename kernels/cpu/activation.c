/* CPU kernels of the elementwise activations and their gradients (schemas in
 * operators/activation.c; relu's forward kernel is in relu.c).
 *
 * One pattern for all of them: each activation is a pair of element expressions, one
 * for Out from x and one for X@GRAD from v (X or Out, the gradient's dependency) and d
 * (Out@GRAD). The macros below turn each expression into a flat loop per dtype, which
 * the compiler vectorizes, and the shared drivers do the checks. The float parameters
 * a, b, c are the attributes FWD_KERNELS/BWD_KERNELS name (RILL_<OP>_ATTR_<NAME>; a
 * BOOLEAN attribute reads as 0 or 1). The math family (abs ... pow) writes each
 * expression in the arithmetic of Paddle's functor, so that edges come out as Paddle's
 * do: thresholded_relu(-inf) = 0 * -inf is NaN, softshrink passes NaN.
 *
 * The loops are flat and branch-free in intent; whether GCC vectorizes them depends on
 * flags: at -O2 (GCC 12's very-cheap cost model) loops of unknown length are not
 * vectorized, so kernels/cpu is built with -fvect-cost-model=dynamic (CMakeLists.txt),
 * under which the selects of plain values (relu, relu6, sigmoid/tanh gradients,
 * hard_sigmoid, hard_swish) are; those whose select arms are products (leaky_relu,
 * written as (x >= 0 ? 1 : alpha) * x so NaN propagates) also need -fno-trapping-math.
 * exp/tanh/erf stay scalar without a vector math library (sigmoid's and tanh's float
 * forwards use vexp.h's). relu6's float32 forward is written with AVX2 intrinsics all
 * the same (taken where the CPU has AVX2, isa.h), so it does not depend on the flags.
 *
 * In-place safe (Out = X, X@GRAD = Out@GRAD): element i is read before it is written. */
#include <math.h>
#include <tgmath.h>
#include "framework/base/isa.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/vexp.h"

typedef struct act_params {
  double p[3];
} act_params;

/* pos: the attribute positions read as a, b, c (NO_ATTR: none). A gradient op shares
 * its forward op's attribute table, so the forward op's names serve both. */
#define NO_ATTR (-1)
static void act_params_read(const rill_kernel_ctx *ctx, const int *pos, size_t npos,
                            act_params *pr) {
  for (size_t i = 0; i < 3; i++) {
    pr->p[i] = 0;
    if (i >= npos || pos[i] < 0 || (size_t)pos[i] >= ctx->schema->nattrs) continue;
    const rill_attr_value *v = &ctx->attrs[pos[i]];
    if (v->type == RILL_ATTR_FLOAT) pr->p[i] = v->v.f;
    else if (v->type == RILL_ATTR_BOOLEAN) pr->p[i] = v->v.b;
  }
}

typedef void (*fwd_f32_fn)(const float *xp, float *yp, int64_t n, const act_params *pr);
typedef void (*fwd_f64_fn)(const double *xp, double *yp, int64_t n, const act_params *pr);
typedef void (*bwd_f32_fn)(const float *vp, const float *dp, float *gp, int64_t n,
                           const act_params *pr);
typedef void (*bwd_f64_fn)(const double *vp, const double *dp, double *gp, int64_t n,
                           const act_params *pr);

#define PARAMS(T)                                                                         \
  const T a = (T)pr->p[0], b = (T)pr->p[1], c = (T)pr->p[2];                             \
  (void)a, (void)b, (void)c

#define FWD_T(NAME, TY, S, ...)                                                           \
  static void NAME##_fwd_##S(const TY *xp, TY *yp, int64_t n, const act_params *pr) {     \
    typedef TY T;                                                                         \
    PARAMS(T);                                                                            \
    for (int64_t i = 0; i < n; i++) {                                                     \
      const T x = xp[i];                                                                  \
      yp[i] = (__VA_ARGS__);                                                              \
    }                                                                                     \
  }
#define BWD_T(NAME, TY, S, ...)                                                           \
  static void NAME##_bwd_##S(const TY *vp, const TY *dp, TY *gp, int64_t n,               \
                             const act_params *pr) {                                      \
    typedef TY T;                                                                         \
    PARAMS(T);                                                                            \
    for (int64_t i = 0; i < n; i++) {                                                     \
      const T v = vp[i], d = dp[i];                                                       \
      gp[i] = (__VA_ARGS__);                                                              \
    }                                                                                     \
  }
/* Out from x (T is the element type inside the loop; cast constants to T). */
#define FWD(NAME, ...) FWD_T(NAME, float, f32, __VA_ARGS__) FWD_T(NAME, double, f64, __VA_ARGS__)
/* X@GRAD from v (X or Out) and d (Out@GRAD). */
#define BWD(NAME, ...) BWD_T(NAME, float, f32, __VA_ARGS__) BWD_T(NAME, double, f64, __VA_ARGS__)

/* relu (forward in relu.c): reads Out. */
BWD(relu, v > (T)0 ? d : (T)0)

/* relu6: a = threshold; reads Out. float32 is written with AVX (8 lanes): the scalar
 * select compiles to a branchy loop at -O2 that mispredicts on real activations (36% of
 * paddlejs_gesture_rec's time). max(0, x) then min(a, .) keep x's NaN, as the select
 * does (the maxps/minps result is their second operand when either is NaN). */
FWD_T(relu6, double, f64, x < (T)0 ? (T)0 : (x > a ? a : x))
#if RILL_X86_SIMD
RILL_AVX2_BEGIN
static int64_t relu6_lanes_f32(const float *xp, float *yp, int64_t n, float a) {
  const __m256 zero = _mm256_setzero_ps(), hi = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(xp + i);
    _mm256_storeu_ps(yp + i, _mm256_min_ps(hi, _mm256_max_ps(zero, v)));
  }
  return i;
}
RILL_AVX2_END
#endif
static void relu6_fwd_f32(const float *xp, float *yp, int64_t n, const act_params *pr) {
  const float a = (float)pr->p[0];
  int64_t i = 0;
#if RILL_X86_SIMD
  if (rill_cpu_avx2()) i = relu6_lanes_f32(xp, yp, n, a);
#endif
  for (; i < n; i++) {
    const float x = xp[i];
    yp[i] = x < 0.0f ? 0.0f : (x > a ? a : x);
  }
}
BWD(relu6, v > (T)0 && v < a ? d : (T)0)

/* leaky_relu: a = alpha; reads X. */
FWD(leaky_relu, (x >= (T)0 ? (T)1 : a) * x)
BWD(leaky_relu, (v >= (T)0 ? (T)1 : a) * d)

/* sigmoid, tanh: read Out. Their float32 forwards are vexp.h's (8 lanes at a time
 * where the CPU has AVX2, the same bits elsewhere). */
FWD_T(sigmoid, double, f64, (T)1 / ((T)1 + exp(-x)))
static void sigmoid_fwd_f32(const float *xp, float *yp, int64_t n, const act_params *pr) {
  (void)pr;
  rill_sigmoid_span_f32(yp, xp, n);
}
BWD(sigmoid, d * v * ((T)1 - v))
FWD_T(tanh, double, f64, tanh(x))
static void tanh_fwd_f32(const float *xp, float *yp, int64_t n, const act_params *pr) {
  (void)pr;
  rill_tanh_span_f32(yp, xp, n);
}
BWD(tanh, d * ((T)1 - v * v))

/* hard_sigmoid: a = slope, b = offset; reads Out. */
FWD(hard_sigmoid, ({
      T t = a * x + b;
      t < (T)0 ? (T)0 : (t > (T)1 ? (T)1 : t);
    }))
BWD(hard_sigmoid, (v > (T)0 && v < (T)1 ? a : (T)0) * d)

/* hard_swish: a = threshold, b = scale, c = offset; reads X. Where X + offset reaches
 * the threshold the gradient is Out@GRAD itself, as in Paddle (exact for threshold ==
 * scale, the default). */
FWD(hard_swish, ({
      T t = x + c;
      t = t < (T)0 ? (T)0 : (t > a ? a : t);
      t * x / b;
    }))
BWD(hard_swish, ({
      T t = v + c, q = ((T)2 * v + c) / b;
      (t >= a ? (T)1 : (t > (T)0 ? q : (T)0)) * d;
    }))

/* swish: a = beta; reads X. */
FWD(swish, x / ((T)1 + exp(-a * x)))
BWD(swish, ({
      T s = (T)1 / ((T)1 + exp(-a * v)), o = v * s;
      d * (a * o + s * ((T)1 - a * o));
    }))

/* silu: reads X. */
FWD(silu, x / ((T)1 + exp(-x)))
BWD(silu, ({
      T s = (T)1 / ((T)1 + exp(-v));
      d * s * ((T)1 + v * ((T)1 - s));
    }))

/* gelu: a = approximate; reads X. Exact: x * Phi(x) with erf; approximate:
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
#define GELU_K 0.79788456080286535588 /* sqrt(2 / pi) */
#define GELU_C 0.044715
#define INV_SQRT_2PI 0.39894228040143267794
FWD(gelu_erf, (T)0.5 * x * ((T)1 + erf(x * (T)M_SQRT1_2)))
BWD(gelu_erf, d * ((T)0.5 * ((T)1 + erf(v * (T)M_SQRT1_2)) +
                   v * (T)INV_SQRT_2PI * exp((T)-0.5 * v * v)))
FWD(gelu_tanh, (T)0.5 * x * ((T)1 + tanh((T)GELU_K * (x + (T)GELU_C * x * x * x))))
BWD(gelu_tanh, ({
      T t = tanh((T)GELU_K * (v + (T)GELU_C * v * v * v));
      d * ((T)0.5 * ((T)1 + t) +
           (T)0.5 * v * ((T)1 - t * t) * (T)GELU_K * ((T)1 + (T)(3 * GELU_C) * v * v));
    }))

#define GELU_PICK(T, S)                                                                   \
  static void gelu_fwd_##S(const T *xp, T *yp, int64_t n, const act_params *pr) {         \
    (pr->p[0] != 0 ? gelu_tanh_fwd_##S : gelu_erf_fwd_##S)(xp, yp, n, pr);                \
  }                                                                                       \
  static void gelu_bwd_##S(const T *vp, const T *dp, T *gp, int64_t n, const act_params *pr) { \
    (pr->p[0] != 0 ? gelu_tanh_bwd_##S : gelu_erf_bwd_##S)(vp, dp, gp, n, pr);            \
  }
GELU_PICK(float, f32)
GELU_PICK(double, f64)

/* ---- the math family, in the arithmetic of Paddle's functors ---- */

/* abs: reads X; its gradient is Out@GRAD * sign(X) (0 at 0 and NaN). */
FWD(abs, fabs(x))
BWD(abs, d * (T)((v > (T)0) - (v < (T)0)))
/* ceil, floor, round (halves to even, as Paddle's Eigen rounding): the gradient, 0 * Out@GRAD, is
 * act_zero_grad below. */
FWD(ceil, ceil(x))
FWD(floor, floor(x))
FWD(round, nearbyint(x))
/* sign: 0 for NaN, as (x > 0) - (x < 0) gives. */
FWD(sign, (T)((x > (T)0) - (x < (T)0)))
FWD(cos, cos(x))
BWD(cos, -d * sin(v))
FWD(sin, sin(x))
BWD(sin, d * cos(v))
FWD(acos, acos(x))
BWD(acos, -d / sqrt((T)1 - v * v))
FWD(asin, asin(x))
BWD(asin, d / sqrt((T)1 - v * v))
FWD(atan, atan(x))
BWD(atan, d / ((T)1 + v * v))
/* reciprocal, rsqrt: read Out. */
FWD(reciprocal, (T)1 / x)
BWD(reciprocal, d * (T)-1 * v * v)
FWD(rsqrt, (T)1 / sqrt(x))
BWD(rsqrt, (T)-0.5 * d * v * v * v)
/* softplus, logsigmoid: shifted by m so that exp never overflows; the forwards take
 * x - m as min(x, 0) (the same value, but 0 rather than NaN at x = m = inf, so that
 * softplus(inf) = inf and logsigmoid(-inf) = -inf, as Paddle's). */
FWD(softplus, ({
      T m = x < (T)0 ? (T)0 : x;
      m + log(exp(-m) + exp(x < (T)0 ? x : (T)0));
    }))
BWD(softplus, ({
      T m = v < (T)0 ? (T)0 : v, e = exp(v - m);
      d * e / (exp(-m) + e);
    }))
FWD(softsign, x / ((T)1 + fabs(x)))
BWD(softsign, ({
      T q = (T)1 + fabs(v);
      d / (q * q);
    }))
FWD(logsigmoid, ({
      T m = -x < (T)0 ? (T)0 : -x;
      -m - log(exp(-m) + exp(-x < (T)0 ? -x : (T)0));
    }))
BWD(logsigmoid, ({
      T m = -v < (T)0 ? (T)0 : -v, e = exp(-v - m);
      d * e / (exp(-m) + e);
    }))
FWD(tanh_shrink, x - tanh(x))
BWD(tanh_shrink, ({
      T t = tanh(v);
      d * t * t;
    }))
/* softshrink: a = lambda; hard_shrink, thresholded_relu: a = threshold. Masks multiply,
 * as in Paddle, so NaN (and 0 * inf) give NaN. */
FWD(softshrink, (T)(x > a) * (x - a) + (T)(x < -a) * (x + a))
BWD(softshrink, d * (T)((v > a) + (v < -a)))
FWD(hard_shrink, x * (T)((x < -a) + (x > a)))
BWD(hard_shrink, d * (T)((v < -a) + (v > a)))
FWD(thresholded_relu, (T)(x > a) * x)
BWD(thresholded_relu, d * (T)(v > a))
/* elu: a = alpha. */
FWD(elu, ({
      T p = x < (T)0 ? (T)0 : x, q = a * (exp(x) - (T)1);
      p + (q > (T)0 ? (T)0 : q);
    }))
BWD(elu, d * (T)(v > (T)0) + d * a * exp(v) * (T)(v <= (T)0))
/* selu: a = scale, b = alpha; reads Out. */
FWD(selu, (x <= (T)0 ? b * exp(x) - b : x) * a)
BWD(selu, d * (v <= (T)0 ? v + a * b : a))
/* brelu: a = t_min, b = t_max. */
FWD(brelu, ({
      T t = x < a ? a : x;
      t > b ? b : t;
    }))
BWD(brelu, d * (T)((v > a) * (v < b)))
/* soft_relu: a = threshold; reads Out. */
FWD(soft_relu, ({
      T t = x < -a ? -a : x;
      t = t > a ? a : t;
      log((T)1 + exp(t));
    }))
BWD(soft_relu, d * ((T)1 - exp(-v)) * (T)((v > -a) * (v < a)))
/* stanh: a = scale_a, b = scale_b. The float32 forward is vexp.h's tanh. */
FWD_T(stanh, double, f64, b * tanh(a * x))
static void stanh_fwd_f32(const float *xp, float *yp, int64_t n, const act_params *pr) {
  const float a = (float)pr->p[0], b = (float)pr->p[1];
  for (int64_t i = 0; i < n; i++) yp[i] = a * xp[i];
  rill_tanh_span_f32(yp, yp, n);
  for (int64_t i = 0; i < n; i++) yp[i] *= b;
}
BWD(stanh, ({
      T t = tanh(a * v);
      d * a * b * ((T)1 - t * t);
    }))
FWD(erf, erf(x))
BWD(erf, d * (T)M_2_SQRTPI * exp(-v * v))
/* mish: a = threshold; softplus(x) is x above it and exp(x) below its negative. */
#define MISH_SP(T, x) (a > (T)0 && x > a ? x : (a > (T)0 && x < -a ? exp(x) : log1p(exp(x))))
FWD(mish, x * tanh(MISH_SP(T, x)))
BWD(mish, ({
      T sp = MISH_SP(T, v), t = tanh(sp), gsp = -expm1(-sp);
      d * (v * ((T)1 - t * t) * gsp + t);
    }))
/* log1p: 1 + x is rounded before the log, as Paddle's is. */
FWD(log1p, log((T)1 + x))
BWD(log1p, d * ((T)1 / (v + (T)1)))
/* pow: a = factor (FactorTensor's element when given). */
FWD(pow, pow(x, a))
BWD(pow, d * a * pow(v, a - (T)1))

/* ---- drivers ---- */

/* pow's exponent: FactorTensor's one element (float32, as Paddle's) when given. */
static rill_status *pow_factor(rill_kernel_ctx *ctx, size_t slot, act_params *pr) {
  rill_tensor *f = rill_kin(ctx, slot, 0);
  if (!f) return NULL;
  RILL_TRY(rill_kin_need(ctx, slot, 0, RILL_DTYPE_FP32, &f));
  if (rill_tensor_numel(f) != 1)
    return rill_kernel_error(ctx, "input %s (%s) must hold one element, has %lld",
                             ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, 0),
                             (long long)rill_tensor_numel(f));
  pr->p[0] = *(const float *)rill_tensor_ptr(f);
  return NULL;
}

/* factor_slot: pow's FactorTensor slot, or -1. */
static rill_status *act_forward_f(rill_kernel_ctx *ctx, const int *pos, size_t npos,
                                  int factor_slot, rill_dtype dt, fwd_f32_fn f32,
                                  fwd_f64_fn f64) {
  rill_tensor *x, *out;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &x));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  act_params pr;
  act_params_read(ctx, pos, npos, &pr);
  if (factor_slot >= 0) RILL_TRY(pow_factor(ctx, (size_t)factor_slot, &pr));
  int64_t n = rill_tensor_numel(x);
  if (f32) f32(rill_tensor_ptr(x), rill_tensor_ptr(out), n, &pr);
  else f64(rill_tensor_ptr(x), rill_tensor_ptr(out), n, &pr);
  return NULL;
}

static rill_status *act_backward_f(rill_kernel_ctx *ctx, const int *pos, size_t npos,
                                   int factor_slot, rill_dtype dt, bwd_f32_fn f32,
                                   bwd_f64_fn f64) {
  if (!rill_kout(ctx, 0, 0)) return NULL; /* X@GRAD not wanted */
  rill_tensor *v, *d, *g;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &v));
  RILL_TRY(rill_kin_need(ctx, 1, 0, dt, &d));
  if (!rill_dims_equal(&v->dims, &d->dims)) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_kernel_error(ctx, "input %s (%s) has shape %s but %s (%s) has shape %s",
                             ctx->schema->inputs[1].name, rill_kin_name(ctx, 1, 0),
                             rill_dims_str(&d->dims, a, sizeof a), ctx->schema->inputs[0].name,
                             rill_kin_name(ctx, 0, 0), rill_dims_str(&v->dims, b, sizeof b));
  }
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &g));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, g, &v->dims));
  act_params pr;
  act_params_read(ctx, pos, npos, &pr);
  if (factor_slot >= 0) RILL_TRY(pow_factor(ctx, (size_t)factor_slot, &pr));
  int64_t n = rill_tensor_numel(v);
  if (f32) f32(rill_tensor_ptr(v), rill_tensor_ptr(d), rill_tensor_ptr(g), n, &pr);
  else f64(rill_tensor_ptr(v), rill_tensor_ptr(d), rill_tensor_ptr(g), n, &pr);
  return NULL;
}

static rill_status *act_forward(rill_kernel_ctx *ctx, const int *pos, size_t npos,
                                rill_dtype dt, fwd_f32_fn f32, fwd_f64_fn f64) {
  return act_forward_f(ctx, pos, npos, -1, dt, f32, f64);
}

static rill_status *act_backward(rill_kernel_ctx *ctx, const int *pos, size_t npos,
                                 rill_dtype dt, bwd_f32_fn f32, bwd_f64_fn f64) {
  return act_backward_f(ctx, pos, npos, -1, dt, f32, f64);
}

/* X@GRAD = 0 * Out@GRAD (ceil, floor, round: Out@GRAD is their gradient op's only input). */
static rill_status *act_zero_grad(rill_kernel_ctx *ctx, rill_dtype dt) {
  if (!rill_kout(ctx, 0, 0)) return NULL;
  rill_tensor *d, *g;
  RILL_TRY(rill_kin_need(ctx, 0, 0, dt, &d));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &g));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, g, &d->dims));
  int64_t n = rill_tensor_numel(d);
  if (dt == RILL_DTYPE_FP32) {
    const float *dp = rill_tensor_ptr(d);
    float *gp = rill_tensor_ptr(g);
    for (int64_t i = 0; i < n; i++) gp[i] = 0.0f * dp[i];
  } else {
    const double *dp = rill_tensor_ptr(d);
    double *gp = rill_tensor_ptr(g);
    for (int64_t i = 0; i < n; i++) gp[i] = 0.0 * dp[i];
  }
  return NULL;
}

rill_status *rill_cpu_act_zero_grad_fp32(rill_kernel_ctx *ctx) {
  return act_zero_grad(ctx, RILL_DTYPE_FP32);
}
rill_status *rill_cpu_act_zero_grad_fp64(rill_kernel_ctx *ctx) {
  return act_zero_grad(ctx, RILL_DTYPE_FP64);
}

#define POW_FACTOR ((const int[]){RILL_POW_ATTR_FACTOR})
_Static_assert(RILL_SAME_POS(RILL_POW_ATTR_FACTOR, RILL_POW_GRAD_ATTR_FACTOR), "pow tables");
rill_status *rill_cpu_pow_fp32(rill_kernel_ctx *ctx) {
  return act_forward_f(ctx, POW_FACTOR, 1, RILL_POW_IN_FACTOR_TENSOR, RILL_DTYPE_FP32,
                       pow_fwd_f32, NULL);
}
rill_status *rill_cpu_pow_fp64(rill_kernel_ctx *ctx) {
  return act_forward_f(ctx, POW_FACTOR, 1, RILL_POW_IN_FACTOR_TENSOR, RILL_DTYPE_FP64, NULL,
                       pow_fwd_f64);
}
rill_status *rill_cpu_pow_grad_fp32(rill_kernel_ctx *ctx) {
  return act_backward_f(ctx, POW_FACTOR, 1, RILL_POW_GRAD_IN_FACTOR_TENSOR, RILL_DTYPE_FP32,
                        pow_bwd_f32, NULL);
}
rill_status *rill_cpu_pow_grad_fp64(rill_kernel_ctx *ctx) {
  return act_backward_f(ctx, POW_FACTOR, 1, RILL_POW_GRAD_IN_FACTOR_TENSOR, RILL_DTYPE_FP64,
                        NULL, pow_bwd_f64);
}

/* FWD_KERNELS(NAME, positions of a, b, c...): the float32 and float64 kernels of NAME;
 * BWD_KERNELS the same for NAME_grad. */
#define ATTR_POS(...) ((const int[]){__VA_ARGS__})
#define ATTR_NPOS(...) (sizeof ATTR_POS(__VA_ARGS__) / sizeof(int))
#define FWD_KERNELS(NAME, ...)                                                            \
  rill_status *rill_cpu_##NAME##_fp32(rill_kernel_ctx *ctx) {                             \
    return act_forward(ctx, ATTR_POS(__VA_ARGS__), ATTR_NPOS(__VA_ARGS__), RILL_DTYPE_FP32, \
                       NAME##_fwd_f32, NULL);                                             \
  }                                                                                       \
  rill_status *rill_cpu_##NAME##_fp64(rill_kernel_ctx *ctx) {                             \
    return act_forward(ctx, ATTR_POS(__VA_ARGS__), ATTR_NPOS(__VA_ARGS__), RILL_DTYPE_FP64, \
                       NULL, NAME##_fwd_f64);                                             \
  }
#define BWD_KERNELS(NAME, ...)                                                            \
  rill_status *rill_cpu_##NAME##_grad_fp32(rill_kernel_ctx *ctx) {                        \
    return act_backward(ctx, ATTR_POS(__VA_ARGS__), ATTR_NPOS(__VA_ARGS__),               \
                        RILL_DTYPE_FP32, NAME##_bwd_f32, NULL);                           \
  }                                                                                       \
  rill_status *rill_cpu_##NAME##_grad_fp64(rill_kernel_ctx *ctx) {                        \
    return act_backward(ctx, ATTR_POS(__VA_ARGS__), ATTR_NPOS(__VA_ARGS__),               \
                        RILL_DTYPE_FP64, NULL, NAME##_bwd_f64);                           \
  }
#define ACT_KERNELS(NAME, ...) FWD_KERNELS(NAME, __VA_ARGS__) BWD_KERNELS(NAME, __VA_ARGS__)

BWD_KERNELS(relu, NO_ATTR)
ACT_KERNELS(relu6, RILL_RELU6_ATTR_THRESHOLD)
ACT_KERNELS(leaky_relu, RILL_LEAKY_RELU_ATTR_ALPHA)
ACT_KERNELS(sigmoid, NO_ATTR)
ACT_KERNELS(tanh, NO_ATTR)
ACT_KERNELS(hard_sigmoid, RILL_HARD_SIGMOID_ATTR_SLOPE, RILL_HARD_SIGMOID_ATTR_OFFSET)
ACT_KERNELS(hard_swish, RILL_HARD_SWISH_ATTR_THRESHOLD, RILL_HARD_SWISH_ATTR_SCALE,
            RILL_HARD_SWISH_ATTR_OFFSET)
ACT_KERNELS(swish, RILL_SWISH_ATTR_BETA)
ACT_KERNELS(silu, NO_ATTR)
ACT_KERNELS(gelu, RILL_GELU_ATTR_APPROXIMATE)
ACT_KERNELS(abs, NO_ATTR)
FWD_KERNELS(ceil, NO_ATTR)
FWD_KERNELS(floor, NO_ATTR)
FWD_KERNELS(round, NO_ATTR)
FWD_KERNELS(sign, NO_ATTR)
ACT_KERNELS(cos, NO_ATTR)
ACT_KERNELS(sin, NO_ATTR)
ACT_KERNELS(acos, NO_ATTR)
ACT_KERNELS(asin, NO_ATTR)
ACT_KERNELS(atan, NO_ATTR)
ACT_KERNELS(reciprocal, NO_ATTR)
ACT_KERNELS(rsqrt, NO_ATTR)
ACT_KERNELS(softplus, NO_ATTR)
ACT_KERNELS(softsign, NO_ATTR)
ACT_KERNELS(logsigmoid, NO_ATTR)
ACT_KERNELS(tanh_shrink, NO_ATTR)
ACT_KERNELS(softshrink, RILL_SOFTSHRINK_ATTR_LAMBDA)
ACT_KERNELS(hard_shrink, RILL_HARD_SHRINK_ATTR_THRESHOLD)
ACT_KERNELS(thresholded_relu, RILL_THRESHOLDED_RELU_ATTR_THRESHOLD)
ACT_KERNELS(elu, RILL_ELU_ATTR_ALPHA)
ACT_KERNELS(selu, RILL_SELU_ATTR_SCALE, RILL_SELU_ATTR_ALPHA)
ACT_KERNELS(brelu, RILL_BRELU_ATTR_T_MIN, RILL_BRELU_ATTR_T_MAX)
ACT_KERNELS(soft_relu, RILL_SOFT_RELU_ATTR_THRESHOLD)
ACT_KERNELS(stanh, RILL_STANH_ATTR_SCALE_A, RILL_STANH_ATTR_SCALE_B)
ACT_KERNELS(erf, NO_ATTR)
ACT_KERNELS(mish, RILL_MISH_ATTR_THRESHOLD)
ACT_KERNELS(log1p, NO_ATTR)

/* relu_grad_grad and leaky_relu_grad_grad: DDOut = DDX times the first gradient's slope
 * at X (or Out, whose sign is X's): 1 where relu's gradient passes (Out > 0) or
 * leaky_relu's does (X >= 0), else 0 or alpha. An absent DDX is zero. */
#define RELU_GRAD_GRAD(T, DT, NAME, PASSES, ALPHA)                                        \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *src, *ddx = NULL, *ddout;                                                \
    if (!rill_kout(ctx, 0, 0)) return NULL;                                               \
    size_t si = rill_kin(ctx, 0, 0) ? 0 : 1;                                              \
    RILL_TRY(rill_kin_need(ctx, si, 0, DT, &src));                                        \
    if (rill_kin(ctx, 2, 0)) RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &ddx));                \
    if (ddx && !rill_dims_equal(&ddx->dims, &src->dims))                                  \
      return rill_kernel_error(ctx, "inputs DDX (%s) and %s (%s) differ in shape",        \
                               rill_kin_name(ctx, 2, 0), ctx->schema->inputs[si].name,    \
                               rill_kin_name(ctx, si, 0));                                \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &ddout));                                      \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, ddout, &src->dims));                         \
    const T a = ALPHA, *v = rill_tensor_ptr(src);                                         \
    const T *dd = ddx ? (const T *)rill_tensor_ptr(ddx) : NULL;                           \
    T *o = rill_tensor_ptr(ddout);                                                        \
    int64_t n = rill_tensor_numel(src);                                                   \
    for (int64_t i = 0; i < n; i++) o[i] = !dd ? (T)0 : PASSES ? dd[i] : a * dd[i];       \
    return NULL;                                                                          \
  }

RELU_GRAD_GRAD(float, RILL_DTYPE_FP32, rill_cpu_relu_grad_grad_fp32, v[i] > 0, 0)
RELU_GRAD_GRAD(double, RILL_DTYPE_FP64, rill_cpu_relu_grad_grad_fp64, v[i] > 0, 0)
RELU_GRAD_GRAD(float, RILL_DTYPE_FP32, rill_cpu_leaky_relu_grad_grad_fp32, v[i] >= 0,
               ctx->attrs[RILL_LEAKY_RELU_GRAD_GRAD_ATTR_ALPHA].v.f)
RELU_GRAD_GRAD(double, RILL_DTYPE_FP64, rill_cpu_leaky_relu_grad_grad_fp64, v[i] >= 0,
               ctx->attrs[RILL_LEAKY_RELU_GRAD_GRAD_ATTR_ALPHA].v.f)
