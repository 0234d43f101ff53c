/* average_accumulates CPU kernels. Paddle runs the op in place (each out_* is its in_*),
 * so its later steps see the sums the earlier ones wrote; the per-element update below
 * gives those results whether or not the outputs share the inputs' buffers. */
#include "kernels/cpu/optimizer.h"

#define MAX_NUM_ACCUMULATES 16384

static rill_status *counter(rill_kernel_ctx *ctx, size_t in, size_t out, int64_t **v) {
  rill_tensor *t = rill_kin(ctx, in, 0);
  if (!t || !rill_tensor_is_set(t) || t->dtype != RILL_DTYPE_INT64 || rill_tensor_numel(t) != 1)
    return rill_kernel_error(ctx, "input %s (%s) must be an int64 tensor of one element",
                             ctx->schema->inputs[in].name, rill_kin_name(ctx, in, 0));
  void *o;
  RILL_TRY(rill_opt_state(ctx, in, out, RILL_DTYPE_INT64, NULL, &o));
  *v = o;
  return NULL;
}

#define AVERAGE_ACCUMULATES(T, DT, NAME)                                                      \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                   \
    rill_tensor *p;                                                                           \
    void *s1o, *s2o, *s3o;                                                                    \
    int64_t *num_acc, *old_acc, *num_upd;                                                     \
    int64_t lo = ctx->attrs[RILL_AVERAGE_ACCUMULATES_ATTR_MIN_AVERAGE_WINDOW].v.l;            \
    int64_t hi = ctx->attrs[RILL_AVERAGE_ACCUMULATES_ATTR_MAX_AVERAGE_WINDOW].v.l;            \
    float rate = ctx->attrs[RILL_AVERAGE_ACCUMULATES_ATTR_AVERAGE_WINDOW].v.f;                \
    if (lo > hi)                                                                              \
      return rill_kernel_error(ctx, "min_average_window %lld is above max_average_window "    \
                               "%lld (param %s)", (long long)lo, (long long)hi,               \
                               rill_kin_name(ctx, RILL_AVERAGE_ACCUMULATES_IN_PARAM, 0));     \
    RILL_TRY(rill_kin_need(ctx, RILL_AVERAGE_ACCUMULATES_IN_PARAM, 0, DT, &p));               \
    RILL_TRY(counter(ctx, RILL_AVERAGE_ACCUMULATES_IN_IN_NUM_ACCUMULATES,                     \
                     RILL_AVERAGE_ACCUMULATES_OUT_OUT_NUM_ACCUMULATES, &num_acc));            \
    RILL_TRY(counter(ctx, RILL_AVERAGE_ACCUMULATES_IN_IN_OLD_NUM_ACCUMULATES,                 \
                     RILL_AVERAGE_ACCUMULATES_OUT_OUT_OLD_NUM_ACCUMULATES, &old_acc));        \
    RILL_TRY(counter(ctx, RILL_AVERAGE_ACCUMULATES_IN_IN_NUM_UPDATES,                         \
                     RILL_AVERAGE_ACCUMULATES_OUT_OUT_NUM_UPDATES, &num_upd));                \
    RILL_TRY(rill_opt_state(ctx, RILL_AVERAGE_ACCUMULATES_IN_IN_SUM_1,                        \
                            RILL_AVERAGE_ACCUMULATES_OUT_OUT_SUM_1, DT, p, &s1o));            \
    RILL_TRY(rill_opt_state(ctx, RILL_AVERAGE_ACCUMULATES_IN_IN_SUM_2,                        \
                            RILL_AVERAGE_ACCUMULATES_OUT_OUT_SUM_2, DT, p, &s2o));            \
    RILL_TRY(rill_opt_state(ctx, RILL_AVERAGE_ACCUMULATES_IN_IN_SUM_3,                        \
                            RILL_AVERAGE_ACCUMULATES_OUT_OUT_SUM_3, DT, p, &s3o));            \
    int64_t updates = *num_upd + 1, acc = *num_acc + 1;                                       \
    bool move = updates % MAX_NUM_ACCUMULATES == 0;                                           \
    int64_t by_rate = (int64_t)((float)updates * rate);                                       \
    bool restart = acc >= lo && acc >= (hi < by_rate ? hi : by_rate);                         \
    T *s1 = s1o, *s2 = s2o, *s3 = s3o;                                                        \
    const T *pv = rill_tensor_ptr(p);                                                         \
    int64_t n = rill_tensor_numel(p);                                                         \
    for (int64_t i = 0; i < n; i++) {                                                         \
      T a = s1[i] + pv[i], b = s2[i];                                                         \
      if (move) b = b + a, a = 0;                                                             \
      if (restart) s3[i] = a + b, a = 0, b = 0;                                               \
      s1[i] = a, s2[i] = b;                                                                   \
    }                                                                                         \
    *num_upd = updates;                                                                       \
    *old_acc = restart ? acc : *old_acc;                                                      \
    *num_acc = restart ? 0 : acc;                                                             \
    return NULL;                                                                              \
  }

AVERAGE_ACCUMULATES(float, RILL_DTYPE_FP32, rill_cpu_average_accumulates_fp32)
AVERAGE_ACCUMULATES(double, RILL_DTYPE_FP64, rill_cpu_average_accumulates_fp64)
