/* sequence_scatter, sequence_scatter_grad and sequence_erase CPU kernels
 * (operators/sequence_scatter.c), Paddle 1.8's arithmetic (sequence_scatter_op.h,
 * sequence_erase_op.h); the scatter targets are checked against the row. */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/kernels.h"

static int64_t ss_id(const rill_tensor *t, int64_t i) {
  return t->dtype == RILL_DTYPE_INT32 ? ((const int32_t *)rill_tensor_ptr(t))[i]
                                      : ((const int64_t *)rill_tensor_ptr(t))[i];
}

/* Ids and Updates against N rows of `slice` elements: one LoD level of N sequences
 * (Updates with Ids' rows), every id within [0, slice). */
static rill_status *ss_check(const rill_kernel_ctx *ctx, size_t ids_slot, size_t up_slot,
                             int64_t N, int64_t slice, const rill_tensor **ids_out,
                             const rill_lod_level **lv_out) {
  const rill_tensor *ids = rill_kin(ctx, ids_slot, 0), *up = rill_kin(ctx, up_slot, 0);
  const char *in = rill_kin_name(ctx, ids_slot, 0);
  if (!ids || !rill_tensor_is_set(ids) || (ids->dtype != RILL_DTYPE_INT32 && ids->dtype != RILL_DTYPE_INT64))
    return rill_kernel_error(ctx, "input Ids (%s) must be an int32 or int64 tensor with data", in);
  if (ids->lod.nlevels == 0)
    return rill_kernel_error(ctx, "input Ids (%s) has no LoD: its sequences say which row each id "
                             "scatters into", in);
  RILL_TRY(rill_lod_check(&ids->lod, ids->dims.n ? ids->dims.d[0] : 0));
  const rill_lod_level *lv = &ids->lod.levels[ids->lod.nlevels - 1];
  if ((int64_t)lv->n - 1 != N)
    return rill_kernel_error(ctx, "input Ids (%s) has %zu sequences but X has %lld rows", in,
                             lv->n - 1, (long long)N);
  int64_t M = rill_tensor_numel(ids);
  if (!up || rill_tensor_numel(up) != M)
    return rill_kernel_error(ctx, "input Updates (%s) has %lld elements, expected one per id of "
                             "Ids (%s): %lld", rill_kin_name(ctx, up_slot, 0),
                             up ? (long long)rill_tensor_numel(up) : 0LL, in, (long long)M);
  for (int64_t j = 0; j < M; j++) {
    int64_t v = ss_id(ids, j);
    if (v < 0 || v >= slice)
      return rill_kernel_error(ctx, "input Ids (%s): id %lld (row %lld) is outside [0, %lld), the "
                               "elements of a row of X", in, (long long)v, (long long)j,
                               (long long)slice);
  }
  *ids_out = ids;
  *lv_out = lv;
  return NULL;
}

#define SS_ADD(T)                                                                          \
  for (size_t i = 0; i + 1 < lv->n; i++)                                                   \
    for (uint64_t j = lv->offsets[i]; j < lv->offsets[i + 1]; j++)                         \
      ((T *)o)[(int64_t)i * slice + ss_id(ids, (int64_t)j)] += ((const T *)u)[j];

rill_status *rill_cpu_sequence_scatter(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_SEQUENCE_SCATTER_IN_X, 0), *out = NULL;
  const rill_tensor *up = rill_kin(ctx, RILL_SEQUENCE_SCATTER_IN_UPDATES, 0);
  if (!x || !rill_tensor_is_set(x) || x->dims.n < 1)
    return rill_kernel_error(ctx, "input X (%s) must be a tensor [N, ...] with data",
                             rill_kin_name(ctx, RILL_SEQUENCE_SCATTER_IN_X, 0));
  rill_dtype dt = x->dtype;
  if (!up || !rill_tensor_is_set(up) || up->dtype != dt)
    return rill_kernel_error(ctx, "input Updates (%s) must hold data of X's dtype %s",
                             rill_kin_name(ctx, RILL_SEQUENCE_SCATTER_IN_UPDATES, 0), rill_dtype_name(dt));
  int64_t N = x->dims.d[0], slice = N ? rill_tensor_numel(x) / N : 0;
  const rill_tensor *ids;
  const rill_lod_level *lv;
  RILL_TRY(ss_check(ctx, RILL_SEQUENCE_SCATTER_IN_IDS, RILL_SEQUENCE_SCATTER_IN_UPDATES, N, slice,
                    &ids, &lv));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  void *o = rill_tensor_ptr(out);
  const void *u = rill_tensor_ptr(up);
  if (o != rill_tensor_ptr(x)) memcpy(o, rill_tensor_ptr(x), (size_t)rill_tensor_numel(x) * rill_dtype_size(dt));
  switch (dt) {
    case RILL_DTYPE_FP32: SS_ADD(float) break;
    case RILL_DTYPE_FP64: SS_ADD(double) break;
    case RILL_DTYPE_INT32: SS_ADD(int32_t) break;
    case RILL_DTYPE_INT64: SS_ADD(int64_t) break;
    default:
      return rill_kernel_error(ctx, "input X (%s) is %s, expected float32, float64, int32 or int64",
                               rill_kin_name(ctx, RILL_SEQUENCE_SCATTER_IN_X, 0), rill_dtype_name(dt));
  }
  return NULL;
}

#undef SS_ADD

