/* mean_iou CPU kernel (operators/mean_iou.c): counts in int32 as Paddle does, the mean
 * IOU in float over the classes whose correct + wrong count is not zero. A class id
 * outside [0, num_classes) is an error naming the input. */
#include <string.h>

#include "kernels/cpu/kernels.h"

static bool id_at(const rill_tensor *t, int64_t i, int64_t *v) {
  if (t->dtype == RILL_DTYPE_INT32) *v = ((const int32_t *)rill_tensor_ptr(t))[i];
  else if (t->dtype == RILL_DTYPE_INT64) *v = ((const int64_t *)rill_tensor_ptr(t))[i];
  else return false;
  return true;
}

static rill_status *add_counts(rill_kernel_ctx *ctx, size_t slot, int32_t *dst, int64_t k) {
  for (size_t i = 0; i < ctx->nin[slot]; i++) {
    rill_tensor *t = NULL;
    RILL_TRY(rill_kin_need(ctx, slot, i, RILL_DTYPE_INT32, &t));
    if (rill_tensor_numel(t) != k)
      return rill_kernel_error(ctx, "input %s (%s) holds %lld counts, num_classes is %lld",
                               ctx->schema->inputs[slot].name, rill_kin_name(ctx, slot, i),
                               (long long)rill_tensor_numel(t), (long long)k);
    const int32_t *s = rill_tensor_ptr(t);
    for (int64_t c = 0; c < k; c++) dst[c] += s[c];
  }
  return NULL;
}

static rill_status *mean_iou(rill_kernel_ctx *ctx) {
  const rill_tensor *p = rill_kin(ctx, 0, 0), *l = rill_kin(ctx, 1, 0);
  if (!p || !l) return rill_kernel_error(ctx, "inputs Predictions and Labels are required");
  int64_t k = ctx->attrs[0].v.i;
  rill_tensor *miou, *wrong, *correct;
  RILL_TRY(rill_kout_need(ctx, 0, 0, RILL_DTYPE_FP32, &miou));
  RILL_TRY(rill_kout_need(ctx, 1, 0, RILL_DTYPE_INT32, &wrong));
  RILL_TRY(rill_kout_need(ctx, 2, 0, RILL_DTYPE_INT32, &correct));
  if (rill_tensor_numel(p) != rill_tensor_numel(l))
    return rill_kernel_error(ctx, "input Predictions (%s) holds %lld ids but Labels (%s) %lld",
                             rill_kin_name(ctx, 0, 0), (long long)rill_tensor_numel(p),
                             rill_kin_name(ctx, 1, 0), (long long)rill_tensor_numel(l));
  if (rill_tensor_numel(wrong) != k || rill_tensor_numel(correct) != k || rill_tensor_numel(miou) != 1)
    return rill_kernel_error(ctx, "outputs OutWrong (%s) / OutCorrect (%s) must hold num_classes "
                             "values and OutMeanIou (%s) one", rill_kout_name(ctx, 1, 0),
                             rill_kout_name(ctx, 2, 0), rill_kout_name(ctx, 0, 0));
  int32_t *w = rill_tensor_ptr(wrong), *c = rill_tensor_ptr(correct);
  memset(w, 0, (size_t)k * sizeof *w);
  memset(c, 0, (size_t)k * sizeof *c);
  RILL_TRY(add_counts(ctx, 2, w, k));
  RILL_TRY(add_counts(ctx, 3, c, k));
  float mean = 0;
  for (size_t i = 0; i < ctx->nin[4]; i++) {
    rill_tensor *t = NULL;
    RILL_TRY(rill_kin_need(ctx, 4, i, RILL_DTYPE_FP32, &t));
    if (rill_tensor_numel(t) < 1)
      return rill_kernel_error(ctx, "input InMeanIou (%s) is empty", rill_kin_name(ctx, 4, i));
    mean += ((const float *)rill_tensor_ptr(t))[0];
  }
  for (int64_t i = 0; i < rill_tensor_numel(p); i++) {
    int64_t a, b;
    if (!id_at(p, i, &a) || !id_at(l, i, &b))
      return rill_kernel_error(ctx, "inputs Predictions (%s) and Labels (%s) must be int32 or int64",
                               rill_kin_name(ctx, 0, 0), rill_kin_name(ctx, 1, 0));
    if (a < 0 || a >= k || b < 0 || b >= k)
      return rill_kernel_error(ctx, "element %lld: class ids %lld (Predictions, %s) and %lld "
                               "(Labels, %s) must lie in [0, num_classes %lld)", (long long)i,
                               (long long)a, rill_kin_name(ctx, 0, 0), (long long)b,
                               rill_kin_name(ctx, 1, 0), (long long)k);
    if (a == b) {
      c[a]++;
    } else {
      w[b]++;
      w[a]++;
    }
  }
  float sum = 0;
  int64_t valid = 0;
  for (int64_t i = 0; i < k; i++) {
    int64_t den = (int64_t)w[i] + c[i];
    if (den == 0) continue;
    valid++;
    sum += (float)c[i] / (float)den;
  }
  *(float *)rill_tensor_ptr(miou) = mean + (valid ? sum / (float)valid : 0.f);
  return NULL;
}

rill_status *rill_cpu_mean_iou(rill_kernel_ctx *ctx) { return mean_iou(ctx); }
