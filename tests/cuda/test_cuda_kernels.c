/* Every CUDA kernel against its CPU kernel: the same one-op program runs on an executor
 * at cpu:0 and at cuda:0 with the same random inputs, and every output must agree
 * within the op's tolerance (|gpu - cpu| <= tol * (1 + |cpu|)), and be NaN where the
 * CPU's is. Shapes cover odd sizes and broadcasting; some cases put NaN among the
 * inputs. Without a CUDA device each test skips, saying so. */
#include <math.h>
#include <stdlib.h>

#include "cuda_test.h"

REPORT_GPU_SKIPS("cuda_kernels")

#define MAX_ARGS 32

typedef struct arg {
  const char *slot, *var;
  int ndim;
  int64_t dims[5];
  float lo, hi; /* inputs: uniform in [lo, hi] */
  rill_dtype dtype; /* 0 means float32 here (RILL_DTYPE_BOOL is 0: see boolean) */
  int nan_every;    /* float inputs: every nan_every-th element NaN (0: none) */
  bool boolean;     /* a bool tensor, whatever dtype says */
  const uint64_t *lod; /* inputs: one LoD level of nlod offsets (NULL: none) */
  size_t nlod;
} arg;

typedef struct op_case {
  const char *op;
  arg in[MAX_ARGS];
  arg out[MAX_ARGS];
  void (*attrs)(rill_op_builder *b);
  double tol;
} op_case;

static rill_dtype dtype_of(const arg *a) {
  return a->boolean ? RILL_DTYPE_BOOL : a->dtype ? a->dtype : RILL_DTYPE_FP32;
}

static int64_t numel_of(const arg *a) {
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= a->dims[i];
  return n;
}

/* Element i of a fetched tensor as a double. */
static double element(rill_tensor *t, int64_t i) {
  const void *p = rill_tensor_data(t);
  switch (rill_tensor_dtype(t)) {
  case RILL_DTYPE_FP32: return ((const float *)p)[i];
  case RILL_DTYPE_FP64: return ((const double *)p)[i];
  case RILL_DTYPE_INT32: return ((const int32_t *)p)[i];
  case RILL_DTYPE_INT64: return (double)((const int64_t *)p)[i];
  case RILL_DTYPE_UINT8: return ((const uint8_t *)p)[i];
  case RILL_DTYPE_INT8: return ((const int8_t *)p)[i];
  case RILL_DTYPE_BOOL: return ((const bool *)p)[i];
  default: cr_assert_fail("unexpected dtype %d", (int)rill_tensor_dtype(t)); return 0;
  }
}

/* The op's inputs (or outputs): the arguments of one slot are consecutive entries. */
static void add_args(rill_op_builder *b, const arg *a, int n, bool inputs) {
  for (int i = 0; i < n;) {
    const char *names[MAX_ARGS];
    int k = 0;
    while (i + k < n && strcmp(a[i + k].slot, a[i].slot) == 0) {
      names[k] = a[i + k].var;
      k++;
    }
    if (inputs)
      OK(rill_op_builder_input(b, a[i].slot, names, (size_t)k));
    else
      OK(rill_op_builder_output(b, a[i].slot, names, (size_t)k));
    i += k;
  }
}

/* Runs the case at `place` with inputs drawn from `seed`; fetches its outputs. */
static void run_case(const op_case *c, rill_place place, unsigned seed, rill_tensor **outs) {
  rill_program *p;
  OK(rill_program_create(&p));
  int nin = 0, nout = 0;
  while (nin < MAX_ARGS && c->in[nin].slot) nin++;
  while (nout < MAX_ARGS && c->out[nout].slot) nout++;
  for (int i = 0; i < nin; i++)
    OK(rill_block_add_var(p, 0, c->in[i].var, RILL_VAR_LOD_TENSOR, dtype_of(&c->in[i]), c->in[i].dims,
                          (size_t)c->in[i].ndim, 0, false));
  for (int i = 0; i < nout; i++)
    OK(rill_block_add_var(p, 0, c->out[i].var, RILL_VAR_LOD_TENSOR, dtype_of(&c->out[i]), c->out[i].dims,
                          (size_t)c->out[i].ndim, 0, false));
  rill_op_builder *b;
  OK(rill_op_builder_create(c->op, &b));
  add_args(b, c->in, nin, true);
  add_args(b, c->out, nout, false);
  if (c->attrs) c->attrs(b);
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);

  rill_tensor *feeds[MAX_ARGS];
  const char *feed_names[MAX_ARGS], *fetch_names[MAX_ARGS];
  srand(seed);
  for (int i = 0; i < nin; i++) {
    OK(rill_tensor_create(dtype_of(&c->in[i]), c->in[i].dims, (size_t)c->in[i].ndim, &feeds[i]));
    float lo = c->in[i].lo, hi = c->in[i].hi;
    rill_dtype dt = dtype_of(&c->in[i]);
    if (dt == RILL_DTYPE_INT64 || dt == RILL_DTYPE_INT32 || dt == RILL_DTYPE_UINT8 || dt == RILL_DTYPE_BOOL) {
      /* labels, ids, masks, flags: integers in [lo, hi] */
      void *d = rill_tensor_data(feeds[i]);
      for (int64_t j = 0; j < numel_of(&c->in[i]); j++) {
        int64_t v = (int64_t)lo + (int64_t)((double)(hi - lo + 1) * rand() / ((double)RAND_MAX + 1));
        if (dt == RILL_DTYPE_INT64)
          ((int64_t *)d)[j] = v;
        else if (dt == RILL_DTYPE_INT32)
          ((int32_t *)d)[j] = (int32_t)v;
        else if (dt == RILL_DTYPE_BOOL)
          ((bool *)d)[j] = v != 0;
        else
          ((uint8_t *)d)[j] = (uint8_t)v;
      }
      feed_names[i] = c->in[i].var;
      continue;
    }
    if (dt == RILL_DTYPE_FP64) {
      double *d = rill_tensor_data(feeds[i]);
      for (int64_t j = 0; j < numel_of(&c->in[i]); j++) d[j] = lo + (hi - lo) * (double)rand() / (double)RAND_MAX;
      feed_names[i] = c->in[i].var;
      continue;
    }
    float *d = rill_tensor_data(feeds[i]);
    for (int64_t j = 0; j < numel_of(&c->in[i]); j++) d[j] = lo + (hi - lo) * (float)rand() / (float)RAND_MAX;
    if (c->in[i].nan_every > 0)
      for (int64_t j = 3; j < numel_of(&c->in[i]); j += c->in[i].nan_every) d[j] = NAN;
    feed_names[i] = c->in[i].var;
  }
  for (int i = 0; i < nin; i++)
    if (c->in[i].lod) OK(rill_tensor_set_lod(feeds[i], 1, &c->in[i].lod, &c->in[i].nlod));
  for (int i = 0; i < nout; i++) fetch_names[i] = c->out[i].var;
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = place;
  rill_executor *e;
  rill_scope *scope;
  OK(rill_executor_create(&o, &e));
  OK(rill_scope_create(NULL, &scope));
  OK(rill_executor_run(e, p, scope, feed_names, feeds, (size_t)nin, fetch_names, (size_t)nout, outs));
  for (int i = 0; i < nin; i++) rill_tensor_destroy(feeds[i]);
  rill_scope_destroy(scope);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

static void compare(const op_case *c) {
  NEED_CUDA_DEVICE();
  rill_tensor *cpu[MAX_ARGS] = {NULL}, *gpu[MAX_ARGS] = {NULL};
  run_case(c, (rill_place){RILL_DEVICE_CPU, 0}, 7, cpu);
  run_case(c, (rill_place){RILL_DEVICE_CUDA, 0}, 7, gpu);
  for (int i = 0; i < MAX_ARGS && c->out[i].slot; i++) {
    cr_assert_eq(rill_tensor_numel(gpu[i]), rill_tensor_numel(cpu[i]), "%s: output %s", c->op, c->out[i].var);
    cr_assert_eq(rill_tensor_dtype(gpu[i]), rill_tensor_dtype(cpu[i]));
    if (rill_tensor_dtype(cpu[i]) == RILL_DTYPE_INT64) /* exactly: doubles would round past 2^53 */
      cr_assert(memcmp(rill_tensor_data(gpu[i]), rill_tensor_data(cpu[i]), 8 * (size_t)rill_tensor_numel(cpu[i])) == 0,
                "%s: output %s differs", c->op, c->out[i].var);
    for (int64_t j = 0; j < rill_tensor_numel(cpu[i]); j++) {
      double a = element(cpu[i], j), g = element(gpu[i], j);
      cr_assert(isnan(a) ? isnan(g) : fabs(g - a) <= c->tol * (1.0 + fabs(a)),
                "%s: output %s[%lld]: cpu %.9g, cuda %.9g (tolerance %g)",
                c->op, c->out[i].var, (long long)j, a, g, c->tol);
    }
    rill_tensor_destroy(cpu[i]);
    rill_tensor_destroy(gpu[i]);
  }
}

#define IN(slot, var, lo, hi, ...) \
  {slot, var, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), {__VA_ARGS__}, lo, hi, 0, 0, false, NULL, 0}
#define OUT(slot, var, ...) \
  {slot, var, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), {__VA_ARGS__}, 0, 0, 0, 0, false, NULL, 0}

static void axis1(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "axis", 1)); }
static void axis_last(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "axis", -1)); }

#define BINARY(name, op, attrs, x, y, out)                                                    \
  Test(cuda_kernels, name) {                                                                  \
    op_case c = {op, {IN("X", "x", -2, 2, x), IN("Y", "y", 0.5f, 2, y)}, {OUT("Out", "out", out)}, \
                 attrs, 1e-6};                                                                \
    compare(&c);                                                                              \
  }

#define P(...) __VA_ARGS__
BINARY(add_same_shape, "elementwise_add", NULL, P(3, 5), P(3, 5), P(3, 5))
BINARY(add_broadcast_middle, "elementwise_add", axis1, P(2, 3, 4, 5), P(3, 4), P(2, 3, 4, 5))
BINARY(sub_broadcast_ones, "elementwise_sub", NULL, P(7, 9), P(7, 1), P(7, 9))
BINARY(mul_broadcast_last, "elementwise_mul", axis_last, P(2, 3, 37), P(37), P(2, 3, 37))
BINARY(div_odd_shape, "elementwise_div", NULL, P(13, 1, 7), P(13, 11, 7), P(13, 11, 7))
BINARY(max_row, "elementwise_max", NULL, P(4, 33), P(33), P(4, 33))
BINARY(min_row, "elementwise_min", NULL, P(4, 33), P(33), P(4, 33))

#define UNARY(name, op, attrs, lo, hi, tol)                                                        \
  Test(cuda_kernels, name) {                                                                       \
    op_case c = {op, {IN("X", "x", lo, hi, 5, 3, 67)}, {OUT("Out", "out", 5, 3, 67)}, attrs, tol}; \
    compare(&c);                                                                                   \
  }

static void leaky(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "alpha", 0.1f)); }
static void scale_after(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "scale", -1.5f));
  OK(rill_op_builder_attr_float(b, "bias", 0.25f));
}
static void scale_before(rill_op_builder *b) {
  scale_after(b);
  OK(rill_op_builder_attr_bool(b, "bias_after_scale", false));
}

UNARY(relu, "relu", NULL, -3, 3, 0)
UNARY(sigmoid, "sigmoid", NULL, -6, 6, 1e-6)
UNARY(tanh, "tanh", NULL, -4, 4, 1e-6)
UNARY(exp, "exp", NULL, -4, 4, 1e-6)
UNARY(sqrt, "sqrt", NULL, 0.01f, 9, 1e-6)
UNARY(square, "square", NULL, -3, 3, 1e-6)
UNARY(leaky_relu, "leaky_relu", leaky, -3, 3, 1e-7)
UNARY(scale_bias_after, "scale", scale_after, -3, 3, 1e-6)
UNARY(scale_bias_before, "scale", scale_before, -3, 3, 1e-6)
/* The activations of MobileNetV3-style and transformer models, their defaults (and a
 * beta, gelu's tanh form), over ranges that reach the clamps. */
static void beta_half(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "beta", 0.5f)); }
static void approximate(rill_op_builder *b) { OK(rill_op_builder_attr_bool(b, "approximate", true)); }
UNARY(hard_sigmoid, "hard_sigmoid", NULL, -4, 4, 1e-6)
UNARY(hard_swish, "hard_swish", NULL, -5, 5, 1e-6)
UNARY(swish_beta, "swish", beta_half, -6, 6, 1e-5)
UNARY(silu, "silu", NULL, -6, 6, 1e-5)
UNARY(gelu, "gelu", NULL, -4, 4, 1e-5)
UNARY(gelu_tanh, "gelu", approximate, -4, 4, 1e-5)
/* The math family: log on positive X, reciprocal away from 0, softplus and logsigmoid
 * over ranges whose exp would overflow unshifted, elu with alpha 0.5. */
static void elu_alpha(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "alpha", 0.5f)); }
UNARY(log, "log", NULL, 0.01f, 9, 1e-6)
UNARY(abs, "abs", NULL, -3, 3, 0)
UNARY(reciprocal, "reciprocal", NULL, 0.1f, 5, 1e-6)
UNARY(softplus, "softplus", NULL, -100, 100, 1e-5)
UNARY(logsigmoid, "logsigmoid", NULL, -100, 100, 1e-5)
UNARY(elu, "elu", elu_alpha, -4, 4, 1e-5)
/* The rest of the math family: each over a range that reaches its cuts (the
 * attributes set away from their defaults where they move one), the inverse
 * trigonometric ones inside (-1, 1), rsqrt and pow on positive X. */
static void lambda_08(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "lambda", 0.8f)); }
static void threshold_1(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "threshold", 1.0f)); }
static void threshold_03(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "threshold", 0.3f)); }
static void threshold_2(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "threshold", 2.0f)); }
static void mish_threshold(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "threshold", 5.0f)); }
static void brelu_bounds(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "t_min", -1.0f));
  OK(rill_op_builder_attr_float(b, "t_max", 2.0f));
}
static void stanh_scales(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "scale_a", 0.5f));
  OK(rill_op_builder_attr_float(b, "scale_b", 1.5f));
}
static void pow_factor(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "factor", 2.5f)); }
UNARY(ceil, "ceil", NULL, -5, 5, 0)
UNARY(floor, "floor", NULL, -5, 5, 0)
UNARY(round, "round", NULL, -5, 5, 0)
UNARY(sign, "sign", NULL, -3, 3, 0)
UNARY(cos, "cos", NULL, -6, 6, 1e-6)
UNARY(sin, "sin", NULL, -6, 6, 1e-6)
UNARY(acos, "acos", NULL, -0.99f, 0.99f, 1e-6)
UNARY(asin, "asin", NULL, -0.99f, 0.99f, 1e-6)
UNARY(atan, "atan", NULL, -5, 5, 1e-6)
UNARY(rsqrt, "rsqrt", NULL, 0.05f, 9, 1e-6)
UNARY(softsign, "softsign", NULL, -5, 5, 1e-6)
UNARY(tanh_shrink, "tanh_shrink", NULL, -4, 4, 1e-6)
UNARY(softshrink, "softshrink", lambda_08, -3, 3, 1e-6)
UNARY(hard_shrink, "hard_shrink", threshold_1, -3, 3, 0)
UNARY(thresholded_relu, "thresholded_relu", threshold_03, -3, 3, 0)
UNARY(selu, "selu", NULL, -3, 3, 1e-6)
UNARY(brelu, "brelu", brelu_bounds, -3, 3, 0)
UNARY(soft_relu, "soft_relu", threshold_2, -4, 4, 1e-6)
UNARY(stanh, "stanh", stanh_scales, -5, 5, 1e-6)
UNARY(erf, "erf", NULL, -3, 3, 1e-6)
UNARY(mish, "mish", mish_threshold, -9, 9, 1e-6)
UNARY(mish_default_threshold, "mish", NULL, -30, 30, 1e-6)
UNARY(log1p, "log1p", NULL, -0.9f, 5, 1e-6)
UNARY(pow, "pow", pow_factor, 0.1f, 4, 1e-6)
/* round takes halves to even, as the CPU's nearbyint: 2.5 -> 2, -3.5 -> -4. */
Test(cuda_kernels, round_halves_to_even) {
  const float halves[] = {2.5f, -3.5f};
  for (int i = 0; i < 2; i++) {
    op_case c = {"round", {IN("X", "x", halves[i], halves[i], 3, 7)}, {OUT("Out", "out", 3, 7)}, NULL, 0};
    compare(&c);
  }
}
/* FactorTensor (read on the host) overrides attribute factor. */
Test(cuda_kernels, pow_factor_tensor) {
  op_case c = {"pow", {IN("X", "x", 0.1f, 4, 5, 3, 67), IN("FactorTensor", "f", -1.5f, -1.5f, 1)},
               {OUT("Out", "out", 5, 3, 67)}, pow_factor, 1e-6};
  compare(&c);
}

Test(cuda_kernels, mean) {
  op_case c = {"mean", {IN("X", "x", -1, 3, 37, 53)}, {OUT("Out", "out", 1)}, NULL, 1e-5};
  compare(&c);
}

Test(cuda_kernels, softmax_last_axis) {
  op_case c = {"softmax", {IN("X", "x", -8, 8, 7, 1001)}, {OUT("Out", "out", 7, 1001)}, NULL, 1e-5};
  compare(&c);
}

Test(cuda_kernels, sum_of_three) {
  op_case c = {"sum",
               {IN("X", "a", -1, 1, 5, 7), IN("X", "b", -1, 1, 5, 7), IN("X", "c", -1, 1, 5, 7)},
               {OUT("Out", "out", 5, 7)},
               NULL,
               1e-6};
  compare(&c);
}

static void mul_cols(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "x_num_col_dims", 1)); }

Test(cuda_kernels, mul_flattens_x) {
  op_case c = {"mul", {IN("X", "x", -1, 1, 33, 4, 5), IN("Y", "y", -1, 1, 20, 65)}, {OUT("Out", "out", 33, 65)},
               mul_cols, 1e-5};
  compare(&c);
}

static void mm_plain(rill_op_builder *b) { (void)b; }
static void mm_ty_alpha(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "transpose_Y", true));
  OK(rill_op_builder_attr_float(b, "alpha", 0.5f));
}
static void mm_tx(rill_op_builder *b) { OK(rill_op_builder_attr_bool(b, "transpose_X", true)); }

Test(cuda_kernels, matmul_batch_times_matrix) {
  op_case c = {"matmul", {IN("X", "x", -1, 1, 3, 9, 5), IN("Y", "y", -1, 1, 5, 7)}, {OUT("Out", "out", 3, 9, 7)},
               mm_plain, 1e-5};
  compare(&c);
}

Test(cuda_kernels, matmul_transpose_y_alpha) {
  op_case c = {"matmul", {IN("X", "x", -1, 1, 2, 4, 6), IN("Y", "y", -1, 1, 2, 3, 6)},
               {OUT("Out", "out", 2, 4, 3)}, mm_ty_alpha, 1e-5};
  compare(&c);
}

Test(cuda_kernels, matmul_transpose_x) {
  op_case c = {"matmul", {IN("X", "x", -1, 1, 31, 17), IN("Y", "y", -1, 1, 31, 129)}, {OUT("Out", "out", 17, 129)},
               mm_tx, 1e-5};
  compare(&c);
}

static void v2_ty(rill_op_builder *b) { OK(rill_op_builder_attr_bool(b, "trans_y", true)); }
static void v2_tx_ty(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "trans_x", true));
  v2_ty(b);
}

/* matmul_v2's broadcasting: batch dims that broadcast both ways (one GEMM a batch), a
 * shared matrix against a batch (one strided call), a 1-D X, and the transposes. */
Test(cuda_kernels, matmul_v2_batch_dims_broadcast_both_ways) {
  op_case c = {"matmul_v2", {IN("X", "x", -1, 1, 2, 1, 3, 4), IN("Y", "y", -1, 1, 5, 4, 6)},
               {OUT("Out", "out", 2, 5, 3, 6)}, NULL, 1e-5};
  compare(&c);
}

Test(cuda_kernels, matmul_v2_shared_x_transposed_y) {
  op_case c = {"matmul_v2", {IN("X", "x", -1, 1, 7, 9), IN("Y", "y", -1, 1, 3, 11, 9)},
               {OUT("Out", "out", 3, 7, 11)}, v2_ty, 1e-5};
  compare(&c);
}

Test(cuda_kernels, matmul_v2_vector_times_batch) {
  op_case c = {"matmul_v2", {IN("X", "x", -1, 1, 8), IN("Y", "y", -1, 1, 2, 8, 5)},
               {OUT("Out", "out", 2, 5)}, NULL, 1e-5};
  compare(&c);
}

Test(cuda_kernels, matmul_v2_both_transposed) {
  op_case c = {"matmul_v2", {IN("X", "x", -1, 1, 4, 13, 6), IN("Y", "y", -1, 1, 4, 10, 13)},
               {OUT("Out", "out", 4, 6, 10)}, v2_tx_ty, 1e-5};
  compare(&c);
}

/* ---- matmul_grad, matmul_v2_grad: each path of kernels/cuda/matmul.c ---- */

/* X@GRAD and Y@GRAD of `type` on X xd, Y yd and Out@GRAD od. */
#define MM_GRAD_CASE(name, type, attrs, xd, yd, od)                                                                  \
  Test(cuda_kernels, name) {                                                                                        \
    op_case c = {type,                                                                                              \
                 {IN("X", "x", -1, 1, RILL_UNPAREN xd), IN("Y", "y", -1, 1, RILL_UNPAREN yd),                        \
                  IN("Out@GRAD", "dout", -1, 1, RILL_UNPAREN od)},                                                   \
                 {OUT("X@GRAD", "dx", RILL_UNPAREN xd), OUT("Y@GRAD", "dy", RILL_UNPAREN yd)},                       \
                 attrs,                                                                                             \
                 1e-4};                                                                                             \
    compare(&c);                                                                                                    \
  }
#define RILL_UNPAREN(...) __VA_ARGS__

/* Y shared by the batches of X: X and Out@GRAD stacked, one GEMM each */
MM_GRAD_CASE(matmul_grad_batch_times_matrix, "matmul_grad", mm_plain, (3, 9, 5), (5, 7), (3, 9, 7))
MM_GRAD_CASE(matmul_v2_grad_batch_times_transposed_matrix, "matmul_v2_grad", v2_ty, (3, 9, 5), (7, 5), (3, 9, 7))
/* every batch its own matrices: strided batched GEMMs, transposes and alpha */
MM_GRAD_CASE(matmul_grad_transpose_y_alpha, "matmul_grad", mm_ty_alpha, (2, 4, 6), (2, 3, 6), (2, 4, 3))
MM_GRAD_CASE(matmul_grad_transpose_x, "matmul_grad", mm_tx, (31, 17), (31, 129), (17, 129))
MM_GRAD_CASE(matmul_v2_grad_both_transposed, "matmul_v2_grad", v2_tx_ty, (4, 13, 6), (4, 10, 13), (4, 6, 10))
/* broadcasts: one GEMM a batch adding into the operand's matrix */
MM_GRAD_CASE(matmul_v2_grad_batch_dims_broadcast_both_ways, "matmul_v2_grad", NULL, (2, 1, 3, 4), (5, 4, 6),
             (2, 5, 3, 6))
MM_GRAD_CASE(matmul_v2_grad_shared_x_transposed_y, "matmul_v2_grad", v2_ty, (7, 9), (3, 11, 9), (3, 7, 11))
MM_GRAD_CASE(matmul_v2_grad_vector_times_batch, "matmul_v2_grad", NULL, (8), (2, 8, 5), (2, 5))

static void fc_relu(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "in_num_col_dims", 1));
  OK(rill_op_builder_attr_string(b, "activation_type", "relu"));
}

Test(cuda_kernels, fc_bias_relu) {
  op_case c = {"fc",
               {IN("Input", "x", -1, 1, 5, 12), IN("W", "w", -1, 1, 12, 9), IN("Bias", "bias", -1, 1, 9)},
               {OUT("Out", "out", 5, 9)},
               fc_relu,
               1e-5};
  compare(&c);
}

Test(cuda_kernels, sgd) {
  op_case c = {"sgd",
               {IN("Param", "p", -1, 1, 10, 3), IN("LearningRate", "lr", 0.1f, 0.1f, 1), IN("Grad", "g", -1, 1, 10, 3)},
               {OUT("ParamOut", "p_out", 10, 3)},
               NULL,
               1e-6};
  compare(&c);
}

static void nesterov_l2(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "mu", 0.9f));
  OK(rill_op_builder_attr_bool(b, "use_nesterov", true));
  OK(rill_op_builder_attr_string(b, "regularization_method", "l2_decay"));
  OK(rill_op_builder_attr_float(b, "regularization_coeff", 0.01f));
}

Test(cuda_kernels, momentum_nesterov_l2) {
  op_case c = {"momentum",
               {IN("Param", "p", -1, 1, 129), IN("Grad", "g", -1, 1, 129), IN("Velocity", "v", -1, 1, 129),
                IN("LearningRate", "lr", 0.05f, 0.05f, 1)},
               {OUT("ParamOut", "p_out", 129), OUT("VelocityOut", "v_out", 129)},
               nesterov_l2,
               1e-6};
  compare(&c);
}

Test(cuda_kernels, adam) {
  op_case c = {"adam",
               {IN("Param", "p", -1, 1, 7, 19), IN("Grad", "g", -1, 1, 7, 19), IN("Moment1", "m1", -0.1f, 0.1f, 7, 19),
                IN("Moment2", "m2", 0, 0.01f, 7, 19), IN("LearningRate", "lr", 0.01f, 0.01f, 1),
                IN("Beta1Pow", "b1p", 0.81f, 0.81f, 1), IN("Beta2Pow", "b2p", 0.998f, 0.998f, 1)},
               {OUT("ParamOut", "p_out", 7, 19), OUT("Moment1Out", "m1_out", 7, 19), OUT("Moment2Out", "m2_out", 7, 19),
                OUT("Beta1PowOut", "b1p_out", 1), OUT("Beta2PowOut", "b2p_out", 1)},
               NULL,
               1e-5};
  compare(&c);
}

/* Ops the device kernels decline (rill_kernel_def.accepts) run on the host and give the
 * CPU's numbers, where they used to fail on the device: adam with a Beta1Tensor,
 * momentum with multi_precision; fc's identity, which the device now takes. */
