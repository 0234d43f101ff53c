/* spectral_norm: Out = Weight / sigma, sigma the largest singular value of Weight seen as
 * the matrix W [h, w] whose row r holds the entries at index r of dim `dim` (h =
 * dims[dim], w = numel / h; the other dims in order), estimated by power_iters power
 * iterations from U [h] and V [w] (dim is 0 or 1, as in Paddle):
 * v = W^T u / (|W^T u| + eps), u = W v / (|W v| + eps), then sigma = u^T W v. U and V are read, never written (Paddle 1.8.5 keeps them fixed).
 * spectral_norm_grad is Paddle 1.8.5's rule, not the derivative of Out:
 * Weight@GRAD = Out@GRAD * (1 - u v^T * sum(Out)) / sigma, elementwise, u v^T laid out
 * as Weight through W's indexing, with u, v and sigma recomputed as above. */
#include "operators/op_util.h"

enum { SN_IN_WEIGHT, SN_IN_U, SN_IN_V };
enum { SN_A_DIM, SN_A_ITERS, SN_A_EPS };

static const rill_slot_schema inputs[] = {
    [SN_IN_WEIGHT] = {"Weight", 0, "rank 2 to 5"},
    [SN_IN_U] = {"U", RILL_SLOT_NO_GRAD, "[h]: the start of the left singular vector"},
    [SN_IN_V] = {"V", RILL_SLOT_NO_GRAD, "[w]: the start of the right singular vector"},
};
static const rill_slot_schema outputs[] = {{"Out", 0, "Weight / sigma"}};
static const rill_attr_schema attrs[] = {
    [SN_A_DIM] = {"dim", RILL_ATTR_INT, 0, RILL_DEF_INT(0), "0 or 1: the dim that indexes W's rows"},
    [SN_A_ITERS] = {"power_iters", RILL_ATTR_INT, 0, RILL_DEF_INT(1), "power iterations (>= 0)"},
    [SN_A_EPS] = {"eps", RILL_ATTR_FLOAT, 0, RILL_DEF_FLOAT(1e-12f), "added to each norm"},
};

/* Checks Weight, U, V and the attributes; false in *known while one is undescribed. */
static rill_status *sn_check(rill_infer_ctx *ctx, bool *known) {
  const rill_tensor_meta *wt = rill_infer_in(ctx, SN_IN_WEIGHT, 0), *u = rill_infer_in(ctx, SN_IN_U, 0),
                         *v = rill_infer_in(ctx, SN_IN_V, 0);
  if (!wt || !u || !v) return rill_infer_error(ctx, "needs inputs Weight, U and V");
  if (ctx->attrs[SN_A_ITERS].v.i < 0)
    return rill_infer_error(ctx, "attribute power_iters is %d, expected >= 0",
                            (int)ctx->attrs[SN_A_ITERS].v.i);
  *known = wt->known && u->known && v->known;
  if (!*known) return NULL;
  const char *wn = rill_infer_in_name(ctx, SN_IN_WEIGHT, 0);
  char s[RILL_DIMS_STR_MAX];
  if (wt->dtype != RILL_DTYPE_FP32 && wt->dtype != RILL_DTYPE_FP64)
    return rill_infer_error(ctx, "input Weight (%s) is %s, expected float32 or float64", wn,
                            rill_dtype_name(wt->dtype));
  int rank = wt->dims.n, dim = ctx->attrs[SN_A_DIM].v.i;
  if (rank < 2 || rank > 5)
    return rill_infer_error(ctx, "input Weight (%s) has shape %s, expected rank 2 to 5", wn,
                            rill_dims_str(&wt->dims, s, sizeof s));
  if (dim != 0 && dim != 1)
    return rill_infer_error(ctx, "attribute dim is %d, expected 0 or 1 (input Weight (%s) %s)",
                            dim, wn, rill_dims_str(&wt->dims, s, sizeof s));
  int64_t h = wt->dims.d[dim], w = 1;
  for (int i = 0; i < rank; i++) w = w < 0 || wt->dims.d[i] < 0 ? -1 : (i == dim ? w : w * wt->dims.d[i]);
  char s2[RILL_DIMS_STR_MAX];
  const rill_tensor_meta *vec[2] = {u, v};
  const int64_t want[2] = {h, w};
  for (int k = 0; k < 2; k++) {
    const rill_tensor_meta *m = vec[k];
    int64_t n = 1;
    for (int i = 0; i < m->dims.n; i++) n = n < 0 || m->dims.d[i] < 0 ? -1 : n * m->dims.d[i];
    if (m->dtype != wt->dtype || (n >= 0 && want[k] >= 0 && n != want[k]))
      return rill_infer_error(ctx, "input %s (%s) is %s %s, expected %s with %lld values (Weight "
                              "%s, dim %d)", k ? "V" : "U",
                              rill_infer_in_name(ctx, k ? SN_IN_V : SN_IN_U, 0),
                              rill_dtype_name(m->dtype), rill_dims_str(&m->dims, s, sizeof s),
                              rill_dtype_name(wt->dtype), (long long)want[k],
                              rill_dims_str(&wt->dims, s2, sizeof s2), dim);
  }
  return NULL;
}