rill_status *rill_cpu_sequence_scatter_grad(rill_kernel_ctx *ctx) {
  rill_tensor *dout = NULL, *dx = NULL, *dup = NULL;
  rill_dtype dt = RILL_DTYPE_FP32;
  const rill_tensor *g = rill_kin(ctx, RILL_SEQUENCE_SCATTER_GRAD_IN_OUT_GRAD, 0);
  if (g) dt = g->dtype;
  if (dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64)
    return rill_kernel_error(ctx, "input Out@GRAD is %s, expected float32 or float64", rill_dtype_name(dt));
  RILL_TRY(rill_kin_need(ctx, RILL_SEQUENCE_SCATTER_GRAD_IN_OUT_GRAD, 0, dt, &dout));
  if (dout->dims.n < 1)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) is a scalar, expected [N, ...]",
                             rill_kin_name(ctx, RILL_SEQUENCE_SCATTER_GRAD_IN_OUT_GRAD, 0));
  int64_t N = dout->dims.d[0], slice = N ? rill_tensor_numel(dout) / N : 0;
  const rill_tensor *ids;
  const rill_lod_level *lv;
  RILL_TRY(ss_check(ctx, RILL_SEQUENCE_SCATTER_GRAD_IN_IDS, RILL_SEQUENCE_SCATTER_GRAD_IN_UPDATES, N,
                    slice, &ids, &lv));
  size_t es = rill_dtype_size(dt);
  if (rill_kout(ctx, RILL_SEQUENCE_SCATTER_GRAD_OUT_X_GRAD, 0)) {
    RILL_TRY(rill_kout_need(ctx, RILL_SEQUENCE_SCATTER_GRAD_OUT_X_GRAD, 0, dt, &dx));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_SEQUENCE_SCATTER_GRAD_OUT_X_GRAD, 0, dx, &dout->dims));
    if (rill_tensor_ptr(dx) != rill_tensor_ptr(dout))
      memcpy(rill_tensor_ptr(dx), rill_tensor_ptr(dout), (size_t)rill_tensor_numel(dout) * es);
  }
  if (rill_kout(ctx, RILL_SEQUENCE_SCATTER_GRAD_OUT_UPDATES_GRAD, 0)) {
    const rill_tensor *up = rill_kin(ctx, RILL_SEQUENCE_SCATTER_GRAD_IN_UPDATES, 0);
    RILL_TRY(rill_kout_need(ctx, RILL_SEQUENCE_SCATTER_GRAD_OUT_UPDATES_GRAD, 0, dt, &dup));
    RILL_TRY(rill_kout_check_dims(ctx, RILL_SEQUENCE_SCATTER_GRAD_OUT_UPDATES_GRAD, 0, dup, &up->dims));
    const char *src = rill_tensor_ptr(dout);
    char *dst = rill_tensor_ptr(dup);
    for (size_t i = 0; i + 1 < lv->n; i++)
      for (uint64_t j = lv->offsets[i]; j < lv->offsets[i + 1]; j++)
        memcpy(dst + j * es, src + (size_t)((int64_t)i * slice + ss_id(ids, (int64_t)j)) * es, es);
  }
  return NULL;
}

rill_status *rill_cpu_sequence_erase(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, 0, 0), *out = rill_kout(ctx, 0, 0);
  const char *xn = rill_kin_name(ctx, 0, 0);
  if (!x || !rill_tensor_is_set(x) || (x->dtype != RILL_DTYPE_INT32 && x->dtype != RILL_DTYPE_INT64))
    return rill_kernel_error(ctx, "input X (%s) must be an int32 or int64 tensor with data", xn);
  char s[RILL_DIMS_STR_MAX];
  if (x->dims.n != 2 || x->dims.d[1] != 1)
    return rill_kernel_error(ctx, "input X (%s) has shape %s, expected [T, 1]", xn,
                             rill_dims_str(&x->dims, s, sizeof s));
  if (x->lod.nlevels == 0) return rill_kernel_error(ctx, "input X (%s) has no LoD", xn);
  RILL_TRY(rill_lod_check(&x->lod, x->dims.d[0]));
  if (!out) return rill_kernel_error(ctx, "needs output Out");
  const rill_attr_value *tok = &ctx->attrs[RILL_SEQUENCE_ERASE_ATTR_TOKENS];
  int64_t T = x->dims.d[0];
  const rill_lod_level *lv = &x->lod.levels[x->lod.nlevels - 1];
  bool *drop = rill_calloc((size_t)T + 1, sizeof *drop);
  uint64_t *offs = rill_malloc(lv->n * sizeof *offs);
  if (!drop || !offs) {
    rill_free(drop);
    rill_free(offs);
    return rill_oom();
  }
  int64_t kept = 0;
  for (int64_t i = 0; i < T; i++) {
    int64_t v = ss_id(x, i);
    for (size_t k = 0; k < tok->n && !drop[i]; k++) drop[i] = v == tok->list.ints[k];
    kept += !drop[i];
  }
  rill_dims d = {.n = 2, .d = {kept, 1}};
  rill_status *st = rill_tensor_alloc(out, x->dtype, &d);
  size_t es = rill_dtype_size(x->dtype);
  int64_t at = 0;
  offs[0] = 0;
  for (size_t q = 0; !st && q + 1 < lv->n; q++) {
    for (uint64_t i = lv->offsets[q]; i < lv->offsets[q + 1]; i++)
      if (!drop[i]) memcpy((char *)rill_tensor_ptr(out) + (size_t)at++ * es, (const char *)rill_tensor_ptr(x) + i * es, es);
    offs[q + 1] = (uint64_t)at;
  }
  rill_lod lod = {0, NULL};
  if (!st) st = rill_lod_copy(&lod, &x->lod);
  if (!st) {
    rill_lod_level *last = &lod.levels[lod.nlevels - 1];
    memcpy(last->offsets, offs, lv->n * sizeof *offs);
    rill_lod_clear(&out->lod);
    out->lod = lod;
  }
  rill_free(drop);
  rill_free(offs);
  return st;
}