static void multi_precision(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "mu", 0.9f));
  OK(rill_op_builder_attr_bool(b, "multi_precision", true));
}
static void fc_identity(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "in_num_col_dims", 1));
  OK(rill_op_builder_attr_string(b, "activation_type", "identity"));
}
Test(cuda_kernels, declined_ops_run_on_the_host) {
  op_case a = {"adam",
               {IN("Param", "p", -1, 1, 7, 19), IN("Grad", "g", -1, 1, 7, 19), IN("Moment1", "m1", -0.1f, 0.1f, 7, 19),
                IN("Moment2", "m2", 0, 0.01f, 7, 19), IN("LearningRate", "lr", 0.01f, 0.01f, 1),
                IN("Beta1Pow", "b1p", 0.81f, 0.81f, 1), IN("Beta2Pow", "b2p", 0.998f, 0.998f, 1),
                IN("Beta1Tensor", "b1", 0.8f, 0.8f, 1)},
               {OUT("ParamOut", "p_out", 7, 19), OUT("Moment1Out", "m1_out", 7, 19), OUT("Moment2Out", "m2_out", 7, 19),
                OUT("Beta1PowOut", "b1p_out", 1), OUT("Beta2PowOut", "b2p_out", 1)},
               NULL, 0};
  compare(&a);
  op_case m = {"momentum",
               {IN("Param", "p", -1, 1, 129), IN("Grad", "g", -1, 1, 129), IN("Velocity", "v", -1, 1, 129),
                IN("LearningRate", "lr", 0.05f, 0.05f, 1)},
               {OUT("ParamOut", "p_out", 129), OUT("VelocityOut", "v_out", 129)}, multi_precision, 0};
  compare(&m);
  op_case f = {"fc", {IN("Input", "x", -1, 1, 5, 12), IN("W", "w", -1, 1, 12, 9), IN("Bias", "bias", -1, 1, 9)},
               {OUT("Out", "out", 5, 9)}, fc_identity, 1e-5};
  compare(&f);
}

static void eps_1e_6(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "epsilon", 1e-6f)); }

Test(cuda_kernels, adagrad) {
  op_case c = {"adagrad",
               {IN("Param", "p", -1, 1, 9, 23), IN("Grad", "g", -1, 1, 9, 23), IN("Moment", "m", 0, 0.5f, 9, 23),
                IN("LearningRate", "lr", 0.05f, 0.05f, 1)},
               {OUT("ParamOut", "p_out", 9, 23), OUT("MomentOut", "m_out", 9, 23)}, eps_1e_6, 1e-5};
  compare(&c);
}

static void conv_s2_p1_d2_g2(rill_op_builder *b) {
  static const int32_t s2[] = {2, 1}, p1[] = {1, 2}, d2[] = {2, 1};
  OK(rill_op_builder_attr_ints(b, "strides", s2, 2));
  OK(rill_op_builder_attr_ints(b, "paddings", p1, 2));
  OK(rill_op_builder_attr_ints(b, "dilations", d2, 2));
  OK(rill_op_builder_attr_int(b, "groups", 2));
}

/* Input [2, 4, 11, 9], Filter [6, 2, 3, 3]: out h = (11 + 2 - 5) / 2 + 1 = 5, w = (9 + 4 - 3) + 1 = 11. */
Test(cuda_kernels, conv2d_strides_paddings_dilations_groups) {
  op_case c = {"conv2d", {IN("Input", "x", -1, 1, 2, 4, 11, 9), IN("Filter", "w", -1, 1, 6, 2, 3, 3)},
               {OUT("Output", "y", 2, 6, 5, 11)}, conv_s2_p1_d2_g2, 1e-4};
  compare(&c);
}

/* With RILL_CUDNN_EXHAUSTIVE=1 every algorithm is timed once per shape (cudnnFind*) and
 * the choice kept: the forward and both gradients still give the CPU's numbers, on the
 * first call and from the cache on the second. */
Test(cuda_kernels, conv2d_exhaustive_search_keeps_the_numbers) {
  setenv("RILL_CUDNN_EXHAUSTIVE", "1", 1);
  op_case c = {"conv2d", {IN("Input", "x", -1, 1, 2, 4, 11, 9), IN("Filter", "w", -1, 1, 6, 2, 3, 3)},
               {OUT("Output", "y", 2, 6, 5, 11)}, conv_s2_p1_d2_g2, 1e-4};
  op_case g = {"conv2d_grad",
               {IN("Input", "x", -1, 1, 2, 4, 11, 9), IN("Filter", "w", -1, 1, 6, 2, 3, 3),
                IN("Output@GRAD", "dy", -1, 1, 2, 6, 5, 11)},
               {OUT("Input@GRAD", "dx", 2, 4, 11, 9), OUT("Filter@GRAD", "dw", 6, 2, 3, 3)},
               conv_s2_p1_d2_g2, 1e-4};
  for (int twice = 0; twice < 2; twice++) {
    compare(&c);
    compare(&g);
  }
}

static void fusion_relu6(rill_op_builder *b) {
  conv_s2_p1_d2_g2(b);
  OK(rill_op_builder_attr_string(b, "activation", "relu6"));
}
static void fusion_sigmoid(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){1, 1}, 2));
  OK(rill_op_builder_attr_string(b, "activation", "sigmoid"));
}

/* The inference passes' fused conv: bias, a residual and relu6 on a grouped, strided,
 * dilated conv; bias and sigmoid on a plain one. */
Test(cuda_kernels, conv2d_fusion_bias_residual_relu6) {
  op_case c = {"conv2d_fusion",
               {IN("Input", "x", -1, 1, 2, 4, 11, 9), IN("Filter", "w", -1, 1, 6, 2, 3, 3), IN("Bias", "b", -3, 3, 6),
                IN("ResidualData", "r", -3, 3, 2, 6, 5, 11)},
               {OUT("Output", "y", 2, 6, 5, 11)}, fusion_relu6, 1e-4};
  compare(&c);
}

/* relu: one cuDNN call (convolution, bias, residual and activation fused), with and
 * without the residual. */
static void fusion_relu(rill_op_builder *b) {
  conv_s2_p1_d2_g2(b);
  OK(rill_op_builder_attr_string(b, "activation", "relu"));
}
Test(cuda_kernels, conv2d_fusion_relu_fused_by_cudnn) {
  op_case c = {"conv2d_fusion",
               {IN("Input", "x", -1, 1, 2, 4, 11, 9), IN("Filter", "w", -1, 1, 6, 2, 3, 3), IN("Bias", "b", -1, 1, 6),
                IN("ResidualData", "r", -1, 1, 2, 6, 5, 11)},
               {OUT("Output", "y", 2, 6, 5, 11)}, fusion_relu, 1e-4};
  compare(&c);
  op_case n = {"conv2d_fusion",
               {IN("Input", "x", -1, 1, 2, 4, 11, 9), IN("Filter", "w", -1, 1, 6, 2, 3, 3), IN("Bias", "b", -1, 1, 6)},
               {OUT("Output", "y", 2, 6, 5, 11)}, fusion_relu, 1e-4};
  compare(&n);
}

Test(cuda_kernels, conv2d_fusion_bias_sigmoid) {
  op_case c = {"conv2d_fusion",
               {IN("Input", "x", -1, 1, 3, 5, 8, 8), IN("Filter", "w", -1, 1, 7, 5, 3, 3), IN("Bias", "b", -1, 1, 7)},
               {OUT("Output", "y", 3, 7, 8, 8)}, fusion_sigmoid, 1e-5};
  compare(&c);
}

static void depthwise(rill_op_builder *b) {
  static const int32_t p1[] = {1, 1};
  OK(rill_op_builder_attr_ints(b, "paddings", p1, 2));
  OK(rill_op_builder_attr_int(b, "groups", 5));
}

Test(cuda_kernels, depthwise_conv2d) {
  op_case c = {"depthwise_conv2d", {IN("Input", "x", -1, 1, 3, 5, 7, 7), IN("Filter", "w", -1, 1, 5, 1, 3, 3)},
               {OUT("Output", "y", 3, 5, 7, 7)}, depthwise, 1e-4};
  compare(&c);
}

static void to_int64(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "in_dtype", RILL_DTYPE_FP32));
  OK(rill_op_builder_attr_int(b, "out_dtype", RILL_DTYPE_INT64));
}

Test(cuda_kernels, cast_truncates_to_int64) {
  op_case c = {"cast", {IN("X", "x", -50, 50, 9, 11)}, {OUT("Out", "out", 9, 11)}, to_int64, 0};
  c.out[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

/* increment: one element of each dtype it takes, stepped by 1 and by -2.5 (an integer
 * counter truncates the step as the CPU does). */
static void step_one(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "step", 1.0f)); }
static void step_back(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "step", -2.5f)); }

Test(cuda_kernels, increment_every_dtype) {
  const rill_dtype dtypes[] = {RILL_DTYPE_FP32, RILL_DTYPE_FP64, RILL_DTYPE_INT32, RILL_DTYPE_INT64};
  for (size_t i = 0; i < 4; i++)
    for (int back = 0; back < 2; back++) {
      op_case c = {"increment", {IN("X", "x", -20, 20, 1)}, {OUT("Out", "out", 1)}, back ? step_back : step_one, 0};
      c.in[0].dtype = c.out[0].dtype = dtypes[i];
      compare(&c);
    }
}

/* layer_norm over the last two dims (begin_norm_axis 1) with Scale and Bias, and over
 * a long last dim (2049: blocks loop) with neither. */
static void norm_axis_2(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "begin_norm_axis", 2)); }

Test(cuda_kernels, layer_norm_scale_bias) {
  op_case c = {"layer_norm",
               {IN("X", "x", -2, 3, 6, 5, 33), IN("Scale", "scale", 0.5f, 2, 165), IN("Bias", "bias", -1, 1, 165)},
               {OUT("Y", "y", 6, 5, 33), OUT("Mean", "mean", 6), OUT("Variance", "var", 6)},
               NULL,
               1e-5};
  compare(&c);
}

Test(cuda_kernels, layer_norm_long_rows) {
  op_case c = {"layer_norm", {IN("X", "x", -1, 1, 3, 7, 2049)},
               {OUT("Y", "y", 3, 7, 2049), OUT("Mean", "mean", 21), OUT("Variance", "var", 21)}, norm_axis_2, 1e-5};
  compare(&c);
}

/* group_norm, 4 groups of 3 channels, NCHW and NHWC, with Scale and Bias. */
static void groups4(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "groups", 4)); }
static void groups4_nhwc(rill_op_builder *b) {
  groups4(b);
  OK(rill_op_builder_attr_string(b, "data_layout", "NHWC"));
}

/* X [2, 12, 7, 9] (NCHW) or [2, 7, 9, 12] (NHWC). */
static void group_norm_case(bool nhwc) {
  op_case c = {"group_norm",
               {IN("X", "x", -2, 3, 2, 12, 7, 9), IN("Scale", "scale", 0.5f, 2, 12), IN("Bias", "bias", -1, 1, 12)},
               {OUT("Y", "y", 2, 12, 7, 9), OUT("Mean", "mean", 2, 4), OUT("Variance", "var", 2, 4)},
               nhwc ? groups4_nhwc : groups4,
               1e-5};
  if (nhwc) {
    const int64_t d[] = {2, 7, 9, 12};
    memcpy(c.in[0].dims, d, sizeof d);
    memcpy(c.out[0].dims, d, sizeof d);
  }
  compare(&c);
}

Test(cuda_kernels, group_norm_nchw) { group_norm_case(false); }
Test(cuda_kernels, group_norm_nhwc) { group_norm_case(true); }

/* top_k: small and larger k, and ties, which come out in the CPU's (Paddle's
 * partial_sort) order; accuracy of top-5 indices against labels. */
static void k5(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "k", 5)); }
static void k20(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "k", 20)); }
static void k7(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "k", 7)); }

static void top_k_case(int64_t rows, int64_t n, int64_t k, float lo, float hi, void (*attrs)(rill_op_builder *)) {
  op_case c = {"top_k", {IN("X", "x", lo, hi, rows, n)}, {OUT("Out", "out", rows, k), OUT("Indices", "idx", rows, k)},
               attrs, 0};
  c.out[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, top_k_5) { top_k_case(9, 301, 5, -1, 1, k5); }
Test(cuda_kernels, top_k_20) { top_k_case(7, 64, 20, -1, 1, k20); }
Test(cuda_kernels, top_k_ties_in_the_cpus_order) { top_k_case(3, 40, 7, 1, 1, k7); }

Test(cuda_kernels, accuracy_of_top_5) {
  op_case c = {"accuracy",
               {IN("Out", "scores", 0, 1, 64, 5), IN("Indices", "idx", 0, 9, 64, 5), IN("Label", "label", 0, 9, 64, 1)},
               {OUT("Accuracy", "acc", 1), OUT("Correct", "correct", 1), OUT("Total", "total", 1)},
               NULL,
               0};
  c.in[1].dtype = c.in[2].dtype = RILL_DTYPE_INT64;
  c.out[1].dtype = c.out[2].dtype = RILL_DTYPE_INT32;
  compare(&c);
}

/* ---- gradients ---- */

#define ACT_GRAD(name, op, lo, hi, tol)                                                                   \
  Test(cuda_kernels, name) {                                                                              \
    op_case c = {op, {IN("Out", "out", lo, hi, 3, 5, 67), IN("Out@GRAD", "dout", -2, 2, 3, 5, 67)},        \
                 {OUT("X@GRAD", "dx", 3, 5, 67)}, NULL, tol};                                             \
    compare(&c);                                                                                          \
  }

ACT_GRAD(relu_grad, "relu_grad", -1, 1, 0)
ACT_GRAD(sigmoid_grad, "sigmoid_grad", 0.01f, 0.99f, 1e-6)
ACT_GRAD(tanh_grad, "tanh_grad", -0.99f, 0.99f, 1e-6)
/* relu6's threshold from the op (6 by default): Out on both sides of 0 and 6. */
ACT_GRAD(relu6_grad, "relu6_grad", -3, 8, 0)
ACT_GRAD(exp_grad, "exp_grad", 0.01f, 20, 1e-6)
ACT_GRAD(sqrt_grad, "sqrt_grad", 0.05f, 4, 1e-6)

/* The gradients that read X: leaky_relu's (alpha 0.1, X on both sides of 0) and square's. */
#define X_ACT_GRAD(name, op, attrs, tol)                                                                  \
  Test(cuda_kernels, name) {                                                                              \
    op_case c = {op, {IN("X", "x", -3, 3, 3, 5, 67), IN("Out@GRAD", "dout", -2, 2, 3, 5, 67)},            \
                 {OUT("X@GRAD", "dx", 3, 5, 67)}, attrs, tol};                                            \
    compare(&c);                                                                                          \
  }

X_ACT_GRAD(leaky_relu_grad, "leaky_relu_grad", leaky, 1e-7)
X_ACT_GRAD(square_grad, "square_grad", NULL, 0)
ACT_GRAD(hard_sigmoid_grad, "hard_sigmoid_grad", -0.5f, 1.5f, 1e-6)
X_ACT_GRAD(hard_swish_grad, "hard_swish_grad", NULL, 1e-6)
X_ACT_GRAD(swish_grad, "swish_grad", beta_half, 1e-5)
X_ACT_GRAD(silu_grad, "silu_grad", NULL, 1e-5)
X_ACT_GRAD(gelu_grad, "gelu_grad", NULL, 1e-5)
X_ACT_GRAD(gelu_tanh_grad, "gelu_grad", approximate, 1e-5)
X_ACT_GRAD(abs_grad, "abs_grad", NULL, 0)
X_ACT_GRAD(softplus_grad, "softplus_grad", NULL, 1e-5)
X_ACT_GRAD(logsigmoid_grad, "logsigmoid_grad", NULL, 1e-5)
X_ACT_GRAD(elu_grad, "elu_grad", elu_alpha, 1e-5)
/* The rest of the math family's gradients, from X or (rsqrt, selu, soft_relu) Out over
 * the forward's range, or from Out@GRAD alone (ceil, floor, round: zero). */
#define RANGE_GRAD(name, op, attrs, v, lo, hi, tol)                                                       \
  Test(cuda_kernels, name) {                                                                              \
    op_case c = {op, {IN(v, "v", lo, hi, 3, 5, 67), IN("Out@GRAD", "dout", -2, 2, 3, 5, 67)},            \
                 {OUT("X@GRAD", "dx", 3, 5, 67)}, attrs, tol};                                            \
    compare(&c);                                                                                          \
  }
RANGE_GRAD(cos_grad, "cos_grad", NULL, "X", -6, 6, 1e-6)
RANGE_GRAD(sin_grad, "sin_grad", NULL, "X", -6, 6, 1e-6)
RANGE_GRAD(acos_grad, "acos_grad", NULL, "X", -0.99f, 0.99f, 1e-5)
RANGE_GRAD(asin_grad, "asin_grad", NULL, "X", -0.99f, 0.99f, 1e-5)
RANGE_GRAD(atan_grad, "atan_grad", NULL, "X", -5, 5, 1e-6)
RANGE_GRAD(rsqrt_grad, "rsqrt_grad", NULL, "Out", 0.3f, 4, 1e-6)
RANGE_GRAD(softsign_grad, "softsign_grad", NULL, "X", -5, 5, 1e-6)
RANGE_GRAD(tanh_shrink_grad, "tanh_shrink_grad", NULL, "X", -4, 4, 1e-6)
RANGE_GRAD(softshrink_grad, "softshrink_grad", lambda_08, "X", -3, 3, 0)
RANGE_GRAD(hard_shrink_grad, "hard_shrink_grad", threshold_1, "X", -3, 3, 0)
RANGE_GRAD(thresholded_relu_grad, "thresholded_relu_grad", threshold_03, "X", -3, 3, 0)
RANGE_GRAD(selu_grad, "selu_grad", NULL, "Out", -1.7f, 3, 1e-6)
RANGE_GRAD(brelu_grad, "brelu_grad", brelu_bounds, "X", -3, 3, 0)
RANGE_GRAD(soft_relu_grad, "soft_relu_grad", threshold_2, "Out", -3, 3, 1e-6)
RANGE_GRAD(stanh_grad, "stanh_grad", stanh_scales, "X", -5, 5, 1e-6)
RANGE_GRAD(erf_grad, "erf_grad", NULL, "X", -3, 3, 1e-6)
RANGE_GRAD(mish_grad, "mish_grad", mish_threshold, "X", -9, 9, 1e-5)
RANGE_GRAD(mish_grad_default_threshold, "mish_grad", NULL, "X", -30, 30, 1e-5)
RANGE_GRAD(log1p_grad, "log1p_grad", NULL, "X", -0.9f, 5, 1e-6)
RANGE_GRAD(pow_grad, "pow_grad", pow_factor, "X", 0.1f, 4, 1e-6)
Test(cuda_kernels, pow_grad_factor_tensor) {
  op_case c = {"pow_grad",
               {IN("X", "x", 0.1f, 4, 3, 5, 67), IN("Out@GRAD", "dout", -2, 2, 3, 5, 67),
                IN("FactorTensor", "f", 0.5f, 0.5f, 1)},
               {OUT("X@GRAD", "dx", 3, 5, 67)}, pow_factor, 1e-6};
  compare(&c);
}
Test(cuda_kernels, ceil_floor_round_grads_are_zero) {
  const char *ops[] = {"ceil_grad", "floor_grad", "round_grad"};
  for (int i = 0; i < 3; i++) {
    op_case c = {ops[i], {IN("Out@GRAD", "dout", -2, 2, 3, 5, 67)}, {OUT("X@GRAD", "dx", 3, 5, 67)}, NULL, 0};
    c.in[0].nan_every = 7;
    compare(&c);
  }
}
ACT_GRAD(reciprocal_grad, "reciprocal_grad", 0.1f, 5, 1e-6)
/* log's reads X, which must be positive */
Test(cuda_kernels, log_grad) {
  op_case c = {"log_grad", {IN("X", "x", 0.1f, 5, 3, 5, 67), IN("Out@GRAD", "dout", -2, 2, 3, 5, 67)},
               {OUT("X@GRAD", "dx", 3, 5, 67)}, NULL, 1e-6};
  compare(&c);
}

Test(cuda_kernels, mul_grad_flattens_x) {
  op_case c = {"mul_grad",
               {IN("X", "x", -1, 1, 33, 4, 5), IN("Y", "y", -1, 1, 20, 65), IN("Out@GRAD", "dout", -1, 1, 33, 65)},
               {OUT("X@GRAD", "dx", 33, 4, 5), OUT("Y@GRAD", "dy", 20, 65)},
               mul_cols,
               1e-5};
  compare(&c);
}

/* Only Y@GRAD asked for (X is data): X@GRAD's absence is not an error. */
Test(cuda_kernels, mul_grad_of_y_alone) {
  op_case c = {"mul_grad",
               {IN("X", "x", -1, 1, 128, 31), IN("Y", "y", -1, 1, 31, 10), IN("Out@GRAD", "dout", -1, 1, 128, 10)},
               {OUT("Y@GRAD", "dy", 31, 10)},
               NULL,
               1e-5};
  compare(&c);
}

#define BINARY_GRAD(name, op, attrs, x, y, out)                                                              \
  Test(cuda_kernels, name) {                                                                                 \
    op_case c = {op, {IN("X", "x", -2, 2, x), IN("Y", "y", 0.5f, 2, y), IN("Out@GRAD", "dout", -1, 1, out)}, \
                 {OUT("X@GRAD", "dx", x), OUT("Y@GRAD", "dy", y)}, attrs, 1e-5};                             \
    compare(&c);                                                                                             \
  }

/* A bias: Y's gradient sums the batch rows; the middle broadcast of axis 1; a column
 * broadcast (Y [7, 1]); X broadcast along a middle dim (mul reads the other operand). */
BINARY_GRAD(add_grad_bias_rows, "elementwise_add_grad", axis_last, P(129, 33), P(33), P(129, 33))
BINARY_GRAD(add_grad_broadcast_middle, "elementwise_add_grad", axis1, P(2, 3, 4, 5), P(3, 4), P(2, 3, 4, 5))
BINARY_GRAD(sub_grad_broadcast_ones, "elementwise_sub_grad", NULL, P(7, 9), P(7, 1), P(7, 9))
BINARY_GRAD(mul_grad_x_broadcast, "elementwise_mul_grad", NULL, P(13, 1, 7), P(13, 11, 7), P(13, 11, 7))
BINARY_GRAD(mul_grad_same_shape, "elementwise_mul_grad", NULL, P(6, 17), P(6, 17), P(6, 17))
/* div (Y in [0.5, 2]), max and min, same-shaped and broadcast. */
BINARY_GRAD(div_grad_bias_rows, "elementwise_div_grad", axis_last, P(29, 33), P(33), P(29, 33))
BINARY_GRAD(max_grad_same_shape, "elementwise_max_grad", NULL, P(6, 17), P(6, 17), P(6, 17))
BINARY_GRAD(min_grad_y_broadcast, "elementwise_min_grad", NULL, P(13, 11, 7), P(13, 1, 7), P(13, 11, 7))
/* Operands spread over thousands of elements (a block an element of the operand): a
 * scalar Y times X [64, 129], and Y [3] along axis 0 of X [3, 70, 80]. */
BINARY_GRAD(mul_grad_scalar_y, "elementwise_mul_grad", NULL, P(64, 129), P(1), P(64, 129))
static void axis0(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "axis", 0)); }
BINARY_GRAD(sub_grad_y_along_axis_0, "elementwise_sub_grad", axis0, P(3, 70, 80), P(3), P(3, 70, 80))

/* Paddle 1.x's div gradient: Y, Out and Out@GRAD, no X; Y@GRAD is -g * out / y. */
Test(cuda_kernels, div_grad_from_out) {
  op_case c = {"elementwise_div_grad",
               {IN("Y", "y", 0.5f, 2, 7, 1), IN("Out", "out", -2, 2, 7, 9), IN("Out@GRAD", "dout", -1, 1, 7, 9)},
               {OUT("X@GRAD", "dx", 7, 9), OUT("Y@GRAD", "dy", 7, 1)},
               NULL,
               1e-5};
  compare(&c);
}

Test(cuda_kernels, mean_grad) {
  op_case c = {"mean_grad", {IN("X", "x", -1, 1, 37, 53), IN("Out@GRAD", "dout", 0.5f, 2, 1)},
               {OUT("X@GRAD", "dx", 37, 53)}, NULL, 0};
  compare(&c);
}

/* reduce_sum and reduce_mean over separate dims (runs the walk must step over), a
 * trailing dim with keep_dim, a negative dim, everything, and their gradients. */
static void red_dims_0_2(rill_op_builder *b) {
  const int32_t d[] = {0, 2};
  OK(rill_op_builder_attr_ints(b, "dim", d, 2));
}
static void red_last_keep(rill_op_builder *b) {
  const int32_t d[] = {-1};
  OK(rill_op_builder_attr_ints(b, "dim", d, 1));
  OK(rill_op_builder_attr_bool(b, "keep_dim", true));
}
static void red_all(rill_op_builder *b) { OK(rill_op_builder_attr_bool(b, "reduce_all", true)); }

Test(cuda_kernels, reduce_sum_dims_0_and_2) {
  op_case c = {"reduce_sum", {IN("X", "x", -1, 1, 5, 7, 9, 3)}, {OUT("Out", "out", 7, 3)}, red_dims_0_2, 1e-5};
  compare(&c);
}

Test(cuda_kernels, reduce_mean_last_dim_kept) {
  op_case c = {"reduce_mean", {IN("X", "x", -1, 1, 33, 1031)}, {OUT("Out", "out", 33, 1)}, red_last_keep, 1e-5};
  compare(&c);
}

Test(cuda_kernels, reduce_sum_everything) {
  op_case c = {"reduce_sum", {IN("X", "x", -1, 1, 301, 257)}, {OUT("Out", "out", 1)}, red_all, 1e-5};
  compare(&c);
}

Test(cuda_kernels, reduce_sum_grad_dims_0_and_2) {
  op_case c = {"reduce_sum_grad", {IN("X", "x", -1, 1, 5, 7, 9, 3), IN("Out@GRAD", "dout", -1, 1, 7, 3)},
               {OUT("X@GRAD", "dx", 5, 7, 9, 3)}, red_dims_0_2, 0};
  compare(&c);
}

Test(cuda_kernels, reduce_mean_grad_last_dim_kept) {
  op_case c = {"reduce_mean_grad", {IN("X", "x", -1, 1, 33, 1031), IN("Out@GRAD", "dout", -1, 1, 33, 1)},
               {OUT("X@GRAD", "dx", 33, 1031)}, red_last_keep, 0};
  compare(&c);
}

/* The folds: max and min over separate dims (every numeric dtype), prod along the last
 * dim kept (in X's order, so bit for bit), everything; all and any of bool rows. */
Test(cuda_kernels, reduce_max_and_min_dims_0_and_2) {
  const char *ops[] = {"reduce_max", "reduce_min"};
  const rill_dtype dts[] = {RILL_DTYPE_FP32, RILL_DTYPE_FP64, RILL_DTYPE_INT32, RILL_DTYPE_INT64};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 4; k++) {
      op_case c = {ops[i], {IN("X", "x", -50, 50, 5, 7, 9, 3)}, {OUT("Out", "out", 7, 3)}, red_dims_0_2, 0};
      c.in[0].dtype = c.out[0].dtype = dts[k];
      compare(&c);
    }
}