static rill_status *spectral_norm_infer(rill_infer_ctx *ctx) {
  rill_tensor_meta *out = rill_infer_out(ctx, 0, 0);
  if (!out) return rill_infer_error(ctx, "needs output Out");
  bool known;
  RILL_TRY(sn_check(ctx, &known));
  const rill_tensor_meta *wt = rill_infer_in(ctx, SN_IN_WEIGHT, 0);
  if (!known) {
    rill_meta_unknown(out);
    return NULL;
  }
  rill_meta_set(out, wt->dtype, &wt->dims, 0, -1, -1);
  return NULL;
}

static rill_status *spectral_norm_grad_maker(rill_grad_ctx *ctx) {
  static const char *const fwd[] = {"Weight", "U", "V"};
  static const char *const gout[] = {"Out"};
  static const char *const gin[] = {"Weight"};
  return rill_grad_emit(ctx, "spectral_norm_grad", fwd, RILL_COUNTOF(fwd), gout, RILL_COUNTOF(gout),
                        gin, RILL_COUNTOF(gin));
}

const rill_op_schema rill_schema_spectral_norm = {
    .type = "spectral_norm",
    .doc = "Weight divided by its largest singular value, estimated by power iteration.",
    .inputs = inputs,
    .ninputs = RILL_COUNTOF(inputs),
    .outputs = outputs,
    .noutputs = RILL_COUNTOF(outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = spectral_norm_infer,
    .grad = spectral_norm_grad_maker,
    .kernel_dtype_slot = SN_IN_WEIGHT,
    .dtype_attr = -1,
};

static const rill_slot_schema grad_inputs[] = {
    {"Weight", 0, "forward Weight"},
    {"U", 0, "forward U"},
    {"V", 0, "forward V"},
    {"Out@GRAD", 0, "gradient of Out"},
};
static const rill_slot_schema grad_outputs[] = {
    {"Weight@GRAD", RILL_SLOT_DISPENSABLE, "gradient of Weight"},
};

static rill_status *spectral_norm_grad_infer(rill_infer_ctx *ctx) {
  bool known;
  RILL_TRY(sn_check(ctx, &known));
  rill_tensor_meta *dw = rill_infer_out(ctx, 0, 0);
  if (!dw) return NULL;
  if (!known) {
    rill_meta_unknown(dw);
    return NULL;
  }
  const rill_tensor_meta *wt = rill_infer_in(ctx, SN_IN_WEIGHT, 0);
  rill_meta_set(dw, wt->dtype, &wt->dims, 0, -1, -1);
  return NULL;
}

const rill_op_schema rill_schema_spectral_norm_grad = {
    .type = "spectral_norm_grad",
    .doc = "Paddle 1.8.5's gradient rule for spectral_norm.",
    .inputs = grad_inputs,
    .ninputs = RILL_COUNTOF(grad_inputs),
    .outputs = grad_outputs,
    .noutputs = RILL_COUNTOF(grad_outputs),
    .attrs = attrs,
    .nattrs = RILL_COUNTOF(attrs),
    .infer = spectral_norm_grad_infer,
    .kernel_dtype_slot = SN_IN_WEIGHT,
    .dtype_attr = -1,
};

RILL_OP_TABLE_CHECKS(spectral_norm);
