/* The backends linked into the library, one line each. The registry adds them, in this
 * order, when it builds its tables (framework/registry/registry.h, "backends"); a
 * kernel folder that exports a backend table adds its line here.
 *
 * Below them, the backends built as their own shared libraries and loaded on first use
 * of their device kind (framework/registry/backend_host.h): the CUDA backend,
 * librill_cuda.so from kernels/cuda, when the build has it (cmake/cuda.cmake). */
#include "framework/registry/backend_host.h"
#include "framework/registry/registry.h"

extern const rill_backend rill_cpu_backend;

const rill_backend *const rill_builtin_backends[] = {
    &rill_cpu_backend,
};
const size_t rill_builtin_backend_count = RILL_COUNTOF(rill_builtin_backends);

const rill_lazy_backend rill_lazy_backends[] = {
#ifdef RILL_CUDA_BACKEND_FILE
    {RILL_DEVICE_CUDA, RILL_CUDA_BACKEND_FILE, "RILL_CUDA_LIB", "rill_cuda_backend_open"},
#else
    {RILL_DEVICE_COUNT, NULL, NULL, NULL}, /* none: a placeholder C requires */
#endif
};
#ifdef RILL_CUDA_BACKEND_FILE
const size_t rill_lazy_backend_count = RILL_COUNTOF(rill_lazy_backends);
#else
const size_t rill_lazy_backend_count = 0;
#endif
