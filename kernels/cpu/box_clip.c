/* box_clip CPU kernels: image i's rows are Input's last LoD level [i, i + 1); each
 * coordinate is clamped as Paddle's ClipTiledBoxes does (max(min(v, bound - 1), 0)). */
#include <math.h>

#include "kernels/cpu/kernels.h"

#define BOX_CLIP(T, DT, ROUND, NAME)                                                            \
  rill_status *NAME(rill_kernel_ctx *ctx) {                                                    \
    rill_tensor *in = NULL, *info = NULL, *out = NULL;                                         \
    RILL_TRY(rill_kin_need(ctx, 0, 0, DT, &in));                                               \
    RILL_TRY(rill_kin_need(ctx, 1, 0, DT, &info));                                             \
    RILL_TRY(rill_kout_need(ctx, 0, 0, DT, &out));                                             \
    if (in->lod.nlevels == 0)                                                                  \
      return rill_kernel_error(ctx, "input Input (%s) has no LoD: box_clip needs one level "   \
                               "giving each image's boxes", rill_kin_name(ctx, 0, 0));         \
    const rill_lod_level *lv = &in->lod.levels[in->lod.nlevels - 1];                           \
    int64_t rows = in->dims.n ? in->dims.d[0] : 0;                                             \
    int64_t per_row = rows ? rill_tensor_numel(in) / rows : 0;                                 \
    int64_t images = lv->n ? (int64_t)lv->n - 1 : 0;                                           \
    if (info->dims.n != 2 || info->dims.d[1] != 3 || info->dims.d[0] != images ||              \
        (lv->n && (int64_t)lv->offsets[lv->n - 1] != rows))                                    \
      return rill_kernel_error(ctx, "input ImInfo (%s) has %lld rows, input Input (%s) %lld "  \
                               "images in its LoD over %lld rows: they must fit",              \
                               rill_kin_name(ctx, 1, 0),                                       \
                               (long long)(info->dims.n ? info->dims.d[0] : 0),                \
                               rill_kin_name(ctx, 0, 0), (long long)images, (long long)rows);  \
    RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &in->dims));                                 \
    const T *ip = rill_tensor_ptr(in), *fp = rill_tensor_ptr(info);                            \
    T *op = rill_tensor_ptr(out);                                                              \
    for (int64_t i = 0; i < images; i++) {                                                     \
      T bound[2] = {ROUND(fp[i * 3 + 1] / fp[i * 3 + 2]) - 1, ROUND(fp[i * 3] / fp[i * 3 + 2]) - 1}; \
      int64_t lo = (int64_t)lv->offsets[i] * per_row, hi = (int64_t)lv->offsets[i + 1] * per_row; \
      for (int64_t k = lo; k < hi; k++) {                                                      \
        T v = ip[k], b = bound[k % 2];                                                         \
        v = v < b ? v : b;                                                                     \
        op[k] = v > 0 ? v : 0;                                                                 \
      }                                                                                        \
    }                                                                                          \
    return NULL;                                                                               \
  }

BOX_CLIP(float, RILL_DTYPE_FP32, roundf, rill_cpu_box_clip_fp32)
BOX_CLIP(double, RILL_DTYPE_FP64, round, rill_cpu_box_clip_fp64)
