/* nearest_interp, bilinear_interp, trilinear_interp (Fluid 1.x: `scale` is one float)
 * and nearest_interp_v2, bilinear_interp_v2 (Paddle 2.x: `scale` is a list): resize the
 * spatial dims of a 4-D (or, for nearest and trilinear, 5-D) tensor. The size rules are in
 * operators/interp.h; inference and kernels share them. Each has an <op>_grad. */
#include "operators/interp.h"
#include "operators/math_grad.h"
#include "operators/op_util.h"

static const rill_slot_schema inputs[] = {
    [INTERP_IN_X] = {"X", 0, "input, NCHW / NHWC (or NCDHW / NDHWC for nearest)"},
    [INTERP_IN_OUT_SIZE] = {"OutSize", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                            "1-D int32 tensor of the output spatial extents; overrides attrs"},
    [INTERP_IN_SIZE_TENSOR] = {"SizeTensor",
                               RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD |
                                   RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                               "one-element int32 tensors, one per spatial dim; highest priority"},
    [INTERP_IN_SCALE] = {"Scale", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_HOST_DATA | RILL_SLOT_INFER_DATA,
                         "float tensor of the scale factor(s); overrides attribute scale"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "the resized tensor"}};

#define INTERP_ATTRS(SCALE_ENTRY, METHOD)                                                      \
  [INTERP_A_LAYOUT] = {"data_layout", RILL_ATTR_STRING, 0, RILL_DEF_STRING("NCHW"),            \
                       "NCHW or NHWC (NCDHW / NDHWC for 5-D)"},                                \
  [INTERP_A_OUT_D] = {"out_d", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "output depth (5-D)"},       \
  [INTERP_A_OUT_H] = {"out_h", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "output height"},            \
  [INTERP_A_OUT_W] = {"out_w", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "output width"},             \
  [INTERP_A_SCALE] = SCALE_ENTRY,                                                              \
  [INTERP_A_METHOD] = {"interp_method", RILL_ATTR_STRING, 0, RILL_DEF_STRING(METHOD),          \
                       "\"nearest\", \"bilinear\" or \"trilinear\""},                                         \
  [INTERP_A_ALIGN_CORNERS] = {"align_corners", RILL_ATTR_BOOLEAN, 0, RILL_DEF_BOOL(true),      \
                              "align the corner pixels of input and output"},                  \
  [INTERP_A_ALIGN_MODE] = {"align_mode", RILL_ATTR_INT, 0, RILL_DEF_INT(1),                    \
                           "bilinear without align_corners: 0 half-pixel, 1 src = ratio*dst"}, \
  {"use_mkldnn", RILL_ATTR_BOOLEAN, RILL_ATTR_EXTRA, RILL_DEF_BOOL(false), "ignored"},

#define SCALE_V1 {"scale", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "scale factor (> 0 to use)"}
#define SCALE_V2 {"scale", RILL_ATTR_FLOATS, 0, RILL_DEF_EMPTY(RILL_ATTR_FLOATS), \
                  "scale factors per spatial dim (> 0 to use)"}

static const rill_attr_schema attrs_nearest[] = {INTERP_ATTRS(SCALE_V1, "nearest")};
static const rill_attr_schema attrs_bilinear[] = {INTERP_ATTRS(SCALE_V1, "bilinear")};
static const rill_attr_schema attrs_trilinear[] = {INTERP_ATTRS(SCALE_V1, "trilinear")};
static const rill_attr_schema attrs_nearest_v2[] = {INTERP_ATTRS(SCALE_V2, "nearest")};
static const rill_attr_schema attrs_bilinear_v2[] = {INTERP_ATTRS(SCALE_V2, "bilinear")};

static rill_status *interp_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, INTERP_IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64",
                            rill_infer_in_name(ctx, INTERP_IN_X, 0), rill_dtype_name(x->dtype));
  bool v2 = ctx->schema->attrs[INTERP_A_SCALE].type == RILL_ATTR_FLOATS;
  bool runtime = ctx->in_tensors != NULL;
  size_t nsize = ctx->nin[INTERP_IN_SIZE_TENSOR];
  const rill_tensor *sizes[3] = {0};
  for (size_t i = 0; i < nsize && i < 3; i++) sizes[i] = rill_infer_tensor(ctx, INTERP_IN_SIZE_TENSOR, i);
  interp_plan p;
  const char *err = interp_resolve(
      ctx->attrs, v2, &x->dims, ctx->nin[INTERP_IN_OUT_SIZE] > 0,
      rill_infer_tensor(ctx, INTERP_IN_OUT_SIZE, 0), nsize, sizes, ctx->nin[INTERP_IN_SCALE] > 0,
      rill_infer_tensor(ctx, INTERP_IN_SCALE, 0), runtime, &p);
  if (err) {
    char b[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "%s (input X (%s) has shape %s)", err,
                            rill_infer_in_name(ctx, INTERP_IN_X, 0),
                            rill_dims_str(&x->dims, b, sizeof b));
  }
  rill_dims od = interp_out_dims(&p);
  rill_meta_set(out, x->dtype, &od, x->lod_level, -1, -1);
  return NULL;
}