Test(cuda_kernels, reduce_prod_last_dim_kept) {
  op_case c = {"reduce_prod", {IN("X", "x", 0.5f, 1.5f, 33, 301)}, {OUT("Out", "out", 33, 1)}, red_last_keep, 0};
  compare(&c);
  c.in[0].dtype = c.out[0].dtype = RILL_DTYPE_FP64;
  compare(&c);
  op_case i = {"reduce_prod", {IN("X", "x", -3, 3, 6, 5)}, {OUT("Out", "out", 6, 1)}, red_last_keep, 0};
  i.in[0].dtype = i.out[0].dtype = RILL_DTYPE_INT64;
  compare(&i);
}

Test(cuda_kernels, reduce_max_everything) {
  op_case c = {"reduce_max", {IN("X", "x", -1, 1, 301, 257)}, {OUT("Out", "out", 1)}, red_all, 0};
  compare(&c);
}

Test(cuda_kernels, reduce_all_and_any_rows) {
  const char *ops[] = {"reduce_all", "reduce_any"};
  for (int i = 0; i < 2; i++) {
    op_case c = {ops[i], {IN("X", "x", 0, 1, 40, 3)}, {OUT("Out", "out", 40, 1)}, red_last_keep, 0};
    c.in[0].boolean = c.out[0].boolean = true;
    compare(&c);
  }
}

/* NaN never wins a max or a min, as on the CPU. */
Test(cuda_kernels, reduce_max_and_min_with_nan) {
  const char *ops[] = {"reduce_max", "reduce_min"};
  for (int i = 0; i < 2; i++) {
    op_case c = {ops[i], {IN("X", "x", -1, 1, 5, 7, 9, 3)}, {OUT("Out", "out", 7, 3)}, red_dims_0_2, 0};
    c.in[0].nan_every = 4;
    compare(&c);
  }
}

/* max's and min's gradient: Out@GRAD where X equals Out (X and Out 0.5, X NaN every
 * seventh element, so some do not), else 0; prod's: Out@GRAD * Out / X. */
Test(cuda_kernels, reduce_max_and_min_grads) {
  const char *ops[] = {"reduce_max_grad", "reduce_min_grad"};
  for (int i = 0; i < 2; i++) {
    op_case c = {ops[i],
                 {IN("X", "x", 0.5f, 0.5f, 5, 7, 9, 3), IN("Out", "y", 0.5f, 0.5f, 7, 3), IN("Out@GRAD", "dout", -1, 1, 7, 3)},
                 {OUT("X@GRAD", "dx", 5, 7, 9, 3)}, red_dims_0_2, 0};
    c.in[0].nan_every = 7;
    compare(&c);
  }
}

Test(cuda_kernels, reduce_prod_grad_last_dim_kept) {
  op_case c = {"reduce_prod_grad",
               {IN("X", "x", 0.5f, 2, 33, 31), IN("Out", "y", -1, 1, 33, 1), IN("Out@GRAD", "dout", -1, 1, 33, 1)},
               {OUT("X@GRAD", "dx", 33, 31)}, red_last_keep, 1e-6};
  compare(&c);
}

Test(cuda_kernels, softmax_grad_last_axis) {
  op_case c = {"softmax_grad", {IN("Out", "out", 0.001f, 0.2f, 7, 1001), IN("Out@GRAD", "dout", -1, 1, 7, 1001)},
               {OUT("X@GRAD", "dx", 7, 1001)}, NULL, 1e-5};
  compare(&c);
}

/* ---- softmax and log_softmax along any axis ---- */

static void softmax_axis1(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "axis", 1)); }
static void softmax_axis0(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "axis", 0)); }

/* A middle axis and the first (a thread a position), the last (a block a row); each
 * op's gradient on the same views. */
Test(cuda_kernels, softmax_and_log_softmax_any_axis) {
  const char *fwd[] = {"softmax", "log_softmax"}, *bwd[] = {"softmax_grad", "log_softmax_grad"};
  void (*axes[])(rill_op_builder *) = {softmax_axis1, softmax_axis0, NULL};
  for (int k = 0; k < 2; k++)
    for (int a = 0; a < 3; a++) {
      op_case c = {fwd[k], {IN("X", "x", -8, 8, 4, 7, 5)}, {OUT("Out", "out", 4, 7, 5)}, axes[a], 1e-5};
      compare(&c);
      op_case g = {bwd[k], {IN("Out", "out", k ? -6.0f : 0.001f, k ? -0.01f : 0.2f, 4, 7, 5),
                            IN("Out@GRAD", "dout", -1, 1, 4, 7, 5)},
                   {OUT("X@GRAD", "dx", 4, 7, 5)}, axes[a], 1e-5};
      compare(&g);
    }
  op_case l = {"log_softmax", {IN("X", "x", -8, 8, 6, 1001)}, {OUT("Out", "out", 6, 1001)}, NULL, 1e-5};
  compare(&l);
}

/* softmax clips a shifted logit below -64 to -64, as the CPU's: no probability is 0
 * even 300 below a row's maximum (exp(-300) is 0 in float), so its log stays finite. */
Test(cuda_kernels, softmax_keeps_every_probability_above_zero) {
  NEED_CUDA_DEVICE();
  void (*axes[])(rill_op_builder *) = {NULL, softmax_axis0};
  for (int a = 0; a < 2; a++) {
    op_case c = {"softmax", {IN("X", "x", -300, 0, 4, 50)}, {OUT("Out", "out", 4, 50)}, axes[a], 0};
    rill_tensor *out[MAX_ARGS] = {NULL};
    run_case(&c, (rill_place){RILL_DEVICE_CUDA, 0}, 7, out);
    const float *o = rill_tensor_data(out[0]);
    for (int64_t i = 0; i < 200; i++) cr_assert(o[i] > 0.0f, "axis case %d: out[%lld] = %g", a, (long long)i, o[i]);
    rill_tensor_destroy(out[0]);
  }
}

/* ---- pool2d ---- */

static void pool_attrs(rill_op_builder *b, const char *type, int k, int s, int p) {
  const int32_t ks[] = {k, k}, ss[] = {s, s}, ps[] = {p, p};
  OK(rill_op_builder_attr_string(b, "pooling_type", type));
  OK(rill_op_builder_attr_ints(b, "ksize", ks, 2));
  OK(rill_op_builder_attr_ints(b, "strides", ss, 2));
  OK(rill_op_builder_attr_ints(b, "paddings", ps, 2));
}
static void max_k3_s2_p1(rill_op_builder *b) { pool_attrs(b, "max", 3, 2, 1); }
static void avg_k3_s2_p1_padding_counted(rill_op_builder *b) {
  pool_attrs(b, "avg", 3, 2, 1);
  OK(rill_op_builder_attr_bool(b, "exclusive", false));
}
static void avg_k2_s2_ceil(rill_op_builder *b) {
  pool_attrs(b, "avg", 2, 2, 0);
  OK(rill_op_builder_attr_bool(b, "ceil_mode", true));
}
static void max_k2_s2_nhwc(rill_op_builder *b) {
  pool_attrs(b, "max", 2, 2, 0);
  OK(rill_op_builder_attr_string(b, "data_format", "NHWC"));
}
static void avg_adaptive_3x4(rill_op_builder *b) {
  const int32_t ks[] = {3, 4};
  pool_attrs(b, "avg", 1, 1, 0);
  OK(rill_op_builder_attr_ints(b, "ksize", ks, 2));
  OK(rill_op_builder_attr_bool(b, "adaptive", true));
}
static void avg_global(rill_op_builder *b) {
  pool_attrs(b, "avg", 1, 1, 0);
  OK(rill_op_builder_attr_bool(b, "global_pooling", true));
}

/* X [2, 3, 9, 11]: k3 s2 p1 gives 5 x 6; k2 s2 with ceil_mode 5 x 6 (the last window
 * one wide); NHWC [2, 9, 11, 3] k2 s2 gives 4 x 5; adaptive 3 x 4; global 1 x 1. */
#define POOL_CASE(name, attrs, x, out)                                                                \
  Test(cuda_kernels, name) {                                                                         \
    op_case c = {"pool2d", {IN("X", "x", -3, 3, x)}, {OUT("Out", "out", out)}, attrs, 1e-6};         \
    compare(&c);                                                                                     \
  }
POOL_CASE(pool2d_max_strided_padded, max_k3_s2_p1, P(2, 3, 9, 11), P(2, 3, 5, 6))
POOL_CASE(pool2d_avg_counts_padding, avg_k3_s2_p1_padding_counted, P(2, 3, 9, 11), P(2, 3, 5, 6))
POOL_CASE(pool2d_avg_ceil_mode, avg_k2_s2_ceil, P(2, 3, 9, 11), P(2, 3, 5, 6))
POOL_CASE(pool2d_max_channel_last, max_k2_s2_nhwc, P(2, 9, 11, 3), P(2, 4, 5, 3))
POOL_CASE(pool2d_avg_adaptive, avg_adaptive_3x4, P(2, 3, 10, 7), P(2, 3, 3, 4))
POOL_CASE(pool2d_avg_global, avg_global, P(2, 3, 10, 7), P(2, 3, 1, 1))

/* ---- batch_norm ---- */

static void bn_train(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "momentum", 0.8f));
  OK(rill_op_builder_attr_float(b, "epsilon", 1e-4f));
}
static void bn_test(rill_op_builder *b) {
  bn_train(b);
  OK(rill_op_builder_attr_bool(b, "is_test", true));
}

/* The batch's statistics (and the running ones updated), then the running ones alone;
 * X [3, 5, 7, 9] (odd extents), and a rank-2 X (an MLP's batch_norm). */
#define BN_CASE(name, attrs, x, c)                                                                        \
  Test(cuda_kernels, name) {                                                                             \
    op_case k = {"batch_norm",                                                                           \
                 {IN("X", "x", -2, 3, x), IN("Scale", "scale", 0.5f, 1.5f, c), IN("Bias", "bias", -1, 1, c), \
                  IN("Mean", "mean", -0.5f, 0.5f, c), IN("Variance", "var", 0.5f, 2, c)},                \
                 {OUT("Y", "y", x), OUT("MeanOut", "mean_out", c), OUT("VarianceOut", "var_out", c),     \
                  OUT("SavedMean", "saved_mean", c), OUT("SavedVariance", "saved_var", c)},              \
                 attrs, 1e-5};                                                                           \
    compare(&k);                                                                                         \
  }
BN_CASE(batch_norm_batch_statistics, bn_train, P(3, 5, 7, 9), 5)
BN_CASE(batch_norm_test_mode, bn_test, P(3, 5, 7, 9), 5)
BN_CASE(batch_norm_rank_2, bn_train, P(33, 17), 17)

/* Channels last: X [3, 7, 9, 5] with its 5 channels at the last dim, and a rank-3 X. */
static void bn_train_nhwc(rill_op_builder *b) {
  bn_train(b);
  OK(rill_op_builder_attr_string(b, "data_layout", "NHWC"));
}
static void bn_test_nhwc(rill_op_builder *b) {
  bn_test(b);
  OK(rill_op_builder_attr_string(b, "data_layout", "NHWC"));
}
BN_CASE(batch_norm_nhwc_batch_statistics, bn_train_nhwc, P(3, 7, 9, 5), 5)
BN_CASE(batch_norm_nhwc_test_mode, bn_test_nhwc, P(3, 7, 9, 5), 5)
BN_CASE(batch_norm_nhwc_rank_3, bn_train_nhwc, P(4, 11, 6), 6)

/* relu6 at its default threshold (6): inputs on both sides of 0 and 6. */
UNARY(relu6, "relu6", NULL, -3, 8, 0)

/* ---- concat ---- */

static void concat_axis1(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "axis", 1)); }
static void concat_axis0(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "axis", 0)); }
static void concat_axis_last(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "axis", -1)); }

/* Pieces of unequal widths at a middle axis (strided copies), stacked rows at axis 0
 * (one contiguous copy each), and the last axis with a one-wide piece. */
Test(cuda_kernels, concat_middle_axis) {
  op_case c = {"concat",
               {IN("X", "a", -1, 1, 2, 3, 5), IN("X", "b", -1, 1, 2, 1, 5), IN("X", "c", -1, 1, 2, 4, 5)},
               {OUT("Out", "out", 2, 8, 5)}, concat_axis1, 0};
  compare(&c);
}

Test(cuda_kernels, concat_rows) {
  op_case c = {"concat", {IN("X", "a", -1, 1, 3, 7), IN("X", "b", -1, 1, 5, 7)}, {OUT("Out", "out", 8, 7)},
               concat_axis0, 0};
  compare(&c);
}

Test(cuda_kernels, concat_last_axis) {
  op_case c = {"concat", {IN("X", "a", -1, 1, 4, 3, 6), IN("X", "b", -1, 1, 4, 3, 1)}, {OUT("Out", "out", 4, 3, 7)},
               concat_axis_last, 0};
  compare(&c);
}

static void split_sections(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "axis", 1));
  OK(rill_op_builder_attr_ints(b, "sections", (const int32_t[]){2, -1, 1}, 3));
}
static void split_num_2(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "num", 2)); }

/* split: sections with a -1 at a middle axis (strided copies out), and num at axis 0;
 * concat_grad: the same copies for X@GRAD, the second gradient not wanted. */
Test(cuda_kernels, split_sections_middle_axis) {
  op_case c = {"split", {IN("X", "x", -1, 1, 3, 7, 5)},
               {OUT("Out", "a", 3, 2, 5), OUT("Out", "b", 3, 4, 5), OUT("Out", "c", 3, 1, 5)}, split_sections, 0};
  compare(&c);
}

Test(cuda_kernels, split_num_rows) {
  op_case c = {"split", {IN("X", "x", -1, 1, 8, 3)}, {OUT("Out", "a", 4, 3), OUT("Out", "b", 4, 3)}, split_num_2, 0};
  compare(&c);
}

Test(cuda_kernels, concat_grad_middle_axis) {
  op_case c = {"concat_grad",
               {IN("X", "a", -1, 1, 2, 3, 5), IN("X", "b", -1, 1, 2, 1, 5), IN("X", "c", -1, 1, 2, 4, 5),
                IN("Out@GRAD", "dout", -1, 1, 2, 8, 5)},
               {OUT("X@GRAD", "da", 2, 3, 5), OUT("X@GRAD", "db", 2, 1, 5), OUT("X@GRAD", "dc", 2, 4, 5)},
               concat_axis1, 0};
  compare(&c);
}

/* ---- pool2d_grad, batch_norm_grad ---- */

/* An average's gradient reads only Out@GRAD (a max's reads Out = pool2d(X): covered by
 * test_cuda.py's conv net, which runs the pair). */
Test(cuda_kernels, pool2d_grad_avg_counts_padding) {
  op_case c = {"pool2d_grad",
               {IN("X", "x", -3, 3, 2, 3, 9, 11), IN("Out", "out", -3, 3, 2, 3, 5, 6),
                IN("Out@GRAD", "dout", -1, 1, 2, 3, 5, 6)},
               {OUT("X@GRAD", "dx", 2, 3, 9, 11)}, avg_k3_s2_p1_padding_counted, 1e-6};
  compare(&c);
}

Test(cuda_kernels, pool2d_grad_avg_adaptive) {
  op_case c = {"pool2d_grad",
               {IN("X", "x", -3, 3, 2, 3, 10, 7), IN("Out", "out", -3, 3, 2, 3, 3, 4),
                IN("Out@GRAD", "dout", -1, 1, 2, 3, 3, 4)},
               {OUT("X@GRAD", "dx", 2, 3, 10, 7)}, avg_adaptive_3x4, 1e-6};
  compare(&c);
}

static void bn_grad_batch(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "epsilon", 1e-4f)); }
static void bn_grad_global(rill_op_builder *b) {
  bn_grad_batch(b);
  OK(rill_op_builder_attr_bool(b, "use_global_stats", true));
}

/* X [3, 5, 7, 9] (NCHW) or [3, 7, 9, 5] (NHWC): 5 channels either way. */
#define BN_GRAD_CASE(name, attrs, x)                                                                      \
  Test(cuda_kernels, name) {                                                                             \
    op_case k = {"batch_norm_grad",                                                                      \
                 {IN("X", "x", -2, 3, x), IN("Scale", "scale", 0.5f, 1.5f, 5),                           \
                  IN("Bias", "bias", -1, 1, 5), IN("Mean", "mean", -0.5f, 0.5f, 5),                      \
                  IN("Variance", "var", 0.5f, 2, 5), IN("SavedMean", "saved_mean", -0.5f, 0.5f, 5),      \
                  IN("SavedVariance", "saved_var", 0.5f, 2, 5), IN("Y@GRAD", "dy", -1, 1, x)},           \
                 {OUT("X@GRAD", "dx", x), OUT("Scale@GRAD", "dscale", 5), OUT("Bias@GRAD", "dbias", 5)}, \
                 attrs, 1e-5};                                                                           \
    compare(&k);                                                                                         \
  }
BN_GRAD_CASE(batch_norm_grad_batch_statistics, bn_grad_batch, P(3, 5, 7, 9))
BN_GRAD_CASE(batch_norm_grad_global_statistics, bn_grad_global, P(3, 5, 7, 9))

static void bn_grad_batch_nhwc(rill_op_builder *b) {
  bn_grad_batch(b);
  OK(rill_op_builder_attr_string(b, "data_layout", "NHWC"));
}
static void bn_grad_global_nhwc(rill_op_builder *b) {
  bn_grad_global(b);
  OK(rill_op_builder_attr_string(b, "data_layout", "NHWC"));
}
BN_GRAD_CASE(batch_norm_grad_nhwc_batch_statistics, bn_grad_batch_nhwc, P(3, 7, 9, 5))
BN_GRAD_CASE(batch_norm_grad_nhwc_global_statistics, bn_grad_global_nhwc, P(3, 7, 9, 5))

/* ---- conv2d_grad ---- */

/* The forward cases' geometries: Input@GRAD and Filter@GRAD from cuDNN's backward data
 * and backward filter. */
Test(cuda_kernels, conv2d_grad_strides_paddings_dilations_groups) {
  op_case c = {"conv2d_grad",
               {IN("Input", "x", -1, 1, 2, 4, 11, 9), IN("Filter", "w", -1, 1, 6, 2, 3, 3),
                IN("Output@GRAD", "dy", -1, 1, 2, 6, 5, 11)},
               {OUT("Input@GRAD", "dx", 2, 4, 11, 9), OUT("Filter@GRAD", "dw", 6, 2, 3, 3)},
               conv_s2_p1_d2_g2, 1e-4};
  compare(&c);
}

Test(cuda_kernels, depthwise_conv2d_grad) {
  op_case c = {"depthwise_conv2d_grad",
               {IN("Input", "x", -1, 1, 3, 5, 7, 7), IN("Filter", "w", -1, 1, 5, 1, 3, 3),
                IN("Output@GRAD", "dy", -1, 1, 3, 5, 7, 7)},
               {OUT("Input@GRAD", "dx", 3, 5, 7, 7), OUT("Filter@GRAD", "dw", 5, 1, 3, 3)},
               depthwise, 1e-4};
  compare(&c);
}

/* A first layer: the filter's gradient alone (the image is data). */
Test(cuda_kernels, conv2d_grad_of_the_filter_alone) {
  op_case c = {"conv2d_grad",
               {IN("Input", "x", -1, 1, 4, 3, 12, 12), IN("Filter", "w", -1, 1, 8, 3, 5, 5),
                IN("Output@GRAD", "dy", -1, 1, 4, 8, 8, 8)},
               {OUT("Filter@GRAD", "dw", 8, 3, 5, 5)},
               NULL, 1e-4};
  compare(&c);
}

/* ---- uneven paddings: a padded copy of the input (kernels/cuda/conv2d.c) ---- */

/* Paddle's four paddings [top, bottom, left, right] = [2, 1, 1, 0], stride 2: Input
 * [2, 4, 10, 9] gives h (10 + 3 - 3) / 2 + 1 = 6, w (9 + 1 - 3) / 2 + 1 = 4. */
static void pads_2110_s2(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){2, 2}, 2));
  OK(rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){2, 1, 1, 0}, 4));
}
/* SAME at stride 2 on 8 x 8: 4 x 4 out, one row and one column of padding, after. */
static void same_s2(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){2, 2}, 2));
  OK(rill_op_builder_attr_string(b, "padding_algorithm", "SAME"));
}
static void same_s2_depthwise(rill_op_builder *b) {
  same_s2(b);
  OK(rill_op_builder_attr_int(b, "groups", 5));
}
static void same_s2_relu(rill_op_builder *b) {
  same_s2(b);
  OK(rill_op_builder_attr_string(b, "activation", "relu"));
}

Test(cuda_kernels, conv2d_uneven_paddings) {
  op_case c = {"conv2d", {IN("Input", "x", -1, 1, 2, 4, 10, 9), IN("Filter", "w", -1, 1, 6, 4, 3, 3)},
               {OUT("Output", "y", 2, 6, 6, 4)}, pads_2110_s2, 1e-4};
  compare(&c);
  op_case s = {"conv2d", {IN("Input", "x", -1, 1, 2, 3, 8, 8), IN("Filter", "w", -1, 1, 5, 3, 3, 3)},
               {OUT("Output", "y", 2, 5, 4, 4)}, same_s2, 1e-4};
  compare(&s);
  op_case dw = {"depthwise_conv2d", {IN("Input", "x", -1, 1, 2, 5, 8, 8), IN("Filter", "w", -1, 1, 5, 1, 3, 3)},
                {OUT("Output", "y", 2, 5, 4, 4)}, same_s2_depthwise, 1e-4};
  compare(&dw);
  /* relu: cuDNN's fused call on the padded copy */
  op_case f = {"conv2d_fusion",
               {IN("Input", "x", -1, 1, 2, 3, 8, 8), IN("Filter", "w", -1, 1, 5, 3, 3, 3), IN("Bias", "b", -1, 1, 5),
                IN("ResidualData", "r", -1, 1, 2, 5, 4, 4)},
               {OUT("Output", "y", 2, 5, 4, 4)}, same_s2_relu, 1e-4};
  compare(&f);
}

/* Both gradients, and each alone: Input@GRAD cropped from the padded shape, Filter@GRAD
 * against the padded input. */
Test(cuda_kernels, conv2d_grad_uneven_paddings) {
  op_case both = {"conv2d_grad",
                  {IN("Input", "x", -1, 1, 2, 4, 10, 9), IN("Filter", "w", -1, 1, 6, 4, 3, 3),
                   IN("Output@GRAD", "dy", -1, 1, 2, 6, 6, 4)},
                  {OUT("Input@GRAD", "dx", 2, 4, 10, 9), OUT("Filter@GRAD", "dw", 6, 4, 3, 3)},
                  pads_2110_s2, 1e-4};
  compare(&both);
  op_case dx = {"conv2d_grad",
                {IN("Input", "x", -1, 1, 2, 3, 8, 8), IN("Filter", "w", -1, 1, 5, 3, 3, 3),
                 IN("Output@GRAD", "dy", -1, 1, 2, 5, 4, 4)},
                {OUT("Input@GRAD", "dx", 2, 3, 8, 8)}, same_s2, 1e-4};
  compare(&dx);
  op_case dw = {"depthwise_conv2d_grad",
                {IN("Input", "x", -1, 1, 2, 5, 8, 8), IN("Filter", "w", -1, 1, 5, 1, 3, 3),
                 IN("Output@GRAD", "dy", -1, 1, 2, 5, 4, 4)},
                {OUT("Filter@GRAD", "dw", 5, 1, 3, 3)}, same_s2_depthwise, 1e-4};
  compare(&dw);
}

/* ---- cross_entropy ---- */

static void ignore_2(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "ignore_index", 2)); }
static void soft_label(rill_op_builder *b) { OK(rill_op_builder_attr_bool(b, "soft_label", true)); }

/* Hard int64 labels with ignore_index 2 (one of the classes: its rows give 0), and soft
 * labels; forward and gradient. */
Test(cuda_kernels, cross_entropy_hard_labels_ignore_index) {
  op_case c = {"cross_entropy", {IN("X", "x", 0.01f, 1, 37, 7), IN("Label", "label", 0, 6, 37, 1)},
               {OUT("Y", "y", 37, 1)}, ignore_2, 1e-6};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, cross_entropy_grad_hard_labels_ignore_index) {
  op_case c = {"cross_entropy_grad",
               {IN("X", "x", 0.01f, 1, 37, 7), IN("Label", "label", 0, 6, 37, 1), IN("Y@GRAD", "dy", -1, 1, 37, 1)},
               {OUT("X@GRAD", "dx", 37, 7)}, ignore_2, 1e-6};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, cross_entropy_soft_labels) {
  op_case c = {"cross_entropy", {IN("X", "x", 0.01f, 1, 9, 11), IN("Label", "label", 0, 1, 9, 11)},
               {OUT("Y", "y", 9, 1)}, soft_label, 1e-5};
  compare(&c);
}

Test(cuda_kernels, cross_entropy_grad_soft_labels) {
  op_case c = {"cross_entropy_grad",
               {IN("X", "x", 0.01f, 1, 9, 11), IN("Label", "label", 0, 1, 9, 11), IN("Y@GRAD", "dy", -1, 1, 9, 1)},
               {OUT("X@GRAD", "dx", 9, 11)}, soft_label, 1e-5};
  compare(&c);
}

/* A label outside the classes is an error naming the variable, the position and the
 * value, on the device as on the CPU; the device and the executor stay usable. */
Test(cuda_kernels, a_bad_label_is_named) {
  NEED_CUDA_DEVICE();
  rill_program *p;
  OK(rill_program_create(&p));
  int64_t xd[] = {4, 3}, ld[] = {4, 1}, yd[] = {4, 1};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 0, false));
  OK(rill_block_add_var(p, 0, "label", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, ld, 2, 0, false));
  OK(rill_block_add_var(p, 0, "y", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, yd, 2, 0, false));
  rill_op_builder *b;
  OK(rill_op_builder_create("cross_entropy", &b));
  const char *xn[] = {"x"}, *ln[] = {"label"}, *yn[] = {"y"};
  OK(rill_op_builder_input(b, "X", xn, 1));
  OK(rill_op_builder_input(b, "Label", ln, 1));
  OK(rill_op_builder_output(b, "Y", yn, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_tensor *feeds[2];
  OK(rill_tensor_create(RILL_DTYPE_FP32, xd, 2, &feeds[0]));
  OK(rill_tensor_create(RILL_DTYPE_INT64, ld, 2, &feeds[1]));
  float *x = rill_tensor_data(feeds[0]);
  for (int i = 0; i < 12; i++) x[i] = 0.25f;
  int64_t *l = rill_tensor_data(feeds[1]);
  l[0] = 1, l[1] = 0, l[2] = 7, l[3] = -1;
  const char *names[] = {"x", "label"}, *fetch[] = {"y"};
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = (rill_place){RILL_DEVICE_CUDA, 0};
  rill_executor *e;
  rill_scope *scope;
  OK(rill_executor_create(&o, &e));
  OK(rill_scope_create(NULL, &scope));
  rill_tensor *out = NULL;
  rill_status *st = rill_executor_run(e, p, scope, names, feeds, 2, fetch, 1, &out);
  cr_assert_not_null(st);
  const char *msg = rill_status_message(st);
  cr_assert(strstr(msg, "label") && strstr(msg, "holds 7 at position 2") && strstr(msg, "[0, 3)"), "%s", msg);
  rill_status_destroy(st);
  l[2] = 2, l[3] = 0; /* fixed: the same executor runs */
  OK(rill_executor_run(e, p, scope, names, feeds, 2, fetch, 1, &out));
  cr_assert_float_eq(((float *)rill_tensor_data(out))[2], -logf(0.25f), 1e-6);
  rill_tensor_destroy(out);
  rill_tensor_destroy(feeds[0]);
  rill_tensor_destroy(feeds[1]);
  rill_scope_destroy(scope);
  rill_executor_destroy(e);
  rill_program_destroy(p);
}

/* ---- softmax_with_cross_entropy ---- */

static void swce_axis1_ignore_2(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "axis", 1));
  OK(rill_op_builder_attr_int(b, "ignore_index", 2));
}
static void swce_probabilities(rill_op_builder *b) { OK(rill_op_builder_attr_bool(b, "use_softmax", false)); }

