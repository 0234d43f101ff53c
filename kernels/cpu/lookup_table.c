/* lookup_table / lookup_table_v2 CPU kernels and their gradients (float32, float64;
 * ids int64, or int32 for v2). */
#include <string.h>

#include "framework/base/alloc.h"
#include "kernels/cpu/tensor_ops.h"


/* Id i of an int32/int64 tensor (checked by the callers' dtype test). */
static inline int64_t id_at(const rill_tensor *ids, int64_t i) {
  return ids->dtype == RILL_DTYPE_INT64 ? ((const int64_t *)rill_tensor_ptr(ids))[i]
                                        : ((const int32_t *)rill_tensor_ptr(ids))[i];
}

static rill_status *need_ids(rill_kernel_ctx *ctx, size_t slot, rill_tensor **ids) {
  *ids = rill_kin(ctx, slot, 0);
  if (!*ids || !rill_tensor_is_set(*ids))
    return rill_kernel_error(ctx, "input Ids (%s) is missing or holds no data",
                             rill_kin_name(ctx, slot, 0));
  if ((*ids)->dtype != RILL_DTYPE_INT64 && (*ids)->dtype != RILL_DTYPE_INT32)
    return rill_kernel_error(ctx, "input Ids (%s) is %s; it must be int64 or int32",
                             rill_kin_name(ctx, slot, 0), rill_dtype_name((*ids)->dtype));
  return NULL;
}

/* Checks every id (except padding_idx) against the table's rows. */
static rill_status *check_ids(rill_kernel_ctx *ctx, size_t slot, const rill_tensor *ids,
                              int64_t rows, int64_t pad) {
  int64_t n = rill_tensor_numel(ids);
  for (int64_t i = 0; i < n; i++) {
    int64_t id = id_at(ids, i);
    if (id != pad && (id < 0 || id >= rows))
      return rill_kernel_error(ctx, "input Ids (%s) holds %lld at position %lld; input W has "
                               "%lld rows", rill_kin_name(ctx, slot, 0), (long long)id,
                               (long long)i, (long long)rows);
  }
  return NULL;
}

#define LOOKUP(T, DT, NAME)                                                               \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_tensor *w, *ids, *out;                                                           \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &w));                                           \
    RILL_TRY(need_ids(ctx, 1, &ids));                                                     \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                        \
    if (w->dims.n != 2)                                                                   \
      return rill_kernel_error(ctx, "input W (%s) must be a matrix", rill_kin_name(ctx, 0, 0)); \
    int64_t rows = w->dims.d[0], width = w->dims.d[1], n = rill_tensor_numel(ids);        \
    int64_t pad = ctx->attrs[RILL_LOOKUP_TABLE_ATTR_PADDING_IDX].v.l;                     \
    if (rill_tensor_numel(out) != n * width)                                              \
      return rill_kernel_error(ctx, "output Out (%s) does not hold %lld rows of %lld",    \
                               rill_kout_name(ctx, 0, 0), (long long)n, (long long)width); \
    RILL_TRY(check_ids(ctx, 1, ids, rows, pad));                                          \
    const T *wp = rill_tensor_ptr(w);                                                     \
    T *op = rill_tensor_ptr(out);                                                         \
    size_t row_bytes = (size_t)width * sizeof(T);                                         \
    for (int64_t i = 0; i < n; i++) {                                                     \
      int64_t id = id_at(ids, i);                                                         \
      if (id == pad) memset(op + i * width, 0, row_bytes);                                \
      else memcpy(op + i * width, wp + id * width, row_bytes);                            \
    }                                                                                     \
    return NULL;                                                                          \
  }

LOOKUP(float, RILL_DTYPE_FP32, rill_cpu_lookup_table_fp32)
LOOKUP(double, RILL_DTYPE_FP64, rill_cpu_lookup_table_fp64)

