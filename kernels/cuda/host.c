/* The backend's entry point and its link to the library that loaded it.
 *
 * librill_cuda.so links no rill code (framework/registry/backend_host.h): the rill
 * functions its kernels call, declared by the framework's headers, are defined here as
 * calls through the table the loader hands rill_cuda_backend_open. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

#include "framework/base/alloc.h"
#include "framework/base/random.h"
#include "kernels/cpu/tensor_ops.h"
#include "kernels/cuda/cuda.h"

const rill_backend_host *rill_cuda_host;

__attribute__((visibility("default"))) rill_status *rill_cuda_backend_open(const rill_backend_host *host,
                                                                           const rill_backend **out);

rill_status *rill_cuda_backend_open(const rill_backend_host *host, const rill_backend **out) {
  *out = NULL;
  if (!host || host->version != RILL_BACKEND_HOST_VERSION ||
      host->struct_size < sizeof(rill_backend_host))
    return NULL; /* the loader reports a module that gave no backend */
  rill_cuda_host = host;
  RILL_TRY(rill_cuda_runtime_start());
  *out = &rill_cuda_backend;
  return NULL;
}

/* Messages longer than this are cut; they name an op, a variable and a shape at most. */
#define MESSAGE_MAX 1024

rill_status *rill_kernel_error(const rill_kernel_ctx *ctx, const char *fmt, ...) {
  char msg[MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rill_cuda_host->kernel_error(ctx, msg);
}

rill_status *rill_error(rill_code code, const char *fmt, ...) {
  char msg[MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rill_cuda_host->error(code, msg);
}

rill_status *rill_oom(void) { return rill_cuda_host->oom(); }
void rill_status_destroy(rill_status *status) { rill_cuda_host->status_destroy(status); }
const char *rill_status_message(const rill_status *status) { return rill_cuda_host->status_message(status); }
void *rill_malloc(size_t size) { return rill_cuda_host->malloc(size); }
void *rill_calloc(size_t count, size_t size) { return rill_cuda_host->calloc(count, size); }
void rill_free(void *p) { rill_cuda_host->free(p); }
rill_tensor *rill_variable_tensor(rill_variable *v) { return rill_cuda_host->variable_tensor(v); }
int64_t rill_tensor_numel(const rill_tensor *t) { return rill_cuda_host->tensor_numel(t); }
size_t rill_tensor_nbytes(const rill_tensor *t) { return rill_cuda_host->tensor_nbytes(t); }
bool rill_tensor_is_set(const rill_tensor *t) { return rill_cuda_host->tensor_is_set(t); }
bool rill_dims_equal(const rill_dims *a, const rill_dims *b) { return rill_cuda_host->dims_equal(a, b); }
int64_t rill_dims_prod(const rill_dims *dims, int begin, int end) {
  return rill_cuda_host->dims_prod(dims, begin, end);
}
char *rill_dims_str(const rill_dims *dims, char *buf, size_t size) {
  return rill_cuda_host->dims_str(dims, buf, size);
}
const char *rill_dtype_name(rill_dtype dtype) { return rill_cuda_host->dtype_name(dtype); }
size_t rill_dtype_size(rill_dtype dtype) { return rill_cuda_host->dtype_size(dtype); }
void rill_variable_clear(rill_variable *v) { rill_cuda_host->variable_clear(v); }
rill_selected_rows *rill_variable_selected_rows(rill_variable *v) { return rill_cuda_host->variable_selected_rows(v); }
rill_status *rill_selected_rows_set_rows(rill_selected_rows *sr, const int64_t *rows, size_t n) {
  return rill_cuda_host->selected_rows_set_rows(sr, rows, n);
}
rill_status *rill_tensor_alloc_on(rill_tensor *t, rill_dtype dtype, const rill_dims *dims, rill_place place,
                                  const rill_device_memory *mem) {
  return rill_cuda_host->tensor_alloc_on(t, dtype, dims, place, mem);
}
void rill_lod_clear(rill_lod *lod) { rill_cuda_host->lod_clear(lod); }
const char *rill_var_kind_name(rill_var_kind kind) { return rill_cuda_host->var_kind_name(kind); }
rill_status *rill_lod_copy(rill_lod *dst, const rill_lod *src) { return rill_cuda_host->lod_copy(dst, src); }
rill_tensor_array *rill_variable_array(rill_variable *v) { return rill_cuda_host->variable_array(v); }
rill_status *rill_tensor_array_resize(rill_tensor_array *a, size_t n) {
  return rill_cuda_host->tensor_array_resize(a, n);
}
void rill_tensor_clear(rill_tensor *t) { rill_cuda_host->tensor_clear(t); }
void rill_selected_rows_init(rill_selected_rows *sr) { rill_cuda_host->selected_rows_init(sr); }
void rill_selected_rows_clear(rill_selected_rows *sr) { rill_cuda_host->selected_rows_clear(sr); }

/* kernels/cpu/tensor_ops.h's run seed, for the device kernels that draw on the host
 * (dropout's mask, the recurrent ops' masks between layers): the executor's next draw,
 * so the same executor seed gives the CPU's runs; outside an executor the module's own
 * count stands in. */
static atomic_uint_fast64_t unseeded_runs;

uint64_t rill_random_run_seed(const rill_kernel_ctx *ctx) {
  uint64_t n = ctx->dev ? ctx->dev->random_u64(ctx->dev)
                        : atomic_fetch_add_explicit(&unseeded_runs, 1, memory_order_relaxed);
  return rill_rng_run_seed(n);
}