/* Logits [3, 5, 4] with the classes at axis 1 (strided rows), int64 labels with
 * ignore_index 2; soft labels on [9, 11]; probabilities already (use_softmax false). */
Test(cuda_kernels, softmax_with_cross_entropy_middle_axis) {
  op_case c = {"softmax_with_cross_entropy", {IN("Logits", "x", -6, 6, 3, 5, 4), IN("Label", "label", 0, 4, 3, 1, 4)},
               {OUT("Softmax", "sm", 3, 5, 4), OUT("Loss", "loss", 3, 1, 4)}, swce_axis1_ignore_2, 1e-5};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, softmax_with_cross_entropy_soft_labels) {
  op_case c = {"softmax_with_cross_entropy", {IN("Logits", "x", -6, 6, 9, 11), IN("Label", "label", 0, 1, 9, 11)},
               {OUT("Softmax", "sm", 9, 11), OUT("Loss", "loss", 9, 1)}, soft_label, 1e-5};
  compare(&c);
}

Test(cuda_kernels, softmax_with_cross_entropy_of_probabilities) {
  op_case c = {"softmax_with_cross_entropy", {IN("Logits", "x", 0.01f, 1, 13, 7), IN("Label", "label", 0, 6, 13, 1)},
               {OUT("Softmax", "sm", 13, 7), OUT("Loss", "loss", 13, 1)}, swce_probabilities, 1e-6};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

/* A vocabulary of 5000 (a block a row): hard labels with ignore_index 2 among them, soft
 * labels, and NaN among the logits (a row's NaN spoils its row, as on the CPU). */
static void swce_ignore_2(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "ignore_index", 2)); }
Test(cuda_kernels, softmax_with_cross_entropy_large_vocabulary) {
  op_case c = {"softmax_with_cross_entropy", {IN("Logits", "x", -20, 20, 6, 5000), IN("Label", "label", 0, 3, 6, 1)},
               {OUT("Softmax", "sm", 6, 5000), OUT("Loss", "loss", 6, 1)}, swce_ignore_2, 1e-5};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
  op_case s = {"softmax_with_cross_entropy", {IN("Logits", "x", -20, 20, 5, 3001), IN("Label", "label", 0, 1, 5, 3001)},
               {OUT("Softmax", "sm", 5, 3001), OUT("Loss", "loss", 5, 1)}, soft_label, 1e-5};
  compare(&s);
  c.in[0].nan_every = 7919;
  compare(&c);
}

Test(cuda_kernels, softmax_with_cross_entropy_grad_middle_axis) {
  op_case c = {"softmax_with_cross_entropy_grad",
               {IN("Label", "label", 0, 4, 3, 1, 4), IN("Softmax", "sm", 0.01f, 1, 3, 5, 4),
                IN("Loss@GRAD", "dloss", -1, 1, 3, 1, 4)},
               {OUT("Logits@GRAD", "dx", 3, 5, 4)}, swce_axis1_ignore_2, 1e-6};
  c.in[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, softmax_with_cross_entropy_grad_soft_labels) {
  op_case c = {"softmax_with_cross_entropy_grad",
               {IN("Label", "label", 0, 1, 9, 11), IN("Softmax", "sm", 0.01f, 1, 9, 11), IN("Loss@GRAD", "dloss", -1, 1, 9, 1)},
               {OUT("Logits@GRAD", "dx", 9, 11)}, soft_label, 1e-6};
  compare(&c);
}

/* ---- sigmoid_cross_entropy_with_logits ---- */

static void sce_ignore_1_normalize(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "ignore_index", 1));
  OK(rill_op_builder_attr_bool(b, "normalize", true));
}

/* Probabilities as labels; then labels in [0, 2] with ignore_index 1 (those in [1, 2)
 * truncate to it) and normalize (divided by the count of the others, made on the
 * device); each with its gradient. */
Test(cuda_kernels, sigmoid_cross_entropy_with_logits_and_gradient) {
  void (*attrs[])(rill_op_builder *) = {NULL, sce_ignore_1_normalize};
  const float hi[] = {1, 2};
  for (int i = 0; i < 2; i++) {
    op_case c = {"sigmoid_cross_entropy_with_logits", {IN("X", "x", -8, 8, 7, 33), IN("Label", "label", 0, hi[i], 7, 33)},
                 {OUT("Out", "out", 7, 33)}, attrs[i], 1e-6};
    compare(&c);
    op_case g = {"sigmoid_cross_entropy_with_logits_grad",
                 {IN("X", "x", -8, 8, 7, 33), IN("Label", "label", 0, hi[i], 7, 33), IN("Out@GRAD", "dout", -1, 1, 7, 33)},
                 {OUT("X@GRAD", "dx", 7, 33)}, attrs[i], 1e-6};
    compare(&g);
  }
}

/* ---- lookup_table ---- */

static void pad_3(rill_op_builder *b) { OK(rill_op_builder_attr_long(b, "padding_idx", 3)); }
static void sparse_pad_3(rill_op_builder *b) {
  pad_3(b);
  OK(rill_op_builder_attr_bool(b, "is_sparse", true));
}

/* Ids [N, 1] int64 (lookup_table) and [N] int32 (v2), repeated ids and padding_idx
 * among them: the rows gathered exactly. */
Test(cuda_kernels, lookup_table_with_padding) {
  op_case c = {"lookup_table", {IN("W", "w", -1, 1, 11, 6), IN("Ids", "ids", 0, 10, 37, 1)},
               {OUT("Out", "out", 37, 6)}, pad_3, 0};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, lookup_table_v2_int32_ids) {
  op_case c = {"lookup_table_v2", {IN("W", "w", -1, 1, 9, 13), IN("Ids", "ids", 0, 8, 4, 7)},
               {OUT("Out", "out", 4, 7, 13)}, NULL, 0};
  c.in[1].dtype = RILL_DTYPE_INT32;
  compare(&c);
}

/* The dense gradient: each row the sum of its ids' Out@GRAD rows in their order, as the
 * CPU adds them (bit for bit), padding_idx's row left at zero. */
Test(cuda_kernels, lookup_table_grad_dense) {
  op_case c = {"lookup_table_grad",
               {IN("W", "w", -1, 1, 11, 6), IN("Ids", "ids", 0, 10, 53, 1), IN("Out@GRAD", "dout", -1, 1, 53, 6)},
               {OUT("W@GRAD", "dw", 11, 6)}, pad_3, 0};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

/* The sparse gradient feeding sgd: selected rows made on the device, merged by sgd as
 * the CPU merges them (test_cuda.py trains a sparse embedding end to end). */
Test(cuda_kernels, sparse_lookup_gradient_through_sgd) {
  NEED_CUDA_DEVICE();
  float got[2][11 * 6];
  for (int dev = 0; dev < 2; dev++) {
    rill_program *p;
    OK(rill_program_create(&p));
    const int64_t wd[] = {11, 6}, idd[] = {29, 1}, gd[] = {29, 6}, one[] = {1};
    OK(rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 2, 0, true));
    OK(rill_block_add_var(p, 0, "ids", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, idd, 2, 0, false));
    OK(rill_block_add_var(p, 0, "dout", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, gd, 2, 0, false));
    OK(rill_block_add_var(p, 0, "lr", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, one, 1, 0, false));
    OK(rill_block_add_var(p, 0, "dw", RILL_VAR_SELECTED_ROWS, RILL_DTYPE_FP32, wd, 2, 0, false));
    rill_op_builder *b;
    const char *w = "w", *ids = "ids", *dout = "dout", *dw = "dw", *lr = "lr";
    OK(rill_op_builder_create("lookup_table_grad", &b));
    OK(rill_op_builder_input(b, "W", &w, 1));
    OK(rill_op_builder_input(b, "Ids", &ids, 1));
    OK(rill_op_builder_input(b, "Out@GRAD", &dout, 1));
    OK(rill_op_builder_output(b, "W@GRAD", &dw, 1));
    sparse_pad_3(b);
    OK(rill_op_builder_append(b, p, 0));
    rill_op_builder_destroy(b);
    OK(rill_op_builder_create("sgd", &b));
    OK(rill_op_builder_input(b, "Param", &w, 1));
    OK(rill_op_builder_input(b, "Grad", &dw, 1));
    OK(rill_op_builder_input(b, "LearningRate", &lr, 1));
    OK(rill_op_builder_output(b, "ParamOut", &w, 1));
    OK(rill_op_builder_append(b, p, 0));
    rill_op_builder_destroy(b);
    rill_tensor *feeds[4];
    OK(rill_tensor_create(RILL_DTYPE_FP32, wd, 2, &feeds[0]));
    OK(rill_tensor_create(RILL_DTYPE_INT64, idd, 2, &feeds[1]));
    OK(rill_tensor_create(RILL_DTYPE_FP32, gd, 2, &feeds[2]));
    OK(rill_tensor_create(RILL_DTYPE_FP32, one, 1, &feeds[3]));
    srand(11);
    for (int i = 0; i < 66; i++) ((float *)rill_tensor_data(feeds[0]))[i] = (float)rand() / (float)RAND_MAX;
    for (int i = 0; i < 29; i++) ((int64_t *)rill_tensor_data(feeds[1]))[i] = rand() % 11;
    for (int i = 0; i < 29 * 6; i++) ((float *)rill_tensor_data(feeds[2]))[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    ((float *)rill_tensor_data(feeds[3]))[0] = 0.25f;
    rill_scope *scope;
    OK(rill_scope_create(NULL, &scope));
    OK(rill_scope_set_tensor(scope, "w", feeds[0]));
    rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
    o.place = (rill_place){dev ? RILL_DEVICE_CUDA : RILL_DEVICE_CPU, 0};
    rill_executor *e;
    OK(rill_executor_create(&o, &e));
    const char *names[] = {"ids", "dout", "lr"}, *fetch = "w";
    rill_tensor *out;
    OK(rill_executor_run(e, p, scope, names, feeds + 1, 3, &fetch, 1, &out));
    memcpy(got[dev], rill_tensor_data(out), sizeof got[dev]);
    rill_tensor_destroy(out);
    for (int i = 0; i < 4; i++) rill_tensor_destroy(feeds[i]);
    rill_executor_destroy(e);
    rill_scope_destroy(scope);
    rill_program_destroy(p);
  }
  for (int i = 0; i < 66; i++) cr_assert_eq(got[1][i], got[0][i], "w[%d]: cpu %.9g, cuda %.9g", i, got[0][i], got[1][i]);
}

/* An id outside the table is an error naming the input and the position, as on the
 * CPU, and nothing is read out of bounds. */
/* Runs program p on cuda:0 with `n` feeds and one fetch, expecting it to fail; returns
 * the error's message (free()d by the caller). Destroys p and the feeds. */
static char *device_run_error(rill_program *p, const char **names, rill_tensor **feeds, size_t n, const char *fetch) {
  rill_executor_options o = RILL_EXECUTOR_OPTIONS_INIT;
  o.place = (rill_place){RILL_DEVICE_CUDA, 0};
  rill_executor *e;
  rill_scope *scope;
  OK(rill_executor_create(&o, &e));
  OK(rill_scope_create(NULL, &scope));
  rill_tensor *got = NULL;
  rill_status *st = rill_executor_run(e, p, scope, names, feeds, n, &fetch, 1, &got);
  cr_assert_not_null(st, "the run succeeded");
  char *msg = strdup(rill_status_message(st));
  rill_status_destroy(st);
  for (size_t i = 0; i < n; i++) rill_tensor_destroy(feeds[i]);
  rill_scope_destroy(scope);
  rill_executor_destroy(e);
  rill_program_destroy(p);
  return msg;
}

/* An index outside the table: `op` (table input table_slot [5, 3], index input
 * index_slot [4, 1] holding 1, 4, 5, 0) fails on the device with the CPU's wording. */
/* op reading w [5, 3] through ids [4, 1] = {1, 4, 5, 0}: the error names the index
 * input, the bad index and its position, then says `tail` (how the CPU words it). */
static void refuses_an_index_outside(const char *op, const char *table_slot, const char *index_slot,
                                     const char *tail) {
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t wd[] = {5, 3}, idd[] = {4, 1};
  OK(rill_block_add_var(p, 0, "w", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, wd, 2, 0, false));
  OK(rill_block_add_var(p, 0, "ids", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, idd, 2, 0, false));
  OK(rill_block_add_var(p, 0, "out", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL, 0, 0, false));
  rill_op_builder *b;
  const char *w = "w", *ids = "ids", *out = "out";
  OK(rill_op_builder_create(op, &b));
  OK(rill_op_builder_input(b, table_slot, &w, 1));
  OK(rill_op_builder_input(b, index_slot, &ids, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_tensor *feeds[2];
  OK(rill_tensor_create(RILL_DTYPE_FP32, wd, 2, &feeds[0]));
  OK(rill_tensor_create(RILL_DTYPE_INT64, idd, 2, &feeds[1]));
  memset(rill_tensor_data(feeds[0]), 0, 15 * sizeof(float));
  int64_t *id = rill_tensor_data(feeds[1]);
  id[0] = 1, id[1] = 4, id[2] = 5, id[3] = 0;
  const char *names[] = {"w", "ids"};
  char *msg = device_run_error(p, names, feeds, 2, "out");
  char want[64];
  snprintf(want, sizeof want, "input %s (ids) holds 5 at position 2", index_slot);
  cr_assert(strstr(msg, want) && strstr(msg, tail) && strstr(msg, table_slot), "%s: %s", op, msg);
  free(msg);
}

Test(cuda_kernels, lookup_table_refuses_an_id_outside_the_table) {
  NEED_CUDA_DEVICE();
  refuses_an_index_outside("lookup_table", "W", "Ids", "5 rows");
}

/* ---- comparisons ---- */

/* Each comparison with a bool output: int64 operands of few values (ties), a broadcast
 * float32 Y with NaN among X (every comparison false but not_equal), float64, int32 and
 * bool. */
#define COMPARE_CASES(name, op)                                                                                  \
  Test(cuda_kernels, name) {                                                                                     \
    op_case c = {op, {IN("X", "x", 0, 3, 4, 5, 6), IN("Y", "y", 0, 3, 4, 5, 6)}, {OUT("Out", "out", 4, 5, 6)},    \
                 NULL, 0};                                                                                       \
    c.in[0].dtype = c.in[1].dtype = RILL_DTYPE_INT64;                                                            \
    c.out[0].boolean = true;                                                                                     \
    compare(&c);                                                                                                 \
    op_case f = {op, {IN("X", "x", -1, 1, 4, 5, 6), IN("Y", "y", -1, 1, 6)}, {OUT("Out", "out", 4, 5, 6)}, NULL, \
                 0};                                                                                             \
    f.in[0].nan_every = 7;                                                                                       \
    f.out[0].boolean = true;                                                                                     \
    compare(&f);                                                                                                 \
    op_case g = {op, {IN("X", "x", -1, 1, 3, 7), IN("Y", "y", -1, 1, 3, 7)}, {OUT("Out", "out", 3, 7)}, NULL, 0}; \
    g.in[0].dtype = g.in[1].dtype = RILL_DTYPE_FP64;                                                             \
    g.out[0].boolean = true;                                                                                     \
    compare(&g);                                                                                                 \
    g.in[0].dtype = g.in[1].dtype = RILL_DTYPE_INT32;                                                            \
    g.in[0].lo = g.in[1].lo = 0, g.in[0].hi = g.in[1].hi = 2;                                                     \
    compare(&g);                                                                                                 \
  }
COMPARE_CASES(less_than, "less_than")
COMPARE_CASES(less_equal, "less_equal")
COMPARE_CASES(greater_than, "greater_than")
COMPARE_CASES(greater_equal, "greater_equal")
COMPARE_CASES(equal, "equal")
COMPARE_CASES(not_equal, "not_equal")

Test(cuda_kernels, equal_bool) {
  op_case c = {"equal", {IN("X", "x", 0, 1, 9, 5), IN("Y", "y", 0, 1, 9, 5)}, {OUT("Out", "out", 9, 5)}, NULL, 0};
  c.in[0].boolean = c.in[1].boolean = c.out[0].boolean = true;
  compare(&c);
}

/* The logical ops over bool tensors of one shape (logical_not: X alone). */
Test(cuda_kernels, logical_ops) {
  const char *ops[] = {"logical_and", "logical_or", "logical_xor"};
  for (int i = 0; i < 3; i++) {
    op_case c = {ops[i], {IN("X", "x", 0, 1, 7, 9), IN("Y", "y", 0, 1, 7, 9)}, {OUT("Out", "out", 7, 9)}, NULL, 0};
    c.in[0].boolean = c.in[1].boolean = c.out[0].boolean = true;
    compare(&c);
  }
  op_case n = {"logical_not", {IN("X", "x", 0, 1, 7, 9)}, {OUT("Out", "out", 7, 9)}, NULL, 0};
  n.in[0].boolean = n.out[0].boolean = true;
  compare(&n);
}

/* ---- one_hot ---- */

static void one_hot_7_f32(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "depth", 7));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_FP32));
}
static void one_hot_4_i64_lenient(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "depth", 4));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_INT64));
  OK(rill_op_builder_attr_bool(b, "allow_out_of_range", true));
}

/* one_hot_v2 appends the depth (int64 indices, float32 out); Fluid's one_hot replaces
 * the trailing 1 (int32 indices, int64 out), indices past the depth ignored. */
Test(cuda_kernels, one_hot_both_forms) {
  op_case c = {"one_hot_v2", {IN("X", "x", 0, 6, 4, 5)}, {OUT("Out", "out", 4, 5, 7)}, one_hot_7_f32, 0};
  c.in[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
  op_case v1 = {"one_hot", {IN("X", "x", -1, 5, 40, 1)}, {OUT("Out", "out", 40, 4)}, one_hot_4_i64_lenient, 0};
  v1.in[0].dtype = RILL_DTYPE_INT32;
  v1.out[0].dtype = RILL_DTYPE_INT64;
  compare(&v1);
}

/* An index outside the depth, allow_out_of_range off: the CPU's error, on the device. */
Test(cuda_kernels, one_hot_refuses_an_index_outside_the_depth) {
  NEED_CUDA_DEVICE();
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t idd[] = {3, 1};
  OK(rill_block_add_var(p, 0, "ids", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT64, idd, 2, 0, false));
  OK(rill_block_add_var(p, 0, "out", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL, 0, 0, false));
  rill_op_builder *b;
  const char *ids = "ids", *out = "out";
  OK(rill_op_builder_create("one_hot", &b));
  OK(rill_op_builder_input(b, "X", &ids, 1));
  OK(rill_op_builder_output(b, "Out", &out, 1));
  OK(rill_op_builder_attr_int(b, "depth", 4));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_tensor *feed;
  OK(rill_tensor_create(RILL_DTYPE_INT64, idd, 2, &feed));
  int64_t *id = rill_tensor_data(feed);
  id[0] = 0, id[1] = 7, id[2] = 1;
  char *msg = device_run_error(p, &ids, &feed, 1, out);
  cr_assert(strstr(msg, "input X (ids) holds index 7 at 1, outside [0, 4)"), "%s", msg);
  free(msg);
}

/* ---- gather ---- */

static void gather_overwrite_off(rill_op_builder *b) { OK(rill_op_builder_attr_bool(b, "overwrite", false)); }

/* Rows of X [5, 3, 4] by 9 indices (repeats among them), int64 [N] and int32 [N, 1]. */
Test(cuda_kernels, gather_rows) {
  op_case c = {"gather", {IN("X", "x", -1, 1, 5, 3, 4), IN("Index", "i", 0, 4, 9)}, {OUT("Out", "out", 9, 3, 4)}, NULL, 0};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
  op_case d = {"gather", {IN("X", "x", -1, 1, 6, 7), IN("Index", "i", 0, 5, 11, 1)}, {OUT("Out", "out", 11, 7)}, NULL, 0};
  d.in[1].dtype = RILL_DTYPE_INT32;
  compare(&d);
}

/* X@GRAD from repeated indices: the last one's row with overwrite (the default), their
 * sum in order without. */
Test(cuda_kernels, gather_grad_overwrite_and_sum) {
  op_case c = {"gather_grad",
               {IN("X", "x", 0, 0, 5, 3, 4), IN("Index", "i", 0, 4, 9), IN("Out@GRAD", "dout", -1, 1, 9, 3, 4)},
               {OUT("X@GRAD", "dx", 5, 3, 4)}, NULL, 0};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
  c.attrs = gather_overwrite_off;
  compare(&c);
}

Test(cuda_kernels, gather_refuses_an_index_outside_x) {
  NEED_CUDA_DEVICE();
  refuses_an_index_outside("gather", "X", "Index", "outside [0, 5) of dim 0 of input X (w)");
}

/* ---- gather_nd, index_select, index_sample ---- */

static void dim0(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "dim", 0)); }
static void dim1(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "dim", 1)); }
static void dim_last(rill_op_builder *b) { OK(rill_op_builder_attr_int(b, "dim", -1)); }

/* Slices of X [4, 5, 6] by pairs (rows of 6) and by whole tuples (single elements),
 * indices repeating, int64 and int32; X of every copied dtype. */
Test(cuda_kernels, gather_nd_pairs_and_tuples) {
  op_case c = {"gather_nd", {IN("X", "x", -1, 1, 4, 5, 6), IN("Index", "i", 0, 3, 7, 2)}, {OUT("Out", "out", 7, 6)}, NULL, 0};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
  op_case t = {"gather_nd", {IN("X", "x", -1, 1, 4, 5, 6), IN("Index", "i", 0, 3, 2, 3, 3)}, {OUT("Out", "out", 2, 3)}, NULL, 0};
  t.in[1].dtype = RILL_DTYPE_INT32;
  compare(&t);
  const rill_dtype dts[] = {RILL_DTYPE_FP64, RILL_DTYPE_INT32, RILL_DTYPE_INT64};
  for (int k = 0; k < 3; k++) {
    c.in[0].dtype = c.out[0].dtype = dts[k];
    compare(&c);
  }
}

/* Along the first, a middle and the last dim, repeats among the 4 indices. */
Test(cuda_kernels, index_select_each_dim) {
  op_case a = {"index_select", {IN("X", "x", -1, 1, 5, 7, 3), IN("Index", "i", 0, 2, 4)}, {OUT("Out", "out", 4, 7, 3)}, dim0, 0};
  a.in[1].dtype = RILL_DTYPE_INT64;
  compare(&a);
  op_case m = {"index_select", {IN("X", "x", -1, 1, 5, 7, 3), IN("Index", "i", 0, 6, 4)}, {OUT("Out", "out", 5, 4, 3)}, dim1, 0};
  m.in[1].dtype = RILL_DTYPE_INT32;
  compare(&m);
  op_case l = {"index_select", {IN("X", "x", -1, 1, 5, 7, 3), IN("Index", "i", 0, 2, 4)}, {OUT("Out", "out", 5, 7, 4)}, dim_last, 0};
  l.in[1].dtype = RILL_DTYPE_INT64;
  l.in[0].dtype = l.out[0].dtype = RILL_DTYPE_INT64;
  compare(&l);
}

Test(cuda_kernels, index_sample_rows) {
  op_case c = {"index_sample", {IN("X", "x", -1, 1, 6, 9), IN("Index", "i", 0, 8, 6, 4)}, {OUT("Out", "out", 6, 4)}, NULL, 0};
  c.in[1].dtype = RILL_DTYPE_INT64;
  compare(&c);
  c.in[0].dtype = c.out[0].dtype = RILL_DTYPE_FP64;
  compare(&c);
}

/* The gradients: X@GRAD's addressed slices sum their Out@GRAD rows in order (indices
 * drawn from few values, so they repeat), the others zero; bit for bit. */
Test(cuda_kernels, index_gradients_sum_repeats) {
  op_case nd = {"gather_nd_grad",
                {IN("X", "x", 0, 0, 4, 5, 6), IN("Index", "i", 0, 2, 9, 2), IN("Out@GRAD", "dout", -1, 1, 9, 6)},
                {OUT("X@GRAD", "dx", 4, 5, 6)}, NULL, 0};
  nd.in[1].dtype = RILL_DTYPE_INT64;
  compare(&nd);
  op_case sel = {"index_select_grad",
                 {IN("X", "x", 0, 0, 5, 7, 3), IN("Index", "i", 0, 3, 8), IN("Out@GRAD", "dout", -1, 1, 5, 8, 3)},
                 {OUT("X@GRAD", "dx", 5, 7, 3)}, dim1, 0};
  sel.in[1].dtype = RILL_DTYPE_INT32;
  compare(&sel);
  op_case smp = {"index_sample_grad",
                 {IN("X", "x", 0, 0, 6, 9), IN("Index", "i", 0, 3, 6, 5), IN("Out@GRAD", "dout", -1, 1, 6, 5)},
                 {OUT("X@GRAD", "dx", 6, 9)}, NULL, 0};
  smp.in[1].dtype = RILL_DTYPE_INT64;
  compare(&smp);
}

Test(cuda_kernels, index_select_refuses_an_index_outside_x) {
  NEED_CUDA_DEVICE();
  refuses_an_index_outside("index_select", "X", "Index", "outside [0, 5) of dim 0 of input X (w)");
}

/* ---- sequence_pool ---- */

static const char *const pool_types[] = {"AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"};
static const char *pool_type;
static void pooltype(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "pooltype", pool_type));
  OK(rill_op_builder_attr_float(b, "pad_value", 0.5f));
}

/* Every pool type over X [14, 3, 5] (rows of 15) in 5 sequences, one of them empty (pad
 * 0.5, MaxIndex -1): sums and maxima in the CPU's order, bit for bit; then each
 * gradient (MAX's from a single sequence, where any MaxIndex row is valid). */
