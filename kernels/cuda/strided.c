/* slice, strided_slice, their gradients and expand_v2 CUDA kernels, every dtype: each is
 * one strided walk (device/transpose.cu) between a packed tensor and a box, a strided
 * box or a broadcast of another. The slices read their plans as the CPU kernels do
 * (operators/tensor_ops.h), their bound tensors on the host (RILL_SLOT_HOST_DATA);
 * expand_v2 walks the output the executor sized. */
#include "kernels/cuda/cuda.h"
#include "operators/tensor_ops.h"

bool rill_cuda_walk_add(rill_cuda_perm *p, int64_t extent, int64_t stride) {
  if (extent == 1) return true;
  if (p->n > 0 && p->src_strides[p->n - 1] == stride * extent) {
    p->out_dims[p->n - 1] *= extent;
    p->src_strides[p->n - 1] = stride;
    return true;
  }
  if (p->n == RILL_CUDA_BCAST_DIMS) return false;
  p->out_dims[p->n] = extent;
  p->src_strides[p->n++] = stride;
  return true;
}

void rill_cuda_strides(const rill_dims *dims, int64_t *strides) {
  int64_t s = 1;
  for (int i = dims->n - 1; i >= 0; i--) {
    strides[i] = s;
    s *= dims->d[i];
  }
}

/* Runs walk p between packed and the strided side at byte offset `at` of `whole`:
 * gathering into packed (through a scratch block when the two share memory) or, with
 * p->scatter, scattering from it. */
static rill_status *walk(rill_kernel_ctx *ctx, rill_cuda_dev *d, rill_cuda_perm *p, rill_tensor *whole, size_t at,
                         rill_tensor *packed, const char *what) {
  size_t es = rill_dtype_size(packed->dtype), bytes = (size_t)p->numel * es;
  if (!bytes) return NULL;
  uint8_t *strided = (uint8_t *)rill_tensor_ptr(whole) + at, *pk = rill_tensor_ptr(packed), *scratch = NULL;
  if (!p->scatter && rill_overlaps(rill_tensor_ptr(whole), rill_tensor_nbytes(whole), pk, bytes) &&
      !(scratch = rill_cuda_mem_alloc(d, bytes)))
    return rill_kernel_error(ctx, "out of device memory for a %zu-byte %s scratch block", bytes, what);
  cudaError_t e = p->scatter ? rill_cuda_permute(pk, strided, p, es, d->stream)
                             : rill_cuda_permute(strided, scratch ? scratch : pk, p, es, d->stream);
  if (scratch) {
    if (e == cudaSuccess) e = cudaMemcpyAsync(pk, scratch, bytes, cudaMemcpyDeviceToDevice, d->stream);
    rill_cuda_mem_free(d, scratch); /* its next user is queued behind these */
  }
  return rill_cuda_kernel_check(ctx, e, what);
}

/* ---- slice ---- */

_Static_assert(RILL_SAME_POS(RILL_SLICE_GRAD_IN_STARTS_TENSOR, RILL_SLICE_IN_STARTS_TENSOR) &&
                   RILL_SAME_POS(RILL_SLICE_GRAD_IN_ENDS_TENSOR_LIST, RILL_SLICE_IN_ENDS_TENSOR_LIST) &&
                   RILL_SAME_POS(RILL_SLICE_GRAD_ATTR_DECREASE_AXIS, RILL_SLICE_ATTR_DECREASE_AXIS),
               "slice and slice_grad read their bounds at the same positions");

/* The plan of a slice of x from the op's bounds (host tensors) and attributes. */
static rill_status *slice_plan(rill_kernel_ctx *ctx, const rill_tensor *x, rill_slice_plan *plan) {
  const rill_tensor *sl[RILL_MAX_DIMS], *el[RILL_MAX_DIMS];
  size_t ns = ctx->nin[RILL_SLICE_IN_STARTS_TENSOR_LIST], ne = ctx->nin[RILL_SLICE_IN_ENDS_TENSOR_LIST];
  if (ns > RILL_MAX_DIMS || ne > RILL_MAX_DIMS)
    return rill_kernel_error(ctx, "more than %d StartsTensorList/EndsTensorList tensors", RILL_MAX_DIMS);
  for (size_t i = 0; i < ns; i++) sl[i] = rill_kin(ctx, RILL_SLICE_IN_STARTS_TENSOR_LIST, i);
  for (size_t i = 0; i < ne; i++) el[i] = rill_kin(ctx, RILL_SLICE_IN_ENDS_TENSOR_LIST, i);
  const rill_tensor *st = rill_kin(ctx, RILL_SLICE_IN_STARTS_TENSOR, 0), *et = rill_kin(ctx, RILL_SLICE_IN_ENDS_TENSOR, 0);
  rill_slice_bounds s = {st != NULL, st, sl, ns, &ctx->attrs[RILL_SLICE_ATTR_STARTS]};
  rill_slice_bounds e = {et != NULL, et, el, ne, &ctx->attrs[RILL_SLICE_ATTR_ENDS]};
  char err[256];
  if (!rill_slice_plan_make(&x->dims, &ctx->attrs[RILL_SLICE_ATTR_AXES], &s, &e, &ctx->attrs[RILL_SLICE_ATTR_INFER_FLAGS],
                            &ctx->attrs[RILL_SLICE_ATTR_DECREASE_AXIS], true, plan, err, sizeof err))
    return rill_kernel_error(ctx, "input Input (%s): %s", rill_kin_name(ctx, RILL_SLICE_IN_INPUT, 0), err);
  return NULL;
}

