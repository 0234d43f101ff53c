/* sequence_softmax CPU kernels (float32 and float64, computed in the tensor's type): per
 * sequence of X's last LoD level, Out = exp(x - max) / sum(exp(x - max)), so large scores
 * stay finite; the gradient is Out * (dOut - sum(dOut * Out)) per sequence. */
#include <math.h>

#include "kernels/cpu/kernels.h"

/* X's last LoD level, checked to cover X's rows; its offsets and count in *off, *n. */
static rill_status *sequences(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *x,
                              const uint64_t **off, size_t *n) {
  const char *name = ctx->schema->inputs[slot].name, *xn = rill_kin_name(ctx, slot, 0);
  if (x->lod.nlevels == 0)
    return rill_kernel_error(ctx, "input %s (%s) has no LoD: its sequences are its last LoD "
                             "level", name, xn);
  const rill_lod_level *lv = &x->lod.levels[x->lod.nlevels - 1];
  int64_t rows = x->dims.n ? x->dims.d[0] : 1;
  if (rill_tensor_numel(x) != rows)
    return rill_kernel_error(ctx, "input %s (%s) has %lld values in %lld rows, expected one per "
                             "row", name, xn, (long long)rill_tensor_numel(x), (long long)rows);
  if (lv->n < 1 || lv->offsets[0] != 0 || lv->offsets[lv->n - 1] != (uint64_t)rows)
    return rill_kernel_error(ctx, "input %s (%s): its last LoD level ends at %llu, not at its "
                             "%lld rows", name, xn,
                             (unsigned long long)(lv->n ? lv->offsets[lv->n - 1] : 0),
                             (long long)rows);
  for (size_t k = 1; k < lv->n; k++)
    if (lv->offsets[k] < lv->offsets[k - 1])
      return rill_kernel_error(ctx, "input %s (%s): its LoD offsets decrease at %zu", name, xn, k);
  *off = lv->offsets;
  *n = lv->n - 1;
  return NULL;
}

#define SEQ_SOFTMAX(T, DT, SUFFIX, EXP)                                                   \
  rill_status *rill_cpu_sequence_softmax_##SUFFIX(rill_kernel_ctx *ctx) {                \
    rill_tensor *x, *out;                                                                 \
    const uint64_t *off;                                                                  \
    size_t n;                                                                             \
    RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_SOFTMAX_IN_X, 0, DT, &x));                  \
    RILL_TRY(sequences(ctx, RILL_SEQUENCE_SOFTMAX_IN_X, x, &off, &n));                    \
    RILL_TRY(rill_kout_need(ctx, RILL_SEQUENCE_SOFTMAX_OUT_OUT, 0, DT, &out));            \
    RILL_TRY(rill_kout_check_dims(ctx, RILL_SEQUENCE_SOFTMAX_OUT_OUT, 0, out, &x->dims)); \
    const T *xv = rill_tensor_ptr(x);                                                     \
    T *o = rill_tensor_ptr(out);                                                          \
    for (size_t s = 0; s < n; s++) {                                                      \
      uint64_t a = off[s], b = off[s + 1];                                                \
      if (a == b) continue;                                                               \
      T top = xv[a], sum = 0;                                                             \
      for (uint64_t k = a + 1; k < b; k++) top = xv[k] > top ? xv[k] : top;               \
      for (uint64_t k = a; k < b; k++) sum += o[k] = EXP(xv[k] - top);                    \
      for (uint64_t k = a; k < b; k++) o[k] /= sum;                                       \
    }                                                                                     \
    return NULL;                                                                          \
  }                                                                                       \
  rill_status *rill_cpu_sequence_softmax_grad_##SUFFIX(rill_kernel_ctx *ctx) {           \
    rill_tensor *x, *y, *dy, *dx = rill_kout(ctx, RILL_SEQUENCE_SOFTMAX_GRAD_OUT_X_GRAD, 0); \
    const uint64_t *off;                                                                  \
    size_t n;                                                                             \
    if (!dx) return NULL;                                                                 \
    RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_SOFTMAX_GRAD_IN_X, 0, DT, &x));             \
    RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_SOFTMAX_GRAD_IN_OUT, 0, DT, &y));           \
    RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_SOFTMAX_GRAD_IN_OUT_GRAD, 0, DT, &dy));     \
    RILL_TRY(sequences(ctx, RILL_SEQUENCE_SOFTMAX_GRAD_IN_X, x, &off, &n));               \
    int64_t rows = rill_tensor_numel(x);                                                  \
    if (rill_tensor_numel(y) != rows || rill_tensor_numel(dy) != rows)                    \
      return rill_kernel_error(ctx, "inputs Out (%s) and Out@GRAD (%s) need X's %lld values", \
                               rill_kin_name(ctx, RILL_SEQUENCE_SOFTMAX_GRAD_IN_OUT, 0),  \
                               rill_kin_name(ctx, RILL_SEQUENCE_SOFTMAX_GRAD_IN_OUT_GRAD, 0), \
                               (long long)rows);                                          \
    RILL_TRY(rill_kout_need(ctx, RILL_SEQUENCE_SOFTMAX_GRAD_OUT_X_GRAD, 0, DT, &dx));     \
    RILL_TRY(rill_kout_check_dims(ctx, RILL_SEQUENCE_SOFTMAX_GRAD_OUT_X_GRAD, 0, dx, &x->dims)); \
    const T *yv = rill_tensor_ptr(y), *g = rill_tensor_ptr(dy);                           \
    T *d = rill_tensor_ptr(dx);                                                           \
    for (size_t s = 0; s < n; s++) {                                                      \
      T dot = 0;                                                                          \
      for (uint64_t k = off[s]; k < off[s + 1]; k++) dot += g[k] * yv[k];                 \
      for (uint64_t k = off[s]; k < off[s + 1]; k++) d[k] = (g[k] - dot) * yv[k];         \
    }                                                                                     \
    return NULL;                                                                          \
  }

SEQ_SOFTMAX(float, RILL_DTYPE_FP32, fp32, expf)
SEQ_SOFTMAX(double, RILL_DTYPE_FP64, fp64, exp)