Test(cuda_kernels, sequence_pool_every_type_and_gradient) {
  static const uint64_t lod[] = {0, 3, 4, 4, 9, 14}, one[] = {0, 14};
  for (int t = 0; t < 6; t++) {
    pool_type = pool_types[t];
    op_case c = {"sequence_pool", {IN("X", "x", -1, 1, 14, 3, 5)}, {OUT("Out", "out", 5, 3, 5)}, pooltype, 0};
    c.in[0].lod = lod, c.in[0].nlod = 6;
    if (t == 3) c.out[1] = (arg)OUT("MaxIndex", "mi", 5, 3, 5), c.out[1].dtype = RILL_DTYPE_INT32;
    compare(&c);
    op_case g = {"sequence_pool_grad",
                 {IN("X", "x", -1, 1, 14, 3, 5), IN("Out@GRAD", "dout", -1, 1, 5, 3, 5)},
                 {OUT("X@GRAD", "dx", 14, 3, 5)}, pooltype, 0};
    g.in[0].lod = lod, g.in[0].nlod = 6;
    if (t == 3) {
      g.in[1] = (arg)IN("MaxIndex", "mi", 0, 13, 1, 3, 5), g.in[1].dtype = RILL_DTYPE_INT32;
      g.in[2] = (arg)IN("Out@GRAD", "dout", -1, 1, 1, 3, 5);
      g.in[0].lod = one, g.in[0].nlod = 2;
    }
    compare(&g);
  }
}

/* A MaxIndex row outside its sequence: the CPU's error, read back on the device. */
Test(cuda_kernels, sequence_pool_grad_refuses_a_max_index_outside_its_sequence) {
  NEED_CUDA_DEVICE();
  rill_program *p;
  OK(rill_program_create(&p));
  const int64_t xd[] = {5, 2}, od[] = {2, 2};
  OK(rill_block_add_var(p, 0, "x", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, xd, 2, 1, false));
  OK(rill_block_add_var(p, 0, "mi", RILL_VAR_LOD_TENSOR, RILL_DTYPE_INT32, od, 2, 0, false));
  OK(rill_block_add_var(p, 0, "dout", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, od, 2, 0, false));
  OK(rill_block_add_var(p, 0, "dx", RILL_VAR_LOD_TENSOR, RILL_DTYPE_FP32, NULL, 0, 0, false));
  rill_op_builder *b;
  const char *x = "x", *mi = "mi", *dout = "dout", *dx = "dx";
  OK(rill_op_builder_create("sequence_pool_grad", &b));
  OK(rill_op_builder_input(b, "X", &x, 1));
  OK(rill_op_builder_input(b, "MaxIndex", &mi, 1));
  OK(rill_op_builder_input(b, "Out@GRAD", &dout, 1));
  OK(rill_op_builder_output(b, "X@GRAD", &dx, 1));
  OK(rill_op_builder_attr_string(b, "pooltype", "MAX"));
  OK(rill_op_builder_append(b, p, 0));
  rill_op_builder_destroy(b);
  rill_tensor *feeds[3];
  OK(rill_tensor_create(RILL_DTYPE_FP32, xd, 2, &feeds[0]));
  OK(rill_tensor_create(RILL_DTYPE_INT32, od, 2, &feeds[1]));
  OK(rill_tensor_create(RILL_DTYPE_FP32, od, 2, &feeds[2]));
  memset(rill_tensor_data(feeds[0]), 0, 10 * sizeof(float));
  memset(rill_tensor_data(feeds[2]), 0, 4 * sizeof(float));
  static const uint64_t lod[] = {0, 3, 5};
  const uint64_t *levels[] = {lod};
  const size_t counts[] = {3};
  OK(rill_tensor_set_lod(feeds[0], 1, levels, counts));
  int32_t *m = rill_tensor_data(feeds[1]);
  m[0] = 1, m[1] = 2, m[2] = 4, m[3] = 1; /* sequence 1 spans rows 3..4: row 1 is not in it */
  const char *names[] = {"x", "mi", "dout"};
  char *msg = device_run_error(p, names, feeds, 3, "dx");
  cr_assert(strstr(msg, "input MaxIndex (mi) holds row 1 for sequence 1, which spans rows 3..4"), "%s", msg);
  free(msg);
}

/* ---- lstm ---- */

static void lstm_plain(rill_op_builder *b) { OK(rill_op_builder_attr_bool(b, "use_peepholes", false)); }
static void lstm_peep_reverse(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "use_peepholes", true));
  OK(rill_op_builder_attr_bool(b, "is_reverse", true));
}
static void lstm_other_acts(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "use_peepholes", true));
  OK(rill_op_builder_attr_string(b, "gate_activation", "tanh"));
  OK(rill_op_builder_attr_string(b, "cell_activation", "relu"));
  OK(rill_op_builder_attr_string(b, "candidate_activation", "identity"));
}

/* Input [10, 4D] (D = 6) in sequences of 4, 0, 1, 3 and 2 rows: the batch order puts the
 * empty one last and the rest by length; each step's GEMM by Weight, the cell update,
 * and Hidden and Cell back in sequence order, with and without peepholes, backwards,
 * from H0 / C0, and with each of the recurrent activations. */
static const uint64_t lstm_lod[] = {0, 4, 4, 5, 8, 10};

Test(cuda_kernels, lstm_forward) {
  struct {
    void (*attrs)(rill_op_builder *);
    int64_t nbias;
    bool states;
  } variants[] = {{lstm_plain, 24, false}, {lstm_peep_reverse, 42, true}, {lstm_other_acts, 42, false}};
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
    op_case c = {"lstm",
                 {IN("Input", "x", -1, 1, 10, 24), IN("Weight", "w", -0.5f, 0.5f, 6, 24),
                  IN("Bias", "b", -0.5f, 0.5f, 1, variants[v].nbias)},
                 {OUT("Hidden", "h", 10, 6), OUT("Cell", "c", 10, 6), OUT("BatchGate", "bg", 10, 24),
                  OUT("BatchCellPreAct", "bca", 10, 6)},
                 variants[v].attrs, 1e-5};
    if (variants[v].states) {
      c.in[3] = (arg)IN("H0", "h0", -1, 1, 5, 6);
      c.in[4] = (arg)IN("C0", "c0", -1, 1, 5, 6);
    }
    c.in[0].lod = lstm_lod, c.in[0].nlod = 6;
    compare(&c);
  }
}

/* lstm_grad from the same inputs and forward results (drawn at random: both places get
 * the same ones): every gradient, the peephole weights' summed in the CPU's order, H0@GRAD
 * and C0@GRAD back in sequence order. */
#define LSTM_GRAD_INS(nbias)                                                                                  \
  IN("Input", "x", -1, 1, 10, 24), IN("Weight", "w", -0.5f, 0.5f, 6, 24), IN("Bias", "b", -0.5f, 0.5f, 1, nbias), \
      IN("Hidden", "h", -1, 1, 10, 6), IN("Cell", "c", -1, 1, 10, 6), IN("BatchGate", "bg", 0, 1, 10, 24),        \
      IN("BatchCellPreAct", "bca", -1, 1, 10, 6), IN("Hidden@GRAD", "dh", -1, 1, 10, 6)
#define LSTM_GRAD_OUTS(nbias) \
  OUT("Input@GRAD", "dx", 10, 24), OUT("Weight@GRAD", "dw", 6, 24), OUT("Bias@GRAD", "db", 1, nbias)

Test(cuda_kernels, lstm_grad) {
  op_case plain = {"lstm_grad", {LSTM_GRAD_INS(24)}, {LSTM_GRAD_OUTS(24)}, lstm_plain, 1e-5};
  op_case peep = {"lstm_grad",
                  {LSTM_GRAD_INS(42), IN("H0", "h0", -1, 1, 5, 6), IN("C0", "c0", -1, 1, 5, 6)},
                  {LSTM_GRAD_OUTS(42), OUT("H0@GRAD", "dh0", 5, 6), OUT("C0@GRAD", "dc0", 5, 6)},
                  lstm_peep_reverse, 1e-5};
  op_case acts = {"lstm_grad", {LSTM_GRAD_INS(42), IN("C0", "c0", -1, 1, 5, 6)},
                  {LSTM_GRAD_OUTS(42), OUT("C0@GRAD", "dc0", 5, 6)}, lstm_other_acts, 1e-5};
  op_case *cases[] = {&plain, &peep, &acts};
  for (size_t i = 0; i < 3; i++) {
    cases[i]->in[0].lod = lstm_lod, cases[i]->in[0].nlod = 6;
    compare(cases[i]);
  }
}

static void forget_bias_half(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "forget_bias", 0.5f)); }

/* lstm_unit, one step of 7 rows (D = 5), with a forget bias, and its gradients. */
Test(cuda_kernels, lstm_unit_and_gradient) {
  op_case c = {"lstm_unit", {IN("X", "x", -2, 2, 7, 20), IN("C_prev", "cp", -1, 1, 7, 5)},
               {OUT("C", "c", 7, 5), OUT("H", "h", 7, 5)}, forget_bias_half, 1e-5};
  compare(&c);
  op_case g = {"lstm_unit_grad",
               {IN("X", "x", -2, 2, 7, 20), IN("C_prev", "cp", -1, 1, 7, 5), IN("C", "c", -1, 1, 7, 5),
                IN("H@GRAD", "dh", -1, 1, 7, 5), IN("C@GRAD", "dc", -1, 1, 7, 5)},
               {OUT("X@GRAD", "dx", 7, 20), OUT("C_prev@GRAD", "dcp", 7, 5)}, forget_bias_half, 1e-5};
  compare(&g);
}

/* ---- lstmp ---- */

static void lstmp_plain(rill_op_builder *b) { OK(rill_op_builder_attr_bool(b, "use_peepholes", false)); }
static void lstmp_clipped(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "use_peepholes", true));
  OK(rill_op_builder_attr_bool(b, "is_reverse", true));
  OK(rill_op_builder_attr_float(b, "cell_clip", 0.3f));
  OK(rill_op_builder_attr_float(b, "proj_clip", 0.2f));
}
static void lstmp_other_acts(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "use_peepholes", true));
  OK(rill_op_builder_attr_string(b, "gate_activation", "tanh"));
  OK(rill_op_builder_attr_string(b, "cell_activation", "relu"));
  OK(rill_op_builder_attr_string(b, "candidate_activation", "identity"));
  OK(rill_op_builder_attr_string(b, "proj_activation", "identity"));
}
static void lstmp_sigmoid_projection(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "use_peepholes", false));
  OK(rill_op_builder_attr_string(b, "proj_activation", "sigmoid"));
  OK(rill_op_builder_attr_float(b, "proj_clip", 0.6f));
}

/* lstmp over lstm's sequences (Input [10, 4D], D = 6, P = 4): the product of the previous
 * step's projection by Weight [P, 4D], the cell update (clipped with cell_clip), the
 * hidden rows' product by ProjWeight [D, P] and the projection's activation (tanh by
 * default, sigmoid, or none) and clip, backwards and from H0 [N, P] / C0 [N, D]. */
Test(cuda_kernels, lstmp_forward) {
  struct {
    void (*attrs)(rill_op_builder *);
    int64_t nbias;
    bool states;
  } variants[] = {{lstmp_plain, 24, false},
                  {lstmp_clipped, 42, true},
                  {lstmp_other_acts, 42, false},
                  {lstmp_sigmoid_projection, 24, true}};
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
    op_case c = {"lstmp",
                 {IN("Input", "x", -1, 1, 10, 24), IN("Weight", "w", -0.5f, 0.5f, 4, 24),
                  IN("ProjWeight", "pw", -0.5f, 0.5f, 6, 4), IN("Bias", "b", -0.5f, 0.5f, 1, variants[v].nbias)},
                 {OUT("Projection", "r", 10, 4), OUT("Cell", "c", 10, 6), OUT("BatchGate", "bg", 10, 24),
                  OUT("BatchCellPreAct", "bca", 10, 6), OUT("BatchHidden", "bh", 10, 6)},
                 variants[v].attrs, 1e-5};
    if (variants[v].states) {
      c.in[4] = (arg)IN("H0", "h0", -1, 1, 5, 4);
      c.in[5] = (arg)IN("C0", "c0", -1, 1, 5, 6);
    }
    c.in[0].lod = lstm_lod, c.in[0].nlod = 6;
    compare(&c);
  }
}

/* lstmp_grad from drawn forward results (the same on both places): the projection's
 * gradient through its clip and activation, the cells' through cell_clip, every
 * gradient output, Bias@GRAD's peephole part in the CPU's order, H0@GRAD [N, P] and
 * C0@GRAD in sequence order. */
#define LSTMP_GRAD_INS(nbias)                                                                                  \
  IN("Projection", "r", -1, 1, 10, 4), IN("Weight", "w", -0.5f, 0.5f, 4, 24),                                  \
      IN("ProjWeight", "pw", -0.5f, 0.5f, 6, 4), IN("Bias", "b", -0.5f, 0.5f, 1, nbias),                        \
      IN("Cell", "c", -1, 1, 10, 6), IN("BatchGate", "bg", 0, 1, 10, 24), IN("BatchCellPreAct", "bca", -1, 1, 10, 6), \
      IN("BatchHidden", "bh", -1, 1, 10, 6), IN("Projection@GRAD", "dr", -1, 1, 10, 4)
#define LSTMP_GRAD_OUTS(nbias)                                                                     \
  OUT("Input@GRAD", "dx", 10, 24), OUT("Weight@GRAD", "dw", 4, 24), OUT("ProjWeight@GRAD", "dpw", 6, 4), \
      OUT("Bias@GRAD", "db", 1, nbias)

Test(cuda_kernels, lstmp_grad) {
  op_case plain = {"lstmp_grad", {LSTMP_GRAD_INS(24)}, {LSTMP_GRAD_OUTS(24)}, lstmp_plain, 1e-5};
  op_case clipped = {"lstmp_grad",
                     {LSTMP_GRAD_INS(42), IN("H0", "h0", -1, 1, 5, 4), IN("C0", "c0", -1, 1, 5, 6)},
                     {LSTMP_GRAD_OUTS(42), OUT("H0@GRAD", "dh0", 5, 4), OUT("C0@GRAD", "dc0", 5, 6)},
                     lstmp_clipped, 1e-5};
  op_case acts = {"lstmp_grad", {LSTMP_GRAD_INS(42), IN("C0", "c0", -1, 1, 5, 6)},
                  {LSTMP_GRAD_OUTS(42), OUT("C0@GRAD", "dc0", 5, 6)}, lstmp_other_acts, 1e-5};
  op_case sig = {"lstmp_grad",
                 {LSTMP_GRAD_INS(24), IN("H0", "h0", -1, 1, 5, 4), IN("C0", "c0", -1, 1, 5, 6)},
                 {OUT("Weight@GRAD", "dw", 4, 24), OUT("H0@GRAD", "dh0", 5, 4)}, lstmp_sigmoid_projection, 1e-5};
  op_case *cases[] = {&plain, &clipped, &acts, &sig};
  for (size_t i = 0; i < 4; i++) {
    cases[i]->in[0].lod = lstm_lod, cases[i]->in[0].nlod = 6;
    compare(cases[i]);
  }
}

/* ---- gru ---- */

static void gru_default(rill_op_builder *b) { (void)b; }
static void gru_origin_reverse(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "origin_mode", true));
  OK(rill_op_builder_attr_bool(b, "is_reverse", true));
}
static void gru_other_acts(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "activation", "relu"));
  OK(rill_op_builder_attr_string(b, "gate_activation", "tanh"));
}

/* Input [10, 3D] (D = 5) in lstm's sequences (one empty): the gates' product by W_ur and
 * the candidate's by W_c as blocks of the [rows, 3D] gates, the output in both modes,
 * backwards, from H0, without a bias, and with other activations; Hidden back in
 * sequence order. */
Test(cuda_kernels, gru_forward) {
  op_case plain = {"gru",
                   {IN("Input", "x", -1, 1, 10, 15), IN("Weight", "w", -0.5f, 0.5f, 5, 15),
                    IN("Bias", "b", -0.5f, 0.5f, 1, 15)},
                   {OUT("BatchGate", "bg", 10, 15), OUT("BatchResetHiddenPrev", "brh", 10, 5),
                    OUT("BatchHidden", "bh", 10, 5), OUT("Hidden", "h", 10, 5)},
                   gru_default, 1e-5};
  op_case origin = {"gru",
                    {IN("Input", "x", -1, 1, 10, 15), IN("Weight", "w", -0.5f, 0.5f, 5, 15),
                     IN("Bias", "b", -0.5f, 0.5f, 1, 15), IN("H0", "h0", -1, 1, 5, 5)},
                    {OUT("BatchGate", "bg", 10, 15), OUT("BatchResetHiddenPrev", "brh", 10, 5),
                     OUT("BatchHidden", "bh", 10, 5), OUT("Hidden", "h", 10, 5)},
                    gru_origin_reverse, 1e-5};
  op_case acts = {"gru", {IN("Input", "x", -1, 1, 10, 15), IN("Weight", "w", -0.5f, 0.5f, 5, 15)},
                  {OUT("Hidden", "h", 10, 5)}, gru_other_acts, 1e-5};
  op_case *cases[] = {&plain, &origin, &acts};
  for (size_t i = 0; i < 3; i++) {
    cases[i]->in[0].lod = lstm_lod, cases[i]->in[0].nlod = 6;
    compare(cases[i]);
  }
}

#define GRU_GRAD_INS                                                                                           \
  IN("Input", "x", -1, 1, 10, 15), IN("Weight", "w", -0.5f, 0.5f, 5, 15), IN("BatchGate", "bg", 0, 1, 10, 15), \
      IN("BatchResetHiddenPrev", "brh", -1, 1, 10, 5), IN("BatchHidden", "bh", -1, 1, 10, 5),                  \
      IN("Hidden", "h", -1, 1, 10, 5), IN("Hidden@GRAD", "dh", -1, 1, 10, 5)

/* gru_grad from random inputs and forward results (the same on both places): every
 * gradient, in both modes, from H0 and without it, with and without a bias. */
Test(cuda_kernels, gru_grad) {
  op_case plain = {"gru_grad", {GRU_GRAD_INS, IN("Bias", "b", -0.5f, 0.5f, 1, 15)},
                   {OUT("Input@GRAD", "dx", 10, 15), OUT("Weight@GRAD", "dw", 5, 15), OUT("Bias@GRAD", "db", 1, 15)},
                   gru_default, 1e-5};
  op_case origin = {"gru_grad",
                    {GRU_GRAD_INS, IN("Bias", "b", -0.5f, 0.5f, 1, 15), IN("H0", "h0", -1, 1, 5, 5)},
                    {OUT("Input@GRAD", "dx", 10, 15), OUT("H0@GRAD", "dh0", 5, 5), OUT("Weight@GRAD", "dw", 5, 15),
                     OUT("Bias@GRAD", "db", 1, 15)},
                    gru_origin_reverse, 1e-5};
  op_case acts = {"gru_grad", {GRU_GRAD_INS, IN("H0", "h0", -1, 1, 5, 5)},
                  {OUT("Input@GRAD", "dx", 10, 15), OUT("Weight@GRAD", "dw", 5, 15)}, gru_other_acts, 1e-5};
  op_case *cases[] = {&plain, &origin, &acts};
  for (size_t i = 0; i < 3; i++) {
    cases[i]->in[0].lod = lstm_lod, cases[i]->in[0].nlod = 6;
    compare(cases[i]);
  }
}

static void gru_unit_origin_relu(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "origin_mode", true));
  OK(rill_op_builder_attr_int(b, "activation", 3));
  OK(rill_op_builder_attr_int(b, "gate_activation", 2));
}

/* gru_unit, one step of 6 rows (D = 5): the gates' product by W_ur and the candidate's by
 * W_c as blocks of Gate [6, 15], with Paddle's defaults and in origin mode with other
 * activations, and the gradients of all four inputs. */
Test(cuda_kernels, gru_unit_and_gradient) {
  op_case c = {"gru_unit",
               {IN("Input", "x", -1, 1, 6, 15), IN("HiddenPrev", "hp", -1, 1, 6, 5),
                IN("Weight", "w", -0.5f, 0.5f, 5, 15), IN("Bias", "b", -0.5f, 0.5f, 1, 15)},
               {OUT("Gate", "g", 6, 15), OUT("ResetHiddenPrev", "rhp", 6, 5), OUT("Hidden", "h", 6, 5)},
               gru_default, 1e-5};
  compare(&c);
  c.attrs = gru_unit_origin_relu;
  compare(&c);
  op_case g = {"gru_unit_grad",
               {IN("Input", "x", -1, 1, 6, 15), IN("HiddenPrev", "hp", -1, 1, 6, 5),
                IN("Weight", "w", -0.5f, 0.5f, 5, 15), IN("Bias", "b", -0.5f, 0.5f, 1, 15),
                IN("Gate", "g", 0, 1, 6, 15), IN("ResetHiddenPrev", "rhp", -1, 1, 6, 5),
                IN("Hidden@GRAD", "dh", -1, 1, 6, 5)},
               {OUT("Input@GRAD", "dx", 6, 15), OUT("HiddenPrev@GRAD", "dhp", 6, 5), OUT("Weight@GRAD", "dw", 5, 15),
                OUT("Bias@GRAD", "db", 1, 15)},
               gru_default, 1e-5};
  compare(&g);
  g.attrs = gru_unit_origin_relu;
  compare(&g);
}

/* ---- sequence_conv ---- */

static void context_3_from_minus_1(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "contextLength", 3));
  OK(rill_op_builder_attr_int(b, "contextStart", -1));
}
static void context_4_from_minus_2_trainable(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "contextLength", 4));
  OK(rill_op_builder_attr_int(b, "contextStart", -2));
  OK(rill_op_builder_attr_bool(b, "paddingTrainable", true));
}

/* X [12, 5] in sequences of 4, 1, 4 and 3 rows: context windows of 3 from -1 (zeros
 * past a sequence's ends), and of 4 from -2 reading PaddingData's 3 rows there; the
 * gradients of X, PaddingData and Filter, each slot's gradient added back in the CPU's
 * order. */
Test(cuda_kernels, sequence_conv_and_gradients) {
  static const uint64_t lod[] = {0, 4, 5, 9, 12};
  op_case c = {"sequence_conv", {IN("X", "x", -1, 1, 12, 5), IN("Filter", "w", -1, 1, 15, 7)},
               {OUT("Out", "out", 12, 7)}, context_3_from_minus_1, 1e-5};
  c.in[0].lod = lod, c.in[0].nlod = 5;
  compare(&c);
  op_case t = {"sequence_conv",
               {IN("X", "x", -1, 1, 12, 5), IN("PaddingData", "pad", -1, 1, 3, 5), IN("Filter", "w", -1, 1, 20, 7)},
               {OUT("Out", "out", 12, 7)}, context_4_from_minus_2_trainable, 1e-5};
  t.in[0].lod = lod, t.in[0].nlod = 5;
  compare(&t);
  op_case g = {"sequence_conv_grad",
               {IN("X", "x", -1, 1, 12, 5), IN("Filter", "w", -1, 1, 15, 7), IN("Out@GRAD", "dout", -1, 1, 12, 7)},
               {OUT("X@GRAD", "dx", 12, 5), OUT("Filter@GRAD", "dw", 15, 7)}, context_3_from_minus_1, 1e-5};
  g.in[0].lod = lod, g.in[0].nlod = 5;
  compare(&g);
  op_case tg = {"sequence_conv_grad",
                {IN("X", "x", -1, 1, 12, 5), IN("PaddingData", "pad", -1, 1, 3, 5), IN("Filter", "w", -1, 1, 20, 7),
                 IN("Out@GRAD", "dout", -1, 1, 12, 7)},
                {OUT("X@GRAD", "dx", 12, 5), OUT("PaddingData@GRAD", "dpad", 3, 5), OUT("Filter@GRAD", "dw", 20, 7)},
                context_4_from_minus_2_trainable, 1e-5};
  tg.in[0].lod = lod, tg.in[0].nlod = 5;
  compare(&tg);
}

/* ---- fill_constant ---- */

static void fill_f32(rill_op_builder *b) {
  OK(rill_op_builder_attr_longs(b, "shape", (const int64_t[]){3, 4}, 2));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_FP32));
  OK(rill_op_builder_attr_float(b, "value", 2.5f));
}
static void fill_i64_exact(rill_op_builder *b) {
  OK(rill_op_builder_attr_longs(b, "shape", (const int64_t[]){5}, 1));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_INT64));
  OK(rill_op_builder_attr_string(b, "str_value", "9007199254740993")); /* 2^53 + 1: not a double */
}
static void fill_i32(rill_op_builder *b) {
  OK(rill_op_builder_attr_longs(b, "shape", (const int64_t[]){2, 3}, 2));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_INT32));
  OK(rill_op_builder_attr_float(b, "value", -7.0f));
}
static void fill_f64_zero(rill_op_builder *b) {
  OK(rill_op_builder_attr_longs(b, "shape", (const int64_t[]){129}, 1));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_FP64));
}

/* Each dtype's value as the CPU writes it: float, an int64 beyond a double's precision
 * from str_value, int32, and zeros (a memset). */
Test(cuda_kernels, fill_constant_every_dtype) {
  op_case f = {"fill_constant", {{0}}, {OUT("Out", "out", 3, 4)}, fill_f32, 0};
  compare(&f);
  op_case l = {"fill_constant", {{0}}, {OUT("Out", "out", 5)}, fill_i64_exact, 0};
  l.out[0].dtype = RILL_DTYPE_INT64;
  compare(&l);
  op_case i = {"fill_constant", {{0}}, {OUT("Out", "out", 2, 3)}, fill_i32, 0};
  i.out[0].dtype = RILL_DTYPE_INT32;
  compare(&i);
  op_case z = {"fill_constant", {{0}}, {OUT("Out", "out", 129)}, fill_f64_zero, 0};
  z.out[0].dtype = RILL_DTYPE_FP64;
  compare(&z);
}

/* ---- fill_zeros_like, fill_any_like ---- */

/* Zeros shaped like X for float32, int64 and bool X (X read for its shape alone). */
Test(cuda_kernels, fill_zeros_like_every_dtype) {
  op_case f = {"fill_zeros_like", {IN("X", "x", -1, 1, 3, 5)}, {OUT("Out", "out", 3, 5)}, NULL, 0};
  compare(&f);
  op_case l = {"fill_zeros_like", {IN("X", "x", -9, 9, 4)}, {OUT("Out", "out", 4)}, NULL, 0};
  l.in[0].dtype = l.out[0].dtype = RILL_DTYPE_INT64;
  compare(&l);
  op_case b = {"fill_zeros_like", {IN("X", "x", 0, 1, 2, 3)}, {OUT("Out", "out", 2, 3)}, NULL, 0};
  b.in[0].boolean = b.out[0].boolean = true;
  compare(&b);
}

static void any_like_2_5(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "value", 2.5f)); }
static void any_like_int64(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "value", -3.75f));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_INT64));
}
static void any_like_bool(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "value", 0.5f));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_BOOL));
}
static void any_like_int8(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "value", 7.0f));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_INT8));
}

/* The value in X's dtype (float32, int32) or in the dtype attribute's (int64, truncated
 * as the CPU converts it; bool), and an int8 dtype, which the device declines: it runs on
 * the host with the CPU's numbers. */
