/* Padding: pad (every dim, constant value), pad_constant_like (Y placed at the origin of
 * X's shape) and pad2d (the two spatial dims of NCHW or NHWC; constant, reflect or edge).
 * Their gradients cut the input's region out of Out@GRAD (pad2d reflect and edge add the
 * gradient of every copy of an element). */
#include "operators/tensor_ops.h"

#include <stdio.h>
#include <string.h>

static const rill_slot_schema x_inputs[] = {{"X", 0, "input"}};
static const rill_slot_schema out_outputs[] = {{"Out", 0, "the padded tensor"}};

/* ---- pad ---- */

static const rill_attr_schema pad_attrs[] = {
    {"paddings", RILL_ATTR_INTS, RILL_ATTR_REQUIRED, RILL_DEF_EMPTY(RILL_ATTR_INTS),
     "before and after each dim: [b0, a0, b1, a1, ...], >= 0"},
    {"pad_value", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "value of the added elements"},
};

bool rill_pad_dims(const rill_attr_value *pads, const rill_dims *x, int sign, rill_dims *out,
                   char *err, size_t errlen) {
  if (pads->n != 2 * (size_t)x->n) {
    snprintf(err, errlen, "paddings has %zu entries for rank %d; it needs %d", pads->n,
             (int)x->n, 2 * (int)x->n);
    return false;
  }
  *out = *x;
  for (int i = 0; i < x->n; i++) {
    int64_t b = pads->list.ints[2 * i], a = pads->list.ints[2 * i + 1];
    if (b < 0 || a < 0) {
      snprintf(err, errlen, "paddings of dim %d are %lld and %lld; they must be >= 0", i,
               (long long)b, (long long)a);
      return false;
    }
    if (x->d[i] < 0) continue;
    out->d[i] = x->d[i] + sign * (b + a);
    if (out->d[i] < 0) {
      snprintf(err, errlen, "dim %d of extent %lld is smaller than its paddings", i,
               (long long)x->d[i]);
      return false;
    }
  }
  return true;
}

/* Out (pad) or X@GRAD (pad_grad, sign -1) from input 0. */
static rill_status *pad_like_infer(rill_infer_ctx *ctx, int sign) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x) return rill_infer_error(ctx, "needs input %s", ctx->schema->inputs[0].name);
  if (!out) return NULL;
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_dims d;
  char err[160];
  if (!rill_pad_dims(&ctx->attrs[RILL_PAD_ATTR_PADDINGS], &x->dims, sign, &d, err, sizeof err))
    return rill_infer_error(ctx, "input %s (%s): %s", ctx->schema->inputs[0].name,
                            rill_infer_in_name(ctx, 0, 0), err);
  rill_meta_set(out, x->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *pad_infer(rill_infer_ctx *ctx) { return pad_like_infer(ctx, 1); }
static rill_status *pad_grad_infer(rill_infer_ctx *ctx) { return pad_like_infer(ctx, -1); }

static rill_status *pad_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, NULL, 0, (const char *const[]){"Out"}, 1,
                        (const char *const[]){"X"}, 1);
}

