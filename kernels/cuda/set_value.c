/* set_value on the device, every dtype the CPU kernel takes (bool, int32, int64,
 * float32, float64): the plan of kernels/cpu/set_value_plan.h is made on the host (the
 * bound Starts/Ends/Steps tensors are staged there, RILL_SLOT_HOST_DATA), then Out gets
 * Input (unless it is Input), the value is gathered through its broadcast strides into
 * a packed block of the slice's elements, and the block is scattered into Out's slice:
 * two strided walks (device/transpose.cu). A value from the attributes goes to the
 * device first; a ValueTensor is read where it lies, so one sharing Out's memory is
 * packed before Out is written. */
#include "framework/base/alloc.h"
#include "kernels/cpu/set_value_plan.h"
#include "kernels/cuda/cuda.h"

rill_status *rill_cuda_set_value_kernel(rill_kernel_ctx *ctx) {
  rill_tensor *x = rill_kin(ctx, SV_IN_INPUT, 0), *out = NULL;
  if (!x || !rill_tensor_is_set(x))
    return rill_kernel_error(ctx, "input Input (%s) holds no data", rill_kin_name(ctx, 0, 0));
  rill_dtype dt = x->dtype;
  if (dt != RILL_DTYPE_BOOL && dt != RILL_DTYPE_FP32 && dt != RILL_DTYPE_FP64 && dt != RILL_DTYPE_INT32 &&
      dt != RILL_DTYPE_INT64)
    return rill_kernel_error(ctx, "input Input (%s) is %s: set_value takes bool, int32, int64, float32 or float64",
                             rill_kin_name(ctx, 0, 0), rill_dtype_name(dt));
  RILL_TRY(rill_kout_need(ctx, 0, 0, dt, &out));
  RILL_TRY(rill_kout_check_dims(ctx, 0, 0, out, &x->dims));
  rill_cuda_dev *d = NULL;
  RILL_TRY(rill_cuda_kernel_dev(ctx, out, &d));
  sv_plan p;
  RILL_TRY(sv_plan_make(ctx, x, dt, &p));
  const size_t es = rill_dtype_size(dt);
  /* the walks: the value's strides (gather into packed) and Out's (scatter from it) */
  rill_cuda_perm gather = {.numel = p.total}, scatter = {.numel = p.total, .scatter = true};
  int64_t ostride[RILL_MAX_DIMS], at = 0;
  rill_cuda_strides(&x->dims, ostride);
  bool ok = true;
  for (int i = 0; i < p.rank && ok; i++) {
    at += p.start[i] * ostride[i];
    ok = rill_cuda_walk_add(&gather, p.cnt[i], p.vstride[i]) &&
         rill_cuda_walk_add(&scatter, p.cnt[i], p.step[i] * ostride[i]);
  }
  rill_status *st = ok ? NULL : rill_kernel_error(ctx, "a slice walk of more than %d dims", RILL_CUDA_BCAST_DIMS);
  char *packed = NULL, *values = NULL;
  if (!st && p.total > 0 && !(packed = rill_cuda_mem_alloc(d, (size_t)p.total * es)))
    st = rill_kernel_error(ctx, "out of device memory for the %lld-element slice", (long long)p.total);
  const void *src = p.value ? rill_tensor_ptr(p.value) : NULL;
  cudaError_t e = cudaSuccess;
  if (!st && p.total > 0 && !p.value) { /* the attribute value, to the device */
    size_t bytes = (size_t)(p.nvalues > 0 ? p.nvalues : 1) * es;
    if (!(values = rill_cuda_mem_alloc(d, bytes)))
      st = rill_kernel_error(ctx, "out of device memory for the %lld-element value", (long long)p.nvalues);
    else /* from pageable memory: staged before the call returns */
      e = cudaMemcpyAsync(values, p.attr_values, (size_t)p.nvalues * es, cudaMemcpyHostToDevice, d->stream);
    src = values;
  }
  if (!st && e == cudaSuccess && p.total > 0) e = rill_cuda_permute(src, packed, &gather, es, d->stream);
  if (!st && e == cudaSuccess && rill_tensor_ptr(out) != rill_tensor_ptr(x))
    e = cudaMemcpyAsync(rill_tensor_ptr(out), rill_tensor_ptr(x), rill_tensor_nbytes(x), cudaMemcpyDeviceToDevice,
                        d->stream);
  if (!st && e == cudaSuccess && p.total > 0)
    e = rill_cuda_permute(packed, (char *)rill_tensor_ptr(out) + (size_t)at * es, &scatter, es, d->stream);
  if (!st) st = rill_cuda_kernel_check(ctx, e, "assigning the slice");
  rill_cuda_mem_free(d, packed); /* both queued behind their last users */
  rill_cuda_mem_free(d, values);
  sv_plan_free(&p);
  return st;
}