Test(cuda_kernels, fill_any_like_value_and_dtype) {
  op_case f = {"fill_any_like", {IN("X", "x", -1, 1, 2, 7)}, {OUT("Out", "out", 2, 7)}, any_like_2_5, 0};
  compare(&f);
  op_case i = {"fill_any_like", {IN("X", "x", 0, 5, 6)}, {OUT("Out", "out", 6)}, any_like_2_5, 0};
  i.in[0].dtype = i.out[0].dtype = RILL_DTYPE_INT32;
  compare(&i);
  op_case l = {"fill_any_like", {IN("X", "x", -1, 1, 3, 2)}, {OUT("Out", "out", 3, 2)}, any_like_int64, 0};
  l.out[0].dtype = RILL_DTYPE_INT64;
  compare(&l);
  op_case b = {"fill_any_like", {IN("X", "x", -1, 1, 5)}, {OUT("Out", "out", 5)}, any_like_bool, 0};
  b.out[0].boolean = true;
  compare(&b);
  op_case q = {"fill_any_like", {IN("X", "x", -1, 1, 4)}, {OUT("Out", "out", 4)}, any_like_int8, 0};
  q.out[0].dtype = RILL_DTYPE_INT8;
  compare(&q);
}

/* ---- transpose2 ---- */

static void perm_0231(rill_op_builder *b) { OK(rill_op_builder_attr_ints(b, "axis", (const int32_t[]){0, 2, 3, 1}, 4)); }
static void perm_201(rill_op_builder *b) { OK(rill_op_builder_attr_ints(b, "axis", (const int32_t[]){2, 0, 1}, 3)); }
static void perm_10(rill_op_builder *b) { OK(rill_op_builder_attr_ints(b, "axis", (const int32_t[]){1, 0}, 2)); }

/* NCHW to NHWC on odd sizes, an int64 matrix (every dtype moves as bytes), and the
 * gradient (the inverse permutation). */
Test(cuda_kernels, transpose2_nchw_to_nhwc) {
  op_case c = {"transpose2", {IN("X", "x", -1, 1, 2, 3, 5, 7)}, {OUT("Out", "out", 2, 5, 7, 3)}, perm_0231, 0};
  compare(&c);
}

Test(cuda_kernels, transpose2_int64_matrix) {
  op_case c = {"transpose2", {IN("X", "x", -1000, 1000, 9, 4)}, {OUT("Out", "out", 4, 9)}, perm_10, 0};
  c.in[0].dtype = c.out[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, transpose2_grad) {
  op_case c = {"transpose2_grad", {IN("XShape", "xs", 0, 0, 0, 3, 5, 7), IN("Out@GRAD", "dout", -1, 1, 7, 3, 5)},
               {OUT("X@GRAD", "dx", 3, 5, 7)}, perm_201, 0};
  compare(&c);
}

/* ---- dropout ---- */

static void dropout_fixed(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "dropout_prob", 0.35f));
  OK(rill_op_builder_attr_bool(b, "fix_seed", true));
  OK(rill_op_builder_attr_int(b, "seed", 7));
  OK(rill_op_builder_attr_string(b, "dropout_implementation", "upscale_in_train"));
}
static void dropout_drawn(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "dropout_prob", 0.5f)); }
static void dropout_test_downgrade(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "dropout_prob", 0.25f));
  OK(rill_op_builder_attr_bool(b, "is_test", true));
}

/* The device drops exactly the CPU's elements: with a fixed seed, and with a seed drawn
 * from the executor's generator (a new executor on each place, the same draw). */
Test(cuda_kernels, dropout_fixed_seed_drops_the_cpus_elements) {
  op_case c = {"dropout", {IN("X", "x", -1, 1, 37, 29)}, {OUT("Out", "out", 37, 29), OUT("Mask", "mask", 37, 29)},
               dropout_fixed, 0};
  c.out[1].dtype = RILL_DTYPE_UINT8;
  compare(&c);
}

Test(cuda_kernels, dropout_drawn_seed_drops_the_cpus_elements) {
  op_case c = {"dropout", {IN("X", "x", -1, 1, 1000)}, {OUT("Out", "out", 1000), OUT("Mask", "mask", 1000)},
               dropout_drawn, 0};
  c.out[1].dtype = RILL_DTYPE_UINT8;
  compare(&c);
}

Test(cuda_kernels, dropout_at_test_time_scales) {
  op_case c = {"dropout", {IN("X", "x", -1, 1, 5, 11)}, {OUT("Out", "out", 5, 11), OUT("Mask", "mask", 5, 11)},
               dropout_test_downgrade, 1e-7};
  c.out[1].dtype = RILL_DTYPE_UINT8;
  compare(&c);
}

Test(cuda_kernels, dropout_grad_keeps_the_masked_elements) {
  op_case c = {"dropout_grad", {IN("Mask", "mask", 0, 1, 13, 17), IN("Out@GRAD", "dout", -1, 1, 13, 17)},
               {OUT("X@GRAD", "dx", 13, 17)}, dropout_fixed, 0};
  c.in[0].dtype = RILL_DTYPE_UINT8;
  compare(&c);
}

static void fill_like_batch(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "shape", (const int32_t[]){-1, 4}, 2));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_INT64));
  OK(rill_op_builder_attr_string(b, "str_value", "-9007199254740993"));
}

/* The batch taken from Input, the value an int64 beyond a double's precision. */
Test(cuda_kernels, fill_constant_batch_size_like_int64) {
  op_case c = {"fill_constant_batch_size_like", {IN("Input", "x", -1, 1, 5, 3)}, {OUT("Out", "out", 5, 4)},
               fill_like_batch, 0};
  c.out[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

/* ---- slice, expand_v2, assign ---- */

static void slice_two_axes(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "axes", (const int32_t[]){1, 2}, 2));
  OK(rill_op_builder_attr_ints(b, "starts", (const int32_t[]){1, -5}, 2));
  OK(rill_op_builder_attr_ints(b, "ends", (const int32_t[]){6, 100}, 2));
}
static void slice_row_dropped(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "axes", (const int32_t[]){0}, 1));
  OK(rill_op_builder_attr_ints(b, "starts", (const int32_t[]){2}, 1));
  OK(rill_op_builder_attr_ints(b, "ends", (const int32_t[]){3}, 1));
  OK(rill_op_builder_attr_ints(b, "decrease_axis", (const int32_t[]){0}, 1));
}
static void slice_axis1(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "axes", (const int32_t[]){1}, 1));
  OK(rill_op_builder_attr_ints(b, "infer_flags", (const int32_t[]){-1}, 1));
}

/* Two axes with a negative start and an end past the extent; an int64 row taken and its
 * axis dropped; bounds from a StartsTensorList (int32) and an EndsTensor (int64), read on
 * the host. */
Test(cuda_kernels, slice_two_axes_clamped) {
  op_case c = {"slice", {IN("Input", "x", -1, 1, 4, 7, 9)}, {OUT("Out", "out", 4, 5, 5)}, slice_two_axes, 0};
  compare(&c);
}

Test(cuda_kernels, slice_int64_row_with_decrease_axis) {
  op_case c = {"slice", {IN("Input", "x", -1000, 1000, 5, 6)}, {OUT("Out", "out", 6)}, slice_row_dropped, 0};
  c.in[0].dtype = c.out[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, slice_bounds_from_tensors) {
  op_case c = {"slice",
               {IN("Input", "x", -1, 1, 3, 8, 5), IN("StartsTensorList", "s0", 2, 2, 1), IN("EndsTensor", "e", 6, 6, 1)},
               {OUT("Out", "out", 3, 4, 5)},
               slice_axis1,
               0};
  c.in[1].dtype = RILL_DTYPE_INT32;
  c.in[2].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, slice_grad_two_axes) {
  op_case c = {"slice_grad", {IN("Input", "x", 0, 0, 4, 7, 9), IN("Out@GRAD", "dout", -1, 1, 4, 5, 5)},
               {OUT("Input@GRAD", "dx", 4, 7, 9)}, slice_two_axes, 0};
  compare(&c);
}

/* ---- strided_slice ---- */

/* Axis 1 from 1 to 6 by 2 (1, 3, 5); axis 2 backwards by 2 from its last element (by
 * Paddle 1.8.5's rule: 1, 3, 5, 7 reversed). */
static void strided_two_axes(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "axes", (const int32_t[]){1, 2}, 2));
  OK(rill_op_builder_attr_ints(b, "starts", (const int32_t[]){1, 8}, 2));
  OK(rill_op_builder_attr_ints(b, "ends", (const int32_t[]){6, 0}, 2));
  OK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){2, -2}, 2));
}
/* Row 3 (axis dropped), reversed whole (end -1 with a negative stride: through index 0). */
static void strided_row_reversed(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "axes", (const int32_t[]){0, 1}, 2));
  OK(rill_op_builder_attr_ints(b, "starts", (const int32_t[]){3, -1}, 2));
  OK(rill_op_builder_attr_ints(b, "ends", (const int32_t[]){4, -1}, 2));
  OK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){1, -1}, 2));
  OK(rill_op_builder_attr_ints(b, "decrease_axis", (const int32_t[]){0}, 1));
}
static void strided_axis1(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "axes", (const int32_t[]){1}, 1));
  OK(rill_op_builder_attr_ints(b, "infer_flags", (const int32_t[]){-1}, 1));
}

/* Two strided axes, one reversed; an int64 row taken, reversed and its axis dropped;
 * start, end and stride from a StartsTensorList (int32), an EndsTensor (int64) and a
 * StridesTensor (int32), read on the host. */
Test(cuda_kernels, strided_slice_steps_and_a_reversed_axis) {
  op_case c = {"strided_slice", {IN("Input", "x", -1, 1, 4, 7, 9)}, {OUT("Out", "out", 4, 3, 4)}, strided_two_axes, 0};
  compare(&c);
}

Test(cuda_kernels, strided_slice_int64_row_reversed_and_dropped) {
  op_case c = {"strided_slice", {IN("Input", "x", -1000, 1000, 5, 6)}, {OUT("Out", "out", 6)}, strided_row_reversed, 0};
  c.in[0].dtype = c.out[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, strided_slice_bounds_from_tensors) {
  op_case c = {"strided_slice",
               {IN("Input", "x", -1, 1, 3, 8, 5), IN("StartsTensorList", "s0", 1, 1, 1), IN("EndsTensor", "e", 7, 7, 1),
                IN("StridesTensor", "st", 3, 3, 1)},
               {OUT("Out", "out", 3, 2, 5)},
               strided_axis1,
               0};
  c.in[1].dtype = c.in[3].dtype = RILL_DTYPE_INT32;
  c.in[2].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, strided_slice_grad_steps_and_a_reversed_axis) {
  op_case c = {"strided_slice_grad", {IN("Input", "x", 0, 0, 4, 7, 9), IN("Out@GRAD", "dout", -1, 1, 4, 3, 4)},
               {OUT("Input@GRAD", "dx", 4, 7, 9)}, strided_two_axes, 0};
  compare(&c);
}

/* ---- expand (v1: tiling), expand_as ---- */

static void tile_2_3_2(rill_op_builder *b) { OK(rill_op_builder_attr_ints(b, "expand_times", (const int32_t[]){2, 3, 2}, 3)); }

/* X [2, 1, 3] tiled to [4, 3, 6], in float32 and int64; expand_as to a target's shape. */
Test(cuda_kernels, expand_tiles_every_dim) {
  op_case c = {"expand", {IN("X", "x", -1, 1, 2, 1, 3)}, {OUT("Out", "out", 4, 3, 6)}, tile_2_3_2, 0};
  compare(&c);
  c.in[0].dtype = c.out[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
  op_case as = {"expand_as", {IN("X", "x", -1, 1, 3, 2), IN("target_tensor", "t", 0, 0, 6, 4)},
                {OUT("Out", "out", 6, 4)}, NULL, 0};
  compare(&as);
}

/* Out@GRAD summed over the tiles: a tiled middle dim between kept ones, and expand_as's. */
Test(cuda_kernels, expand_grad_sums_the_tiles) {
  op_case c = {"expand_grad", {IN("X", "x", 0, 0, 2, 1, 3), IN("Out@GRAD", "dout", -1, 1, 4, 3, 6)},
               {OUT("X@GRAD", "dx", 2, 1, 3)}, tile_2_3_2, 1e-5};
  compare(&c);
  op_case as = {"expand_as_grad",
                {IN("X", "x", 0, 0, 3, 2), IN("target_tensor", "t", 0, 0, 6, 4), IN("Out@GRAD", "dout", -1, 1, 6, 4)},
                {OUT("X@GRAD", "dx", 3, 2)}, NULL, 1e-5};
  compare(&as);
}

static void expand_to_4d(rill_op_builder *b) { OK(rill_op_builder_attr_ints(b, "shape", (const int32_t[]){2, -1, 4, 5}, 4)); }

/* X [3, 1, 5] broadcast to [2, 3, 4, 5] (a new leading dim, a repeated middle one), in
 * float32 and int64. */
Test(cuda_kernels, expand_v2_new_and_repeated_dims) {
  op_case c = {"expand_v2", {IN("X", "x", -1, 1, 3, 1, 5)}, {OUT("Out", "out", 2, 3, 4, 5)}, expand_to_4d, 0};
  compare(&c);
  c.in[0].dtype = c.out[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, assign_copies) {
  op_case c = {"assign", {IN("X", "x", -1, 1, 7, 13)}, {OUT("Out", "out", 7, 13)}, NULL, 0};
  compare(&c);
}

/* ---- clip ---- */

static void clip_bounds(rill_op_builder *b) {
  OK(rill_op_builder_attr_float(b, "min", -1.0f));
  OK(rill_op_builder_attr_float(b, "max", 2.0f));
}

/* The attributes' bounds, then Min and Max tensors (read on the host) overriding them;
 * the gradient passes where X is strictly inside. */
Test(cuda_kernels, clip_attrs_and_tensors) {
  op_case c = {"clip", {IN("X", "x", -3, 3, 5, 3, 67)}, {OUT("Out", "out", 5, 3, 67)}, clip_bounds, 0};
  compare(&c);
  op_case t = {"clip", {IN("X", "x", -3, 3, 5, 3, 67), IN("Min", "lo", -0.5f, -0.5f, 1), IN("Max", "hi", 0.25f, 0.25f, 1)},
               {OUT("Out", "out", 5, 3, 67)}, clip_bounds, 0};
  compare(&t);
}

Test(cuda_kernels, clip_grad) {
  op_case c = {"clip_grad", {IN("X", "x", -3, 3, 9, 31), IN("Out@GRAD", "dout", -1, 1, 9, 31)},
               {OUT("X@GRAD", "dx", 9, 31)}, clip_bounds, 0};
  compare(&c);
}

/* ---- arg_max, arg_min ---- */

static void am_axis1(rill_op_builder *b) { OK(rill_op_builder_attr_long(b, "axis", 1)); }
static void am_last_keep_i32(rill_op_builder *b) {
  OK(rill_op_builder_attr_long(b, "axis", -1));
  OK(rill_op_builder_attr_bool(b, "keepdims", true));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_INT32));
}
static void am_flatten(rill_op_builder *b) {
  OK(rill_op_builder_attr_long(b, "axis", 0));
  OK(rill_op_builder_attr_bool(b, "flatten", true));
}

/* Along a middle dim; along the last with keepdims and int32 positions over int64 values
 * full of ties (the first wins); and over everything (flatten). */
Test(cuda_kernels, arg_max_middle_axis) {
  op_case c = {"arg_max", {IN("X", "x", -1, 1, 5, 17, 3)}, {OUT("Out", "out", 5, 3)}, am_axis1, 0};
  c.out[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, arg_min_ties_keep_the_first) {
  op_case c = {"arg_min", {IN("X", "x", 0, 3, 6, 40)}, {OUT("Out", "out", 6, 1)}, am_last_keep_i32, 0};
  c.in[0].dtype = RILL_DTYPE_INT64;
  c.out[0].dtype = RILL_DTYPE_INT32;
  compare(&c);
}

Test(cuda_kernels, arg_max_flatten) {
  op_case c = {"arg_max", {IN("X", "x", -1, 1, 7, 9, 11)}, {OUT("Out", "out", 1)}, am_flatten, 0};
  c.out[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

/* ---- interpolation ---- */

static void nearest_v2_scale2(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "interp_method", "nearest"));
  OK(rill_op_builder_attr_floats(b, "scale", (const float[]){2.0f, 2.0f}, 2));
}
static void bilinear_v2_half_pixel(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "interp_method", "bilinear"));
  OK(rill_op_builder_attr_int(b, "out_h", 9));
  OK(rill_op_builder_attr_int(b, "out_w", 13));
  OK(rill_op_builder_attr_bool(b, "align_corners", false));
  OK(rill_op_builder_attr_int(b, "align_mode", 0));
}
static void bilinear_nhwc_corners(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "interp_method", "bilinear"));
  OK(rill_op_builder_attr_string(b, "data_layout", "NHWC"));
  OK(rill_op_builder_attr_int(b, "out_h", 11));
  OK(rill_op_builder_attr_int(b, "out_w", 4));
  OK(rill_op_builder_attr_bool(b, "align_corners", true));
}
static void nearest_v1(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "interp_method", "nearest"));
  OK(rill_op_builder_attr_bool(b, "align_corners", false));
}
static void nearest_5d(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "interp_method", "nearest"));
  OK(rill_op_builder_attr_string(b, "data_layout", "NCDHW"));
  OK(rill_op_builder_attr_int(b, "out_d", 5));
  OK(rill_op_builder_attr_int(b, "out_h", 3));
  OK(rill_op_builder_attr_int(b, "out_w", 7));
}

/* Upsampling by a scale, half-pixel bilinear to odd sizes, align_corners in NHWC, an
 * OutSize tensor (read on the host) overriding the attributes, and a 5-D nearest. */
Test(cuda_kernels, nearest_interp_v2_scale_2) {
  op_case c = {"nearest_interp_v2", {IN("X", "x", -1, 1, 2, 3, 5, 7)}, {OUT("Out", "out", 2, 3, 10, 14)},
               nearest_v2_scale2, 0};
  compare(&c);
}

Test(cuda_kernels, bilinear_interp_v2_half_pixel) {
  op_case c = {"bilinear_interp_v2", {IN("X", "x", -1, 1, 2, 3, 5, 7)}, {OUT("Out", "out", 2, 3, 9, 13)},
               bilinear_v2_half_pixel, 1e-6};
  compare(&c);
}

Test(cuda_kernels, bilinear_interp_nhwc_align_corners) {
  op_case c = {"bilinear_interp", {IN("X", "x", -1, 1, 2, 6, 9, 3)}, {OUT("Out", "out", 2, 11, 4, 3)},
               bilinear_nhwc_corners, 1e-6};
  compare(&c);
}

Test(cuda_kernels, nearest_interp_out_size_tensor) {
  op_case c = {"nearest_interp", {IN("X", "x", -1, 1, 1, 4, 5, 5), IN("OutSize", "size", 8, 8, 2)},
               {OUT("Out", "out", 1, 4, 8, 8)}, nearest_v1, 0};
  c.in[1].dtype = RILL_DTYPE_INT32;
  compare(&c);
}

Test(cuda_kernels, nearest_interp_v2_5d) {
  op_case c = {"nearest_interp_v2", {IN("X", "x", -1, 1, 2, 2, 3, 4, 5)}, {OUT("Out", "out", 2, 2, 5, 3, 7)},
               nearest_5d, 0};
  compare(&c);
}

/* The gradients of the same cases, and of a nearest downsampling that leaves X
 * elements unread (their gradient zero): X@GRAD gathers the Out@GRAD elements read
 * from each X element, in the CPU's order (nearest bit for bit). */
static void nearest_down(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "interp_method", "nearest"));
  OK(rill_op_builder_attr_int(b, "out_h", 4));
  OK(rill_op_builder_attr_int(b, "out_w", 3));
}
#define INTERP_GRAD_CASE(name, op, attrs, tol, xdims, odims)                                                    \
  Test(cuda_kernels, name) {                                                                                  \
    op_case c = {op, {IN("X", "x", 0, 0, xdims), IN("Out@GRAD", "dout", -1, 1, odims)},                        \
                 {OUT("X@GRAD", "dx", xdims)}, attrs, tol};                                                   \
    compare(&c);                                                                                              \
  }
INTERP_GRAD_CASE(nearest_interp_v2_grad_scale_2, "nearest_interp_v2_grad", nearest_v2_scale2, 0, P(2, 3, 5, 7),
                 P(2, 3, 10, 14))
INTERP_GRAD_CASE(bilinear_interp_v2_grad_half_pixel, "bilinear_interp_v2_grad", bilinear_v2_half_pixel, 1e-6,
                 P(2, 3, 5, 7), P(2, 3, 9, 13))
INTERP_GRAD_CASE(bilinear_interp_grad_nhwc_align_corners, "bilinear_interp_grad", bilinear_nhwc_corners, 1e-6,
                 P(2, 6, 9, 3), P(2, 11, 4, 3))
INTERP_GRAD_CASE(nearest_interp_v2_grad_5d, "nearest_interp_v2_grad", nearest_5d, 0, P(2, 2, 3, 4, 5),
                 P(2, 2, 5, 3, 7))
INTERP_GRAD_CASE(nearest_interp_v2_grad_downsampling, "nearest_interp_v2_grad", nearest_down, 0, P(1, 2, 9, 8),
                 P(1, 2, 4, 3))
Test(cuda_kernels, nearest_interp_grad_out_size_tensor) {
  op_case c = {"nearest_interp_grad",
               {IN("X", "x", 0, 0, 1, 4, 5, 5), IN("OutSize", "size", 8, 8, 2), IN("Out@GRAD", "dout", -1, 1, 1, 4, 8, 8)},
               {OUT("X@GRAD", "dx", 1, 4, 5, 5)}, nearest_v1, 0};
  c.in[1].dtype = RILL_DTYPE_INT32;
  compare(&c);
}

/* Trilinear (5-D): the 8 corners in the CPU's order, and the gradient gathering them
 * back; NCDHW with half-pixel sources, NDHWC with align_corners. */
static void trilinear_half_pixel(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "interp_method", "trilinear"));
  OK(rill_op_builder_attr_int(b, "out_d", 7));
  OK(rill_op_builder_attr_int(b, "out_h", 3));
  OK(rill_op_builder_attr_int(b, "out_w", 9));
  OK(rill_op_builder_attr_bool(b, "align_corners", false));
  OK(rill_op_builder_attr_int(b, "align_mode", 0));
}
static void trilinear_ndhwc_corners(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "interp_method", "trilinear"));
  OK(rill_op_builder_attr_string(b, "data_layout", "NDHWC"));
  OK(rill_op_builder_attr_int(b, "out_d", 5));
  OK(rill_op_builder_attr_int(b, "out_h", 8));
  OK(rill_op_builder_attr_int(b, "out_w", 3));
  OK(rill_op_builder_attr_bool(b, "align_corners", true));
}
Test(cuda_kernels, trilinear_interp_and_gradient) {
  op_case c = {"trilinear_interp", {IN("X", "x", -1, 1, 2, 3, 4, 5, 6)}, {OUT("Out", "out", 2, 3, 7, 3, 9)},
               trilinear_half_pixel, 1e-6};
  compare(&c);
  op_case n = {"trilinear_interp", {IN("X", "x", -1, 1, 2, 4, 5, 6, 3)}, {OUT("Out", "out", 2, 5, 8, 3, 3)},
               trilinear_ndhwc_corners, 1e-6};
  compare(&n);
  op_case g = {"trilinear_interp_grad", {IN("X", "x", 0, 0, 2, 3, 4, 5, 6), IN("Out@GRAD", "dout", -1, 1, 2, 3, 7, 3, 9)},
               {OUT("X@GRAD", "dx", 2, 3, 4, 5, 6)}, trilinear_half_pixel, 1e-6};
  compare(&g);
  op_case ng = {"trilinear_interp_grad",
                {IN("X", "x", 0, 0, 2, 4, 5, 6, 3), IN("Out@GRAD", "dout", -1, 1, 2, 5, 8, 3, 3)},
                {OUT("X@GRAD", "dx", 2, 4, 5, 6, 3)}, trilinear_ndhwc_corners, 1e-6};
  compare(&ng);
}

/* ---- conv2d_transpose ---- */

static void convt_s2_p1_g2_op1(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){2, 2}, 2));
  OK(rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){1, 1}, 2));
  OK(rill_op_builder_attr_ints(b, "output_padding", (const int32_t[]){1, 1}, 2));
  OK(rill_op_builder_attr_int(b, "groups", 2));
}
static void convt_depthwise_s2(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){2, 2}, 2));
  OK(rill_op_builder_attr_int(b, "groups", 5));
}

/* Input [2, 4, 5, 6], Filter [4, 3, 3, 3], 2 groups: Output [2, 6, 10, 12] ((5 - 1) * 2 -
 * 2 + 3 + 1 output padding; the same for the width); its gradients; a depthwise upsampling. */
Test(cuda_kernels, conv2d_transpose_strides_groups_output_padding) {
  op_case c = {"conv2d_transpose", {IN("Input", "x", -1, 1, 2, 4, 5, 6), IN("Filter", "w", -1, 1, 4, 3, 3, 3)},
               {OUT("Output", "y", 2, 6, 10, 12)}, convt_s2_p1_g2_op1, 1e-4};
  compare(&c);
}

Test(cuda_kernels, conv2d_transpose_grad_strides_groups_output_padding) {
  op_case c = {"conv2d_transpose_grad",
               {IN("Input", "x", -1, 1, 2, 4, 5, 6), IN("Filter", "w", -1, 1, 4, 3, 3, 3),
                IN("Output@GRAD", "dy", -1, 1, 2, 6, 10, 12)},
               {OUT("Input@GRAD", "dx", 2, 4, 5, 6), OUT("Filter@GRAD", "dw", 4, 3, 3, 3)},
               convt_s2_p1_g2_op1, 1e-4};
  compare(&c);
}

Test(cuda_kernels, depthwise_conv2d_transpose_upsamples) {
  op_case c = {"depthwise_conv2d_transpose", {IN("Input", "x", -1, 1, 2, 5, 4, 4), IN("Filter", "w", -1, 1, 5, 1, 3, 3)},
               {OUT("Output", "y", 2, 5, 9, 9)}, convt_depthwise_s2, 1e-4};
  compare(&c);
}

/* ---- NHWC convolutions, uneven paddings of the transposed one ---- */

static void conv_s2_p1_d2_g2_nhwc(rill_op_builder *b) {
  conv_s2_p1_d2_g2(b);
  OK(rill_op_builder_attr_string(b, "data_format", "NHWC"));
}
static void same_s2_depthwise_nhwc(rill_op_builder *b) {
  same_s2_depthwise(b);
  OK(rill_op_builder_attr_string(b, "data_format", "NHWC"));
}
static void convt_s2_p1_g2_op1_nhwc(rill_op_builder *b) {
  convt_s2_p1_g2_op1(b);
  OK(rill_op_builder_attr_string(b, "data_format", "NHWC"));
}
/* [top, bottom, left, right] = [1, 0, 2, 1], stride 2, 2 groups: Input [2, 4, 5, 6]
 * gives h (5 - 1) 2 - 1 + 3 = 10, w (6 - 1) 2 - 3 + 3 = 10. */
