/* cast, assign and shape CPU kernels (every dtype).
 *
 * cast converts in blocks: integer-to-integer through int64 (exact), everything else
 * through double (complex through a real and an imaginary block). Float to integer
 * truncates toward zero and saturates (NaN gives 0) instead of Paddle's undefined
 * static_cast; to bool is `!= 0`. float16 and bfloat16 round to nearest even. */
#include <math.h>
#include <string.h>

#include "kernels/cpu/tensor_ops.h"

enum { BLOCK = 512 };

static bool is_int(rill_dtype dt) {
  return dt == RILL_DTYPE_BOOL || dt == RILL_DTYPE_INT8 || dt == RILL_DTYPE_UINT8 ||
         dt == RILL_DTYPE_INT16 || dt == RILL_DTYPE_INT32 || dt == RILL_DTYPE_INT64;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
  if (exp == 0) {
    float f = ldexpf((float)man, -24);
    return sign ? -f : f;
  }
  if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
  else bits = sign | ((exp + 112) << 23) | (man << 13);
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t float_to_half(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds past 65504: inf */
  if (ax < 0x38800000u) { /* subnormal half (or zero): value / 2^-24, rounded to even */
    float a;
    memcpy(&a, &ax, sizeof a);
    return (uint16_t)(sign | (uint16_t)lrintf(a * 16777216.0f));
  }
  uint32_t r = ax - 0x38000000u; /* rebias the exponent */
  uint32_t half = r >> 13, rest = r & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half++;
  return (uint16_t)(sign | half);
}

static float bf16_to_float(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

static uint16_t float_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

/* Loads n elements as doubles (im: imaginary parts, zeros for real dtypes). */
static void load_d(const void *p, rill_dtype dt, int64_t n, double *re, double *im) {
  switch (dt) {
#define L(T) for (int64_t i = 0; i < n; i++) re[i] = (double)((const T *)p)[i]; break;
  case RILL_DTYPE_BOOL: L(bool)
  case RILL_DTYPE_INT8: L(int8_t)
  case RILL_DTYPE_UINT8: L(uint8_t)
  case RILL_DTYPE_INT16: L(int16_t)
  case RILL_DTYPE_INT32: L(int32_t)
  case RILL_DTYPE_INT64: L(int64_t)
  case RILL_DTYPE_FP32: L(float)
  case RILL_DTYPE_FP64: L(double)
#undef L
  case RILL_DTYPE_FP16:
    for (int64_t i = 0; i < n; i++) re[i] = half_to_float(((const uint16_t *)p)[i]);
    break;
  case RILL_DTYPE_BF16:
    for (int64_t i = 0; i < n; i++) re[i] = bf16_to_float(((const uint16_t *)p)[i]);
    break;
  case RILL_DTYPE_COMPLEX64:
    for (int64_t i = 0; i < n; i++) {
      re[i] = ((const float *)p)[2 * i];
      im[i] = ((const float *)p)[2 * i + 1];
    }
    return;
  case RILL_DTYPE_COMPLEX128:
    for (int64_t i = 0; i < n; i++) {
      re[i] = ((const double *)p)[2 * i];
      im[i] = ((const double *)p)[2 * i + 1];
    }
    return;
  default: break;
  }
  for (int64_t i = 0; i < n; i++) im[i] = 0;
}

/* Truncates toward zero, saturating to [lo, hi]; NaN gives 0. */
static int64_t sat(double v, double lo, double hi) {
  if (v != v) return 0;
  if (v <= lo) return (int64_t)lo;
  if (v >= hi) return hi >= 9223372036854775807.0 ? INT64_MAX : (int64_t)hi;
  return (int64_t)v;
}

static void store_d(void *p, rill_dtype dt, int64_t n, const double *re, const double *im) {
  switch (dt) {
#define S(T, LO, HI) for (int64_t i = 0; i < n; i++) ((T *)p)[i] = (T)sat(re[i], LO, HI); break;
  case RILL_DTYPE_INT8: S(int8_t, -128.0, 127.0)
  case RILL_DTYPE_UINT8: S(uint8_t, 0.0, 255.0)
  case RILL_DTYPE_INT16: S(int16_t, -32768.0, 32767.0)
  case RILL_DTYPE_INT32: S(int32_t, -2147483648.0, 2147483647.0)
  case RILL_DTYPE_INT64: S(int64_t, -9223372036854775808.0, 9223372036854775807.0)
#undef S
  case RILL_DTYPE_BOOL:
    for (int64_t i = 0; i < n; i++) ((bool *)p)[i] = re[i] != 0 || im[i] != 0;
    break;
  case RILL_DTYPE_FP32:
    for (int64_t i = 0; i < n; i++) ((float *)p)[i] = (float)re[i];
    break;
  case RILL_DTYPE_FP64:
    for (int64_t i = 0; i < n; i++) ((double *)p)[i] = re[i];
    break;
  case RILL_DTYPE_FP16:
    for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = float_to_half((float)re[i]);
    break;
  case RILL_DTYPE_BF16:
    for (int64_t i = 0; i < n; i++) ((uint16_t *)p)[i] = float_to_bf16((float)re[i]);
    break;
  case RILL_DTYPE_COMPLEX64:
    for (int64_t i = 0; i < n; i++) {
      ((float *)p)[2 * i] = (float)re[i];
      ((float *)p)[2 * i + 1] = (float)im[i];
    }
    break;
  case RILL_DTYPE_COMPLEX128:
    for (int64_t i = 0; i < n; i++) {
      ((double *)p)[2 * i] = re[i];
      ((double *)p)[2 * i + 1] = im[i];
    }
    break;
  default: break;
  }
}

static void load_i(const void *p, rill_dtype dt, int64_t n, int64_t *v) {
  switch (dt) {
#define L(T) for (int64_t i = 0; i < n; i++) v[i] = (int64_t)((const T *)p)[i]; break;
  case RILL_DTYPE_BOOL: L(bool)
  case RILL_DTYPE_INT8: L(int8_t)
  case RILL_DTYPE_UINT8: L(uint8_t)
  case RILL_DTYPE_INT16: L(int16_t)
  case RILL_DTYPE_INT32: L(int32_t)
  case RILL_DTYPE_INT64: L(int64_t)
#undef L
  default: break;
  }
}

/* Integer narrowing wraps modulo 2^bits, as C++'s static_cast does in Paddle. */
static void store_i(void *p, rill_dtype dt, int64_t n, const int64_t *v) {
  switch (dt) {
#define S(T) for (int64_t i = 0; i < n; i++) ((T *)p)[i] = (T)(uint64_t)v[i]; break;
  case RILL_DTYPE_INT8: S(int8_t)
  case RILL_DTYPE_UINT8: S(uint8_t)
  case RILL_DTYPE_INT16: S(int16_t)
  case RILL_DTYPE_INT32: S(int32_t)
  case RILL_DTYPE_INT64: S(int64_t)
#undef S
  case RILL_DTYPE_BOOL:
    for (int64_t i = 0; i < n; i++) ((bool *)p)[i] = v[i] != 0;
    break;
  default: break;
  }
}

rill_status *rill_cpu_cast(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) is missing or holds no data", rill_kin_name(ctx, 0, 0));
  rill_dtype odt = (rill_dtype)ctx->attrs[RILL_CAST_ATTR_OUT_DTYPE].v.i, idt = x->dtype;
  if (!rill_dtype_size(odt) || !rill_dtype_size(idt))
    return rill_kernel_error(ctx, "cannot cast %s to dtype %d", rill_dtype_name(idt), (int)odt);
  RILL_TRY(rill_kout_need(ctx, 0, 0, odt, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  int64_t n = rill_tensor_numel(x);
  size_t ie = rill_dtype_size(idt), oe = rill_dtype_size(odt);
  const char *ip = rill_tensor_ptr(x);
  char *op = rill_tensor_ptr(out);
  if (idt == odt) {
    if (ip != op && n) memmove(op, ip, (size_t)n * ie);
    return NULL;
  }
  /* In place only when elements do not grow (a block is read before it is written). */
  if (ip != op && rill_overlaps(op, (size_t)n * oe, ip, (size_t)n * ie))
    return rill_kernel_error(ctx, "output Out (%s) overlaps input X", rill_kout_name(ctx, 0, 0));
  if (ip == op && oe > ie)
    return rill_kernel_error(ctx, "cannot cast in place to a wider dtype (output Out (%s))",
                             rill_kout_name(ctx, 0, 0));
  bool ints = is_int(idt) && is_int(odt);
  for (int64_t at = 0; at < n; at += BLOCK) {
    int64_t k = n - at < BLOCK ? n - at : BLOCK;
    if (ints) {
      int64_t v[BLOCK];
      load_i(ip + (size_t)at * ie, idt, k, v);
      store_i(op + (size_t)at * oe, odt, k, v);
    } else {
      double re[BLOCK], im[BLOCK];
      load_d(ip + (size_t)at * ie, idt, k, re, im);
      store_d(op + (size_t)at * oe, odt, k, re, im);
    }
  }
  return NULL;
}

rill_status *rill_cpu_copy_variable(rill_kernel_ctx *ctx, size_t in_slot, size_t in_i,
                                    size_t out_slot, size_t out_i) {
  rill_variable *xv = ctx->in[in_slot][in_i], *ov = ctx->out[out_slot][out_i];
  const char *xs = ctx->schema->inputs[in_slot].name, *os = ctx->schema->outputs[out_slot].name;
  const char *xn = rill_kin_name(ctx, in_slot, in_i), *on = rill_kout_name(ctx, out_slot, out_i);
  if (xv == ov) return NULL;
  /* an output not yet written may take any kind */
  bool fresh = ov->kind == RILL_VARKIND_EMPTY ||
               (ov->kind == RILL_VARKIND_TENSOR && !rill_tensor_is_set(&ov->u.tensor));
  if (fresh && xv->kind != RILL_VARKIND_TENSOR) rill_variable_clear(ov);
  switch (xv->kind) {
  case RILL_VARKIND_TENSOR: {
    rill_tensor *out = rill_variable_tensor(ov);
    if (!out) break;
    return rill_tensor_copy(out, &xv->u.tensor);
  }
  case RILL_VARKIND_SELECTED_ROWS: {
    rill_selected_rows *out = rill_variable_selected_rows(ov);
    if (!out) break;
    const rill_selected_rows *in = &xv->u.rows;
    RILL_TRY(rill_selected_rows_set_rows(out, in->rows, in->nrows));
    out->height = in->height;
    return rill_tensor_copy(&out->value, &in->value);
  }
  case RILL_VARKIND_TENSOR_ARRAY: {
    rill_tensor_array *out = rill_variable_array(ov);
    if (!out) break;
    const rill_tensor_array *in = &xv->u.array;
    RILL_TRY(rill_tensor_array_resize(out, in->n));
    for (size_t i = 0; i < in->n; i++) RILL_TRY(rill_tensor_copy(&out->items[i], &in->items[i]));
    for (size_t i = in->n; i < out->n; i++) rill_tensor_clear(&out->items[i]);
    out->n = in->n;
    return NULL;
  }
  default:
    return rill_kernel_error(ctx, "input %s (%s) holds nothing", xs, xn);
  }
  return rill_kernel_error(ctx, "output %s (%s) holds a %s, input %s (%s) a %s", os, on,
                           rill_var_kind_name(ov->kind), xs, xn, rill_var_kind_name(xv->kind));
}

rill_status *rill_cpu_assign(rill_kernel_ctx *ctx) {
  if (!ctx->nin[0] || !ctx->in[0][0]) return NULL; /* X absent: nothing to assign (Paddle) */
  if (!ctx->nout[0] || !ctx->out[0][0])
    return rill_kernel_error(ctx, "output Out (%s) is missing", rill_kout_name(ctx, 0, 0));
  return rill_cpu_copy_variable(ctx, 0, 0, 0, 0);
}

rill_status *rill_cpu_shape(rill_kernel_ctx *ctx) {
  rill_variable *xv = ctx->nin[0] ? ctx->in[0][0] : NULL;
  rill_dims d;
  if (xv && xv->kind == RILL_VARKIND_TENSOR) {
    d = xv->u.tensor.dims;
  } else if (xv && xv->kind == RILL_VARKIND_SELECTED_ROWS) {
    d = xv->u.rows.value.dims;
    if (d.n > 0) d.d[0] = xv->u.rows.height;
  } else {
    return rill_kernel_error(ctx, "input Input (%s) is not a dense tensor or selected rows",
                             rill_kin_name(ctx, 0, 0));
  }
  rill_tensor *out = rill_kout(ctx, 0, 0);
  if (!out)
    return rill_kernel_error(ctx, "output Out (%s) is missing or not a dense tensor",
                             rill_kout_name(ctx, 0, 0));
  rill_dims od = {.n = 1, .d = {d.n}};
  RILL_TRY(rill_tensor_alloc(out, RILL_DTYPE_INT32, &od));
  int32_t *p = rill_tensor_ptr(out);
  for (int i = 0; i < d.n; i++) p[i] = (int32_t)d.d[i];
  return NULL;
}