const rill_op_schema rill_schema_pad = {
    .type = "pad",
    .doc = "Out = X with paddings[2i] elements of pad_value before and paddings[2i + 1] after "
           "it along each dim i.",
    .inputs = x_inputs,
    .ninputs = RILL_COUNTOF(x_inputs),
    .outputs = out_outputs,
    .noutputs = RILL_COUNTOF(out_outputs),
    .attrs = pad_attrs,
    .nattrs = RILL_COUNTOF(pad_attrs),
    .flags = 0,
    .infer = pad_infer,
    .grad = pad_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema dout_inputs[] = {{"Out@GRAD", 0, "gradient of Out"}};
static const rill_slot_schema dx_outputs[] = {
    {"X@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD without the padding"}};

const rill_op_schema rill_schema_pad_grad = {
    .type = "pad_grad",
    .doc = "X@GRAD = Out@GRAD without the padded elements.",
    .inputs = dout_inputs,
    .ninputs = RILL_COUNTOF(dout_inputs),
    .outputs = dx_outputs,
    .noutputs = RILL_COUNTOF(dx_outputs),
    .attrs = pad_attrs,
    .nattrs = RILL_COUNTOF(pad_attrs),
    .flags = 0,
    .infer = pad_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

/* ---- pad_constant_like ---- */

static const rill_slot_schema pcl_inputs[] = {
    {"X", RILL_SLOT_NO_GRAD, "gives Out's shape"},
    {"Y", 0, "copied to Out's origin; no extent above X's"},
};
static const rill_attr_schema pcl_attrs[] = {
    {"pad_value", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "value of the other elements"},
};

static rill_status *pcl_infer(rill_infer_ctx *ctx) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0), *y = rill_infer_in(ctx, 1, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x || !y || !out) return rill_infer_error(ctx, "needs inputs X, Y and output Out");
  if (!x->known || !y->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  bool ok = x->dims.n == y->dims.n;
  for (int i = 0; ok && i < x->dims.n; i++)
    ok = x->dims.d[i] < 0 || y->dims.d[i] < 0 || y->dims.d[i] <= x->dims.d[i];
  if (!ok) {
    char a[RILL_DIMS_STR_MAX], b[RILL_DIMS_STR_MAX];
    return rill_infer_error(ctx, "input Y (%s) of shape %s does not fit in input X (%s) of shape %s",
                            rill_infer_in_name(ctx, 1, 0), rill_dims_str(&y->dims, a, sizeof a),
                            rill_infer_in_name(ctx, 0, 0), rill_dims_str(&x->dims, b, sizeof b));
  }
  rill_meta_set(out, y->dtype, &x->dims, 0, -1, -1);
  return NULL;
}

static rill_status *pcl_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, (const char *const[]){"Y"}, 1, (const char *const[]){"Out"}, 1,
                        (const char *const[]){"Y"}, 1);
}