static void convt_uneven(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){2, 2}, 2));
  OK(rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){1, 0, 2, 1}, 4));
  OK(rill_op_builder_attr_int(b, "groups", 2));
}
static void convt_uneven_nhwc(rill_op_builder *b) {
  convt_uneven(b);
  OK(rill_op_builder_attr_string(b, "data_format", "NHWC"));
}

/* The cases above in NHWC (cuDNN's NHWC tensors beside the OIHW filter), a depthwise one
 * through the padded copy, and each one's gradients. */
Test(cuda_kernels, conv2d_nhwc_and_gradients) {
  op_case c = {"conv2d", {IN("Input", "x", -1, 1, 2, 11, 9, 4), IN("Filter", "w", -1, 1, 6, 2, 3, 3)},
               {OUT("Output", "y", 2, 5, 11, 6)}, conv_s2_p1_d2_g2_nhwc, 1e-4};
  compare(&c);
  op_case g = {"conv2d_grad",
               {IN("Input", "x", -1, 1, 2, 11, 9, 4), IN("Filter", "w", -1, 1, 6, 2, 3, 3),
                IN("Output@GRAD", "dy", -1, 1, 2, 5, 11, 6)},
               {OUT("Input@GRAD", "dx", 2, 11, 9, 4), OUT("Filter@GRAD", "dw", 6, 2, 3, 3)},
               conv_s2_p1_d2_g2_nhwc, 1e-4};
  compare(&g);
}

Test(cuda_kernels, depthwise_conv2d_nhwc_uneven_paddings) {
  op_case c = {"depthwise_conv2d", {IN("Input", "x", -1, 1, 2, 8, 8, 5), IN("Filter", "w", -1, 1, 5, 1, 3, 3)},
               {OUT("Output", "y", 2, 4, 4, 5)}, same_s2_depthwise_nhwc, 1e-4};
  compare(&c);
  op_case g = {"depthwise_conv2d_grad",
               {IN("Input", "x", -1, 1, 2, 8, 8, 5), IN("Filter", "w", -1, 1, 5, 1, 3, 3),
                IN("Output@GRAD", "dy", -1, 1, 2, 4, 4, 5)},
               {OUT("Input@GRAD", "dx", 2, 8, 8, 5), OUT("Filter@GRAD", "dw", 5, 1, 3, 3)},
               same_s2_depthwise_nhwc, 1e-4};
  compare(&g);
}

Test(cuda_kernels, conv2d_transpose_nhwc_and_gradients) {
  op_case c = {"conv2d_transpose", {IN("Input", "x", -1, 1, 2, 5, 6, 4), IN("Filter", "w", -1, 1, 4, 3, 3, 3)},
               {OUT("Output", "y", 2, 10, 12, 6)}, convt_s2_p1_g2_op1_nhwc, 1e-4};
  compare(&c);
  op_case g = {"conv2d_transpose_grad",
               {IN("Input", "x", -1, 1, 2, 5, 6, 4), IN("Filter", "w", -1, 1, 4, 3, 3, 3),
                IN("Output@GRAD", "dy", -1, 1, 2, 10, 12, 6)},
               {OUT("Input@GRAD", "dx", 2, 5, 6, 4), OUT("Filter@GRAD", "dw", 4, 3, 3, 3)},
               convt_s2_p1_g2_op1_nhwc, 1e-4};
  compare(&g);
}

/* Uneven paddings: Output computed in the grown shape and cropped; Input@GRAD the
 * convolution of a padded Output@GRAD, Filter@GRAD against it; NCHW and NHWC. */
Test(cuda_kernels, conv2d_transpose_uneven_paddings) {
  op_case c = {"conv2d_transpose", {IN("Input", "x", -1, 1, 2, 4, 5, 6), IN("Filter", "w", -1, 1, 4, 3, 3, 3)},
               {OUT("Output", "y", 2, 6, 10, 10)}, convt_uneven, 1e-4};
  compare(&c);
  op_case g = {"conv2d_transpose_grad",
               {IN("Input", "x", -1, 1, 2, 4, 5, 6), IN("Filter", "w", -1, 1, 4, 3, 3, 3),
                IN("Output@GRAD", "dy", -1, 1, 2, 6, 10, 10)},
               {OUT("Input@GRAD", "dx", 2, 4, 5, 6), OUT("Filter@GRAD", "dw", 4, 3, 3, 3)}, convt_uneven, 1e-4};
  compare(&g);
  op_case n = {"conv2d_transpose", {IN("Input", "x", -1, 1, 2, 5, 6, 4), IN("Filter", "w", -1, 1, 4, 3, 3, 3)},
               {OUT("Output", "y", 2, 10, 10, 6)}, convt_uneven_nhwc, 1e-4};
  compare(&n);
  op_case ng = {"conv2d_transpose_grad",
                {IN("Input", "x", -1, 1, 2, 5, 6, 4), IN("Filter", "w", -1, 1, 4, 3, 3, 3),
                 IN("Output@GRAD", "dy", -1, 1, 2, 10, 10, 6)},
                {OUT("Input@GRAD", "dx", 2, 5, 6, 4), OUT("Filter@GRAD", "dw", 4, 3, 3, 3)}, convt_uneven_nhwc, 1e-4};
  compare(&ng);
}

/* ---- layer_norm_grad ---- */

/* Rows of 165 with Scale (all three gradients), and rows of 2049 without (X@GRAD alone):
 * X@GRAD within 1e-5, Scale@GRAD and Bias@GRAD summed in the CPU's order. */
Test(cuda_kernels, layer_norm_grad_with_scale) {
  op_case c = {"layer_norm_grad",
               {IN("X", "x", -2, 3, 6, 5, 33), IN("Scale", "scale", 0.5f, 2, 165), IN("Mean", "mean", -0.5f, 0.5f, 6),
                IN("Variance", "var", 0.5f, 2, 6), IN("Y@GRAD", "dy", -1, 1, 6, 5, 33)},
               {OUT("X@GRAD", "dx", 6, 5, 33), OUT("Scale@GRAD", "dscale", 165), OUT("Bias@GRAD", "dbias", 165)},
               NULL,
               1e-5};
  compare(&c);
}

Test(cuda_kernels, layer_norm_grad_long_rows_x_alone) {
  op_case c = {"layer_norm_grad",
               {IN("X", "x", -1, 1, 3, 7, 2049), IN("Mean", "mean", -0.1f, 0.1f, 21), IN("Variance", "var", 0.2f, 0.5f, 21),
                IN("Y@GRAD", "dy", -1, 1, 3, 7, 2049)},
               {OUT("X@GRAD", "dx", 3, 7, 2049)},
               norm_axis_2,
               1e-5};
  compare(&c);
}

/* ---- NaN among the inputs ----
 * Every seventh element NaN: the device gives NaN exactly where the CPU does (a clamp
 * or a select that drops a NaN on one place and keeps it on the other fails here). */

static void relu6_default(rill_op_builder *b) { (void)b; }

#define NAN_UNARY(name, op, attrs, lo, hi, tol)                                                    \
  Test(cuda_kernels, name##_with_nan) {                                                            \
    op_case c = {op, {IN("X", "x", lo, hi, 5, 3, 67)}, {OUT("Out", "out", 5, 3, 67)}, attrs, tol}; \
    c.in[0].nan_every = 7;                                                                         \
    compare(&c);                                                                                   \
  }

NAN_UNARY(relu, "relu", NULL, -3, 3, 0)
NAN_UNARY(relu6, "relu6", relu6_default, -3, 9, 0)
NAN_UNARY(leaky_relu, "leaky_relu", leaky, -3, 3, 1e-7)
NAN_UNARY(sigmoid, "sigmoid", NULL, -6, 6, 1e-6)
NAN_UNARY(tanh, "tanh", NULL, -4, 4, 1e-6)
NAN_UNARY(exp, "exp", NULL, -4, 4, 1e-6)
NAN_UNARY(square, "square", NULL, -3, 3, 1e-6)
NAN_UNARY(scale, "scale", scale_after, -3, 3, 1e-6)
NAN_UNARY(hard_sigmoid, "hard_sigmoid", NULL, -4, 4, 1e-6)
NAN_UNARY(hard_swish, "hard_swish", NULL, -5, 5, 1e-6)
NAN_UNARY(swish, "swish", beta_half, -6, 6, 1e-5)
NAN_UNARY(gelu, "gelu", NULL, -4, 4, 1e-5)
NAN_UNARY(clip, "clip", clip_bounds, -3, 3, 0)
NAN_UNARY(log, "log", NULL, 0.01f, 9, 1e-6)
NAN_UNARY(abs, "abs", NULL, -3, 3, 0)
NAN_UNARY(softplus, "softplus", NULL, -100, 100, 1e-5)
NAN_UNARY(logsigmoid, "logsigmoid", NULL, -100, 100, 1e-5)
NAN_UNARY(elu, "elu", elu_alpha, -4, 4, 1e-5)
NAN_UNARY(ceil, "ceil", NULL, -5, 5, 0)
NAN_UNARY(round, "round", NULL, -5, 5, 0)
NAN_UNARY(sign, "sign", NULL, -3, 3, 0)
NAN_UNARY(softshrink, "softshrink", lambda_08, -3, 3, 1e-6)
NAN_UNARY(hard_shrink, "hard_shrink", threshold_1, -3, 3, 0)
NAN_UNARY(thresholded_relu, "thresholded_relu", threshold_03, -3, 3, 0)
NAN_UNARY(brelu, "brelu", brelu_bounds, -3, 3, 0)
NAN_UNARY(soft_relu, "soft_relu", threshold_2, -4, 4, 1e-6)
NAN_UNARY(selu, "selu", NULL, -3, 3, 1e-6)
NAN_UNARY(mish, "mish", mish_threshold, -9, 9, 1e-6)

/* max and min keep the CPU's choice when an operand is NaN (x > y ? x : y). */
Test(cuda_kernels, max_and_min_with_nan) {
  const char *ops[] = {"elementwise_max", "elementwise_min"};
  for (int i = 0; i < 2; i++) {
    op_case c = {ops[i], {IN("X", "x", -2, 2, 4, 33), IN("Y", "y", -2, 2, 33)}, {OUT("Out", "out", 4, 33)}, NULL, 0};
    c.in[0].nan_every = 7;
    c.in[1].nan_every = 5;
    compare(&c);
  }
}

/* The reductions and the row ops: a NaN spoils its row (softmax, layer_norm) or its sum;
 * max pooling keeps the CPU's choice of window maximum. */
Test(cuda_kernels, softmax_with_nan) {
  op_case c = {"softmax", {IN("X", "x", -8, 8, 7, 101)}, {OUT("Out", "out", 7, 101)}, NULL, 1e-5};
  c.in[0].nan_every = 211;
  compare(&c);
}

Test(cuda_kernels, reduce_sum_with_nan) {
  op_case c = {"reduce_sum", {IN("X", "x", -1, 1, 5, 7, 9, 3)}, {OUT("Out", "out", 7, 3)}, red_dims_0_2, 1e-5};
  c.in[0].nan_every = 37;
  compare(&c);
}

Test(cuda_kernels, pool2d_max_with_nan) {
  op_case c = {"pool2d", {IN("X", "x", -1, 1, 2, 3, 9, 9)}, {OUT("Out", "out", 2, 3, 5, 5)}, max_k3_s2_p1, 0};
  c.in[0].nan_every = 11;
  compare(&c);
}

/* ---- elementwise_pow ---- */

/* Positive bases, exponents of both signs, Y broadcast along the rows; the gradient
 * (X@GRAD y x^(y-1), Y@GRAD ln(x) x^y, Y's summed over the rows) and negative bases,
 * whose non-integer powers are NaN on both places. */
Test(cuda_kernels, pow_and_its_gradient) {
  op_case f = {"elementwise_pow", {IN("X", "x", 0.5f, 2, 9, 33), IN("Y", "y", -2, 2, 33)}, {OUT("Out", "out", 9, 33)},
               axis_last, 1e-5};
  compare(&f);
  op_case g = {"elementwise_pow_grad",
               {IN("X", "x", 0.5f, 2, 9, 33), IN("Y", "y", -1.5f, 1.5f, 33), IN("Out@GRAD", "dout", -1, 1, 9, 33)},
               {OUT("X@GRAD", "dx", 9, 33), OUT("Y@GRAD", "dy", 33)}, axis_last, 1e-5};
  compare(&g);
  op_case n = {"elementwise_pow", {IN("X", "x", -2, 2, 9, 33), IN("Y", "y", -2, 2, 9, 33)}, {OUT("Out", "out", 9, 33)},
               NULL, 1e-5};
  compare(&n);
}

/* ---- group_norm_grad ---- */

/* 4 groups of 3 channels, NCHW and NHWC, with Scale and Bias: X@GRAD per group, and
 * Scale@GRAD and Bias@GRAD per channel. */
static void group_norm_grad_case(bool nhwc) {
  op_case c = {"group_norm_grad",
               {IN("Y", "y", -2, 3, 2, 12, 7, 9), IN("Scale", "scale", 0.5f, 2, 12), IN("Bias", "bias", -1, 1, 12),
                IN("Variance", "var", 0.5f, 2, 2, 4), IN("Y@GRAD", "dy", -1, 1, 2, 12, 7, 9)},
               {OUT("X@GRAD", "dx", 2, 12, 7, 9), OUT("Scale@GRAD", "dscale", 12), OUT("Bias@GRAD", "dbias", 12)},
               nhwc ? groups4_nhwc : groups4,
               1e-5};
  if (nhwc) {
    const int64_t d[] = {2, 7, 9, 12};
    memcpy(c.in[0].dims, d, sizeof d);
    memcpy(c.in[4].dims, d, sizeof d);
    memcpy(c.out[0].dims, d, sizeof d);
  }
  compare(&c);
}

Test(cuda_kernels, group_norm_grad_nchw) { group_norm_grad_case(false); }
Test(cuda_kernels, group_norm_grad_nhwc) { group_norm_grad_case(true); }

/* ---- quantization simulation with stored scales ---- */

static void quant_test_away(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "is_test", true));
  OK(rill_op_builder_attr_int(b, "round_type", 1));
}
static void quant_test_even(rill_op_builder *b) {
  OK(rill_op_builder_attr_bool(b, "is_test", true));
  OK(rill_op_builder_attr_int(b, "round_type", 0));
  OK(rill_op_builder_attr_int(b, "bit_length", 4));
}
static void quant_train(rill_op_builder *b) { OK(rill_op_builder_attr_bool(b, "is_test", false)); }
static void dequant_range(rill_op_builder *b) { OK(rill_op_builder_attr_float(b, "max_range", 127.0f)); }

/* Inference with the stored scale (2, below X's extent, so the clip and the clamp both
 * act; NaNs come through): the levels and their dequantized values are the CPU's bit for
 * bit, for both rounding rules, and the scale, state and accumulator pass through to
 * outputs of their own (zeros where the input is absent). */
#define QUANT_CASE(name, op, attrs, with_state)                                                                   \
  Test(cuda_kernels, name) {                                                                                     \
    op_case c = {op,                                                                                             \
                 {IN("X", "x", -3, 3, 7, 5, 33), IN("InScale", "scale", 2, 2, 1), IN("InAccum", "accum", 5, 9, 1), \
                  IN("InState", "state", 1, 3, 1)},                                                              \
                 {OUT("Out", "out", 7, 5, 33), OUT("OutScale", "oscale", 1), OUT("OutState", "ostate", 1),       \
                  OUT("OutAccum", "oaccum", 1)},                                                                 \
                 attrs,                                                                                          \
                 0};                                                                                             \
    c.in[0].nan_every = 41;                                                                                      \
    if (!(with_state)) c.in[2] = c.in[3] = (arg){0};                                                             \
    compare(&c);                                                                                                 \
  }

QUANT_CASE(fake_quantize_dequantize_moving_average_halves_away, "fake_quantize_dequantize_moving_average_abs_max",
           quant_test_away, true)
QUANT_CASE(fake_quantize_dequantize_moving_average_halves_to_even_4_bits,
           "fake_quantize_dequantize_moving_average_abs_max", quant_test_even, true)
QUANT_CASE(fake_quantize_moving_average_levels_without_state, "fake_quantize_moving_average_abs_max",
           quant_test_away, false)
QUANT_CASE(fake_quantize_moving_average_levels_halves_to_even, "fake_quantize_moving_average_abs_max",
           quant_test_even, true)
/* The training form measures X's abs max on the host: the same numbers. */
QUANT_CASE(fake_quantize_dequantize_moving_average_training_on_the_host,
           "fake_quantize_dequantize_moving_average_abs_max", quant_train, true)

/* A scale at or below 1e-30 divides by scale + 1e-6, as the CPU does. */
Test(cuda_kernels, fake_quantize_moving_average_tiny_scale) {
  op_case c = {"fake_quantize_dequantize_moving_average_abs_max",
               {IN("X", "x", -1e-6f, 1e-6f, 3, 41), IN("InScale", "scale", 1e-31f, 1e-31f, 1)},
               {OUT("Out", "out", 3, 41)},
               quant_test_even,
               0};
  compare(&c);
}

Test(cuda_kernels, fake_dequantize_max_abs) {
  op_case c = {"fake_dequantize_max_abs", {IN("X", "x", -127, 127, 6, 37), IN("Scale", "scale", 0.75f, 0.75f, 1)},
               {OUT("Out", "out", 6, 37)}, dequant_range, 0};
  compare(&c);
}

/* ---- grid_sampler ---- */

/* Grid values in [-1.3, 1.3]: some positions fall outside the input, so every padding
 * mode has work; X [2, 3, 5, 7] sampled at a 4 x 6 grid. */
static void gs_zeros_corners(rill_op_builder *b) { (void)b; } /* the defaults: bilinear, zeros, align_corners */
static void gs_border_half_pixel(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "padding_mode", "border"));
  OK(rill_op_builder_attr_bool(b, "align_corners", false));
}
static void gs_reflection_half_pixel(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "padding_mode", "reflection"));
  OK(rill_op_builder_attr_bool(b, "align_corners", false));
}
static void gs_reflection_corners(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "padding_mode", "reflection"));
}
static void gs_nearest(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "mode", "nearest"));
  OK(rill_op_builder_attr_bool(b, "align_corners", false));
}
#define GRID_SAMPLER_CASE(name, attrs, tol)                                                                   \
  Test(cuda_kernels, grid_sampler_##name) {                                                                   \
    op_case c = {"grid_sampler", {IN("X", "x", -1, 1, 2, 3, 5, 7), IN("Grid", "grid", -1.3f, 1.3f, 2, 4, 6, 2)}, \
                 {OUT("Output", "out", 2, 3, 4, 6)}, attrs, tol};                                             \
    compare(&c);                                                                                              \
  }
GRID_SAMPLER_CASE(bilinear_zeros_align_corners, gs_zeros_corners, 1e-6)
GRID_SAMPLER_CASE(bilinear_border, gs_border_half_pixel, 1e-6)
GRID_SAMPLER_CASE(bilinear_reflection, gs_reflection_half_pixel, 1e-6)
GRID_SAMPLER_CASE(bilinear_reflection_align_corners, gs_reflection_corners, 1e-6)
GRID_SAMPLER_CASE(nearest_zeros, gs_nearest, 0)

/* The gradients: X@GRAD added back plane by plane in the CPU's order, Grid@GRAD summed
 * in double per position (0 for nearest); each alone too. */
#define GRID_SAMPLER_GRAD_CASE(name, attrs, tol)                                                              \
  Test(cuda_kernels, grid_sampler_grad_##name) {                                                              \
    op_case c = {"grid_sampler_grad",                                                                         \
                 {IN("X", "x", -1, 1, 2, 3, 5, 7), IN("Grid", "grid", -1.3f, 1.3f, 2, 4, 6, 2),            \
                  IN("Output@GRAD", "dout", -1, 1, 2, 3, 4, 6)},                                              \
                 {OUT("X@GRAD", "dx", 2, 3, 5, 7), OUT("Grid@GRAD", "dgrid", 2, 4, 6, 2)}, attrs, tol};       \
    compare(&c);                                                                                              \
  }
GRID_SAMPLER_GRAD_CASE(bilinear_zeros_align_corners, gs_zeros_corners, 1e-5)
GRID_SAMPLER_GRAD_CASE(bilinear_border, gs_border_half_pixel, 1e-5)
GRID_SAMPLER_GRAD_CASE(nearest, gs_nearest, 0)

Test(cuda_kernels, grid_sampler_grad_one_output_at_a_time) {
  op_case only_x = {"grid_sampler_grad",
                    {IN("X", "x", -1, 1, 1, 2, 6, 4), IN("Grid", "grid", -1.1f, 1.1f, 1, 3, 5, 2),
                     IN("Output@GRAD", "dout", -1, 1, 1, 2, 3, 5)},
                    {OUT("X@GRAD", "dx", 1, 2, 6, 4)}, gs_border_half_pixel, 1e-5};
  compare(&only_x);
  op_case only_grid = {"grid_sampler_grad",
                       {IN("X", "x", -1, 1, 1, 2, 6, 4), IN("Grid", "grid", -1.1f, 1.1f, 1, 3, 5, 2),
                        IN("Output@GRAD", "dout", -1, 1, 1, 2, 3, 5)},
                       {OUT("Grid@GRAD", "dgrid", 1, 3, 5, 2)}, gs_zeros_corners, 1e-5};
  compare(&only_grid);
}

/* ---- yolo_box and box_coder ---- */

/* Two anchors, three classes: X [2, 2 * (5 + 3), 3, 5] (a leading IoU channel per
 * anchor with iou_aware), logits in [-2, 2] so that about half the cells fall below
 * conf_thresh 0.5 and are zeros; image sizes of 100 to 400 pixels. */
static void yolo_plain(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "anchors", (const int32_t[]){10, 13, 16, 30}, 4));
  OK(rill_op_builder_attr_int(b, "class_num", 3));
  OK(rill_op_builder_attr_float(b, "conf_thresh", 0.5f));
  OK(rill_op_builder_attr_int(b, "downsample_ratio", 8));
}
static void yolo_iou_aware_unclipped(rill_op_builder *b) {
  yolo_plain(b);
  OK(rill_op_builder_attr_bool(b, "clip_bbox", false));
  OK(rill_op_builder_attr_bool(b, "iou_aware", true));
  OK(rill_op_builder_attr_float(b, "iou_aware_factor", 0.4f));
  OK(rill_op_builder_attr_float(b, "scale_x_y", 1.2f));
}
static op_case yolo_case(void (*attrs)(rill_op_builder *), int64_t channels, rill_dtype img, rill_dtype dt) {
  op_case c = {"yolo_box", {IN("X", "x", -2, 2, 2, channels, 3, 5), IN("ImgSize", "img", 100, 400, 2, 2)},
               {OUT("Boxes", "boxes", 2, 30, 4), OUT("Scores", "scores", 2, 30, 3)}, attrs, 1e-5};
  c.in[1].dtype = img;
  c.in[0].dtype = c.out[0].dtype = c.out[1].dtype = dt;
  return c;
}
Test(cuda_kernels, yolo_box_clipped_int32_sizes) {
  op_case c = yolo_case(yolo_plain, 16, RILL_DTYPE_INT32, RILL_DTYPE_FP32);
  compare(&c);
}
Test(cuda_kernels, yolo_box_iou_aware_int64_sizes) {
  op_case c = yolo_case(yolo_iou_aware_unclipped, 18, RILL_DTYPE_INT64, RILL_DTYPE_FP32);
  compare(&c);
}
Test(cuda_kernels, yolo_box_float64) {
  op_case c = yolo_case(yolo_iou_aware_unclipped, 18, RILL_DTYPE_INT32, RILL_DTYPE_FP64);
  c.tol = 1e-12;
  compare(&c);
}

/* Corners in [0, 1] drawn independently, so some priors and targets are inverted (a
 * negative width, which encoding takes through its absolute value). */
static void bc_encode(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "code_type", "encode_center_size"));
}
static void bc_decode_pixels_attr_var(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "code_type", "decode_center_size"));
  OK(rill_op_builder_attr_bool(b, "box_normalized", false));
  OK(rill_op_builder_attr_floats(b, "variance", (const float[]){0.1f, 0.1f, 0.2f, 0.2f}, 4));
}
static void bc_decode_axis1(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "code_type", "decode_center_size"));
  OK(rill_op_builder_attr_int(b, "axis", 1));
}
Test(cuda_kernels, box_coder_encode_with_prior_variances) {
  op_case c = {"box_coder",
               {IN("PriorBox", "prior", 0, 1, 7, 4), IN("PriorBoxVar", "pvar", 0.1f, 0.3f, 7, 4),
                IN("TargetBox", "target", 0, 1, 5, 4)},
               {OUT("OutputBox", "out", 5, 7, 4)}, bc_encode, 1e-5};
  compare(&c);
}
Test(cuda_kernels, box_coder_encode_without_variances) {
  op_case c = {"box_coder", {IN("PriorBox", "prior", 0, 1, 7, 4), IN("TargetBox", "target", 0, 1, 5, 4)},
               {OUT("OutputBox", "out", 5, 7, 4)}, bc_encode, 1e-5};
  compare(&c);
}
Test(cuda_kernels, box_coder_decode_pixels_attribute_variances) {
  op_case c = {"box_coder", {IN("PriorBox", "prior", 0, 50, 7, 4), IN("TargetBox", "target", -1, 1, 5, 7, 4)},
               {OUT("OutputBox", "out", 5, 7, 4)}, bc_decode_pixels_attr_var, 1e-5};
  compare(&c);
}
Test(cuda_kernels, box_coder_decode_axis1) {
  op_case c = {"box_coder",
               {IN("PriorBox", "prior", 0, 1, 5, 4), IN("PriorBoxVar", "pvar", 0.1f, 0.3f, 5, 4),
                IN("TargetBox", "target", -1, 1, 5, 7, 4)},
               {OUT("OutputBox", "out", 5, 7, 4)}, bc_decode_axis1, 1e-5};
  compare(&c);
}
Test(cuda_kernels, box_coder_float64) {
  op_case c = {"box_coder",
               {IN("PriorBox", "prior", 0, 1, 5, 4), IN("PriorBoxVar", "pvar", 0.1f, 0.3f, 5, 4),
                IN("TargetBox", "target", -1, 1, 5, 7, 4)},
               {OUT("OutputBox", "out", 5, 7, 4)}, bc_decode_axis1, 1e-12};
  c.in[0].dtype = c.in[1].dtype = c.in[2].dtype = c.out[0].dtype = RILL_DTYPE_FP64;
  compare(&c);
}

/* ---- conv3d, conv3d_transpose and their gradients (cuDNN's N-D convolution) ---- */