/* The walk over the box of a tensor of dims `dims` that `plan` cuts, and the box's
 * first element (*at, in elements). */
static rill_status *box_walk(rill_kernel_ctx *ctx, const rill_dims *dims, const rill_slice_plan *plan, bool scatter,
                             rill_cuda_perm *p, int64_t *at) {
  int64_t strides[RILL_MAX_DIMS];
  rill_cuda_strides(dims, strides);
  *p = (rill_cuda_perm){.numel = 1, .scatter = scatter};
  *at = 0;
  for (int i = 0; i < dims->n; i++) {
    *at += plan->start[i] * strides[i];
    p->numel *= plan->len[i];
    if (!rill_cuda_walk_add(p, plan->len[i], strides[i]))
      return rill_kernel_error(ctx, "the slice of input Input (%s) needs more than %d strided dims",
                               rill_kin_name(ctx, RILL_SLICE_IN_INPUT, 0), RILL_CUDA_BCAST_DIMS);
  }
  return NULL;
}

rill_status *rill_cuda_slice_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_SLICE_IN_INPUT, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input Input (%s) is missing or holds no data",
                             rill_kin_name(ctx, RILL_SLICE_IN_INPUT, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_SLICE_OUT_OUT, 0, x->dtype, &out));
  rill_slice_plan plan;
  RILL_TRY(slice_plan(ctx, x, &plan));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SLICE_OUT_OUT, 0, out, &plan.out));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  rill_cuda_perm p;
  int64_t at;
  RILL_TRY(box_walk(ctx, &x->dims, &plan, false, &p, &at));
  return walk(ctx, d, &p, x, (size_t)at * rill_dtype_size(x->dtype), out, "slice launch");
}

rill_status *rill_cuda_slice_grad_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *dx = rill_kout(ctx, RILL_SLICE_GRAD_OUT_INPUT_GRAD, 0);
  if (!dx) return NULL; /* Input@GRAD not wanted */
  rill_tensor *x = rill_kin(ctx, RILL_SLICE_GRAD_IN_INPUT, 0), *dout = rill_kin(ctx, RILL_SLICE_GRAD_IN_OUT_GRAD, 0);
  if (!x || !dout || !rill_tensor_is_set(dout))
    return rill_kernel_error(ctx, "inputs Input and Out@GRAD (%s) must be dense tensors with data",
                             rill_kin_name(ctx, RILL_SLICE_GRAD_IN_OUT_GRAD, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_SLICE_GRAD_OUT_INPUT_GRAD, 0, dout->dtype, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_SLICE_GRAD_OUT_INPUT_GRAD, 0, dx, &x->dims));
  rill_slice_plan plan;
  RILL_TRY(slice_plan(ctx, x, &plan));
  rill_cuda_perm p;
  int64_t at;
  RILL_TRY(box_walk(ctx, &x->dims, &plan, true, &p, &at));
  if (rill_tensor_numel(dout) != p.numel)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) has %lld elements, the slice %lld",
                             rill_kin_name(ctx, RILL_SLICE_GRAD_IN_OUT_GRAD, 0), (long long)rill_tensor_numel(dout),
                             (long long)p.numel);
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  cudaError_t e = cudaMemsetAsync(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx), d->stream);
  RILL_TRY(rill_cuda_kernel_check(ctx, e, "slice_grad zero fill"));
  return walk(ctx, d, &p, dx, (size_t)at * rill_dtype_size(dx->dtype), dout, "slice_grad launch");
}

/* ---- strided_slice ---- */

/* The plan of a strided slice of x, and the walk over the elements it takes in the
 * output's order (steps may be negative: a reversed axis) from its first one (*at, in
 * elements). */
static rill_status *strided_walk(rill_kernel_ctx *ctx, const rill_tensor *x, bool scatter, rill_cuda_perm *p,
                                 int64_t *at) {
  rill_strided_plan plan;
  char err[256];
  if (!rill_strided_kernel_plan(ctx, x, &plan, err, sizeof err))
    return rill_kernel_error(ctx, "input Input (%s): %s", rill_kin_name(ctx, RILL_STRIDED_SLICE_IN_INPUT, 0), err);
  int64_t strides[RILL_MAX_DIMS];
  rill_cuda_strides(&x->dims, strides);
  *p = (rill_cuda_perm){.numel = 1, .scatter = scatter};
  *at = 0;
  for (int i = 0; i < x->dims.n; i++) {
    *at += plan.first[i] * strides[i];
    p->numel *= plan.len[i];
    if (!rill_cuda_walk_add(p, plan.len[i], plan.step[i] * strides[i]))
      return rill_kernel_error(ctx, "the strided slice of input Input (%s) needs more than %d strided dims",
                               rill_kin_name(ctx, RILL_STRIDED_SLICE_IN_INPUT, 0), RILL_CUDA_BCAST_DIMS);
  }
  return NULL;
}