const rill_op_schema rill_schema_pad_constant_like = {
    .type = "pad_constant_like",
    .doc = "Out = X's shape filled with pad_value, with Y copied at the origin.",
    .inputs = pcl_inputs,
    .ninputs = RILL_COUNTOF(pcl_inputs),
    .outputs = out_outputs,
    .noutputs = RILL_COUNTOF(out_outputs),
    .attrs = pcl_attrs,
    .nattrs = RILL_COUNTOF(pcl_attrs),
    .flags = 0,
    .infer = pcl_infer,
    .grad = pcl_maker,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

static const rill_slot_schema pcl_grad_inputs[] = {
    {"Y", 0, "the forward Y (its shape)"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema pcl_grad_outputs[] = {
    {"Y@GRAD", RILL_SLOT_DISPENSABLE, "Out@GRAD's region at the origin of Y's shape"}};

const rill_op_schema rill_schema_pad_constant_like_grad = {
    .type = "pad_constant_like_grad",
    .doc = "Y@GRAD = the region of Out@GRAD that Y was copied to.",
    .inputs = pcl_grad_inputs,
    .ninputs = RILL_COUNTOF(pcl_grad_inputs),
    .outputs = pcl_grad_outputs,
    .noutputs = RILL_COUNTOF(pcl_grad_outputs),
    .attrs = pcl_attrs,
    .nattrs = RILL_COUNTOF(pcl_attrs),
    .flags = 0,
    .infer = rill_grad_like_input_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

/* ---- pad2d ---- */

static const rill_slot_schema pad2d_inputs[] = {
    {"X", 0, "4-D input, NCHW or NHWC"},
    {"Paddings", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA,
     "int32 [4] overriding paddings at run time"},
};
static const int32_t pad2d_default[4] = {0, 0, 0, 0};
static const rill_attr_schema pad2d_attrs[] = {
    {"paddings", RILL_ATTR_INTS, 0,
     {.type = RILL_ATTR_INTS, .n = 4, .list.ints = (int32_t *)pad2d_default},
     "[top, bottom, left, right]"},
    {"pad_value", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(0.0f), "value of constant padding"},
    {"mode", RILL_ATTR_STRING, 0, RILL_DEF_STRING("constant"), "constant, reflect or edge"},
    {"data_format", RILL_ATTR_STRING, 0, RILL_DEF_STRING("NCHW"), "NCHW or NHWC"},
};

bool rill_pad2d_plan(const rill_dims *x, const int64_t *pads, const char *mode, const char *fmt,
                     rill_pad2d *p, char *err, size_t errlen) {
  if (x->n != 4) {
    snprintf(err, errlen, "rank %d; pad2d needs 4-D input", (int)x->n);
    return false;
  }
  bool nhwc = fmt && !strcmp(fmt, "NHWC");
  if (fmt && !nhwc && strcmp(fmt, "NCHW")) {
    snprintf(err, errlen, "data_format \"%s\" is neither NCHW nor NHWC", fmt);
    return false;
  }
  if (!strcmp(mode, "constant")) p->mode = 0;
  else if (!strcmp(mode, "reflect")) p->mode = 1;
  else if (!strcmp(mode, "edge")) p->mode = 2;
  else {
    snprintf(err, errlen, "mode \"%s\" is not constant, reflect or edge", mode);
    return false;
  }
  p->nhwc = nhwc;
  int hd = nhwc ? 1 : 2, wd = hd + 1;
  p->h = x->d[hd];
  p->w = x->d[wd];
  for (int i = 0; i < 4; i++) {
    p->pad[i] = pads[i];
    if (pads[i] < 0) {
      snprintf(err, errlen, "padding %d is %lld; paddings must be >= 0", i, (long long)pads[i]);
      return false;
    }
  }
  if (p->mode == 1 && p->h >= 0 && p->w >= 0 &&
      (pads[0] >= p->h || pads[1] >= p->h || pads[2] >= p->w || pads[3] >= p->w)) {
    snprintf(err, errlen, "reflect padding [%lld, %lld, %lld, %lld] must be smaller than the "
             "input's height %lld and width %lld", (long long)pads[0], (long long)pads[1],
             (long long)pads[2], (long long)pads[3], (long long)p->h, (long long)p->w);
    return false;
  }
  if (p->mode == 2 && ((p->h == 0 && pads[0] + pads[1] > 0) || (p->w == 0 && pads[2] + pads[3] > 0))) {
    snprintf(err, errlen, "edge padding of an empty dim");
    return false;
  }
  p->out = *x;
  if (p->h >= 0) p->out.d[hd] = p->h + pads[0] + pads[1];
  if (p->w >= 0) p->out.d[wd] = p->w + pads[2] + pads[3];
  return true;
}

/* The paddings: from input Paddings at run time, else the attribute. known is false at
 * compile time when Paddings decides them. */
rill_status *rill_pad2d_pads(rill_infer_ctx *ctx, const rill_tensor *t, bool tensor_bound,
                             const rill_attr_value *attr, int64_t *pads, bool *known) {
  *known = true;
  if (tensor_bound) {
    if (!t) {
      *known = false;
      return NULL;
    }
    for (int i = 0; i < 4; i++)
      if (!rill_int_tensor_at(t, i, &pads[i]))
        return rill_infer_error(ctx, "input Paddings (%s) must hold 4 int32 values",
                                rill_infer_in_name(ctx, 1, 0));
    return NULL;
  }
  if (attr->n != 4)
    return rill_infer_error(ctx, "attribute paddings has %zu entries; it needs 4", attr->n);
  for (int i = 0; i < 4; i++) pads[i] = attr->list.ints[i];
  return NULL;
}

static rill_status *pad2d_infer_common(rill_infer_ctx *ctx, bool grad) {
  const rill_tensor_meta *x = rill_infer_in(ctx, 0, 0);
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!x) return rill_infer_error(ctx, "needs input X");
  if (!out) return NULL;
  if (!x->known) {
    rill_meta_unknown(out);
    return NULL;
  }
  size_t pslot = grad ? 2 : 1;
  int64_t pads[4];
  bool known;
  RILL_TRY(rill_pad2d_pads(ctx, rill_infer_tensor(ctx, pslot, 0), rill_infer_in(ctx, pslot, 0) != NULL,
                           &ctx->attrs[RILL_PAD2D_ATTR_PADDINGS], pads, &known));
  rill_pad2d p;
  char err[200];
  int64_t zero[4] = {0, 0, 0, 0};
  if (!rill_pad2d_plan(&x->dims, known ? pads : zero, ctx->attrs[RILL_PAD2D_ATTR_MODE].v.s,
                       ctx->attrs[RILL_PAD2D_ATTR_DATA_FORMAT].v.s, &p, err, sizeof err))
    return rill_infer_error(ctx, "input X (%s): %s", rill_infer_in_name(ctx, 0, 0), err);
  rill_dims d = grad ? x->dims : p.out;
  if (!known && !grad) d.d[p.nhwc ? 1 : 2] = d.d[p.nhwc ? 2 : 3] = -1;
  const rill_tensor_meta *g = grad ? rill_infer_in(ctx, 1, 0) : NULL;
  rill_meta_set(out, g && g->known ? g->dtype : x->dtype, &d, 0, -1, -1);
  return NULL;
}

static rill_status *pad2d_infer(rill_infer_ctx *ctx) { return pad2d_infer_common(ctx, false); }
static rill_status *pad2d_grad_infer(rill_infer_ctx *ctx) { return pad2d_infer_common(ctx, true); }

static rill_status *pad2d_maker(rill_grad_ctx *ctx) {
  return rill_grad_emit(ctx, NULL, (const char *const[]){"X", "Paddings"}, 2,
                        (const char *const[]){"Out"}, 1, (const char *const[]){"X"}, 1);
}

const rill_op_schema rill_schema_pad2d = {
    .type = "pad2d",
    .doc = "Out = X padded along height and width: constant (pad_value), reflect (mirrored "
           "without the edge) or edge (the edge repeated).",
    .inputs = pad2d_inputs,
    .ninputs = RILL_COUNTOF(pad2d_inputs),
    .outputs = out_outputs,
    .noutputs = RILL_COUNTOF(out_outputs),
    .attrs = pad2d_attrs,
    .nattrs = RILL_COUNTOF(pad2d_attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = pad2d_infer,
    .grad = pad2d_maker,
    .kernel_dtype_slot = 0,
    .dtype_attr = -1,
};

static const rill_slot_schema pad2d_grad_inputs[] = {
    {"X", 0, "the forward input (its shape)"},
    {"Out@GRAD", 0, "gradient of Out"},
    {"Paddings", RILL_SLOT_DISPENSABLE | RILL_SLOT_NO_GRAD | RILL_SLOT_INFER_DATA, "the forward Paddings"},
};

const rill_op_schema rill_schema_pad2d_grad = {
    .type = "pad2d_grad",
    .doc = "X@GRAD = the sum of Out@GRAD over the positions each X element was copied to.",
    .inputs = pad2d_grad_inputs,
    .ninputs = RILL_COUNTOF(pad2d_grad_inputs),
    .outputs = dx_outputs,
    .noutputs = RILL_COUNTOF(dx_outputs),
    .attrs = pad2d_attrs,
    .nattrs = RILL_COUNTOF(pad2d_attrs),
    .flags = RILL_OP_INFER_READS_DATA,
    .infer = pad2d_grad_infer,
    .grad = NULL,
    .kernel_dtype_slot = 1,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(pad);