/* The gradient: dense (W@GRAD zeroed, rows added) or sparse (selected rows). */
#define LOOKUP_GRAD(T, DT, NAME)                                                          \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                               \
    rill_variable *dwv = ctx->nout[0] ? ctx->out[0][0] : NULL;                            \
    if (!dwv) return NULL;                                                                \
    rill_tensor *w = rill_kin(ctx, 0, 0), *ids, *dout;                                    \
    if (!w || w->dims.n != 2)                                                             \
      return rill_kernel_error(ctx, "input W (%s) is missing or not a matrix",            \
                               rill_kin_name(ctx, 0, 0));                                 \
    RILL_TRY(need_ids(ctx, 1, &ids));                                                     \
    RILL_TRY(rill_kin_need(ctx, 2, 0, DT, &dout));                                        \
    int64_t rows = w->dims.d[0], width = w->dims.d[1], n = rill_tensor_numel(ids);        \
    int64_t pad = ctx->attrs[RILL_LOOKUP_TABLE_ATTR_PADDING_IDX].v.l;                     \
    if (rill_tensor_numel(dout) != n * width)                                             \
      return rill_kernel_error(ctx, "input Out@GRAD (%s) does not hold %lld rows of %lld", \
                               rill_kin_name(ctx, 2, 0), (long long)n, (long long)width); \
    RILL_TRY(check_ids(ctx, 1, ids, rows, pad));                                          \
    const T *gp = rill_tensor_ptr(dout);                                                  \
    size_t row_bytes = (size_t)width * sizeof(T);                                         \
    if (ctx->attrs[RILL_LOOKUP_TABLE_ATTR_IS_SPARSE].v.b) {                               \
      if (dwv->kind == RILL_VARKIND_TENSOR) rill_variable_clear(dwv);                     \
      rill_selected_rows *sr = rill_variable_selected_rows(dwv);                          \
      if (!sr)                                                                            \
        return rill_kernel_error(ctx, "output W@GRAD (%s) holds a %s, not selected rows", \
                                 rill_kout_name(ctx, 0, 0), rill_var_kind_name(dwv->kind)); \
      int64_t *r = rill_malloc((size_t)(n ? n : 1) * sizeof *r);                          \
      if (!r) return rill_oom();                                                          \
      for (int64_t i = 0; i < n; i++) r[i] = id_at(ids, i);                               \
      rill_status *st = rill_selected_rows_set_rows(sr, r, (size_t)n);                    \
      rill_free(r);                                                                       \
      RILL_TRY(st);                                                                       \
      sr->height = rows;                                                                  \
      rill_dims vd = {.n = 2, .d = {n, width}};                                           \
      RILL_TRY(rill_tensor_alloc(&sr->value, DT, &vd));                                   \
      rill_lod_clear(&sr->value.lod);                                                     \
      /* Paddle 1.8 copies Out@GRAD whole here: a padding_idx position passes its      \
       * gradient to the padding row (which the dense gradient leaves at zero). */        \
      if (n) memcpy(rill_tensor_ptr(&sr->value), gp, (size_t)n * row_bytes);              \
      return NULL;                                                                        \
    }                                                                                     \
    rill_tensor *dw;                                                                      \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &dw));                                         \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, dw, &w->dims));                              \
    T *dp = rill_tensor_ptr(dw);                                                          \
    if (rill_tensor_nbytes(dw)) memset(dp, 0, rill_tensor_nbytes(dw));                    \
    for (int64_t i = 0; i < n; i++) {                                                     \
      int64_t id = id_at(ids, i);                                                         \
      if (id == pad) continue;                                                            \
      T *dst = dp + id * width;                                                           \
      const T *src = gp + i * width;                                                      \
      for (int64_t j = 0; j < width; j++) dst[j] += src[j];                               \
    }                                                                                     \
    return NULL;                                                                          \
  }

LOOKUP_GRAD(float, RILL_DTYPE_FP32, rill_cpu_lookup_table_grad_fp32)
LOOKUP_GRAD(double, RILL_DTYPE_FP64, rill_cpu_lookup_table_grad_fp64)
