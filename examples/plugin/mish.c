/* An op plugin: the mish activation and its gradient, for float32 and float64, as the
 * custom op `custom_mish` (rill has Paddle's `mish` built in, and a plugin cannot take
 * the name of a built-in op).
 *
 *   Out = X * tanh(softplus(X)),  softplus(x) = x > threshold ? x : log1p(exp(x))
 *
 * Built as a shared library that includes only rill.h; load it with
 * `rill run MODEL --plugin mish_plugin.so` or rill_load_op_library(). See README.md. */
#include <math.h>
#include <string.h>

#include "rill.h"

/* Slot indices, in the order of the arrays below. */
enum { MISH_X = 0 };
enum { MISH_OUT = 0 };
enum { GRAD_X = 0, GRAD_OUT_GRAD = 1 };
enum { GRAD_X_GRAD = 0 };

/* Out (or X@GRAD) has X's dtype and shape and takes X's LoD. */
static rill_status *infer_like_x(rill_op_context *ctx, void *user) {
  (void)user;
  rill_dtype dtype;
  int64_t dims[RILL_MAX_DIMS];
  size_t ndim;
  if (rill_op_context_num_outputs(ctx, 0) == 0) return NULL;
  if (!rill_op_context_input_meta(ctx, 0, 0, &dtype, dims, &ndim))
    return NULL; /* X's shape is not known yet: leave Out unknown */
  if (dtype != RILL_DTYPE_FP32 && dtype != RILL_DTYPE_FP64)
    return rill_op_context_error(ctx, "X (%s) is %s; mish takes float32 or float64",
                                 rill_op_context_input_name(ctx, 0, 0), rill_dtype_name(dtype));
  return rill_op_context_set_output_meta(ctx, 0, 0, dtype, dims, ndim, 0);
}

static rill_status *read_threshold(rill_op_context *ctx, double *threshold) {
  return rill_op_context_attr_float(ctx, "threshold", threshold);
}

static inline double softplus(double x, double threshold) {
  return x > threshold ? x : log1p(exp(x));
}

#define MISH_KERNELS(T, suffix)                                                          \
  static rill_status *mish_##suffix(rill_op_context *ctx, void *user) {                 \
    (void)user;                                                                          \
    double th;                                                                           \
    rill_status *st = read_threshold(ctx, &th);                                          \
    if (st) return st;                                                                   \
    rill_tensor *x = rill_op_context_input(ctx, MISH_X, 0);                              \
    rill_tensor *out = rill_op_context_output(ctx, MISH_OUT, 0);                         \
    if (!x || !out) return rill_op_context_error(ctx, "X and Out are required");         \
    const T *xs = rill_tensor_data(x);                                                   \
    T *ys = rill_tensor_data(out);                                                       \
    int64_t n = rill_tensor_numel(x);                                                    \
    for (int64_t i = 0; i < n; i++) {                                                    \
      double v = (double)xs[i];                                                          \
      ys[i] = (T)(v * tanh(softplus(v, th)));                                            \
    }                                                                                    \
    return NULL;                                                                         \
  }                                                                                      \
  static rill_status *mish_grad_##suffix(rill_op_context *ctx, void *user) {            \
    (void)user;                                                                          \
    double th;                                                                           \
    rill_status *st = read_threshold(ctx, &th);                                          \
    if (st) return st;                                                                   \
    rill_tensor *x = rill_op_context_input(ctx, GRAD_X, 0);                              \
    rill_tensor *dout = rill_op_context_input(ctx, GRAD_OUT_GRAD, 0);                    \
    rill_tensor *dx = rill_op_context_output(ctx, GRAD_X_GRAD, 0);                       \
    if (!dx) return NULL; /* nobody wants X's gradient */                                \
    if (!x || !dout) return rill_op_context_error(ctx, "X and Out@GRAD are required");   \
    if (rill_tensor_numel(dout) != rill_tensor_numel(x))                                 \
      return rill_op_context_error(ctx, "Out@GRAD has %lld elements, X %lld",            \
                                   (long long)rill_tensor_numel(dout),                   \
                                   (long long)rill_tensor_numel(x));                     \
    const T *xs = rill_tensor_data(x), *gs = rill_tensor_data(dout);                     \
    T *dxs = rill_tensor_data(dx);                                                       \
    int64_t n = rill_tensor_numel(x);                                                    \
    for (int64_t i = 0; i < n; i++) {                                                    \
      double v = (double)xs[i];                                                          \
      double sp = softplus(v, th), t = tanh(sp), dsp = 1.0 - exp(-sp);                   \
      dxs[i] = (T)((double)gs[i] * (t + v * (1.0 - t * t) * dsp));                       \
    }                                                                                    \
    return NULL;                                                                         \
  }

MISH_KERNELS(float, f32)
MISH_KERNELS(double, f64)

static const rill_plugin_attr mish_attrs[] = {
    {.name = "threshold", .type = RILL_PLUGIN_ATTR_FLOAT, .def_float = 20.0,
     .doc = "above it, softplus(x) is taken as x"},
};

static const rill_plugin_slot mish_in[] = {{"X", 0, "input"}};
static const rill_plugin_slot mish_out[] = {{"Out", 0, "X * tanh(softplus(X))"}};
static const rill_plugin_slot grad_in[] = {{"X", 0, NULL}, {"Out@GRAD", 0, NULL}};
static const rill_plugin_slot grad_out[] = {{"X@GRAD", RILL_PLUGIN_SLOT_DISPENSABLE, NULL}};

__attribute__((visibility("default"))) rill_status *rill_plugin_init(rill_plugin *plugin);

rill_status *rill_plugin_init(rill_plugin *plugin) {
  rill_plugin_op mish = {
      .api_version = RILL_PLUGIN_API_VERSION,
      .type = "custom_mish",
      .doc = "Mish activation (Misra 2019): X * tanh(softplus(X)), elementwise",
      .inputs = mish_in, .ninputs = 1,
      .outputs = mish_out, .noutputs = 1,
      .attrs = mish_attrs, .nattrs = 1,
      .kernel_dtype_input = MISH_X,
      .infer = infer_like_x,
      .grad_op = "custom_mish_grad",
  };
  rill_plugin_op grad = mish;
  grad.type = "custom_mish_grad";
  grad.doc = "gradient of mish";
  grad.inputs = grad_in;
  grad.ninputs = 2;
  grad.outputs = grad_out;
  grad.noutputs = 1;
  grad.grad_op = NULL;
  rill_status *st;
  if ((st = rill_plugin_add_op(plugin, &mish)) || (st = rill_plugin_add_op(plugin, &grad)))
    return st;
  const rill_plugin_kernel kernels[] = {
      {RILL_PLUGIN_API_VERSION, "custom_mish", RILL_DEVICE_CPU, RILL_DTYPE_FP32, mish_f32, NULL},
      {RILL_PLUGIN_API_VERSION, "custom_mish", RILL_DEVICE_CPU, RILL_DTYPE_FP64, mish_f64, NULL},
      {RILL_PLUGIN_API_VERSION, "custom_mish_grad", RILL_DEVICE_CPU, RILL_DTYPE_FP32, mish_grad_f32, NULL},
      {RILL_PLUGIN_API_VERSION, "custom_mish_grad", RILL_DEVICE_CPU, RILL_DTYPE_FP64, mish_grad_f64, NULL},
  };
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
    if ((st = rill_plugin_add_kernel(plugin, &kernels[i]))) return st;
  return NULL;
}