rill_status *rill_cuda_strided_slice_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_STRIDED_SLICE_IN_INPUT, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input Input (%s) is missing or holds no data",
                             rill_kin_name(ctx, RILL_STRIDED_SLICE_IN_INPUT, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_STRIDED_SLICE_OUT_OUT, 0, x->dtype, &out));
  rill_cuda_perm p;
  int64_t at;
  RILL_TRY(strided_walk(ctx, x, false, &p, &at));
  if (rill_tensor_numel(out) != p.numel)
    return rill_kernel_error(ctx, "output Out (%s) has %lld elements, the slice %lld",
                             rill_kout_name(ctx, RILL_STRIDED_SLICE_OUT_OUT, 0), (long long)rill_tensor_numel(out),
                             (long long)p.numel);
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return walk(ctx, d, &p, x, (size_t)at * rill_dtype_size(x->dtype), out, "strided_slice launch");
}

/* Out@GRAD into a zeroed Input@GRAD at the elements the slice took (none twice). */
rill_status *rill_cuda_strided_slice_grad_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *dx = rill_kout(ctx, RILL_STRIDED_SLICE_GRAD_OUT_INPUT_GRAD, 0);
  if (!dx) return NULL; /* Input@GRAD not wanted */
  rill_tensor *x = rill_kin(ctx, RILL_STRIDED_SLICE_GRAD_IN_INPUT, 0);
  rill_tensor *dout = rill_kin(ctx, RILL_STRIDED_SLICE_GRAD_IN_OUT_GRAD, 0);
  if (!x || !dout || !rill_tensor_is_set(dout))
    return rill_kernel_error(ctx, "inputs Input and Out@GRAD (%s) must be dense tensors with data",
                             rill_kin_name(ctx, RILL_STRIDED_SLICE_GRAD_IN_OUT_GRAD, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_STRIDED_SLICE_GRAD_OUT_INPUT_GRAD, 0, dout->dtype, &dx));
  RILL_TRY(rill_kout_check_dims(ctx, RILL_STRIDED_SLICE_GRAD_OUT_INPUT_GRAD, 0, dx, &x->dims));
  rill_cuda_perm p;
  int64_t at;
  RILL_TRY(strided_walk(ctx, x, true, &p, &at));
  if (rill_tensor_numel(dout) != p.numel)
    return rill_kernel_error(ctx, "input Out@GRAD (%s) has %lld elements, the slice %lld",
                             rill_kin_name(ctx, RILL_STRIDED_SLICE_GRAD_IN_OUT_GRAD, 0),
                             (long long)rill_tensor_numel(dout), (long long)p.numel);
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, dx, &d));
  cudaError_t e = cudaMemsetAsync(rill_tensor_ptr(dx), 0, rill_tensor_nbytes(dx), d->stream);
  RILL_TRY(rill_cuda_kernel_check(ctx, e, "strided_slice_grad zero fill"));
  return walk(ctx, d, &p, dx, (size_t)at * rill_dtype_size(dx->dtype), dout, "strided_slice_grad launch");
}

/* ---- expand_v2 ---- */

rill_status *rill_cuda_expand_v2_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, RILL_EXPAND_V2_IN_X, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input X (%s) holds no data", rill_kin_name(ctx, RILL_EXPAND_V2_IN_X, 0));
  RILL_TRY(rill_kout_need(ctx, RILL_EXPAND_V2_OUT_OUT, 0, x->dtype, &out));
  const rill_dims *od = &out->dims;
  int diff = od->n - x->dims.n;
  if (diff < 0)
    return rill_kernel_error(ctx, "output Out (%s) has lower rank than input X (%s)",
                             rill_kout_name(ctx, RILL_EXPAND_V2_OUT_OUT, 0), rill_kin_name(ctx, RILL_EXPAND_V2_IN_X, 0));
  int64_t xs[RILL_MAX_DIMS];
  rill_cuda_strides(&x->dims, xs);
  rill_cuda_perm p = {.numel = rill_tensor_numel(out)};
  for (int i = 0; i < od->n; i++) {
    int64_t xd = i < diff ? 1 : x->dims.d[i - diff];
    if (xd != 1 && xd != od->d[i])
      return rill_kernel_error(ctx, "input X (%s) does not broadcast to output Out (%s) at dim %d",
                               rill_kin_name(ctx, RILL_EXPAND_V2_IN_X, 0), rill_kout_name(ctx, RILL_EXPAND_V2_OUT_OUT, 0),
                               i);
    if (!rill_cuda_walk_add(&p, od->d[i], xd == 1 ? 0 : xs[i - diff]))
      return rill_kernel_error(ctx, "output Out (%s) needs more than %d strided dims",
                               rill_kout_name(ctx, RILL_EXPAND_V2_OUT_OUT, 0), RILL_CUDA_BCAST_DIMS);
  }
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  return walk(ctx, d, &p, x, 0, out, "expand_v2 launch");
}