static void conv3d_g2(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){1, 2, 1}, 3));
  OK(rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){1, 0, 1}, 3));
  OK(rill_op_builder_attr_ints(b, "dilations", (const int32_t[]){1, 1, 2}, 3));
  OK(rill_op_builder_attr_int(b, "groups", 2));
}
/* Paddle's SAME at stride 2 over 5 x 6 x 7: the height padded 0 above, 1 below (uneven:
 * the grown copy), depth and width evenly; channels last. */
static void conv3d_same_s2_ndhwc(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){2, 2, 2}, 3));
  OK(rill_op_builder_attr_string(b, "padding_algorithm", "SAME"));
  OK(rill_op_builder_attr_string(b, "data_format", "NDHWC"));
}
/* Six paddings (front, back, top, bottom, left, right), each dim uneven. */
static void conv3d_pads6(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){0, 1, 1, 0, 2, 1}, 6));
}

/* Input [2, 4, 5, 6, 7], Filter [6, 2, 3, 2, 3], groups 2: out d = (5 + 2 - 3) + 1 = 5,
 * h = (6 - 2) / 2 + 1 = 3, w = (7 + 2 - 5) + 1 = 5. */
Test(cuda_kernels, conv3d_strides_paddings_dilations_groups) {
  op_case c = {"conv3d", {IN("Input", "x", -1, 1, 2, 4, 5, 6, 7), IN("Filter", "w", -1, 1, 6, 2, 3, 2, 3)},
               {OUT("Output", "y", 2, 6, 5, 3, 5)}, conv3d_g2, 1e-4};
  compare(&c);
  op_case g = {"conv3d_grad",
               {IN("Input", "x", -1, 1, 2, 4, 5, 6, 7), IN("Filter", "w", -1, 1, 6, 2, 3, 2, 3),
                IN("Output@GRAD", "dy", -1, 1, 2, 6, 5, 3, 5)},
               {OUT("Input@GRAD", "dx", 2, 4, 5, 6, 7), OUT("Filter@GRAD", "dw", 6, 2, 3, 2, 3)}, conv3d_g2, 1e-4};
  compare(&g);
}

Test(cuda_kernels, conv3d_ndhwc_same_uneven) {
  op_case c = {"conv3d", {IN("Input", "x", -1, 1, 1, 5, 6, 7, 3), IN("Filter", "w", -1, 1, 4, 3, 3, 3, 3)},
               {OUT("Output", "y", 1, 3, 3, 4, 4)}, conv3d_same_s2_ndhwc, 1e-4};
  compare(&c);
  op_case g = {"conv3d_grad",
               {IN("Input", "x", -1, 1, 1, 5, 6, 7, 3), IN("Filter", "w", -1, 1, 4, 3, 3, 3, 3),
                IN("Output@GRAD", "dy", -1, 1, 1, 3, 3, 4, 4)},
               {OUT("Input@GRAD", "dx", 1, 5, 6, 7, 3), OUT("Filter@GRAD", "dw", 4, 3, 3, 3, 3)}, conv3d_same_s2_ndhwc,
               1e-4};
  compare(&g);
}

/* Input [2, 3, 4, 5, 6], Filter [5, 3, 2, 2, 3]: d = 4 + 1 - 2 + 1 = 4, h = 5 + 1 - 2 +
 * 1 = 5, w = 6 + 3 - 3 + 1 = 7; each gradient alone too. */
Test(cuda_kernels, conv3d_six_paddings_and_each_gradient_alone) {
  op_case c = {"conv3d", {IN("Input", "x", -1, 1, 2, 3, 4, 5, 6), IN("Filter", "w", -1, 1, 5, 3, 2, 2, 3)},
               {OUT("Output", "y", 2, 5, 4, 5, 7)}, conv3d_pads6, 1e-4};
  compare(&c);
  op_case dx = {"conv3d_grad",
                {IN("Input", "x", -1, 1, 2, 3, 4, 5, 6), IN("Filter", "w", -1, 1, 5, 3, 2, 2, 3),
                 IN("Output@GRAD", "dy", -1, 1, 2, 5, 4, 5, 7)},
                {OUT("Input@GRAD", "dx", 2, 3, 4, 5, 6)}, conv3d_pads6, 1e-4};
  compare(&dx);
  op_case dw = {"conv3d_grad",
                {IN("Input", "x", -1, 1, 2, 3, 4, 5, 6), IN("Filter", "w", -1, 1, 5, 3, 2, 2, 3),
                 IN("Output@GRAD", "dy", -1, 1, 2, 5, 4, 5, 7)},
                {OUT("Filter@GRAD", "dw", 5, 3, 2, 2, 3)}, conv3d_pads6, 1e-4};
  compare(&dw);
}

static void convt3d_uneven(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "strides", (const int32_t[]){2, 1, 2}, 3));
  OK(rill_op_builder_attr_ints(b, "paddings", (const int32_t[]){0, 1, 1, 1, 2, 0}, 6));
}
static void convt3d_uneven_g2_ndhwc(rill_op_builder *b) {
  convt3d_uneven(b);
  OK(rill_op_builder_attr_int(b, "groups", 2));
  OK(rill_op_builder_attr_string(b, "data_format", "NDHWC"));
}

/* Input [2, 4, 3, 4, 3], Filter [4, 3, 2, 3, 3]: Output d = 2 * 2 - 1 + 2 = 5, h = 3 - 2
 * + 3 = 4, w = 2 * 2 - 2 + 3 = 5, in the grown shape and cropped (uneven paddings);
 * then channels last with 2 groups; each with its gradients. */
Test(cuda_kernels, conv3d_transpose_and_gradients) {
  op_case c = {"conv3d_transpose", {IN("Input", "x", -1, 1, 2, 4, 3, 4, 3), IN("Filter", "w", -1, 1, 4, 3, 2, 3, 3)},
               {OUT("Output", "y", 2, 3, 5, 4, 5)}, convt3d_uneven, 1e-4};
  compare(&c);
  op_case g = {"conv3d_transpose_grad",
               {IN("Input", "x", -1, 1, 2, 4, 3, 4, 3), IN("Filter", "w", -1, 1, 4, 3, 2, 3, 3),
                IN("Output@GRAD", "dy", -1, 1, 2, 3, 5, 4, 5)},
               {OUT("Input@GRAD", "dx", 2, 4, 3, 4, 3), OUT("Filter@GRAD", "dw", 4, 3, 2, 3, 3)}, convt3d_uneven, 1e-4};
  compare(&g);
  op_case n = {"conv3d_transpose", {IN("Input", "x", -1, 1, 2, 3, 4, 3, 4), IN("Filter", "w", -1, 1, 4, 2, 2, 3, 3)},
               {OUT("Output", "y", 2, 5, 4, 5, 4)}, convt3d_uneven_g2_ndhwc, 1e-4};
  compare(&n);
  op_case ng = {"conv3d_transpose_grad",
                {IN("Input", "x", -1, 1, 2, 3, 4, 3, 4), IN("Filter", "w", -1, 1, 4, 2, 2, 3, 3),
                 IN("Output@GRAD", "dy", -1, 1, 2, 5, 4, 5, 4)},
                {OUT("Input@GRAD", "dx", 2, 3, 4, 3, 4), OUT("Filter@GRAD", "dw", 4, 2, 2, 3, 3)},
                convt3d_uneven_g2_ndhwc, 1e-4};
  compare(&ng);
}

/* ---- rnn (Paddle 2.x): inference, training and rnn_grad ---- */

/* The attributes of the rnn case being built (the builder callbacks take none). */
static struct {
  const char *mode;
  int layers, hidden, input;
  bool bidirec, is_test;
  float dropout;
  int seed;
} rnn_attrs;

static void rnn_set_attrs(rill_op_builder *b) {
  OK(rill_op_builder_attr_string(b, "mode", rnn_attrs.mode));
  OK(rill_op_builder_attr_int(b, "num_layers", rnn_attrs.layers));
  OK(rill_op_builder_attr_int(b, "hidden_size", rnn_attrs.hidden));
  OK(rill_op_builder_attr_bool(b, "is_bidirec", rnn_attrs.bidirec));
  OK(rill_op_builder_attr_bool(b, "is_test", rnn_attrs.is_test));
  OK(rill_op_builder_attr_float(b, "dropout_prob", rnn_attrs.dropout));
  OK(rill_op_builder_attr_int(b, "seed", rnn_attrs.seed));
}

/* An rnn in inference of T steps, N sequences and I inputs: its WeightList in operators/rnn.h's
 * order (every weight, then every bias, by layer, direction, input before hidden),
 * PreState, with `lengths` a SequenceLength of random lengths in [0, T], Out and State,
 * compared with the CPU. */
static void rnn_case_lens(const char *mode, int layers, bool bidirec, int T, int N, int I, int H, bool lengths) {
  static char names[MAX_ARGS][16];
  rnn_attrs = (__typeof__(rnn_attrs)){.mode = mode, .layers = layers, .hidden = H, .bidirec = bidirec, .is_test = true};
  int G = !strcmp(mode, "LSTM") ? 4 : !strcmp(mode, "GRU") ? 3 : 1, D = bidirec ? 2 : 1;
  int nstate = G == 4 ? 2 : 1, nw = 4 * layers * D;
  cr_assert_leq(1 + nstate + nw + lengths, MAX_ARGS, "the case has too many inputs");
  op_case c = {"rnn", {IN("Input", "x", -1, 1, T, N, I)}, {OUT("Out", "out", T, N, D * H)}, rnn_set_attrs, 1e-5};
  int at = 1;
  for (int i = 0; i < nstate; i++, at++) {
    snprintf(names[at], sizeof names[at], "s%d", i);
    c.in[at] = (arg)IN("PreState", names[at], -1, 1, layers * D, N, H);
  }
  for (int k = 0; k < nw; k++, at++) {
    int half = nw / 2, j = k < half ? k : k - half, layer = j / (2 * D);
    bool hidden = j % 2 == 1;
    snprintf(names[at], sizeof names[at], "w%d", k);
    c.in[at] = k < half ? (arg)IN("WeightList", names[at], -0.5f, 0.5f, G * H, hidden ? H : layer ? D * H : I)
                        : (arg)IN("WeightList", names[at], -0.5f, 0.5f, G * H);
  }
  if (lengths) {
    c.in[at] = (arg)IN("SequenceLength", "lens", 0, (float)T, N);
    c.in[at++].dtype = RILL_DTYPE_INT64;
  }
  for (int i = 0; i < nstate; i++) {
    snprintf(names[at + i], sizeof names[at + i], "last%d", i);
    c.out[1 + i] = (arg)OUT("State", names[at + i], layers * D, N, H);
  }
  compare(&c);
}

static void rnn_case(const char *mode, int layers, bool bidirec, int T, int N, int I, int H) {
  rnn_case_lens(mode, layers, bidirec, T, N, I, H, false);
}

/* A PP-OCR recognizer's neck (two bidirectional LSTM layers, as faccy's), one GRU
 * layer, three simple tanh layers (the scratch buffers used in turn), a bidirectional
 * relu layer, and one step of one sequence. */
Test(cuda_kernels, rnn_lstm_two_bidirectional_layers) { rnn_case("LSTM", 2, true, 5, 3, 7, 4); }
Test(cuda_kernels, rnn_gru) { rnn_case("GRU", 1, false, 4, 2, 5, 3); }
Test(cuda_kernels, rnn_tanh_three_layers) { rnn_case("RNN_TANH", 3, false, 3, 2, 4, 5); }
Test(cuda_kernels, rnn_relu_bidirectional) { rnn_case("RNN_RELU", 1, true, 6, 2, 3, 4); }
Test(cuda_kernels, rnn_one_step) { rnn_case("LSTM", 1, true, 1, 1, 3, 2); }

/* Sequences of their own lengths (0 and T among them): steps past a length give zeros
 * and keep the state, so the backward direction starts at each sequence's last step. */
Test(cuda_kernels, rnn_lstm_sequence_lengths) { rnn_case_lens("LSTM", 2, true, 6, 7, 4, 3, true); }
Test(cuda_kernels, rnn_gru_sequence_lengths) { rnn_case_lens("GRU", 1, true, 5, 6, 3, 4, true); }

/* The training form and its gradient: `grad` builds rnn_grad (the forward's inputs, Out,
 * Reserve and DropoutState drawn at random, the upstream gradients; every gradient
 * wanted), else the training forward with Reserve and DropoutState. dropout between the
 * layers with a fixed seed: the device draws the CPU's mask. */
typedef struct rnn_train_shape {
  const char *mode;
  int layers;
  bool bidirec;
  int T, N, I, H;
  bool lengths;
  float dropout;
} rnn_train_shape;

static void rnn_train_case(const rnn_train_shape *sh, bool grad) {
  static char names[2 * MAX_ARGS][20];
  int nn = 0;
#define NAME(...) (snprintf(names[nn], sizeof names[nn], __VA_ARGS__), names[nn++])
  rnn_attrs = (__typeof__(rnn_attrs)){.mode = sh->mode, .layers = sh->layers, .hidden = sh->H, .bidirec = sh->bidirec,
                                      .is_test = false, .dropout = sh->dropout, .seed = 11};
  const int T = sh->T, N = sh->N, I = sh->I, H = sh->H, L = sh->layers;
  int G = !strcmp(sh->mode, "LSTM") ? 4 : !strcmp(sh->mode, "GRU") ? 3 : 1, D = sh->bidirec ? 2 : 1;
  int S = G == 4 ? 5 * H : G == 3 ? 4 * H : 0, nstate = G == 4 ? 2 : 1, nw = 4 * L * D;
  int64_t reserve = (int64_t)L * D * T * N * S + (int64_t)(L - 1) * T * N * D * H;
  bool dropout = L > 1 && sh->dropout > 0;
  op_case c = {grad ? "rnn_grad" : "rnn", {IN("Input", "x", -1, 1, T, N, I)}, {{0}}, rnn_set_attrs, 1e-4};
  int in = 1, out = 0;
  for (int i = 0; i < nstate; i++) c.in[in++] = (arg)IN("PreState", NAME("s%d", i), -1, 1, L * D, N, H);
  for (int k = 0; k < nw; k++) {
    int half = nw / 2, j = k < half ? k : k - half, layer = j / (2 * D);
    bool hidden = j % 2 == 1;
    c.in[in++] = k < half ? (arg)IN("WeightList", NAME("w%d", k), -0.5f, 0.5f, G * H, hidden ? H : layer ? D * H : I)
                          : (arg)IN("WeightList", NAME("w%d", k), -0.5f, 0.5f, G * H);
  }
  if (sh->lengths) {
    c.in[in] = (arg)IN("SequenceLength", "lens", 0, (float)T, N);
    c.in[in++].dtype = RILL_DTYPE_INT64;
  }
  if (!grad) {
    c.out[out++] = (arg)OUT("Out", "out", T, N, D * H);
    for (int i = 0; i < nstate; i++) c.out[out++] = (arg)OUT("State", NAME("last%d", i), L * D, N, H);
    if (reserve) c.out[out++] = (arg)OUT("Reserve", "reserve", reserve);
    c.out[out] = (arg)OUT("DropoutState", "mask", T, N, D * H);
    c.out[out++].dtype = RILL_DTYPE_UINT8;
  } else {
    c.in[in++] = (arg)IN("Out", "out", -1, 1, T, N, D * H);
    /* the gates as the forward keeps them: probabilities, candidates and cells in (0, 1) */
    c.in[in++] = (arg)IN("Reserve", "reserve", 0.05f, 0.95f, reserve);
    if (dropout) {
      c.in[in] = (arg)IN("DropoutState", "mask", 0, 1, T, N, D * H);
      c.in[in++].dtype = RILL_DTYPE_UINT8;
    }
    c.in[in++] = (arg)IN("Out@GRAD", "dout", -1, 1, T, N, D * H);
    for (int i = 0; i < nstate; i++) c.in[in++] = (arg)IN("State@GRAD", NAME("dlast%d", i), -1, 1, L * D, N, H);
    c.out[out++] = (arg)OUT("Input@GRAD", "dx", T, N, I);
    for (int i = 0; i < nstate; i++) c.out[out++] = (arg)OUT("PreState@GRAD", NAME("ds%d", i), L * D, N, H);
    for (int k = 0; k < nw; k++) {
      int half = nw / 2, j = k < half ? k : k - half, layer = j / (2 * D);
      bool hidden = j % 2 == 1;
      c.out[out++] = k < half ? (arg)OUT("WeightList@GRAD", NAME("dw%d", k), G * H, hidden ? H : layer ? D * H : I)
                              : (arg)OUT("WeightList@GRAD", NAME("dw%d", k), G * H);
    }
  }
#undef NAME
  cr_assert(in <= MAX_ARGS && out <= MAX_ARGS, "the case has too many arguments");
  compare(&c);
}

/* Two bidirectional LSTM layers with dropout between them; GRU with sequence lengths
 * and dropout; three tanh layers; one relu layer. */
static const rnn_train_shape lstm_train = {"LSTM", 2, true, 5, 3, 4, 3, false, 0.4f};
static const rnn_train_shape gru_train = {"GRU", 2, true, 4, 5, 3, 4, true, 0.3f};
static const rnn_train_shape tanh_train = {"RNN_TANH", 3, false, 3, 2, 4, 5, false, 0};
static const rnn_train_shape relu_train = {"RNN_RELU", 1, true, 4, 3, 3, 4, true, 0};
Test(cuda_kernels, rnn_lstm_trains_with_dropout) { rnn_train_case(&lstm_train, false); }
Test(cuda_kernels, rnn_gru_trains_with_lengths) { rnn_train_case(&gru_train, false); }
Test(cuda_kernels, rnn_tanh_trains) { rnn_train_case(&tanh_train, false); }
Test(cuda_kernels, rnn_relu_trains) { rnn_train_case(&relu_train, false); }
Test(cuda_kernels, rnn_grad_lstm_with_dropout) { rnn_train_case(&lstm_train, true); }
Test(cuda_kernels, rnn_grad_gru_with_lengths) { rnn_train_case(&gru_train, true); }
Test(cuda_kernels, rnn_grad_tanh) { rnn_train_case(&tanh_train, true); }
Test(cuda_kernels, rnn_grad_relu_with_lengths) { rnn_train_case(&relu_train, true); }

/* ---- cudnn_lstm (Fluid 1.x's layers.lstm): inference, training and its gradient ---- */

static void cudnn_lstm_set_attrs(rill_op_builder *b) {
  OK(rill_op_builder_attr_int(b, "num_layers", rnn_attrs.layers));
  OK(rill_op_builder_attr_int(b, "hidden_size", rnn_attrs.hidden));
  OK(rill_op_builder_attr_int(b, "input_size", rnn_attrs.input));
  OK(rill_op_builder_attr_bool(b, "is_bidirec", rnn_attrs.bidirec));
  OK(rill_op_builder_attr_bool(b, "is_test", rnn_attrs.is_test));
  OK(rill_op_builder_attr_float(b, "dropout_prob", rnn_attrs.dropout));
  OK(rill_op_builder_attr_int(b, "seed", rnn_attrs.seed));
}

/* The flat weight W of cuDNN's canonical layout (every layer and direction's matrices,
 * then every bias) read at the offsets operators/cudnn_lstm.h gives. */
typedef enum { CUDNN_LSTM_INFER, CUDNN_LSTM_TRAIN, CUDNN_LSTM_GRAD } cudnn_lstm_form;

/* Training keeps Reserve (the gates, the lower layers' outputs, the dropout mask as
 * floats), dropout 0.4 between the layers with seed 3; the gradient reads a Reserve
 * drawn at random (mask section in (0, 1): every element kept) and writes every
 * gradient, W@GRAD at the layout's offsets. */
static void cudnn_lstm_case_of(cudnn_lstm_form form, int layers, bool bidirec, int T, int N, int I, int H) {
  rnn_attrs = (__typeof__(rnn_attrs)){.layers = layers, .hidden = H, .input = I, .bidirec = bidirec,
                                      .is_test = form == CUDNN_LSTM_INFER, .dropout = 0.4f, .seed = 3};
  int D = bidirec ? 2 : 1;
  int64_t numel = 0;
  for (int l = 0; l < layers; l++) numel += D * (4 * H * ((l ? D * H : I) + H) + 8 * H);
  int64_t reserve = (int64_t)layers * D * T * N * 5 * H + (int64_t)(layers - 1) * T * N * D * H +
                    (layers > 1 ? (int64_t)T * N * D * H : 0);
  op_case c = {form == CUDNN_LSTM_GRAD ? "cudnn_lstm_grad" : "cudnn_lstm",
               {IN("Input", "x", -1, 1, T, N, I), IN("InitH", "h0", -1, 1, layers * D, N, H),
                IN("InitC", "c0", -1, 1, layers * D, N, H), IN("W", "w", -0.5f, 0.5f, numel)},
               {OUT("Out", "out", T, N, D * H), OUT("last_h", "lh", layers * D, N, H),
                OUT("last_c", "lc", layers * D, N, H)},
               cudnn_lstm_set_attrs, form == CUDNN_LSTM_INFER ? 1e-5 : 1e-4};
  if (form == CUDNN_LSTM_TRAIN) c.out[3] = (arg)OUT("Reserve", "reserve", reserve);
  if (form == CUDNN_LSTM_GRAD) {
    c.in[4] = (arg)IN("Reserve", "reserve", 0.05f, 0.95f, reserve);
    c.in[5] = (arg)IN("Out", "out", -1, 1, T, N, D * H);
    c.in[6] = (arg)IN("Out@GRAD", "dout", -1, 1, T, N, D * H);
    c.in[7] = (arg)IN("last_h@GRAD", "dlh", -1, 1, layers * D, N, H);
    c.in[8] = (arg)IN("last_c@GRAD", "dlc", -1, 1, layers * D, N, H);
    c.out[0] = (arg)OUT("Input@GRAD", "dx", T, N, I);
    c.out[1] = (arg)OUT("InitH@GRAD", "dh0", layers * D, N, H);
    c.out[2] = (arg)OUT("InitC@GRAD", "dc0", layers * D, N, H);
    c.out[3] = (arg)OUT("W@GRAD", "dw", numel);
  }
  compare(&c);
}

static void cudnn_lstm_case(int layers, bool bidirec, int T, int N, int I, int H, bool is_test) {
  cudnn_lstm_case_of(is_test ? CUDNN_LSTM_INFER : CUDNN_LSTM_TRAIN, layers, bidirec, T, N, I, H);
}

Test(cuda_kernels, cudnn_lstm_two_bidirectional_layers) { cudnn_lstm_case(2, true, 4, 3, 5, 6, true); }
Test(cuda_kernels, cudnn_lstm_three_layers) { cudnn_lstm_case(3, false, 3, 2, 4, 3, true); }
Test(cuda_kernels, cudnn_lstm_trains_with_dropout) { cudnn_lstm_case(2, true, 3, 2, 4, 3, false); }
Test(cuda_kernels, cudnn_lstm_trains_one_layer) { cudnn_lstm_case(1, false, 4, 3, 2, 5, false); }
Test(cuda_kernels, cudnn_lstm_grad_with_dropout) { cudnn_lstm_case_of(CUDNN_LSTM_GRAD, 2, true, 3, 2, 4, 3); }
Test(cuda_kernels, cudnn_lstm_grad_three_layers) { cudnn_lstm_case_of(CUDNN_LSTM_GRAD, 3, false, 4, 3, 2, 5); }

/* ---- set_value ---- */

/* x[:, 1:5:2, :] = 3.5 (the attribute value broadcast to the slice). */
static void sv_attr_scalar(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "axes", (const int32_t[]){1}, 1));
  OK(rill_op_builder_attr_longs(b, "starts", (const int64_t[]){1}, 1));
  OK(rill_op_builder_attr_longs(b, "ends", (const int64_t[]){5}, 1));
  OK(rill_op_builder_attr_longs(b, "steps", (const int64_t[]){2}, 1));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_FP32));
  OK(rill_op_builder_attr_longs(b, "shape", (const int64_t[]){1}, 1));
  OK(rill_op_builder_attr_floats(b, "fp32_values", (const float[]){3.5f}, 1));
}
/* x[0:4, :, -1:-7:-2] = v, v [5, 1] broadcast along the reversed last axis. */
static void sv_reversed(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "axes", (const int32_t[]){0, 2}, 2));
  OK(rill_op_builder_attr_longs(b, "starts", (const int64_t[]){0, -1}, 2));
  OK(rill_op_builder_attr_longs(b, "ends", (const int64_t[]){4, -7}, 2));
  OK(rill_op_builder_attr_longs(b, "steps", (const int64_t[]){1, -2}, 2));
}
/* x[i, :] = v: one row, the index from a bound tensor (read on the host). */
static void sv_row(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "axes", (const int32_t[]){0}, 1));
  OK(rill_op_builder_attr_longs(b, "steps", (const int64_t[]){1}, 1));
  OK(rill_op_builder_attr_ints(b, "decrease_axes", (const int32_t[]){0}, 1));
}
/* int64 x[1:3, :] = [7, 8, 9] from the attribute list. */
static void sv_int64_rows(rill_op_builder *b) {
  OK(rill_op_builder_attr_ints(b, "axes", (const int32_t[]){0}, 1));
  OK(rill_op_builder_attr_longs(b, "starts", (const int64_t[]){1}, 1));
  OK(rill_op_builder_attr_longs(b, "ends", (const int64_t[]){3}, 1));
  OK(rill_op_builder_attr_int(b, "dtype", RILL_DTYPE_INT64));
  OK(rill_op_builder_attr_longs(b, "shape", (const int64_t[]){3}, 1));
  OK(rill_op_builder_attr_longs(b, "int64_values", (const int64_t[]){7, 8, 9}, 3));
}

Test(cuda_kernels, set_value_attribute_value_strided) {
  op_case c = {"set_value", {IN("Input", "x", -1, 1, 4, 5, 6)}, {OUT("Out", "out", 4, 5, 6)}, sv_attr_scalar, 0};
  compare(&c);
}

Test(cuda_kernels, set_value_tensor_broadcast_reversed) {
  op_case c = {"set_value", {IN("Input", "x", -1, 1, 4, 5, 6), IN("ValueTensor", "v", -1, 1, 5, 1)},
               {OUT("Out", "out", 4, 5, 6)}, sv_reversed, 0};
  compare(&c);
}

Test(cuda_kernels, set_value_row_from_bound_tensors) {
  op_case c = {"set_value",
               {IN("Input", "x", -1, 1, 3, 4), IN("ValueTensor", "v", -1, 1, 4), IN("StartsTensorList", "s", 2, 2, 1),
                IN("EndsTensorList", "e", 3, 3, 1)},
               {OUT("Out", "out", 3, 4)}, sv_row, 0};
  c.in[2].dtype = c.in[3].dtype = RILL_DTYPE_INT64;
  compare(&c);
}

Test(cuda_kernels, set_value_int64) {
  op_case c = {"set_value", {IN("Input", "x", -50, 50, 4, 3)}, {OUT("Out", "out", 4, 3)}, sv_int64_rows, 0};
  c.in[0].dtype = c.out[0].dtype = RILL_DTYPE_INT64;
  compare(&c);
}
