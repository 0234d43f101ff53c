/* im2sequence: every kernels window of image n of X [N, C, H, W] (taken at strides over
 * the image padded by paddings: top, left, bottom, right) becomes one row of Out
 * [sum of windows, C * kh * kw], entries ordered (c, i, j); taps in the padding read 0.
 * Out has one LoD level: image n's windows form sequence n, in row-major window order.
 * With Y ([N, 2]: each image's real height and width, float) and N > 1, image n has only
 * the windows of a ceil(h / out_stride[0]) x ceil(w / out_stride[1]) image (its top-left
 * part of X), so the sequences differ in length; with N = 1, Y is ignored (as in Paddle
 * 1.8.5). The gradient adds each row back onto the pixels it read. */
#include "operators/op_util.h"
#include "operators/patches.h"

enum { I2S_IN_X, I2S_IN_Y };
enum { I2S_A_KERNELS, I2S_A_STRIDES, I2S_A_PADDINGS, I2S_A_OUT_STRIDE };

static const rill_slot_schema inputs[] = {
    [I2S_IN_X] = {"X", 0, "[N, C, H, W] images"},
    [I2S_IN_Y] = {"Y", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD,
                  "float [N, 2]: each image's real height and width"},
};
static const rill_slot_schema outputs[] = {
    {"Out", 0, "[windows, C * kh * kw], one sequence per image"},
};

#define INTS2(a, b) {.type = RILL_ATTR_INTS, .n = 2, .list.ints = (int32_t[]){a, b}}
static const rill_attr_schema attrs[] = {
    [I2S_A_KERNELS] = {"kernels", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
                       "window [kh, kw]"},
    [I2S_A_STRIDES] = {"strides", RILL_ATTR_INTS, 0, INTS2(1, 1), "[sh, sw]"},
    [I2S_A_PADDINGS] = {"paddings", RILL_ATTR_INTS, 0,
                        {.type = RILL_ATTR_INTS, .n = 4, .list.ints = (int32_t[]){0, 0, 0, 0}},
                        "[top, left, bottom, right]"},
    [I2S_A_OUT_STRIDE] = {"out_stride", RILL_ATTR_INTS, 0, INTS2(1, 1),
                          "with Y: the real sizes are divided by it, rounding up"},
};

/* Checks X (and Y) and fills the geometry of a full image. */
static rill_status *i2s_check(rill_infer_ctx *ctx, rill_patch_geom *g) {
  const rill_tensor_meta *x = rill_infer_in(ctx, I2S_IN_X, 0), *y = rill_infer_in(ctx, I2S_IN_Y, 0);
  const char *xn = rill_infer_in_name(ctx, I2S_IN_X, 0);
  char s[RILL_DIMS_STR_MAX];
  if (x->dtype != RILL_DTYPE_FP32 && x->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input X (%s) is %s, expected float32 or float64", xn,
                            rill_dtype_name(x->dtype));
  if (x->dims.n != 4)
    return rill_infer_error(ctx, "input X (%s) has shape %s, expected [N, C, H, W]", xn,
                            rill_dims_str(&x->dims, s, sizeof s));
  const char *err = rill_patch_geom_get(ctx->attrs, I2S_A_KERNELS, false, &x->dims, g);
  if (err)
    return rill_infer_error(ctx, "input X (%s) %s: %s", xn, rill_dims_str(&x->dims, s, sizeof s),
                            err);
  const rill_attr_value *os = &ctx->attrs[I2S_A_OUT_STRIDE];
  if (y && (os->n != 2 || os->list.ints[0] <= 0 || os->list.ints[1] <= 0))
    return rill_infer_error(ctx, "attribute out_stride must hold 2 positive ints");
  if (y && y->known && (y->dtype != RILL_DTYPE_FP32 || y->dims.n != 2 ||
                        (y->dims.d[1] >= 0 && y->dims.d[1] != 2)))
    return rill_infer_error(ctx, "input Y (%s) is %s %s, expected float32 [N, 2]",
                            rill_infer_in_name(ctx, I2S_IN_Y, 0), rill_dtype_name(y->dtype),
                            rill_dims_str(&y->dims, s, sizeof s));
  return NULL;
}

static rill_status *im2sequence_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, I2S_IN_X, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !out) return rill_infer_error(ctx, "needs input X and output Out");
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_patch_geom g;
  RILL_TRY(i2s_check(ctx, &g));
  int64_t n = x->dims.d[0], rows = -1;
  bool real = rill_infer_in(ctx, I2S_IN_Y, 0) && n != 1;
  if (!real && n >= 0 && g.oh >= 0 && g.ow >= 0) rows = n * g.oh * g.ow;
  rill_dims d = {.n = 2, .d = {rows, g.c < 0 ? -1 : g.c * g.kh * g.kw}};
  rill_meta_set(out, x->dtype, &d, 1, -1, -1);
  return NULL;
}

static rill_status *im2sequence_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"X", "Y"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"X"};
  return rill_grad_emit(ctx, "im2sequence_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout),
                        gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_im2sequence = {
    .type = "im2sequence",
    .doc = "Each sliding window of an image becomes a row; one sequence per image.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = im2sequence_infer,
    .grad = im2sequence_grad_maker,
    .kernel_dtype_slot = I2S_IN_X,
    .dtype_attr = -1,
    .flags = RILL_OP_KERNEL_SHAPES,
};

static const rill_slot_schema grad_inputs[] = {
    {"X", 0, "forward X"},
    {"Y", RILL_SLOT_DISPENSABLE, "forward Y"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {{"X@GRAD", RILL_SLOT_DISPENSABLE, "gradient of X"}};

static rill_status *im2sequence_grad_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, I2S_IN_X, 0);
  if (!x || !rill_infer_in(ctx, 2, 0)) return rill_infer_error(ctx, "needs inputs X and Out@GRAD");
  rill_tensor_meta *dx = rill_infer_out(ctx, 0, 0);
  if (!x->known) {
    if (dx) rill_meta_unknown(dx);
    return NULL;
  }
  rill_patch_geom g;
  RILL_TRY(i2s_check(ctx, &g));
  if (dx) rill_meta_set(dx, x->dtype, &x->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_im2sequence_grad = {
    .type = "im2sequence_grad",
    .doc = "Gradient of im2sequence: each row is added back onto the pixels it read.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = im2sequence_grad_infer,
    .kernel_dtype_slot = I2S_IN_X,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(im2sequence);
