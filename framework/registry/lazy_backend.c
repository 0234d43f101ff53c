/* Backends in their own shared libraries, loaded on first use (backend_host.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "framework/base/alloc.h"
#include "framework/registry/backend_host.h"

static rill_status *host_error(rill_code code, const char *message) {
  return rill_error(code, "%s", message);
}

static rill_status *host_kernel_error(const rill_kernel_ctx *ctx, const char *message) {
  return rill_kernel_error(ctx, "%s", message);
}

static const rill_backend_host host_table = {
    .version = RILL_BACKEND_HOST_VERSION,
    .struct_size = sizeof(rill_backend_host),
    .error = host_error,
    .kernel_error = host_kernel_error,
    .oom = rill_oom,
    .status_destroy = rill_status_destroy,
    .status_message = rill_status_message,
    .malloc = rill_malloc,
    .calloc = rill_calloc,
    .free = rill_free,
    .variable_tensor = rill_variable_tensor,
    .tensor_numel = rill_tensor_numel,
    .tensor_nbytes = rill_tensor_nbytes,
    .tensor_is_set = rill_tensor_is_set,
    .dims_equal = rill_dims_equal,
    .dims_prod = rill_dims_prod,
    .dims_str = rill_dims_str,
    .dtype_name = rill_dtype_name,
    .dtype_size = rill_dtype_size,
    .variable_clear = rill_variable_clear,
    .variable_selected_rows = rill_variable_selected_rows,
    .selected_rows_set_rows = rill_selected_rows_set_rows,
    .tensor_alloc_on = rill_tensor_alloc_on,
    .lod_clear = rill_lod_clear,
    .var_kind_name = rill_var_kind_name,
    .lod_copy = rill_lod_copy,
    .variable_array = rill_variable_array,
    .tensor_array_resize = rill_tensor_array_resize,
    .tensor_clear = rill_tensor_clear,
    .selected_rows_init = rill_selected_rows_init,
    .selected_rows_clear = rill_selected_rows_clear,
};

/* One load attempt per device kind; its outcome is kept. */
static struct {
  bool tried;
  rill_code code; /* 0: loaded */
  char why[512];
} attempts[RILL_DEVICE_COUNT];
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static const rill_lazy_backend *lazy_find(rill_device device) {
  for (size_t i = 0; i < rill_lazy_backend_count; i++)
    if (rill_lazy_backends[i].device == device) return &rill_lazy_backends[i];
  return NULL;
}

/* The file beside the module holding this code (librill.so, or the executable that
 * linked librill_static.a), when it exists there. */
static bool beside_library(const char *file, char *path, size_t cap) {
  Dl_info info;
  char exe[4096];
  const char *self = NULL;
  if (dladdr((void *)&rill_lazy_backend_load, &info) && info.dli_fname && strchr(info.dli_fname, '/'))
    self = info.dli_fname;
  else {
    /* glibc names the main program "": the code is in an executable. */
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return false;
    exe[len] = '\0';
    self = exe;
  }
  const char *slash = strrchr(self, '/');
  if (!slash) return false;
  int n = snprintf(path, cap, "%.*s/%s", (int)(slash - self), self, file);
  return n > 0 && (size_t)n < cap && access(path, F_OK) == 0;
}

static void load_locked(const rill_lazy_backend *lb, rill_code *code, char *why, size_t cap) {
  const char *env = lb->env ? getenv(lb->env) : NULL;
  char path[4096];
  const char *target = lb->file;
  if (env && !*env) {
    *code = RILL_UNAVAILABLE;
    snprintf(why, cap, "the backend in %.128s is disabled (%.64s is set and empty)", lb->file, lb->env);
    return;
  }
  if (env)
    target = env;
  else if (beside_library(lb->file, path, sizeof path))
    target = path;
  void *h = dlopen(target, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    *code = RILL_UNAVAILABLE;
    snprintf(why, cap, "the backend in %.256s did not load: %.200s", target, e ? e : "dlopen failed");
    return;
  }
  rill_backend_open_fn open_fn;
  void *sym = dlsym(h, lb->entry);
  memcpy(&open_fn, &sym, sizeof open_fn);
  if (!sym) {
    *code = RILL_UNAVAILABLE;
    snprintf(why, cap, "%.256s has no function %.64s", target, lb->entry);
    dlclose(h);
    return;
  }
  /* From here the module's runtime may have started threads: it stays loaded. */
  const rill_backend *b = NULL;
  rill_status *st = open_fn(&host_table, &b);
  if (!st && (!b || b->device != lb->device))
    st = rill_error(RILL_INTERNAL, "%s gave no backend for its device kind", target);
  if (!st) st = rill_registry_add_backend(b);
  if (st) {
    *code = rill_status_code(st) == RILL_NOT_FOUND ? RILL_UNAVAILABLE : rill_status_code(st);
    snprintf(why, cap, "%s", rill_status_message(st));
    rill_status_destroy(st);
    return;
  }
  *code = 0;
}

