/* auc CPU kernel: bucket the batch's probabilities of class 1 into StatPos/StatNeg
 * (num_thresholds + 1 buckets), then integrate the ROC curve from the highest bucket
 * down with trapezoids. slide_steps k > 0 keeps k windows of buckets, their sum after
 * them and a run count last: each run empties the oldest window, counts the batch into
 * it and recomputes the sum, so AUC covers the last k runs. */
#include <math.h>

#include "kernels/cpu/optimizer.h"

static double auc_area(const int64_t *pos, const int64_t *neg, int64_t nt) {
  double tp = 0, tn = 0, area = 0;
  for (int64_t b = nt; b >= 0; b--) {
    double tp0 = tp, tn0 = tn;
    tp += (double)pos[b];
    tn += (double)neg[b];
    area += fabs(tn - tn0) * (tp + tp0) / 2.0;
  }
  return tp > 0 && tn > 0 ? area / tp / tn : 0.0;
}

rill_status *rill_cpu_auc(rill_kernel_ctx *ctx) {
  rill_tensor *p = rill_kin(ctx, RILL_AUC_IN_PREDICT, 0), *l = rill_kin(ctx, RILL_AUC_IN_LABEL, 0);
  rill_tensor *out = NULL;
  int64_t nt = ctx->attrs[RILL_AUC_ATTR_NUM_THRESHOLDS].v.i;
  int64_t k = ctx->attrs[RILL_AUC_ATTR_SLIDE_STEPS].v.i;
  if (nt < 1 || k < 0)
    return rill_kernel_error(ctx, "num_thresholds (%lld) must be at least 1 and slide_steps "
                             "(%lld) not negative", (long long)nt, (long long)k);
  if (!p || !rill_tensor_is_set(p) || (p->dtype != RILL_DTYPE_FP32 && p->dtype != RILL_DTYPE_FP64))
    return rill_kernel_error(ctx, "input Predict (%s) must be a float32 or float64 tensor with data",
                             rill_kin_name(ctx, RILL_AUC_IN_PREDICT, 0));
  if (!l || !rill_tensor_is_set(l) || (l->dtype != RILL_DTYPE_INT64 && l->dtype != RILL_DTYPE_INT32))
    return rill_kernel_error(ctx, "input Label (%s) must be an int64 or int32 tensor with data",
                             rill_kin_name(ctx, RILL_AUC_IN_LABEL, 0));
  int64_t n = p->dims.n ? p->dims.d[0] : 1, numel = rill_tensor_numel(p);
  int64_t w = n ? numel / n : 0;
  if (n && w < 1)
    return rill_kernel_error(ctx, "input Predict (%s) has no column", rill_kin_name(ctx, RILL_AUC_IN_PREDICT, 0));
  if (rill_tensor_numel(l) != n)
    return rill_kernel_error(ctx, "input Label (%s) has %lld labels for %lld rows of Predict (%s)",
                             rill_kin_name(ctx, RILL_AUC_IN_LABEL, 0), (long long)rill_tensor_numel(l),
                             (long long)n, rill_kin_name(ctx, RILL_AUC_IN_PREDICT, 0));
  void *pv, *nv;
  RILL_TRY(rill_opt_state(ctx, RILL_AUC_IN_STAT_POS, RILL_AUC_OUT_STAT_POS_OUT, RILL_DTYPE_INT64, NULL, &pv));
  RILL_TRY(rill_opt_state(ctx, RILL_AUC_IN_STAT_NEG, RILL_AUC_OUT_STAT_NEG_OUT, RILL_DTYPE_INT64, NULL, &nv));
  int64_t *pos = pv, *neg = nv, len = nt + 1, need = k ? (k + 1) * len + 1 : len;
  for (size_t s = 0; s < 2; s++) {
    size_t slot = s ? RILL_AUC_IN_STAT_NEG : RILL_AUC_IN_STAT_POS;
    int64_t have = rill_tensor_numel(rill_kin(ctx, slot, 0));
    if (have != need)
      return rill_kernel_error(ctx, "input %s (%s) holds %lld counts; num_thresholds %lld and "
                               "slide_steps %lld need %lld", ctx->schema->inputs[slot].name,
                               rill_kin_name(ctx, slot, 0), (long long)have, (long long)nt,
                               (long long)k, (long long)need);
  }
  /* Check every probability before counting any. */
  for (int64_t i = 0; i < n; i++) {
    double v = p->dtype == RILL_DTYPE_FP32
                   ? (double)(((const float *)rill_tensor_ptr(p))[i * w + w - 1] * (float)nt)
                   : ((const double *)rill_tensor_ptr(p))[i * w + w - 1] * (double)nt;
    if (!(v >= 0 && v < (double)(nt + 1)))
      return rill_kernel_error(ctx, "input Predict (%s): row %lld's probability %g is outside "
                               "[0, 1]", rill_kin_name(ctx, RILL_AUC_IN_PREDICT, 0), (long long)i,
                               v / (double)nt);
  }
  int64_t cur = 0, sum = 0;
  if (k) {
    cur = (pos[k * len + len] % k) * len;
    sum = k * len;
    for (int64_t b = 0; b < len; b++) {
      pos[sum + b] -= pos[cur + b];
      neg[sum + b] -= neg[cur + b];
      pos[cur + b] = neg[cur + b] = 0;
    }
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t b = p->dtype == RILL_DTYPE_FP32
                    ? (int64_t)(((const float *)rill_tensor_ptr(p))[i * w + w - 1] * (float)nt)
                    : (int64_t)(((const double *)rill_tensor_ptr(p))[i * w + w - 1] * (double)nt);
    bool positive = l->dtype == RILL_DTYPE_INT64 ? ((const int64_t *)rill_tensor_ptr(l))[i] != 0
                                                 : ((const int32_t *)rill_tensor_ptr(l))[i] != 0;
    (positive ? pos : neg)[cur + b]++;
  }
  if (k) {
    for (int64_t b = 0; b < len; b++) {
      pos[sum + b] += pos[cur + b];
      neg[sum + b] += neg[cur + b];
    }
    pos[k * len + len]++;
    neg[k * len + len]++;
  }
  RILL_TRY(rill_kout_need(ctx, RILL_AUC_OUT_AUC, 0, RILL_DTYPE_FP64, &out));
  *(double *)rill_tensor_ptr(out) = auc_area(pos + sum, neg + sum, nt);
  return NULL;
}
