/* The backends linked into the library, one line each. The registry adds them, in this
 * order, when it builds its tables (framework/registry/registry.h, "backends"); a
 * kernel folder that exports a backend table adds its line here (a CUDA build:
 * &rill_cuda_backend from kernels/cuda/backend.c). */
#include "framework/registry/registry.h"

extern const rill_backend rill_cpu_backend;

const rill_backend *const rill_builtin_backends[] = {
    &rill_cpu_backend,
};
const size_t rill_builtin_backend_count = RILL_COUNTOF(rill_builtin_backends);