rill_status *rill_lazy_backend_load(rill_device device) {
  if (rill_backend_find(device)) return NULL;
  const rill_lazy_backend *lb = lazy_find(device);
  char where[RILL_PLACE_STR_MAX];
  if (!lb)
    return rill_error(RILL_NOT_FOUND, "this build of rill has no backend for %s",
                      rill_place_str((rill_place){device, 0}, where, sizeof where));
  pthread_mutex_lock(&load_lock);
  if (!attempts[device].tried) {
    attempts[device].tried = true;
    load_locked(lb, &attempts[device].code, attempts[device].why, sizeof attempts[device].why);
  }
  rill_code code = attempts[device].code;
  char why[sizeof attempts[0].why];
  memcpy(why, attempts[device].why, sizeof why);
  pthread_mutex_unlock(&load_lock);
  return code ? rill_error(code, "%s", why) : NULL;
}

bool rill_is_compiled_with_cuda(void) {
  if (lazy_find(RILL_DEVICE_CUDA)) return true;
  for (size_t i = 0; i < rill_builtin_backend_count; i++)
    if (rill_builtin_backends[i]->device == RILL_DEVICE_CUDA) return true;
  return false;
}

rill_status *rill_cuda_device_count(int32_t *count) {
  *count = 0;
  rill_status *st = rill_lazy_backend_load(RILL_DEVICE_CUDA);
  if (st) return st;
  const rill_backend *b = rill_backend_find(RILL_DEVICE_CUDA);
  *count = !b ? 0 : b->device_count ? b->device_count(b) : 1;
  return NULL;
}

rill_status *rill_parse_place(const char *text, rill_place *out) {
  if (!text || !out) return rill_error(RILL_INVALID_ARGUMENT, "rill_parse_place: text or out is NULL");
  return rill_place_parse(text, out);
}

rill_status *rill_device_memory_stats_get(rill_place place, rill_device_memory_stats *out) {
  if (!out) return rill_error(RILL_INVALID_ARGUMENT, "rill_device_memory_stats_get: out is NULL");
  memset(out, 0, sizeof *out);
  RILL_TRY(rill_place_check(place));
  const rill_backend *b = rill_backend_find(place.device);
  char where[RILL_PLACE_STR_MAX];
  if (!b || !b->memory_stats)
    return rill_error(RILL_UNIMPLEMENTED, "the backend of %s keeps no memory statistics",
                      rill_place_str(place, where, sizeof where));
  return b->memory_stats(b, place, out);
}

static rill_status *profiler_set(rill_place place, bool start) {
  RILL_TRY(rill_place_check(place));
  const rill_backend *b = rill_backend_find(place.device);
  char where[RILL_PLACE_STR_MAX];
  if (!b || !b->profiler)
    return rill_error(RILL_UNIMPLEMENTED, "the backend of %s has no profiler to %s",
                      rill_place_str(place, where, sizeof where), start ? "start" : "stop");
  return b->profiler(b, place, start);
}

rill_status *rill_device_profiler_start(rill_place place) { return profiler_set(place, true); }

rill_status *rill_device_profiler_stop(rill_place place) { return profiler_set(place, false); }

/* The CUDA backend when it is loaded, has pinned memory and sees a device; else NULL. */
static const rill_backend *pinned_backend(void) {
  int32_t n = 0;
  rill_status *st = rill_cuda_device_count(&n);
  if (st) {
    rill_status_destroy(st);
    return NULL;
  }
  const rill_backend *b = rill_backend_find(RILL_DEVICE_CUDA);
  return n > 0 && b && b->pinned_alloc && b->pinned_free ? b : NULL;
}

rill_status *rill_pinned_host_alloc(size_t bytes, void **out, bool *pinned) {
  if (!out || !pinned || !bytes)
    return rill_error(RILL_INVALID_ARGUMENT, "rill_pinned_host_alloc: out or pinned is NULL, or bytes is 0");
  *out = NULL;
  *pinned = false;
  const rill_backend *b = pinned_backend();
  if (b && (*out = b->pinned_alloc(b, bytes))) {
    *pinned = true;
    return NULL;
  }
  *out = rill_aligned_alloc(bytes, RILL_TENSOR_ALIGN);
  return *out ? NULL : rill_oom();
}

void rill_pinned_host_free(void *p, bool pinned) {
  if (!p) return;
  const rill_backend *b = pinned ? rill_backend_find(RILL_DEVICE_CUDA) : NULL;
  if (b && b->pinned_free) b->pinned_free(b, p);
  else rill_free(p);
}
