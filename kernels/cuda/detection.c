/* yolo_box and box_coder CUDA kernels, float32 and float64: a thread a box, computed by
 * the CPU kernels' own functions (kernels/cpu/box_decode.h) after the same checks
 * (kernels/cpu/detection_check.h). yolo_box reads ImgSize on the device, so a run never
 * waits for it; its anchors travel with the launch. The boxes' consumers that remain on
 * the host (multiclass_nms) take them from there. */
#include "kernels/cpu/detection_check.h"
#include "kernels/cuda/cuda.h"

static rill_status *yolo_box(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *x = NULL, *img = NULL, *bo = NULL, *so = NULL;
  rill_cuda_yolo_box p;
  RILL_TRY(rill_kin_need(ctx, RILL_YOLO_BOX_IN_X, 0, dt, &x));
  RILL_TRY(rill_kout_need(ctx, RILL_YOLO_BOX_OUT_BOXES, 0, dt, &bo));
  RILL_TRY(rill_kout_need(ctx, RILL_YOLO_BOX_OUT_SCORES, 0, dt, &so));
  RILL_TRY(rill_yolo_box_check(ctx, x, bo, so, &img, &p.g));
  p.n = x->dims.d[0];
  p.an = (int64_t)ctx->attrs[RILL_YOLO_BOX_ATTR_ANCHORS].n / 2;
  if (rill_tensor_numel(bo) == 0) return NULL;
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, bo, &d));
  size_t bytes = (size_t)(2 * p.an) * sizeof(int32_t);
  int32_t *anchors = rill_cuda_mem_alloc(d, bytes);
  if (!anchors) return rill_kernel_error(ctx, "out of device memory for %zu bytes of anchors", bytes);
  /* from the program's attribute, pageable: staged before the call returns */
  cudaError_t e = cudaMemcpyAsync(anchors, ctx->attrs[RILL_YOLO_BOX_ATTR_ANCHORS].list.ints, bytes,
                                  cudaMemcpyHostToDevice, d->stream);
  if (e == cudaSuccess)
    e = rill_cuda_decode_yolo((int)dt, rill_tensor_ptr(x), rill_tensor_ptr(img), img->dtype == RILL_DTYPE_INT64, anchors,
                           rill_tensor_ptr(bo), rill_tensor_ptr(so), &p, d->stream);
  rill_cuda_mem_free(d, anchors); /* its next user is queued behind the launch */
  return rill_cuda_kernel_check(ctx, e, "yolo_box launch");
}

rill_status *rill_cuda_yolo_box_fp32(rill_kernel_ctx *ctx) { return yolo_box(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cuda_yolo_box_fp64(rill_kernel_ctx *ctx) { return yolo_box(ctx, RILL_DTYPE_FP64); }

static rill_status *box_coder(rill_kernel_ctx *ctx, rill_dtype dt) {
  rill_tensor *prior = NULL, *pvar = NULL, *target = NULL, *out = NULL;
  rill_box_coder_geom g;
  RILL_TRY(rill_kin_need(ctx, RILL_BOX_CODER_IN_PRIOR_BOX, 0, dt, &prior));
  if (rill_kin(ctx, RILL_BOX_CODER_IN_PRIOR_BOX_VAR, 0))
    RILL_TRY(rill_kin_need(ctx, RILL_BOX_CODER_IN_PRIOR_BOX_VAR, 0, dt, &pvar));
  RILL_TRY(rill_kin_need(ctx, RILL_BOX_CODER_IN_TARGET_BOX, 0, dt, &target));
  RILL_TRY(rill_kout_need(ctx, RILL_BOX_CODER_OUT_OUTPUT_BOX, 0, dt, &out));
  RILL_TRY(rill_box_coder_check(ctx, prior, pvar, target, out, &g));
  if (rill_tensor_numel(out) == 0) return NULL;
  rill_cuda_box_coder p = {.rows = g.rows,
                           .cols = g.cols,
                           .axis = g.axis,
                           .encode = g.encode,
                           .normalized = ctx->attrs[RILL_BOX_CODER_ATTR_BOX_NORMALIZED].v.b,
                           .var_attr = g.var_attr};
  if (g.var_attr)
    for (int k = 0; k < 4; k++) p.var[k] = ctx->attrs[RILL_BOX_CODER_ATTR_VARIANCE].list.floats[k];
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  cudaError_t e = rill_cuda_code_boxes((int)dt, rill_tensor_ptr(prior), pvar ? rill_tensor_ptr(pvar) : NULL,
                                      rill_tensor_ptr(target), rill_tensor_ptr(out), &p, d->stream);
  return rill_cuda_kernel_check(ctx, e, "box_coder launch");
}

rill_status *rill_cuda_box_coder_fp32(rill_kernel_ctx *ctx) { return box_coder(ctx, RILL_DTYPE_FP32); }
rill_status *rill_cuda_box_coder_fp64(rill_kernel_ctx *ctx) { return box_coder(ctx, RILL_DTYPE_FP64); }