/* Paddle's maker: <op>_grad(X, OutSize, SizeTensor, Scale, Out@GRAD) -> X@GRAD. */
static rill_status *interp_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, RILL_NAMES("X", "OutSize", "SizeTensor", "Scale"),
                        RILL_NAMES("Out"), RILL_NAMES("X"));
}

static const rill_slot_schema grad_inputs[] = {
    [INTERP_IN_X] = {"X", RILL_SLOT_ANY_PLACE, "forward X (its shape)"},
    [INTERP_IN_OUT_SIZE] = {"OutSize", RILL_SLOT_DISPENSABLE | RILL_SLOT_HOST_DATA, "forward OutSize"},
    [INTERP_IN_SIZE_TENSOR] = {"SizeTensor", RILL_SLOT_DUPLICABLE | RILL_SLOT_DISPENSABLE | RILL_SLOT_HOST_DATA,
                               "forward SizeTensor"},
    [INTERP_IN_SCALE] = {"Scale", RILL_SLOT_DISPENSABLE | RILL_SLOT_HOST_DATA, "forward Scale"},
    [INTERP_IN_DOUT] = {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "each Out@GRAD element added to the X elements it was "
                                      "read from, with the forward's weights"},
};

static rill_status *interp_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, INTERP_IN_X, 0);
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x) return rill_infer_error(ctx, "needs input X");
  if (!dx) return NULL;
  if (!x->known) {
    rill_meta_unknown(dx);
    return NULL;
  }
  rill_meta_set(dx, x->dtype, &x->dims, x->lod_level, INTERP_IN_X, 0);
  return NULL;
}

#define INTERP_GRAD_SCHEMA(NAME, ATTRS)                                                   \
  const rill_op_schema rill_schema_##NAME##_grad = {                                     \
      .type = #NAME "_grad",                                                             \
      .doc = "X@GRAD of " #NAME ": the transpose of its gather.",                        \
      .inputs = grad_inputs,                                                             \
      .ninputs = RILL_COUNTOF(grad_inputs),                                              \
      .outputs = grad_outputs,                                                           \
      .noutputs = RILL_COUNTOF(grad_outputs),                                            \
      .attrs = ATTRS,                                                                    \
      .nattrs = RILL_COUNTOF(ATTRS),                                                     \
      .infer = interp_grad_infer,                                                        \
      .kernel_dtype_slot = INTERP_IN_DOUT,                                               \
      .dtype_attr = -1,                                                                  \
  };

#define INTERP_SCHEMA(NAME, ATTRS, DOC)                                                   \
  const rill_op_schema rill_schema_##NAME = {                                            \
      .type = #NAME,                                                                     \
      .doc = DOC,                                                                        \
      .inputs = inputs,                                                                  \
      .ninputs = RILL_COUNTOF(inputs),                                                   \
      .outputs = outputs,                                                                \
      .noutputs = RILL_COUNTOF(outputs),                                                 \
      .attrs = ATTRS,                                                                    \
      .nattrs = RILL_COUNTOF(ATTRS),                                                     \
      .flags = RILL_OP_INFER_READS_DATA,                                                 \
      .infer = interp_infer,                                                             \
      .grad = interp_maker,                                                              \
      .kernel_dtype_slot = INTERP_IN_X,                                                  \
      .dtype_attr = -1,                                                                  \
  };

INTERP_SCHEMA(nearest_interp, attrs_nearest,
              "Nearest-neighbour resize of the spatial dims (Fluid 1.x; scale is one float).")
INTERP_SCHEMA(bilinear_interp, attrs_bilinear,
              "Bilinear resize of H and W (Fluid 1.x; scale is one float).")
INTERP_SCHEMA(trilinear_interp, attrs_trilinear,
              "Trilinear resize of D, H and W of a 5-D input (Fluid 1.x; scale is one float).")
INTERP_SCHEMA(nearest_interp_v2, attrs_nearest_v2,
              "Nearest-neighbour resize of the spatial dims (scale is a list per dim).")
INTERP_SCHEMA(bilinear_interp_v2, attrs_bilinear_v2,
              "Bilinear resize of H and W (scale is a list per dim).")

INTERP_GRAD_SCHEMA(nearest_interp, attrs_nearest)
INTERP_GRAD_SCHEMA(bilinear_interp, attrs_bilinear)
INTERP_GRAD_SCHEMA(trilinear_interp, attrs_trilinear)
INTERP_GRAD_SCHEMA(nearest_interp_v2, attrs_nearest_v2)
INTERP_GRAD_SCHEMA(bilinear_interp_v2, attrs_bilinear_v2)

RILL_OP_TABLE_CHECKS(interp);
